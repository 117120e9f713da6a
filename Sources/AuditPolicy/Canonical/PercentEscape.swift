extension UInt8 {
    /// The value of this byte as a hexadecimal digit (`0-9`, `a-f`, `A-F`), or nil.
    var hexDigitValue: UInt8? {
        switch self {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): self - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): self - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): self - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// The byte the escape at `index` of `bytes` stands for: a `%` followed by two hex digits; nil when
/// there is none there (a `%` without two hex digits after it is no escape, and is kept as written).
func percentEscapedByte<Bytes: RandomAccessCollection<UInt8>>(in bytes: Bytes, at index: Int) -> UInt8?
where Bytes.Index == Int {
    guard bytes[index] == UInt8(ascii: "%"), bytes.endIndex - index >= 3,
        let high = bytes[index + 1].hexDigitValue, let low = bytes[index + 2].hexDigitValue
    else { return nil }
    return high << 4 | low
}
