/// SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104) over bytes, for the audit log's hash chain and
/// the fingerprints of redacted secrets.
///
/// Plain Swift, no pointers: the log's writer hashes each line once, off the network path, and the
/// tests check the function against the FIPS and RFC 4231 vectors and against Python's `hashlib`
/// over real log files.
public struct SHA256: Sendable {
    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19
    )
    /// Bytes of a block not yet full.
    private var block: [UInt8] = []
    /// Bytes compressed so far (whole blocks).
    private var length: UInt64 = 0

    /// A new hash.
    public init() {
        block.reserveCapacity(64)
    }

    /// Adds `bytes` to the message.
    public mutating func update(_ bytes: some Sequence<UInt8>) {
        let input = Array(bytes)
        var schedule = [UInt32](repeating: 0, count: 64)
        var index = 0
        if !block.isEmpty {
            let take = min(64 - block.count, input.count)
            block += input[0..<take]
            index = take
            guard block.count == 64 else { return }
            compress(block, at: 0, schedule: &schedule)
            block.removeAll(keepingCapacity: true)
        }
        while input.count - index >= 64 {
            compress(input, at: index, schedule: &schedule)
            index += 64
        }
        block += input[index...]
    }

    /// The 32-byte digest of the message so far.
    public func finalize() -> [UInt8] {
        var copy = self
        let bitLength = (length + UInt64(block.count)) &* 8
        var tail = block + [0x80]
        while tail.count % 64 != 56 { tail.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) {
            tail.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift)))
        }
        copy.block.removeAll()
        var schedule = [UInt32](repeating: 0, count: 64)
        for offset in stride(from: 0, to: tail.count, by: 64) { copy.compress(tail, at: offset, schedule: &schedule) }
        let words = [
            copy.state.0, copy.state.1, copy.state.2, copy.state.3, copy.state.4, copy.state.5, copy.state.6,
            copy.state.7,
        ]
        return words.flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> UInt32(24 - 8 * $0)) } }
    }

    /// The digest of `bytes`.
    public static func hash(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// HMAC-SHA-256 of `message` under `key`.
    public static func hmac(key: [UInt8], message: some Sequence<UInt8>) -> [UInt8] {
        var key = key.count > 64 ? hash(key) : key
        key += [UInt8](repeating: 0, count: 64 - key.count)
        var inner = SHA256()
        inner.update(key.map { $0 ^ 0x36 } + Array(message))
        var outer = SHA256()
        outer.update(key.map { $0 ^ 0x5c } + inner.finalize())
        return outer.finalize()
    }

    private static let k: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    /// Runs the compression function over the 64 bytes of `data` at `offset`; `w` is scratch
    /// space for the message schedule (64 words).
    ///
    /// The one place this type reads through pointers: the block, the schedule and the round
    /// constants are read without bounds checks (every index is below 64 by construction, and
    /// `offset + 64 <= data.count` is checked first), which more than doubles the speed.
    private mutating func compress(_ data: [UInt8], at offset: Int, schedule w: inout [UInt32]) {
        precondition(offset >= 0 && offset + 64 <= data.count && w.count == 64)
        length &+= 64
        var (a, b, c, d, e, f, g, h) = state
        unsafe data.withUnsafeBufferPointer { bytes in
            unsafe w.withUnsafeMutableBufferPointer { w in
                unsafe Self.k.withUnsafeBufferPointer { k in
                    for i in 0..<16 {
                        let at = offset + 4 * i
                        unsafe w[i] =
                            unsafe UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8
                            | UInt32(bytes[at + 3])
                    }
                    for i in 16..<64 {
                        let s0 = unsafe w[i - 15].rotatedRight(7) ^ w[i - 15].rotatedRight(18) ^ (w[i - 15] >> 3)
                        let s1 = unsafe w[i - 2].rotatedRight(17) ^ w[i - 2].rotatedRight(19) ^ (w[i - 2] >> 10)
                        unsafe w[i] = unsafe w[i - 16] &+ s0 &+ w[i - 7] &+ s1
                    }
                    for i in 0..<64 {
                        let s1 = e.rotatedRight(6) ^ e.rotatedRight(11) ^ e.rotatedRight(25)
                        let choice = (e & f) ^ (~e & g)
                        let t1 = unsafe h &+ s1 &+ choice &+ k[i] &+ w[i]
                        let s0 = a.rotatedRight(2) ^ a.rotatedRight(13) ^ a.rotatedRight(22)
                        let majority = (a & b) ^ (a & c) ^ (b & c)
                        let t2 = s0 &+ majority
                        (h, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ t2)
                    }
                }
            }
        }
        state = (
            state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d, state.4 &+ e, state.5 &+ f, state.6 &+ g,
            state.7 &+ h
        )
    }
}

extension UInt32 {
    fileprivate func rotatedRight(_ count: UInt32) -> UInt32 { (self >> count) | (self << (32 - count)) }
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
