import AuditReport
import CSHA256
import Foundation
import Testing

@Suite struct SHA256Tests {
    static let vectors: [(String, String)] = [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
        (String(repeating: "a", count: 1_000_000), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
    ]

    @Test("SHA-256 gives the FIPS 180-4 digests", arguments: vectors.map { $0 })
    func fipsVectors(_ message: String, _ digest: String) {
        #expect(hex(SHA256.hash(Array(message.utf8))) == digest)
    }

    @Test("SHA-256 agrees with Python's hashlib on every length from 0 to 200 bytes")
    func agreesWithPython() throws {
        let lengths = Array(0...200)
        let script =
            "import hashlib\nfor n in range(201): print(hashlib.sha256(bytes(i % 251 for i in range(n))).hexdigest())"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let expected = output.split(separator: "\n").map(String.init)
        let ours = lengths.map { n in hex(SHA256.hash((0..<n).map { UInt8($0 % 251) })) }
        #expect(ours == expected)
    }

    static let hmacVectors: [([UInt8], String, String)] = [
        (
            [UInt8](repeating: 0x0b, count: 20), "Hi There",
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        ),
        (
            Array("Jefe".utf8), "what do ya want for nothing?",
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        ),
        (
            [UInt8](repeating: 0xaa, count: 131), "Test Using Larger Than Block-Size Key - Hash Key First",
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        ),
    ]

    @Test("HMAC-SHA-256 gives the RFC 4231 values", arguments: hmacVectors.map { $0 })
    func rfc4231(_ key: [UInt8], _ message: String, _ mac: String) {
        #expect(hex(SHA256.hmac(key: key, message: Array(message.utf8))) == mac)
    }

    @Test("SHA-256 of a message fed in pieces of every size from 1 to 130 bytes equals its one-call digest")
    func piecesEqualWhole() {
        let message = (0..<700).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        let whole = SHA256.hash(message)
        for size in 1...130 {
            var hasher = SHA256()
            for start in stride(from: 0, to: message.count, by: size) {
                hasher.update(message[start..<min(start + size, message.count)])
            }
            #expect(hasher.finalize() == whole, "pieces of \(size) bytes")
        }
    }

    @Test("SHA-256 of a sequence without contiguous storage equals that of the same bytes in an array")
    func sequenceWithoutContiguousStorage() {
        let lengths = [0, 1, 55, 56, 63, 64, 65, 200]
        for length in lengths {
            let bytes = (0..<length).lazy.map { UInt8(truncatingIfNeeded: $0 &* 7) }
            #expect(SHA256.hash(bytes) == SHA256.hash(Array(bytes)), "\(length) bytes")
        }
    }

    @Test(
        "The processor's SHA instructions give the portable code's state for 1 to 64 blocks",
        .enabled(if: csha256_uses_hardware() == 1, "this processor has no SHA instructions"))
    func hardwareAgreesWithPortable() {
        var generator = SystemRandomNumberGenerator()
        for blocks in 1...64 {
            let data = (0..<(64 * blocks)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            var hardware: [UInt32] = [
                0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19,
            ]
            var portable = hardware
            csha256_compress(&hardware, data, blocks)
            csha256_compress_portable(&portable, data, blocks)
            #expect(hardware == portable, "\(blocks) blocks")
        }
    }

    private func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}
