import Testing

@testable import AuditPolicy

/// The list the index collects candidate rules in: on the stack up to
/// `CandidateList.stackCapacity`, in memory of its own beyond.
@Suite struct CandidateListTests {
    /// What a list made by `fill` holds, as added and then sorted without repeats.
    /// With `ruleCount`, sorted as the index sorts a policy's candidates.
    private static func contents(
        ruleCount: Int? = nil, _ fill: (inout CandidateList) -> Void
    ) -> (added: [Int32], sorted: [Int32]) {
        CandidateList.withEmptyList { list in
            fill(&list)
            let added = Array(list.rules)
            if let ruleCount { list.sortWithoutRepeats(ruleCount: ruleCount) } else { list.sortWithoutRepeats() }
            return (added, Array(list.rules))
        }
    }

    @Test("an empty list stays empty when sorted")
    func emptyList() {
        #expect(Self.contents { _ in }.sorted == [])
    }

    @Test("a short list is sorted ascending without repeats")
    func shortList() {
        let list = Self.contents { list in for rule: Int32 in [7, 3, 7, 0, 12, 3, 3] { list.append(rule) } }
        #expect(list.added == [7, 3, 7, 0, 12, 3, 3])
        #expect(list.sorted == [0, 3, 7, 12])
    }

    @Test("a list as long as the stack holds keeps every rule")
    func fullStackList() {
        let capacity = CandidateList.stackCapacity
        let list = Self.contents { list in for rule in (0..<capacity).reversed() { list.append(Int32(rule)) } }
        #expect(list.sorted == (0..<capacity).map(Int32.init))
    }

    @Test("one rule more than the stack holds moves the list to memory of its own, in order, with nothing lost")
    func grownList() {
        let count = CandidateList.stackCapacity + 8
        let rules = (0..<count).map { Int32($0 * 3 % count) }
        let list = Self.contents { list in for rule in rules { list.append(rule) } }
        #expect(list.added == rules)
        #expect(list.sorted == (0..<count).map(Int32.init))
    }

    @Test("appending an array of rules keeps their order, on the stack or beyond")
    func appendingContents() {
        let list = Self.contents { list in
            list.append(5)
            list.append(contentsOf: [9, 1])
            list.append(contentsOf: (100..<240).map(Int32.init))
            list.append(2)
        }
        #expect(list.added == [5, 9, 1] + (100..<240).map(Int32.init) + [2])
    }

    @Test(
        "random lists of up to 400 rules sort as a sorted set of the same rules, for policies of every size",
        arguments: [nil, 1, 60, 64, 65, CandidateList.bitSetRules, CandidateList.bitSetRules + 1])
    func randomLists(ruleCount: Int?) {
        var random = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let rules = (0..<Int.random(in: 0...400, using: &random)).map { _ in
                Int32.random(in: 0..<Int32(ruleCount ?? 60), using: &random)
            }
            let list = Self.contents(ruleCount: ruleCount) { list in
                var position = 0
                while position < rules.count {
                    // Some rules one by one, some as an array, as the index adds them.
                    let length = min(Int.random(in: 1...40, using: &random), rules.count - position)
                    if Bool.random(using: &random) {
                        for rule in rules[position..<position + length] { list.append(rule) }
                    } else {
                        list.append(contentsOf: Array(rules[position..<position + length]))
                    }
                    position += length
                }
            }
            #expect(list.added == rules)
            #expect(list.sorted == Set(rules).sorted(), "rules \(rules)")
        }
    }

    @Test("sorting a list holding a rule the policy does not have stops the process")
    func ruleOutsideThePolicyTraps() async {
        await #expect(processExitsWith: .failure) {
            CandidateList.withEmptyList { list in
                for rule in 0..<Int32(40) { list.append(rule) }
                list.append(300)
                list.sortWithoutRepeats(ruleCount: 300)
            }
        }
    }
}
