import ArgumentParser

/// A byte count written as a number with an optional unit `K`, `M`, `G` (powers of 1024); a
/// usage error naming `option` otherwise.
func byteCount(_ text: String, option: String) throws -> Int {
    var digits = Substring(text.uppercased())
    var multiplier = 1
    if digits.hasSuffix("IB") {
        digits = digits.dropLast(2)
    } else if digits.hasSuffix("B") {
        digits = digits.dropLast()
    }
    switch digits.last {
    case "K": multiplier = 1 << 10
    case "M": multiplier = 1 << 20
    case "G": multiplier = 1 << 30
    case "T": multiplier = 1 << 40
    default: break
    }
    if multiplier > 1 { digits = digits.dropLast() }
    guard let value = Int(digits), value > 0, value <= Int.max / multiplier else {
        throw ValidationError("\(option): expected a size such as 1073741824, 512M or 2G, got '\(text)'")
    }
    return value * multiplier
}
