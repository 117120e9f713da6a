import Foundation
import NIOCore
import NIOPosix

/// Why a socket could not be opened, connected or bound, in the words a user reads in a 502's
/// message, a record or a command's error line (`connection refused`, `address already in use`,
/// `no answer within 10 s`), where NIO's own descriptions name its types and system calls.
package enum SocketErrorReason {
    /// The reason `error` gives; a reason given by each address tried is said once.
    package static func of(_ error: any Error) -> String {
        if let error = error as? NIOConnectionError {
            var reasons: [String] = []
            for reason in error.connectionErrors.map({ of($0.error) }) where !reasons.contains(reason) {
                reasons.append(reason)
            }
            return reasons.isEmpty ? "\(error)" : reasons.joined(separator: "; ")
        }
        if let error = error as? IOError {
            return unsafe String(cString: strerror(error.errnoCode)).lowercased()
        }
        if let error = error as? SocketAddressError.UnknownHost {
            return HostResolution.Failure(host: error.host, reason: error.errorDescription).description
        }
        if case .connectTimeout(let timeout) = error as? ChannelError {
            return "no answer within \(timeout.nanoseconds / 1_000_000_000) s"
        }
        return "\(error)"
    }
}
