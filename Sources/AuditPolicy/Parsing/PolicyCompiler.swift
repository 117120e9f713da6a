import AuditRegex

/// Parses and compiles a set of rule files into rules plus every diagnostic, sorted by location.
enum PolicyCompiler {
    struct Output {
        var rules: [Rule]
        var diagnostics: [Diagnostic]
    }

    static func compile(_ sources: [PolicySource], limits: MatchLimits) -> Output {
        var rules: [Rule] = []
        var diagnostics: [Diagnostic] = []
        for source in sources {
            let text: SourceText
            do {
                text = try SourceText(file: source.file, bytes: source.bytes)
            } catch {
                diagnostics.append(error)
                continue
            }
            var parser = RuleFileParser(source: text, limits: limits)
            parser.parse()
            rules += parser.rules
            diagnostics += parser.diagnostics
        }
        var firstDefinition: [String: SourceLocation] = [:]
        for rule in rules {
            if let first = firstDefinition[rule.id] {
                diagnostics.append(
                    Diagnostic(.error, at: rule.location, "duplicate rule id '\(rule.id)' (first defined at \(first))")
                )
            } else {
                firstDefinition[rule.id] = rule.location
            }
        }
        return Output(rules: rules, diagnostics: diagnostics.sorted())
    }
}
