/// The directives of `Cache-Control` header values (RFC 9111 §5.2): names lower-cased, values
/// unquoted.
public struct CacheControl: Sendable, Equatable {
    /// Each directive's value (empty for a directive without one), by lower-case name.
    public let directives: [String: String]

    /// The directives of every `Cache-Control` value in `values`; a directive given twice keeps its
    /// first value.
    public init(_ values: some Sequence<String>) {
        var directives: [String: String] = [:]
        for value in values {
            for item in Self.split(value) {
                let parts = item.split(separator: "=", maxSplits: 1)
                guard let rawName = parts.first else { continue }
                let name = rawName.trimmingSpaces.lowercased()
                guard !name.isEmpty, directives[name] == nil else { continue }
                var argument = parts.count > 1 ? parts[1].trimmingSpaces : ""
                if argument.count >= 2, argument.hasPrefix("\""), argument.hasSuffix("\"") {
                    argument = String(argument.dropFirst().dropLast())
                }
                directives[name] = argument
            }
        }
        self.directives = directives
    }

    /// Whether the directive is present.
    public func has(_ name: String) -> Bool { directives[name] != nil }

    /// A delta-seconds directive's value (`max-age=60`); nil when absent or not a number. A value
    /// too large for an `Int` is taken as the largest (RFC 9111 §1.2.2).
    public func seconds(_ name: String) -> Int? {
        directives[name].flatMap(Self.deltaSeconds)
    }

    /// A delta-seconds value (RFC 9111 §1.2.2: digits only); nil when it is not one. A value too
    /// large for an `Int` is taken as the largest.
    static func deltaSeconds(_ text: some StringProtocol) -> Int? {
        guard !text.isEmpty, text.allSatisfy(\.isASCIIDigit) else { return nil }
        return Int(text) ?? Int(Int32.max)
    }

    /// Splits at commas outside quoted strings.
    private static func split(_ value: String) -> [Substring] {
        var items: [Substring] = []
        var start = value.startIndex
        var isQuoted = false
        var index = value.startIndex
        while index < value.endIndex {
            let character = value[index]
            if character == "\"" { isQuoted.toggle() }
            if character == ",", !isQuoted {
                items.append(value[start..<index])
                start = value.index(after: index)
            }
            index = value.index(after: index)
        }
        items.append(value[start..<value.endIndex])
        return items
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}
