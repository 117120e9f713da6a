/// An immutable hash table from key hashes to the rules that need that key.
///
/// Open addressing over 64-bit key hashes, with the rule lists packed in one array. Two keys with
/// the same 64-bit hash share a slot: that only adds candidates, which PCRE2 then rejects.
final class KeyTable: Sendable {
    private struct Slot {
        var hash: UInt64 = 0
        var start: Int32 = 0
        var end: Int32 = 0
    }

    private let slots: ContiguousArray<Slot>
    private let postings: ContiguousArray<Posting>

    /// A rule filed under a key; the bytes the subject must have just before and after the token
    /// found (0: any, see ``IndexKey/before``); and the hashes of up to two more tokens the subject
    /// must have (0: none).
    private struct Posting {
        var rule: Int32
        var before: UInt8
        var after: UInt8
        var confirmation: UInt64
        var secondConfirmation: UInt64
    }

    /// One filing: key hash, rule, the bytes around the token (0: any), and the hashes of up to two
    /// confirmation tokens (0 when none).
    typealias Entry = (
        hash: UInt64, rule: Int32, before: UInt8, after: UInt8, confirmation: UInt64, secondConfirmation: UInt64
    )
    private let mask: Int
    /// One bit per key hash (bits 40 and up of the hash pick the bit): most tokens of a request are
    /// no key at all, and this filter says so without touching the table. About 16 bits per key
    /// (so about 6 % of non-keys pass), between 4 KiB and 256 KiB: small policies' filters stay in
    /// the first-level cache.
    private let filter: ContiguousArray<UInt64>
    private let filterMask: Int

    /// Builds the table from (key hash, rule index) pairs.
    init(entries: [Entry]) {
        let sorted = entries.sorted { ($0.hash, $0.rule) < ($1.hash, $1.rule) }
        var distinct = 0
        for index in sorted.indices where index == 0 || sorted[index].hash != sorted[index - 1].hash { distinct += 1 }
        var capacity = 8
        while capacity < distinct * 2 { capacity *= 2 }
        var slots = ContiguousArray(repeating: Slot(), count: capacity)
        var postings: ContiguousArray<Posting> = []
        postings.reserveCapacity(sorted.count)
        var index = 0
        while index < sorted.count {
            let hash = sorted[index].hash
            let start = postings.count
            while index < sorted.count, sorted[index].hash == hash {
                if postings.count > start, postings[postings.count - 1].rule == sorted[index].rule {
                    // The same rule twice under one key (two occurrences of the token): either
                    // occurrence may be the one a subject has, so only bytes both agree on stay.
                    if postings[postings.count - 1].before != sorted[index].before {
                        postings[postings.count - 1].before = 0
                    }
                    if postings[postings.count - 1].after != sorted[index].after {
                        postings[postings.count - 1].after = 0
                    }
                } else {
                    postings.append(
                        Posting(
                            rule: sorted[index].rule, before: sorted[index].before, after: sorted[index].after,
                            confirmation: sorted[index].confirmation,
                            secondConfirmation: sorted[index].secondConfirmation))
                }
                index += 1
            }
            var slot = Int(truncatingIfNeeded: hash) & (capacity - 1)
            while slots[slot].hash != 0 { slot = (slot + 1) & (capacity - 1) }
            slots[slot] = Slot(hash: hash, start: Int32(start), end: Int32(postings.count))
        }
        var filterBits = 1 << 15
        while filterBits < distinct * 16, filterBits < 1 << 21 { filterBits *= 2 }
        var filter = ContiguousArray<UInt64>(repeating: 0, count: filterBits / 64)
        for slot in slots where slot.hash != 0 {
            let bit = Int(truncatingIfNeeded: slot.hash >> 40) & (filterBits - 1)
            filter[bit >> 6] |= 1 << UInt64(bit & 63)
        }
        self.filterMask = filterBits - 1
        self.filter = filter
        self.slots = slots
        self.postings = postings
        self.mask = capacity - 1
    }

    /// Number of distinct keys.
    var keyCount: Int { slots.count { $0.hash != 0 } }

    /// Appends the rules filed under `hash` whose confirmation tokens are among `tokens` and whose
    /// bytes around the token are `before` and `after` (0: the subject has none there).
    ///
    /// A `:` after the token stands for any byte: normalizing a URL drops a default port (`:443`),
    /// so the token before it is followed by something else in the URL a rule sees.
    ///
    /// `isGated`: the caller has checked the hash against a filter of its own (see ``TokenGate``),
    /// and the table's is skipped.
    @inline(__always)
    func collect(
        _ hash: UInt64, before: UInt8 = 0, after: UInt8 = 0, confirmedBy tokens: inout TokenHashes,
        into candidates: inout CandidateList, isGated: Bool = false
    ) {
        let bit = Int(truncatingIfNeeded: hash >> 40) & filterMask
        guard isGated || filter[bit &>> 6] & (1 &<< UInt64(truncatingIfNeeded: bit)) != 0 else { return }
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let found = slots[slot]
            if found.hash == hash {
                for index in Int(found.start)..<Int(found.end) {
                    let posting = postings[index]
                    guard posting.before == 0 || posting.before == before,
                        posting.after == 0 || posting.after == after || after == UInt8(ascii: ":")
                    else { continue }
                    if posting.confirmation == 0
                        || (tokens.contains(posting.confirmation)
                            && (posting.secondConfirmation == 0 || tokens.contains(posting.secondConfirmation)))
                    {
                        candidates.append(posting.rule)
                    }
                }
                return
            }
            if found.hash == 0 { return }
            slot = (slot &+ 1) & mask
        }
    }
}
