import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A command run the way a shell runs it, for `audit run`: found on `PATH`, in the same process
/// group (so that the terminal's Ctrl-C and job control reach it as they would without `audit`),
/// with the standard streams inherited, an empty signal mask and default signal handling whatever
/// the parent blocks or ignores.
///
/// Foundation's `Process` puts the child in a process group of its own and passes the parent's
/// signal mask on, which suits neither a terminal nor a wrapper. The pointer work of `posix_spawnp`
/// is here, and only here.
@safe
struct ChildProcess {
    /// The child's process id.
    let pid: pid_t

    /// What the spawn failed with.
    struct SpawnError: Error, CustomStringConvertible {
        let command: String
        let code: Int32
        var description: String { "cannot run '\(command)': \(unsafe String(cString: strerror(code)))" }
        /// The status a shell exits with for it: 127 when there is no such command, 126 when there
        /// is one that cannot be run (not executable, a folder, not a program).
        var exitStatus: Int32 { code == ENOENT ? 127 : 126 }
    }

    /// Starts `arguments[0]` (looked up on the `PATH` of `environment`) with `arguments` and
    /// `environment`.
    init(arguments: [String], environment: [String: String]) throws {
        precondition(!arguments.isEmpty)
        var attributes = posix_spawnattr_t()
        unsafe posix_spawnattr_init(&attributes)
        defer { unsafe posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        unsafe sigemptyset(&empty)
        unsafe posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        unsafe sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD] { unsafe sigaddset(&defaults, signal) }
        unsafe posix_spawnattr_setsigdefault(&attributes, &defaults)
        unsafe posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        // Looked up on the child's PATH, as its shell would (posix_spawnp would search the parent's).
        let executable = Self.resolve(arguments[0], path: environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin")
        let argv = unsafe arguments.map { unsafe strdup($0) } + [nil]
        let envp = unsafe environment.map { unsafe strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            unsafe argv.forEach { unsafe free($0) }
            unsafe envp.forEach { unsafe free($0) }
        }
        var pid: pid_t = 0
        let code = unsafe posix_spawn(&pid, executable, nil, &attributes, argv, envp)
        guard code == 0 else { throw SpawnError(command: arguments[0], code: code) }
        self.pid = pid
    }

    /// `command` itself when it names a path, else the first executable file of that name in the
    /// folders of `path` (the name itself when none is found, for the spawn to fail with ENOENT).
    static func resolve(_ command: String, path: String) -> String {
        guard !command.contains("/") else { return command }
        for folder in path.split(separator: ":", omittingEmptySubsequences: false) {
            let candidate = (folder.isEmpty ? "." : String(folder)) + "/" + command
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return command
    }

    /// Waits for the child to end, off the caller's thread; returns its exit status, or 128 plus the
    /// signal that ended it (as shells report it).
    func exitStatus() async -> Int32 {
        let pid = pid
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var status: Int32 = 0
                while unsafe waitpid(pid, &status, 0) == -1, errno == EINTR {}
                let signal = status & 0x7f
                continuation.resume(returning: signal == 0 ? (status >> 8) & 0xff : 128 + signal)
            }
        }
    }

    /// Sends `signal` to the child.
    func send(_ signal: Int32) {
        kill(pid, signal)
    }
}
