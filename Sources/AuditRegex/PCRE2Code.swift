import AuditLocking
internal import CPCRE2
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Owns one compiled PCRE2 program and its match context; the only place that touches libpcre2.
///
/// The program is JIT-compiled on its first match rather than when it is compiled: a policy of
/// 100,000 rules loads in a fraction of the time and memory, and the few rules a workload reaches
/// are compiled once each.
///
/// `@unchecked Sendable`: `code` and `context` are written only in `init` (compile, limits) and
/// freed in `deinit`, except that the JIT compiler adds machine code to `code` once, under
/// `jitLock`, before any match may run: a match first reads `jitState` (acquiring), and only a
/// state other than `notCompiled` lets it run, by which time the JIT compile has finished
/// (released). `pcre2_match` only reads the program, and every call gets its own match data, so
/// any number of threads may match concurrently.
///
/// The C boundary of this module: the PCRE2 pointers it owns and every call into PCRE2 are here,
/// marked `unsafe`; what it gives out (match ranges, errors) is safe.
@safe
final class PCRE2Code: @unchecked Sendable {
    private let code: OpaquePointer
    private let context: OpaquePointer
    /// `notCompiled`, `jitCompiled` or `interpreted`.
    private let jitState = Atomic<UInt8>(JITState.notCompiled)
    private let jitLock = Locked(())

    private enum JITState {
        static let notCompiled: UInt8 = 0
        static let jitCompiled: UInt8 = 1
        /// The JIT compiler declined (or is unavailable): the interpreter runs every match.
        static let interpreted: UInt8 = 2
    }
    /// Number of capturing groups in the pattern.
    let captureGroupCount: Int

    init(pattern: String, caseInsensitive: Bool, limits: MatchLimits) throws(PatternError) {
        var options = UInt32(PCRE2_UTF | PCRE2_MATCH_INVALID_UTF)
        if caseInsensitive { options |= UInt32(PCRE2_CASELESS) }
        var errorCode: Int32 = 0
        var errorOffset = 0
        let compiled = unsafe Array(pattern.utf8).withUnsafeBufferPointer { bytes in
            unsafe pcre2_compile_8(bytes.baseAddress, bytes.count, options, &errorCode, &errorOffset, nil)
        }
        guard let compiled = unsafe compiled else {
            throw .invalidPattern(
                message: Self.message(for: errorCode),
                column: Self.column(ofByteOffset: errorOffset, in: pattern)
            )
        }
        guard let context = unsafe pcre2_match_context_create_8(nil) else {
            unsafe pcre2_code_free_8(compiled)
            throw .outOfMemory
        }
        unsafe pcre2_set_match_limit_8(context, limits.matchLimit)
        unsafe pcre2_set_depth_limit_8(context, limits.depthLimit)
        unsafe self.code = compiled
        unsafe self.context = context
        var groups: UInt32 = 0
        unsafe pcre2_pattern_info_8(compiled, UInt32(PCRE2_INFO_CAPTURECOUNT), &groups)
        self.captureGroupCount = Int(groups)
    }

    /// Whether matching runs JIT-compiled machine code (JIT-compiling now if no match has yet).
    var isJITCompiled: Bool {
        prepareForMatching()
        return jitState.load(ordering: .acquiring) == JITState.jitCompiled
    }

    /// Whether the JIT compiler has run (for tests).
    var hasTriedJIT: Bool { jitState.load(ordering: .acquiring) != JITState.notCompiled }

    /// JIT-compiles the program unless that was done or tried; every match calls this first.
    @inline(__always)
    private func prepareForMatching() {
        guard jitState.load(ordering: .acquiring) == JITState.notCompiled else { return }
        jitLock.withLock { _ in
            guard jitState.load(ordering: .acquiring) == JITState.notCompiled else { return }
            let isCompiled = unsafe pcre2_jit_compile_8(code, UInt32(PCRE2_JIT_COMPLETE)) == 0
            jitState.store(isCompiled ? JITState.jitCompiled : JITState.interpreted, ordering: .releasing)
        }
    }

    deinit {
        unsafe pcre2_match_context_free_8(context)
        unsafe pcre2_code_free_8(code)
    }

    /// Whether the pattern matches anywhere in `subject`, reading no groups.
    func matches(_ subject: MatchSubject) throws(PatternError) -> Bool {
        prepareForMatching()
        guard let matchData = unsafe Self.threadMatchData() else { throw .outOfMemory }
        // The closure captures the C pointers, not `self`: a captured reference would cost two
        // atomic reference counts a match.
        let (code, context) = unsafe (self.code, self.context)
        let result = unsafe subject.withBytes { bytes in unsafe Self.run(code, context, bytes, matchData) }
        if result == PCRE2_ERROR_NOMATCH { return false }
        guard result >= 0 else { throw Self.matchError(result) }
        return true
    }

    /// How the pattern matches subjects that begin with `prefix` (``Pattern/PrefixMatch``):
    /// a hard partial match by the interpreter (the JIT code is compiled for complete matches only).
    func prefixMatch(_ prefix: UnsafeBufferPointer<UInt8>) throws(PatternError) -> Pattern.PrefixMatch {
        guard let matchData = unsafe pcre2_match_data_create_8(1, nil) else { throw .outOfMemory }
        defer { unsafe pcre2_match_data_free_8(matchData) }
        var empty: UInt8 = 0
        let result = unsafe withUnsafePointer(to: &empty) { fallback in
            let base = unsafe prefix.baseAddress ?? fallback
            return unsafe pcre2_match_8(
                code, base, prefix.count, 0, UInt32(PCRE2_PARTIAL_HARD | PCRE2_NO_JIT), matchData, context)
        }
        if result == PCRE2_ERROR_PARTIAL { return .some }
        if result >= 0 { return .every }
        guard result == PCRE2_ERROR_NOMATCH else { throw Self.matchError(result) }
        // A pattern that may start its match anywhere can still match inside what follows the prefix.
        return isAnchored ? .none : .some
    }

