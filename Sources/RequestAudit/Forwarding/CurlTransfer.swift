internal import CCurlTransfer
import Foundation
import Synchronization

/// One HTTP exchange through libcurl on RequestAudit's transfer thread (the `CCurlTransfer` C
/// target), with the options FoundationNetworking's HTTP protocol sets: the same library sends the
/// same request, without a URLSession task around it.
///
/// Made with the request as libcurl takes it, started once; its end is reported once, on the
/// transfer thread. The pointer work with the C side stays in this type.
@safe final class CurlTransfer: @unchecked Sendable {
    // @unchecked: `handle` is freed only under `phase`'s lock, after which it is never touched again.

    /// How an exchange ended, with what came back.
    struct Outcome: Sendable {
        enum Ending: Sendable, Equatable {
            /// The response was read to its end.
            case completed
            /// libcurl failed with `code` (a CURLcode), `osErrno` for a failed connection, and its message.
            case failed(code: Int32, osErrno: Int32, message: String)
            /// Nothing moved for the idle timeout.
            case idleTimeout
            /// ``CurlTransfer/cancel()`` stopped it.
            case cancelled
        }

        let ending: Ending
        /// Every response header line, in order, without its line end (an empty line ends a response's header).
        let headerLines: [String]
        /// The response body (decoded when it came compressed).
        let body: Data
    }

    /// Whether libcurl's functions were found in this process and the transfer thread runs.
    static let isAvailable: Bool = ccurl_available() != 0

    /// libcurl's version, as FoundationNetworking names it in its `User-Agent`: "major.minor.patch".
    static let version: String = {
        let number = Int(ccurl_version())
        return "\(number / 10000).\(number / 100 % 100).\(number % 100)"
    }()

    private enum Phase {
        case created
        case running
        case ended
    }

    private let handle: OpaquePointer
    private let phase = Mutex(Phase.created)
    private let completion = Mutex<(@Sendable (Outcome) -> Void)?>(nil)

    /// An exchange of `method` on `url` with `headers` (lines as libcurl takes them), sending `body`
    /// when it is not nil (an empty one with `Content-Length: 0`); `isHead` reads no body. It fails
    /// with ``Outcome/Ending/idleTimeout`` after `idleTimeoutMilliseconds` without a byte moving.
    /// Nil when libcurl is unavailable or memory ran out.
    init?(url: String, method: String, headers: [String], body: Data?, isHead: Bool, idleTimeoutMilliseconds: Int) {
        guard Self.isAvailable else { return nil }
        let lines = headers.map { $0 + "\n" }.joined()
        let bytes = body ?? Data()
        let made = unsafe bytes.withUnsafeBytes { bytes in
            unsafe ccurl_transfer_create(
                url, method, lines, body == nil ? 0 : 1, bytes.baseAddress, bytes.count, isHead ? 1 : 0,
                idleTimeoutMilliseconds)
        }
        guard let made = unsafe made else { return nil }
        unsafe handle = made
    }

    deinit {
        // Started exchanges free their handle when they end; one never started is freed here.
        if phase.withLock({ $0 }) == .created { unsafe ccurl_transfer_free(handle) }
    }

    /// Starts the exchange; `completion` runs once, on the transfer thread, when it ends.
    func start(_ completion: @escaping @Sendable (Outcome) -> Void) {
        self.completion.withLock { $0 = completion }
        phase.withLock { $0 = .running }
        let context = unsafe Unmanaged.passRetained(self).toOpaque()
        unsafe ccurl_transfer_start(
            handle,
            { context in
                guard let context = unsafe context else { return }
                unsafe Unmanaged<CurlTransfer>.fromOpaque(context).takeRetainedValue().ended()
            }, context)
    }

    /// Asks a running exchange to stop: it ends as ``Outcome/Ending/cancelled`` unless it ended
    /// already. Thread-safe.
    func cancel() {
        phase.withLock { phase in
            if phase == .running { unsafe ccurl_transfer_cancel(handle) }
        }
    }

    /// Reads the outcome, frees the C side, and reports.
    private func ended() {
        let outcome = phase.withLock { phase -> Outcome in
            phase = .ended
            defer { unsafe ccurl_transfer_free(handle) }
            return readOutcome()
        }
        completion.withLock { $0 }?(outcome)
    }

    private func readOutcome() -> Outcome {
        let code = unsafe ccurl_transfer_code(handle)
        let ending: Outcome.Ending =
            switch code {
            case 0: .completed
            case CCURL_IDLE_TIMEOUT: .idleTimeout
            case CCURL_CANCELLED: .cancelled
            default:
                .failed(
                    code: code, osErrno: Int32(truncatingIfNeeded: unsafe ccurl_transfer_os_errno(handle)),
                    message: unsafe String(cString: ccurl_transfer_error(handle)))
            }
        var headerLength = 0
        let headerStart = unsafe ccurl_transfer_headers(handle, &headerLength)
        let headerLines = unsafe Self.lines(of: UnsafeRawBufferPointer(start: headerStart, count: headerLength))
        var bodyLength = 0
        let bodyStart = unsafe ccurl_transfer_body(handle, &bodyLength)
        let body = unsafe Data(UnsafeRawBufferPointer(start: bodyStart, count: bodyLength))
        return Outcome(ending: ending, headerLines: headerLines, body: body)
    }

    /// The lines of `header`, each without its CR LF (split on bytes: "\r\n" is one Character).
    private static func lines(of header: UnsafeRawBufferPointer) -> [String] {
        var lines = unsafe header.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        if unsafe lines.last?.isEmpty == true { unsafe lines.removeLast() }
        return unsafe lines.map { line in
            let text = unsafe line.last == UInt8(ascii: "\r") ? line.dropLast() : line
            return unsafe String(decoding: text, as: UTF8.self)
        }
    }
}
