import Testing

@testable import AuditRegex

@Suite struct LazyJITTests {
    @Test("a pattern gets machine code on its first match, not when it is compiled")
    func jitOnFirstMatch() throws {
        let pattern = try Pattern("^https://ads\\.example/")
        #expect(!pattern.code.hasTriedJIT)
        #expect(try pattern.matches("https://ads.example/x"))
        #expect(pattern.code.hasTriedJIT)
        #expect(pattern.isJITCompiled)
    }

    @Test("many tasks making a fresh pattern's first matches at once all get the right answers")
    func concurrentFirstMatches() async throws {
        for round in 0..<50 {
            let pattern = try Pattern("^https://r\(round)\\.test/(a|b)+$")
            let answers = await withTaskGroup(of: [Bool].self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        (0..<20).map { index in
                            (try? pattern.matches("https://r\(round).test/\(index % 2 == 0 ? "abab" : "abc")")) ?? false
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.count == 8)
            #expect(answers.allSatisfy { $0 == (0..<20).map { $0 % 2 == 0 } })
        }
    }
}
