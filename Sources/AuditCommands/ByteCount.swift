import ArgumentParser

/// A byte count written as a number with an optional unit `K`, `M`, `G` or `T` (powers of 1024; `KB`, `KiB`,
/// either case and a space before the unit read the same), the number whole or with a fraction (`1.5G`); a usage
/// error naming `option` otherwise.
func byteCount(_ text: String, option: String) throws -> Int {
    var number = Substring(text.uppercased())
    if number.hasSuffix("IB") {
        number = number.dropLast(2)
    } else if number.hasSuffix("B") {
        number = number.dropLast()
    }
    var multiplier = 1
    switch number.last {
    case "K": multiplier = 1 << 10
    case "M": multiplier = 1 << 20
    case "G": multiplier = 1 << 30
    case "T": multiplier = 1 << 40
    default: break
    }
    if multiplier > 1 { number = number.dropLast() }
    while number.last == " " { number = number.dropLast() }
    let parts = number.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
    let isNumber =
        !parts[0].isEmpty && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isNumber } }
    let count: Int? =
        if !isNumber {
            nil
        } else if parts.count == 1 {
            Int(number).flatMap { $0 <= Int.max / multiplier ? $0 * multiplier : nil }
        } else {
            Double(number).map { $0 * Double(multiplier) }.flatMap { $0 < 0x1p62 ? Int($0) : nil }
        }
    guard let count, count > 0 else {
        throw ValidationError("\(option): expected a size such as 1073741824, 512M, 1.5G or 2 GiB, got '\(text)'")
    }
    return count
}
