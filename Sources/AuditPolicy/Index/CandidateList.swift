/// The indices of the rules a request may match, as the index collects them (and of those that
/// match, as a decision collects them): on the stack up to
/// ``stackCapacity``, in memory of their own beyond, so that most decisions allocate nothing for
/// them.
///
/// Lives only inside ``withEmptyList(_:)``. An array grown from empty cost a decision of the policy
/// mix, whose every request has a candidate, an allocation, a reallocation or two and a free; a
/// list of 32 kept in place (`InlineArray`) was copied about twenty times a decision instead.
///
/// One of AuditPolicy's two owners of raw memory (with ``TokenHashes``): the rules are kept in
/// memory it allocates and frees itself, read and written only here, every position checked
/// against ``count``.
@safe struct CandidateList: ~Copyable {
    /// At most this many rules are kept on the stack (512 bytes): a policy with a few dozen rules
    /// run for every request (regex filters) fills a list of 32 on every decision.
    static let stackCapacity = 128

    private var storage: UnsafeMutableBufferPointer<Int32>
    /// Whether `storage` was allocated by the list (and is freed with it).
    private var isAllocated = false
    /// How many rules the list holds.
    private(set) var count = 0

    private init(storage: UnsafeMutableBufferPointer<Int32>) { unsafe self.storage = storage }

    deinit { if isAllocated { unsafe storage.deallocate() } }

    /// Calls `body` with an empty list.
    static func withEmptyList<Result>(_ body: (inout CandidateList) -> Result) -> Result {
        unsafe withUnsafeTemporaryAllocation(of: Int32.self, capacity: stackCapacity) { storage in
            var list = unsafe CandidateList(storage: storage)
            return body(&list)
        }
    }

    /// The rule at `position`, in the order they were added (after ``sortWithoutRepeats()``,
    /// ascending).
    @inline(__always)
    subscript(position: Int) -> Int32 {
        precondition(position >= 0 && position < count, "a rule of the list")
        return unsafe storage[position]
    }

    /// The rules in the order they were added (after ``sortWithoutRepeats()``, ascending), copied.
    var rules: [Int32] { (0..<count).map { self[$0] } }

    /// Whether some rule of the list satisfies `predicate`.
    func contains(where predicate: (Int32) -> Bool) -> Bool {
        for position in 0..<count where predicate(unsafe storage[position]) { return true }
        return false
    }

    /// Whether the list holds no rule.
    var isEmpty: Bool { count == 0 }

    /// Adds `rule` at the end.
    @inline(__always)
    mutating func append(_ rule: Int32) {
        if unsafe count == storage.count { grow(toHold: count + 1) }
        unsafe storage[count] = rule
        count &+= 1
    }

    /// Adds `rules` at the end, in order.
    mutating func append(contentsOf rules: [Int32]) {
        if unsafe count + rules.count > storage.count { grow(toHold: count + rules.count) }
        for rule in rules {
            unsafe storage[count] = rule
            count &+= 1
        }
    }

    /// Set on a rule index whose rule a shortcut found to match (if its methods admit the request):
    /// PCRE2 need not run for it (see ``ShortcutTable``).
    static let matchesForSure: Int32 = 1 << 30

    /// Replaces each rule with what `transform` makes of it, dropping those it gives nil for,
    /// keeping the order.
    mutating func compact(_ transform: (Int32) -> Int32?) {
        var kept = 0
        for position in 0..<count {
            guard let rule = transform(unsafe storage[position]) else { continue }
            unsafe storage[kept] = rule
            kept += 1
        }
        count = kept
    }

    /// Removes the first occurrence of `rule`, keeping the others in order.
    mutating func remove(_ rule: Int32) {
        guard let position = (0..<count).first(where: { unsafe storage[$0] == rule }) else { return }
        for later in position..<count &- 1 { unsafe storage[later] = unsafe storage[later &+ 1] }
        count &-= 1
    }

    /// Moves the list to memory of its own with room for `capacity` rules or more.
    private mutating func grow(toHold capacity: Int) {
        let larger = unsafe UnsafeMutableBufferPointer<Int32>.allocate(capacity: max(capacity, 2 * storage.count))
        _ = unsafe larger.initialize(fromContentsOf: storage[..<count])
        if isAllocated { unsafe storage.deallocate() }
        unsafe storage = larger
        isAllocated = true
    }

    /// Sorts the list ascending and drops repeats; every rule is below `ruleCount`.
    ///
    /// More than ``fewRules`` rules of a policy of at most ``bitSetRules`` are sorted by marking
    /// each in a bit set on the stack and reading the set back in order, with no comparison to
    /// mispredict: an insertion sort of the 42 candidates of a regex-filter decision mispredicted
    /// the end of nearly every insertion.
    @inline(__always)
    mutating func sortWithoutRepeats(ruleCount: Int) {
        // Most decisions have no candidate or one: nothing to sort, and no call.
        guard count > 1 else { return }
        sortManyWithoutRepeats(ruleCount: ruleCount)
    }

    /// ``sortWithoutRepeats(ruleCount:)`` for two rules or more.
    private mutating func sortManyWithoutRepeats(ruleCount: Int) {
        guard count > Self.fewRules, ruleCount <= Self.bitSetRules else { return sortWithoutRepeats() }
        let words = (ruleCount + 63) >> 6
        unsafe withUnsafeTemporaryAllocation(of: UInt64.self, capacity: words) { bits in
            unsafe bits.initialize(repeating: 0)
            for position in 0..<count {
                let rule = Int(unsafe storage[position])
                precondition(rule >= 0 && rule < ruleCount, "a rule of the policy")
                unsafe bits[rule &>> 6] |= 1 &<< UInt64(truncatingIfNeeded: rule & 63)
            }
            // No more rules come back than went in: each is written at or before its old place.
            count = 0
            for word in 0..<words {
                var remaining = unsafe bits[word]
                while remaining != 0 {
                    unsafe storage[count] = Int32(truncatingIfNeeded: word &<< 6 | remaining.trailingZeroBitCount)
                    count &+= 1
                    remaining &= remaining &- 1
                }
            }
        }
    }

    /// Lists of at most this many rules are sorted by insertion.
    static let fewRules = 16
    /// Policies of at most this many rules have their longer lists sorted through a bit set (512
    /// bytes on the stack).
    static let bitSetRules = 4_096

    /// Sorts the list ascending and drops repeats.
    mutating func sortWithoutRepeats() {
        guard count > 1 else { return }
        if count <= Self.stackCapacity {
            // Insertion sort: usually a handful of rules, or the rules run for every request
            // (ascending already) and a few more.
            for position in 1..<count {
                let rule = unsafe storage[position]
                var hole = position
                while hole > 0, unsafe storage[hole - 1] > rule {
                    unsafe storage[hole] = unsafe storage[hole - 1]
                    hole -= 1
                }
                unsafe storage[hole] = rule
            }
        } else {
            unsafe storage[..<count].sort()
        }
        var unique = 1
        for position in 1..<count where unsafe storage[position] != storage[unique - 1] {
            unsafe storage[unique] = unsafe storage[position]
            unique += 1
        }
        count = unique
    }
}
