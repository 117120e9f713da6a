#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How many processors this process may run on, for splitting work across them.
public enum ProcessorCount {
    /// The processors online (at least 1).
    public static let active: Int = {
        #if canImport(Glibc)
            return max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        #else
            return max(1, Int(sysconf(_SC_NPROCESSORS_ONLN)))
        #endif
    }()
}
