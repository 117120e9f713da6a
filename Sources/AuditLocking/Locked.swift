import Synchronization

/// `Synchronization.Mutex`, plus what ThreadSanitizer needs to see it.
///
/// On Linux `Mutex` locks with futexes inside the prebuilt Synchronization library, which
/// ThreadSanitizer does not instrument: it then reports every critical section as a race (a
/// ten-line program incrementing a `Mutex<Int>` from four threads shows it). Built with
/// `-DAUDIT_TSAN` (`make test-tsan`), each critical section tells ThreadSanitizer it acquires and
/// releases this lock; otherwise this is exactly a `Mutex`.
public struct Locked<Value>: ~Copyable, @unchecked Sendable {
    // @unchecked: the value is only reached inside `mutex.withLock`, as with `Mutex` itself.
    @usableFromInline let mutex: Mutex<Value>
    #if AUDIT_TSAN
        @usableFromInline let token = Token()
        @usableFromInline final class Token: Sendable { @usableFromInline init() {} }
    #endif

    /// A lock guarding `initialValue`.
    @inlinable
    public init(_ initialValue: sending Value) {
        mutex = Mutex(initialValue)
    }

    /// Runs `body` with exclusive access to the value.
    @inlinable
    public borrowing func withLock<Result, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            #if AUDIT_TSAN
                let address = Unmanaged.passUnretained(token).toOpaque()
                tsanAcquire(address)
                defer { tsanRelease(address) }
            #endif
            return try body(&value)
        }
    }
}

#if AUDIT_TSAN
    @usableFromInline @_silgen_name("__tsan_acquire") func tsanAcquire(_ address: UnsafeMutableRawPointer)
    @usableFromInline @_silgen_name("__tsan_release") func tsanRelease(_ address: UnsafeMutableRawPointer)
#endif
