import CSHA256

/// SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104) over bytes, for the audit log's hash chain and
/// the fingerprints of redacted secrets.
///
/// This type keeps the message's last partial block and its length; whole blocks go to the
/// compression function in C (`CSHA256`), which uses the processor's SHA instructions where it has
/// them: the log's writer hashes every line, and `audit verify` hashes every line again. The tests
/// check it against the FIPS and RFC 4231 vectors, against Python's `hashlib` over real log files,
/// and the processor's instructions against the portable code over 1 to 64 blocks.
public struct SHA256: Sendable {
    /// The working state a…h.
    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19
    )
    /// The bytes of a block not yet full: the first `blockCount`.
    private var block = InlineArray<64, UInt8>(repeating: 0)
    private var blockCount = 0
    /// Bytes compressed so far (whole blocks).
    private var length: UInt64 = 0

    /// A new hash.
    public init() {}

    /// Adds `bytes` to the message.
    public mutating func update(_ bytes: some Sequence<UInt8>) {
        let isDone: Void? = bytes.withContiguousStorageIfAvailable { bytes in
            unsafe update(UnsafeRawBufferPointer(bytes))
        }
        guard isDone == nil else { return }
        let copy = Array(bytes)
        unsafe copy.withUnsafeBytes { unsafe update($0) }
    }

    /// The 32-byte digest of the message so far.
    public func finalize() -> [UInt8] {
        var copy = self
        let bitLength = (length + UInt64(blockCount)) &* 8
        // The padding: 0x80, zeros, and the length in bits in the last 8 bytes of one block, or of
        // a second when fewer than 9 bytes are left in this one.
        var tail = InlineArray<128, UInt8>(repeating: 0)
        for index in 0..<blockCount { tail[index] = block[index] }
        tail[blockCount] = 0x80
        let tailCount = blockCount < 56 ? 64 : 128
        for byte in 0..<8 { tail[tailCount - 1 - byte] = UInt8(truncatingIfNeeded: bitLength >> UInt64(8 * byte)) }
        unsafe tail.span.withUnsafeBytes { unsafe copy.compress(UnsafeRawBufferPointer(rebasing: $0[..<tailCount])) }
        let state = copy.state
        let words: InlineArray<8, UInt32> = [
            state.0, state.1, state.2, state.3, state.4, state.5, state.6, state.7,
        ]
        return unsafe [UInt8](unsafeUninitializedCapacity: 32) { digest, count in
            for index in 0..<32 {
                unsafe digest[index] = UInt8(truncatingIfNeeded: words[index / 4] >> UInt32(24 - 8 * (index % 4)))
            }
            count = 32
        }
    }

    /// The digest of `bytes`.
    public static func hash(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// HMAC-SHA-256 of `message` under `key`.
    public static func hmac(key: [UInt8], message: some Sequence<UInt8>) -> [UInt8] {
        HMACKey(key).code(for: message)
    }

    /// An HMAC-SHA-256 key (RFC 2104) made ready once: the hash states after its inner and outer
    /// padded blocks, so that each message costs two compressions and no copy of the key.
    public struct HMACKey: Sendable, Hashable {
        /// The key.
        public let key: [UInt8]
        private let inner: SHA256
        private let outer: SHA256

        /// `key` made ready.
        public init(_ key: [UInt8]) {
            self.key = key
            var padded = key.count > 64 ? SHA256.hash(key) : key
            padded += [UInt8](repeating: 0, count: 64 - padded.count)
            var inner = SHA256()
            inner.update(padded.map { $0 ^ 0x36 })
            var outer = SHA256()
            outer.update(padded.map { $0 ^ 0x5c })
            self.inner = inner
            self.outer = outer
        }

        /// HMAC-SHA-256 of `message` under this key.
        public func code(for message: some Sequence<UInt8>) -> [UInt8] {
            var inner = self.inner
            inner.update(message)
            var outer = self.outer
            outer.update(inner.finalize())
            return outer.finalize()
        }

        /// Keys are equal when their bytes are.
        public static func == (left: HMACKey, right: HMACKey) -> Bool { left.key == right.key }

        /// Hashes the key's bytes.
        public func hash(into hasher: inout Hasher) { hasher.combine(key) }
    }

    /// Adds the bytes of `input`: fills the partial block first, compresses every whole block in
    /// place, and keeps the rest.
    private mutating func update(_ input: UnsafeRawBufferPointer) {
        var rest = unsafe input
        if blockCount > 0 {
            let take = min(64 - blockCount, rest.count)
            for index in 0..<take { block[blockCount + index] = unsafe rest[index] }
            blockCount += take
            unsafe rest = UnsafeRawBufferPointer(rebasing: rest[take...])
            guard blockCount == 64 else { return }
            let full = block
            unsafe full.span.withUnsafeBytes { unsafe compress($0) }
            blockCount = 0
        }
        let whole = rest.count / 64 * 64
        if whole > 0 { unsafe compress(UnsafeRawBufferPointer(rebasing: rest[..<whole])) }
        for index in whole..<rest.count { block[index - whole] = unsafe rest[index] }
        blockCount = rest.count - whole
    }

    /// Runs the compression function over `blocks`, a whole number of 64-byte blocks.
    ///
    /// Where this type hands pointers to C: the state tuple, eight `UInt32`s laid out in order, is
    /// read and written as the C function's `uint32_t[8]`.
    private mutating func compress(_ blocks: UnsafeRawBufferPointer) {
        precondition(blocks.count % 64 == 0)
        guard let base = blocks.baseAddress else { return }
        length &+= UInt64(blocks.count)
        unsafe withUnsafeMutablePointer(to: &state) { state in
            unsafe state.withMemoryRebound(to: UInt32.self, capacity: 8) { words in
                unsafe csha256_compress(words, base.assumingMemoryBound(to: UInt8.self), blocks.count / 64)
            }
        }
    }
}

extension Sequence<UInt8> {
    /// The bytes as lower-case hexadecimal.
    var hexString: String { String(decoding: hexBytes, as: UTF8.self) }

    /// The UTF-8 bytes of ``hexString``.
    var hexBytes: [UInt8] {
        var text: [UInt8] = []
        text.reserveCapacity(underestimatedCount * 2)
        for byte in self {
            text.append(hexDigits[Int(byte >> 4)])
            text.append(hexDigits[Int(byte & 0x0f)])
        }
        return text
    }
}

private let hexDigits = Array("0123456789abcdef".utf8)
