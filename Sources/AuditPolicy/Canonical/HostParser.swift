/// The host of a URL of a special scheme, parsed as the WHATWG URL Standard's host parser does:
/// an IPv6 address in brackets, an IPv4 address in any of its number forms, or a domain mapped to
/// lower-case ASCII.
enum ParsedHost: Equatable {
    /// A domain, lower-case ASCII (its trailing dot kept; the canonicalizer removes it).
    case domain([UInt8])
    /// An IPv4 address.
    case ipv4(UInt32)
    /// An IPv6 address, eight pieces.
    case ipv6([UInt16])

    /// Parses `input` (the host as written, between the authority's `@` and its port).
    static func parse(_ input: ArraySlice<UInt8>, changes: inout URLChanges) -> Result<ParsedHost, URLRejection> {
        if input.first == UInt8(ascii: "[") {
            guard input.count >= 2, input.last == UInt8(ascii: "]") else {
                return .failure(.invalidIPv6(String(decoding: input, as: UTF8.self)))
            }
            guard let pieces = parseIPv6(input.dropFirst().dropLast()) else {
                return .failure(.invalidIPv6(String(decoding: input, as: UTF8.self)))
            }
            return .success(.ipv6(pieces))
        }
        var decoded = input
        if input.contains(UInt8(ascii: "%")) {
            decoded = percentDecoded(input)[...]
            if decoded != input { changes.insert(.hostPercentDecoded) }
        }
        var ascii: [UInt8]
        // An ASCII host is only lower-cased, as the standard's domain-to-ASCII does when it is
        // not strict: `xn--` labels are not decoded to be checked.
        if decoded.allSatisfy({ $0 < 0x80 }) {
            ascii = Array(decoded)
            for index in ascii.indices where ascii[index] &- UInt8(ascii: "A") < 26 {
                ascii[index] |= 0x20
                changes.insert(.hostLowerCased)
            }
        } else {
            guard let text = String(validating: decoded, as: UTF8.self) else { return .failure(.hostNotUTF8) }
            switch IDNAMapping.toASCII(text) {
            case .success(let mapped):
                ascii = Array(mapped.utf8)
                if ascii != Array(decoded) { changes.insert(.hostMappedByIDNA) }
            case .failure(let rejection): return .failure(rejection)
            }
        }
        if let forbidden = ascii.first(where: isForbiddenDomainByte) {
            return .failure(.forbiddenHostCharacter(Unicode.Scalar(forbidden)))
        }
        guard endsInANumber(ascii) else { return .success(.domain(ascii)) }
        guard let address = parseIPv4(ascii) else {
            return .failure(.invalidIPv4(String(decoding: ascii, as: UTF8.self)))
        }
        return .success(.ipv4(address))
    }

