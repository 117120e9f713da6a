extension Collection<UInt8> {
    /// Whether these bytes equal `other`'s ignoring the case of ASCII letters (header names,
    /// authentication schemes), without allocating.
    package func equalsIgnoringASCIICase(_ other: some Collection<UInt8>) -> Bool {
        guard count == other.count else { return false }
        for (a, b) in zip(self, other) where a != b {
            let lower = a | 0x20
            guard lower == b | 0x20, lower >= 0x61, lower <= 0x7A else { return false }
        }
        return true
    }
}

extension String {
    /// Whether the text equals `other` ignoring the case of ASCII letters, without allocating.
    package func equalsIgnoringASCIICase(_ other: String) -> Bool {
        utf8.equalsIgnoringASCIICase(other.utf8)
    }
}