    /// Whether every match must start at the subject's start (all top-level alternatives begin with
    /// `^` or `\A`, or PCRE2 found the pattern anchored otherwise).
    private var isAnchored: Bool {
        var options: UInt32 = 0
        unsafe pcre2_pattern_info_8(code, UInt32(PCRE2_INFO_ALLOPTIONS), &options)
        return options & UInt32(PCRE2_ANCHORED) != 0
    }

    /// The byte ranges of the groups of the first match in `subject` (index 0 is the whole
    /// match; unset groups are nil), or nil when the pattern does not match.
    func firstMatch(in subject: UnsafeBufferPointer<UInt8>) throws(PatternError) -> [Range<Int>?]? {
        prepareForMatching()
        guard let matchData = unsafe pcre2_match_data_create_from_pattern_8(code, nil) else { throw .outOfMemory }
        defer { unsafe pcre2_match_data_free_8(matchData) }
        let result = unsafe Self.run(code, context, subject, matchData)
        if result == PCRE2_ERROR_NOMATCH { return nil }
        guard result >= 0 else { throw Self.matchError(result) }
        let pairs = unsafe Int(pcre2_get_ovector_count_8(matchData))
        guard let ovector = unsafe pcre2_get_ovector_pointer_8(matchData) else { return [] }
        let unset = ~0
        return (0..<pairs).map { group in
            let start = unsafe ovector[2 * group]
            let end = unsafe ovector[2 * group + 1]
            return start == unset || end < start ? nil : start..<end
        }
    }

    /// `pcre2_match_8` of `code` over `subject` into `matchData`; when the JIT's small machine stack
    /// runs out, again with the interpreter, which works on the heap under the limits.
    private static func run(
        _ code: OpaquePointer, _ context: OpaquePointer, _ subject: UnsafeBufferPointer<UInt8>,
        _ matchData: OpaquePointer
    ) -> Int32 {
        // An empty buffer may have no base address; PCRE2 needs a valid pointer even for length 0.
        var empty: UInt8 = 0
        return unsafe withUnsafePointer(to: &empty) { fallback in
            let base = unsafe subject.baseAddress ?? fallback
            let result = unsafe pcre2_match_8(code, base, subject.count, 0, 0, matchData, context)
            guard result == PCRE2_ERROR_JIT_STACKLIMIT else { return result }
            return unsafe pcre2_match_8(code, base, subject.count, 0, UInt32(PCRE2_NO_JIT), matchData, context)
        }
    }

    /// This thread's match data for yes/no matches (one ovector pair), created on first use and
    /// freed when the thread exits. Never shared between threads, so no lock is needed.
    private static func threadMatchData() -> OpaquePointer? {
        let key = matchDataKey
        if let existing = unsafe pthread_getspecific(key) { return OpaquePointer(existing) }
        guard let created = unsafe pcre2_match_data_create_8(1, nil) else { return nil }
        unsafe pthread_setspecific(key, UnsafeRawPointer(created))
        return unsafe created
    }

    private static let matchDataKey: pthread_key_t = {
        var key = pthread_key_t()
        unsafe pthread_key_create(&key) { pointer in
            unsafe pcre2_match_data_free_8(OpaquePointer(pointer))
        }
        return key
    }()

    private static func matchError(_ code: Int32) -> PatternError {
        switch code {
        case PCRE2_ERROR_MATCHLIMIT: .matchLimitExceeded
        case PCRE2_ERROR_DEPTHLIMIT: .depthLimitExceeded
        case PCRE2_ERROR_HEAPLIMIT: .heapLimitExceeded
        case PCRE2_ERROR_NOMEMORY: .outOfMemory
        default: .matchFailed(code: Int(code), message: message(for: code))
        }
    }

    /// PCRE2's own text for an error code.
    static func message(for code: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 256)
        let length = unsafe buffer.withUnsafeMutableBufferPointer { buffer in
            unsafe pcre2_get_error_message_8(code, buffer.baseAddress, buffer.count)
        }
        guard length > 0 else { return "PCRE2 error \(code)" }
        return String(decoding: buffer.prefix(Int(length)), as: UTF8.self)
    }

    /// Converts PCRE2's byte offset into the pattern to a 1-based character column.
    static func column(ofByteOffset offset: Int, in pattern: String) -> Int {
        let prefix = pattern.utf8.prefix(max(0, offset))
        return String(decoding: prefix, as: UTF8.self).count + 1
    }

    /// The linked library's version, e.g. "10.42 2022-12-11".
    static var libraryVersion: String {
        var buffer = [UInt8](repeating: 0, count: 64)
        let length = unsafe buffer.withUnsafeMutableBytes {
            unsafe pcre2_config_8(UInt32(PCRE2_CONFIG_VERSION), $0.baseAddress)
        }
        guard length > 1 else { return "unknown" }
        return String(decoding: buffer.prefix(Int(length) - 1), as: UTF8.self)
    }
}