    /// `input` with every `%XX` replaced by its byte; a `%` not followed by two hex digits is kept.
    static func percentDecoded(_ input: ArraySlice<UInt8>) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(input.count)
        var index = input.startIndex
        while index < input.endIndex {
            if let decoded = percentEscapedByte(in: input, at: index) {
                output.append(decoded)
                index += 3
            } else {
                output.append(input[index])
                index += 1
            }
        }
        return output
    }

    /// The forbidden domain code points of the URL Standard that are ASCII.
    private static func isForbiddenDomainByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0...0x20, 0x7F, UInt8(ascii: "#"), UInt8(ascii: "%"), UInt8(ascii: "/"), UInt8(ascii: ":"),
            UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "?"), UInt8(ascii: "@"), UInt8(ascii: "["),
            UInt8(ascii: "\\"), UInt8(ascii: "]"), UInt8(ascii: "^"), UInt8(ascii: "|"):
            true
        default: false
        }
    }

    /// Whether the host's last label (before a trailing dot) is a number, which makes the host an
    /// IPv4 address or invalid.
    static func endsInANumber(_ host: [UInt8]) -> Bool {
        var end = host.count
        if end > 0, host[end - 1] == UInt8(ascii: ".") {
            if end == 1 { return false }
            end -= 1
        }
        var start = end
        while start > 0, host[start - 1] != UInt8(ascii: ".") { start -= 1 }
        let last = host[start..<end]
        guard !last.isEmpty else { return false }
        // Most hosts end in letters: no number.
        guard let first = last.first, first &- UInt8(ascii: "0") < 10 else { return false }
        if last.allSatisfy({ $0 &- UInt8(ascii: "0") < 10 }) { return true }
        return ipv4Number(last) != nil
    }

    /// A part of an IPv4 address: hex after `0x`, octal after a leading `0`, else decimal; nil
    /// when empty or not a number. Values past 2³² are capped there (they are invalid anyway).
    private static func ipv4Number(_ part: ArraySlice<UInt8>) -> UInt64? {
        guard !part.isEmpty else { return nil }
        var digits = part
        var radix: UInt64 = 10
        if digits.count >= 2, digits[digits.startIndex] == UInt8(ascii: "0"),
            digits[digits.startIndex + 1] | 0x20 == UInt8(ascii: "x")
        {
            digits = digits.dropFirst(2)
            radix = 16
        } else if digits.count >= 2, digits[digits.startIndex] == UInt8(ascii: "0") {
            digits = digits.dropFirst()
            radix = 8
        }
        var value: UInt64 = 0
        for byte in digits {
            guard let digit = byte.hexDigitValue, UInt64(digit) < radix else { return nil }
            value = min(value * radix + UInt64(digit), 1 << 33)
        }
        return value
    }

    /// The IPv4 address `host` spells in one to four parts, or nil.
    static func parseIPv4(_ host: [UInt8]) -> UInt32? {
        var parts = host.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        if parts.last?.isEmpty == true, parts.count > 1 { parts.removeLast() }
        guard parts.count <= 4 else { return nil }
        var numbers: [UInt64] = []
        for part in parts {
            guard let number = ipv4Number(part) else { return nil }
            numbers.append(number)
        }
        guard let last = numbers.last, numbers.dropLast().allSatisfy({ $0 <= 255 }),
            last < (1 << (8 * UInt64(5 - numbers.count)))
        else { return nil }
        var address = last
        for (index, number) in numbers.dropLast().enumerated() { address += number << (8 * UInt64(3 - index)) }
        return UInt32(truncatingIfNeeded: address)
    }

    /// The eight pieces of the IPv6 address `input` spells (without brackets), or nil: the URL
    /// Standard's IPv6 parser.
    static func parseIPv6(_ input: ArraySlice<UInt8>) -> [UInt16]? {
        let bytes = Array(input)
        var address = [UInt16](repeating: 0, count: 8)
        var pieceIndex = 0
        var compress: Int?
        var pointer = 0
        func at(_ index: Int) -> UInt8? { index < bytes.count ? bytes[index] : nil }
        if at(0) == UInt8(ascii: ":") {
            guard at(1) == UInt8(ascii: ":") else { return nil }
            pointer = 2
            pieceIndex = 1
            compress = 1
        }
        while let byte = at(pointer) {
            guard pieceIndex != 8 else { return nil }
            if byte == UInt8(ascii: ":") {
                guard compress == nil else { return nil }
                pointer += 1
                pieceIndex += 1
                compress = pieceIndex
                continue
            }
            var value: UInt16 = 0
            var length = 0
            while length < 4, let next = at(pointer), let digit = next.hexDigitValue {
                value = value << 4 | UInt16(digit)
                pointer += 1
                length += 1
            }
            if at(pointer) == UInt8(ascii: ".") {
                guard length > 0, pieceIndex <= 6 else { return nil }
                pointer -= length
                var numbersSeen = 0
                while let next = at(pointer) {
                    if numbersSeen > 0 {
                        guard next == UInt8(ascii: "."), numbersSeen < 4 else { return nil }
                        pointer += 1
                    }
                    guard let first = at(pointer), first &- UInt8(ascii: "0") < 10 else { return nil }
                    var piece: Int?
                    while let digitByte = at(pointer), digitByte &- UInt8(ascii: "0") < 10 {
                        let digit = Int(digitByte - UInt8(ascii: "0"))
                        if let current = piece {
                            guard current != 0 else { return nil }
                            piece = current * 10 + digit
                        } else {
                            piece = digit
                        }
                        guard let checked = piece, checked <= 255 else { return nil }
                        pointer += 1
                    }
                    address[pieceIndex] = address[pieceIndex] << 8 | UInt16(piece ?? 0)
                    numbersSeen += 1
                    if numbersSeen == 2 || numbersSeen == 4 { pieceIndex += 1 }
                }
                guard numbersSeen == 4 else { return nil }
                break
            } else if at(pointer) == UInt8(ascii: ":") {
                pointer += 1
                guard at(pointer) != nil else { return nil }
            } else if at(pointer) != nil {
                return nil
            }
            address[pieceIndex] = value
            pieceIndex += 1
        }
        if let compress {
            var swaps = pieceIndex - compress
            pieceIndex = 7
            while pieceIndex != 0, swaps > 0 {
                address.swapAt(pieceIndex, compress + swaps - 1)
                pieceIndex -= 1
                swaps -= 1
            }
        } else if pieceIndex != 8 {
            return nil
        }
        return address
    }

    /// `a.b.c.d`.
    static func serialize(ipv4 address: UInt32) -> [UInt8] {
        let parts = [address >> 24, address >> 16 & 0xFF, address >> 8 & 0xFF, address & 0xFF]
        return Array(parts.map { String($0) }.joined(separator: ".").utf8)
    }

    /// The compressed form (RFC 5952 as the URL Standard serializes it), without brackets.
    static func serialize(ipv6 pieces: [UInt16]) -> [UInt8] {
        var bestStart = -1
        var bestLength = 1
        var index = 0
        while index < 8 {
            guard pieces[index] == 0 else {
                index += 1
                continue
            }
            var end = index
            while end < 8, pieces[end] == 0 { end += 1 }
            if end - index > bestLength {
                bestStart = index
                bestLength = end - index
            }
            index = end
        }
        var output = ""
        var piece = 0
        while piece < 8 {
            if piece == bestStart {
                output += piece == 0 ? "::" : ":"
                piece += bestLength
                continue
            }
            output += String(pieces[piece], radix: 16)
            if piece != 7 { output += ":" }
            piece += 1
        }
        return Array(output.utf8)
    }
}
