import Foundation
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One delegate callback as a caller saw it, with what it carried. Consecutive body chunks (or
/// download writes, or upload progress) fold into one entry with their count and byte total, so two
/// runs compare equal when the same bytes arrived in the same place, however the network cut them.
enum Callback: Equatable, CustomStringConvertible, Sendable {
    case response(status: Int, url: String)
    case data(bytes: Int, chunks: Int)
    case redirect(status: Int, to: String)
    case challenge(method: String, previousFailures: Int, proposedUser: String?)
    case sentBody(totalBytes: Int64)
    case wroteData(totalBytes: Int64, writes: Int)
    case finishedDownloading(bytes: Int)
    case complete(errorCode: Int?)

    var description: String {
        switch self {
        case .response(let status, let url): "response(\(status) \(url))"
        case .data(let bytes, let chunks): "data(\(bytes) bytes in \(chunks))"
        case .redirect(let status, let to): "redirect(\(status) -> \(to))"
        case .challenge(let method, let failures, let user): "challenge(\(method), \(failures), \(user ?? "-"))"
        case .sentBody(let total): "sentBody(\(total))"
        case .wroteData(let total, let writes): "wroteData(\(total) in \(writes))"
        case .finishedDownloading(let bytes): "finishedDownloading(\(bytes))"
        case .complete(let code): "complete(\(code.map(String.init) ?? "ok"))"
        }
    }

    /// The entry without its byte and chunk counts, for transfers cut at a moment that depends on
    /// timing (a cancel midway).
    var ignoringBytes: Callback {
        switch self {
        case .data: .data(bytes: 0, chunks: 0)
        case .wroteData: .wroteData(totalBytes: 0, writes: 0)
        default: self
        }
    }

    /// The entry without its chunk count, for bodies whose cuts depend on the network.
    var ignoringChunks: Callback {
        switch self {
        case .data(let bytes, _): .data(bytes: bytes, chunks: 0)
        case .wroteData(let total, _): .wroteData(totalBytes: total, writes: 0)
        default: self
        }
    }
}

/// A caller's session delegate that records every callback in order, answers redirects and
/// challenges as told, and reports when the task completes.
final class CallbackRecorder: NSObject, URLSessionDataDelegate, URLSessionDownloadDelegate, @unchecked Sendable {
    // Mutated on the session's serial delegate queue, read after completion.

    /// How the recorder answers a redirect.
    enum RedirectAnswer: Sendable {
        case follow
        case refuse
    }

    /// How the recorder answers an authentication challenge.
    enum ChallengeAnswer: Sendable {
        case credential(user: String, password: String)
        case defaultHandling
        case cancel
    }

    private(set) var callbacks: [Callback] = []
    private(set) var firstByteAt: ContinuousClock.Instant?
    private(set) var chunkTimes: [ContinuousClock.Instant] = []
    private(set) var downloadedFile: Data?
    let redirectAnswer: RedirectAnswer
    let challengeAnswer: ChallengeAnswer
    private let done = Mutex<CheckedContinuation<Void, Never>?>(nil)
    private let isComplete = Mutex(false)

    init(redirect: RedirectAnswer = .follow, challenge: ChallengeAnswer = .defaultHandling) {
        redirectAnswer = redirect
        challengeAnswer = challenge
    }

    /// Waits for the task to complete.
    func waitForCompletion() async {
        await withCheckedContinuation { continuation in
            let isAlready = isComplete.withLock { isComplete in
                if !isComplete { done.withLock { $0 = continuation } }
                return isComplete
            }
            if isAlready { continuation.resume() }
        }
    }

    private func append(_ callback: Callback) {
        switch (callbacks.last, callback) {
        case (.data(let bytes, let chunks), .data(let more, _)):
            callbacks[callbacks.count - 1] = .data(bytes: bytes + more, chunks: chunks + 1)
        case (.wroteData(_, let writes), .wroteData(let total, _)):
            callbacks[callbacks.count - 1] = .wroteData(totalBytes: total, writes: writes + 1)
        case (.sentBody, .sentBody):
            callbacks[callbacks.count - 1] = callback
        default:
            callbacks.append(callback)
        }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        append(
            .response(
                status: (response as? HTTPURLResponse)?.statusCode ?? 0, url: response.url?.absoluteString ?? "-"))
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let now = ContinuousClock.now
        if firstByteAt == nil { firstByteAt = now }
        chunkTimes.append(now)
        append(.data(bytes: data.count, chunks: 1))
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void
    ) {
        append(.redirect(status: response.statusCode, to: request.url?.absoluteString ?? "-"))
        completionHandler(redirectAnswer == .follow ? request : nil)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        append(
            .challenge(
                method: challenge.protectionSpace.authenticationMethod,
                previousFailures: challenge.previousFailureCount, proposedUser: challenge.proposedCredential?.user))
        switch challengeAnswer {
        case .credential(let user, let password):
            if challenge.previousFailureCount > 0 { return completionHandler(.cancelAuthenticationChallenge, nil) }
            completionHandler(.useCredential, URLCredential(user: user, password: password, persistence: .none))
        case .defaultHandling:
            completionHandler(.performDefaultHandling, nil)
        case .cancel:
            completionHandler(.cancelAuthenticationChallenge, nil)
        }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        append(.sentBody(totalBytes: totalBytesSent))
    }

    func urlSession(
        _ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64
    ) {
        if firstByteAt == nil { firstByteAt = .now }
        append(.wroteData(totalBytes: totalBytesWritten, writes: 1))
    }

    func urlSession(
        _ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL
    ) {
        downloadedFile = try? Data(contentsOf: location)
        // FoundationNetworking leaves the file behind once this returns (see the platform notes).
        try? FileManager.default.removeItem(at: location)
        append(.finishedDownloading(bytes: downloadedFile?.count ?? -1))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        append(.complete(errorCode: error.map { ($0 as NSError).code }))
        let waiting = isComplete.withLock { isComplete in
            isComplete = true
            return done.withLock { continuation in
                defer { continuation = nil }
                return continuation
            }
        }
        waiting?.resume()
    }
}

/// The kinds of task a delegate caller makes.
enum TaskKind: String, Sendable, CaseIterable {
    case data
    case download
    case uploadFromData
    case uploadFromFile
}

/// One delegate-based run: what the caller saw, and when its first byte came.
struct DelegateRun: Sendable {
    /// What `cancel(byProducingResumeData:)` gave, for a download cancelled midway.
    var resumeData: Data?
    var callbacks: [Callback]
    var timeToFirstByte: Duration?
    var chunkTimes: [Duration]
    var downloadedFile: Data?
}

extension CallbackRecorder {
    /// Runs `request` as a `kind` task on a new session of `configuration` with a new recorder; with
    /// `cancelAfter`, cancels it after that delay (a download by producing resume data).
    static func run(
        _ request: URLRequest, kind: TaskKind = .data, configuration: URLSessionConfiguration,
        redirect: RedirectAnswer = .follow, challenge: ChallengeAnswer = .defaultHandling, body: Data = Data(),
        cancelAfter delay: Duration? = nil
    ) async throws -> DelegateRun {
        let recorder = CallbackRecorder(redirect: redirect, challenge: challenge)
        let session = URLSession(configuration: configuration, delegate: recorder, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let start = ContinuousClock.now
        let task: URLSessionTask
        switch kind {
        case .data: task = session.dataTask(with: request)
        case .download: task = session.downloadTask(with: request)
        case .uploadFromData: task = session.uploadTask(with: request, from: body)
        case .uploadFromFile:
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("upload-\(UUID().uuidString)")
            try body.write(to: file)
            task = session.uploadTask(with: request, fromFile: file)
        }
        task.resume()
        let resumeData = Mutex<Data?>(nil)
        if let delay {
            try await Task.sleep(for: delay)
            if let download = task as? URLSessionDownloadTask {
                await withCheckedContinuation { continuation in
                    download.cancel { data in
                        resumeData.withLock { $0 = data }
                        continuation.resume()
                    }
                }
            } else {
                task.cancel()
            }
        }
        await recorder.waitForCompletion()
        return DelegateRun(
            resumeData: resumeData.withLock { $0 },
            callbacks: recorder.callbacks, timeToFirstByte: recorder.firstByteAt.map { $0 - start },
            chunkTimes: recorder.chunkTimes.map { $0 - start }, downloadedFile: recorder.downloadedFile)
    }
}
