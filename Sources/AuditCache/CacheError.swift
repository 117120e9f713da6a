/// Why a cache folder cannot be used.
public enum CacheError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The folder cannot be created or read.
    case unusableDirectory(path: String, reason: String)
    /// The size bound is not a positive number of bytes.
    case invalidSize(Int)

    /// A message naming the folder and what to do.
    public var description: String {
        switch self {
        case .unusableDirectory(let path, let reason): "cache folder '\(path)' cannot be used: \(reason)"
        case .invalidSize(let bytes): "cache size must be a positive number of bytes, got \(bytes)"
        }
    }
}
