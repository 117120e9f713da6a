import AuditReport
import Foundation
import RequestAudit
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One row of the callback matrix: a task a delegate caller makes, and how it answers.
struct CallbackCase: Sendable, CustomTestStringConvertible {
    let name: String
    var method = "GET"
    let path: String
    var kind = TaskKind.data
    var redirect = CallbackRecorder.RedirectAnswer.follow
    var challenge = CallbackRecorder.ChallengeAnswer.defaultHandling
    var body: Data?
    /// Whether the chunk count is the server's (a timed stream) rather than the network's.
    var chunksAreExact = false

    var testDescription: String { name }

    func request() -> URLRequest {
        var request = URLRequest(url: HTTPBin.url(HTTPBin.base + path))
        request.httpMethod = method
        if kind == .data, let body {
            request.httpBody = body
            request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        }
        return request
    }

    static let body = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })

    static let all: [CallbackCase] = [
        CallbackCase(name: "data: GET", path: "/get?matrix=1"),
        CallbackCase(name: "data: 102,400 bytes", path: "/bytes/102400?seed=3"),
        CallbackCase(name: "data: /stream/20", path: "/stream/20"),
        CallbackCase(name: "data: a slow drip", path: "/drip?duration=1&numbytes=5&delay=0", chunksAreExact: true),
        CallbackCase(name: "data: 404", path: "/status/404"),
        CallbackCase(name: "data: gzip", path: "/gzip"),
        CallbackCase(name: "data: POST body", method: "POST", path: "/post", body: body),
        CallbackCase(name: "data: redirects followed", path: "/redirect/2"),
        CallbackCase(name: "data: redirect refused", path: "/redirect/2", redirect: .refuse),
        CallbackCase(name: "data: absolute redirect refused", path: "/absolute-redirect/1", redirect: .refuse),
        CallbackCase(
            name: "data: Basic challenge answered", path: "/basic-auth/ann/s3cret",
            challenge: .credential(user: "ann", password: "s3cret")),
        CallbackCase(
            name: "data: Basic challenge with a wrong password", path: "/basic-auth/ann/s3cret",
            challenge: .credential(user: "ann", password: "wrong")),
        CallbackCase(name: "data: Basic challenge cancelled", path: "/basic-auth/ann/s3cret", challenge: .cancel),
        CallbackCase(
            name: "data: Digest challenge answered", path: "/digest-auth/auth/ann/s3cret",
            challenge: .credential(user: "ann", password: "s3cret")),
        CallbackCase(name: "download: 102,400 bytes", path: "/bytes/102400?seed=5", kind: .download),
        CallbackCase(
            name: "download: after redirects", path: "/redirect-to?url=/bytes/4096%3Fseed%3D9", kind: .download),
        CallbackCase(name: "download: 404", path: "/status/404", kind: .download),
        CallbackCase(
            name: "download: Basic challenge answered", path: "/basic-auth/ann/s3cret", kind: .download,
            challenge: .credential(user: "ann", password: "s3cret")),
        CallbackCase(name: "upload from data", method: "POST", path: "/post", kind: .uploadFromData, body: body),
        CallbackCase(name: "upload from a file", method: "PUT", path: "/put", kind: .uploadFromFile, body: body),
    ]
}

extension InterceptionTests {
    @Suite struct CallbackSequences {
        @Test(
            "a delegate caller gets the same callbacks in the same order as without RequestAudit",
            arguments: CallbackCase.all)
        func sameCallbacksAsDirect(_ row: CallbackCase) async throws {
            let audited = try AuditedSession()
            let configuration = URLSessionConfiguration.ephemeral
            try audited.auditor.install(into: configuration)
            let direct = try await CallbackRecorder.run(
                row.request(), kind: row.kind, configuration: .ephemeral, redirect: row.redirect,
                challenge: row.challenge, body: row.body ?? Data())
            let intercepted = try await CallbackRecorder.run(
                row.request(), kind: row.kind, configuration: configuration, redirect: row.redirect,
                challenge: row.challenge, body: row.body ?? Data())
            let records = try await audited.finish()
            if row.chunksAreExact {
                #expect(intercepted.callbacks == direct.callbacks)
            } else {
                #expect(intercepted.callbacks.map(\.ignoringChunks) == direct.callbacks.map(\.ignoringChunks))
            }
            #expect(intercepted.downloadedFile == direct.downloadedFile)
            #expect(records.count == 1, "one record per request: \(records.map(\.outcome.kind))")
        }

        @Test("a body that arrives over time reaches a delegate chunk by chunk, as it arrives")
        func chunksArriveAsSent() async throws {
            let audited = try AuditedSession()
            let configuration = URLSessionConfiguration.ephemeral
            try audited.auditor.install(into: configuration)
            // Ten bytes over two seconds, one at a time, as a server-sent event stream paces its events.
            let request = URLRequest(url: HTTPBin.url(HTTPBin.base + "/drip?duration=2&numbytes=10&delay=0"))
            let run = try await CallbackRecorder.run(request, configuration: configuration)
            _ = try await audited.finish()
            #expect(run.callbacks.contains(.data(bytes: 10, chunks: 10)))
            let times = run.chunkTimes
            let first = try #require(times.first)
            let last = try #require(times.last)
            // The first byte is not held back for the rest: it comes long before the stream ends.
            #expect(last - first > .seconds(1.5), "chunks at \(times)")
        }

        @Test(
            "a task cancelled midway ends for the caller as it does directly, with the same resume data",
            arguments: [TaskKind.data, .download])
        func cancelledMidway(_ kind: TaskKind) async throws {
            // Twenty bytes over four seconds: cancelled after the first few have arrived.
            let request = URLRequest(url: HTTPBin.url(HTTPBin.base + "/drip?duration=4&numbytes=20&delay=0"))
            let direct = try await CallbackRecorder.run(
                request, kind: kind, configuration: .ephemeral, cancelAfter: .milliseconds(900))
            let audited = try AuditedSession()
            let configuration = URLSessionConfiguration.ephemeral
            try audited.auditor.install(into: configuration)
            let intercepted = try await CallbackRecorder.run(
                request, kind: kind, configuration: configuration, cancelAfter: .milliseconds(900))
            let records = try await audited.finish()
            #expect(direct.callbacks.last == .complete(errorCode: URLError.cancelled.rawValue))
            // The same callbacks in the same order; how many bytes arrived before the cancel depends
            // on when it lands between two of the drip's bytes (200 ms apart), so it is compared
            // as "some, not all" rather than exactly.
            #expect(intercepted.callbacks.map(\.ignoringBytes) == direct.callbacks.map(\.ignoringBytes))
            for run in [direct, intercepted] {
                let received = run.callbacks.reduce(Int64(0)) { total, callback in
                    switch callback {
                    case .data(let bytes, _): total + Int64(bytes)
                    case .wroteData(let bytes, _): max(total, bytes)
                    default: total
                    }
                }
                #expect(received > 0 && received < 20, "\(run.callbacks)")
            }
            #expect((intercepted.resumeData == nil) == (direct.resumeData == nil))
            #expect(records.map(\.outcome.kind) == [.cancelled])
        }

        @Test("server-sent events reach a delegate one by one, at the pace they reach it directly")
        func eventStreamKeepsItsPace() async throws {
            let stream = try #require(
                ProcessInfo.processInfo.environment["EVENTS_URL"],
                "EVENTS_URL is not set: run the tests with `make test`")
            // Ten events, one every 100 ms, each its own chunk on the wire.
            let request = URLRequest(url: HTTPBin.url(stream + "?count=10&interval=100"))
            let direct = try await CallbackRecorder.run(request, configuration: .ephemeral)
            let audited = try AuditedSession()
            let configuration = URLSessionConfiguration.ephemeral
            try audited.auditor.install(into: configuration)
            let intercepted = try await CallbackRecorder.run(request, configuration: configuration)
            let records = try await audited.finish()
            let events = "id: 0\ndata: event 0\n\n".utf8.count * 10
            #expect(direct.callbacks.contains(.data(bytes: events, chunks: 10)))
            #expect(intercepted.callbacks == direct.callbacks)
            // Each event arrives when it is sent, not with the rest: 900 ms from the first to the last.
            let spread = try #require(intercepted.chunkTimes.last) - #require(intercepted.chunkTimes.first)
            #expect(spread > .milliseconds(600), "events at \(intercepted.chunkTimes)")
            #expect(records.map(\.outcome.bytes) == [events])
        }

        @Test("a redirect the caller's delegate allows is still refused when a block rule matches the hop")
        func delegateAllowedHopIsChecked() async throws {
            let audited = try AuditedSession(rules: "[block] field=path message=\"No hops\"\nno-bytes ^/bytes/")
            let configuration = URLSessionConfiguration.ephemeral
            try audited.auditor.install(into: configuration)
            let request = URLRequest(url: HTTPBin.url(HTTPBin.base + "/redirect-to?url=/bytes/16"))
            let run = try await CallbackRecorder.run(request, configuration: configuration)
            let records = try await audited.finish()
            #expect(run.callbacks.first == .redirect(status: 302, to: HTTPBin.base + "/bytes/16"))
            #expect(run.callbacks.last == .complete(errorCode: RequestAuditError.refusalCode.rawValue))
            #expect(records.map(\.outcome.kind) == [.blocked])
        }

        @Test("a followed redirect is listed in the record, hop by hop")
        func hopsAreRecorded() async throws {
            let audited = try AuditedSession()
            let configuration = URLSessionConfiguration.ephemeral
            try audited.auditor.install(into: configuration)
            _ = try await CallbackRecorder.run(
                URLRequest(url: HTTPBin.url(.redirect(count: 2))), configuration: configuration)
            let records = try await audited.finish()
            #expect(records.first?.outcome.redirects == [HTTPBin.base + "/relative-redirect/1", HTTPBin.base + "/get"])
            #expect(records.first?.outcome.status == 200)
        }

        @Test("credentials given to a challenge never reach the log")
        func credentialsStayOutOfTheLog() async throws {
            let audited = try AuditedSession()
            let configuration = URLSessionConfiguration.ephemeral
            try audited.auditor.install(into: configuration)
            let request = URLRequest(url: HTTPBin.url(HTTPBin.base + "/basic-auth/carol/Xy7-secret-Q"))
            let run = try await CallbackRecorder.run(
                request, configuration: configuration, challenge: .credential(user: "carol", password: "Xy7-secret-Q"))
            _ = try await audited.finish()
            #expect(run.callbacks.contains { if case .response(200, _) = $0 { true } else { false } })
            let log = try String(contentsOfFile: audited.logPath, encoding: .utf8)
            #expect(!log.contains(Data("carol:Xy7-secret-Q".utf8).base64EncodedString()))
        }

        @Test("a completion-handler download gets the same file as without RequestAudit")
        func completionHandlerDownload() async throws {
            let audited = try AuditedSession()
            let url = HTTPBin.url(.bytes(65_536))
            func download(_ session: URLSession) async -> (Data?, Int?) {
                await withCheckedContinuation { continuation in
                    session.downloadTask(with: url) { location, response, _ in
                        let data = location.flatMap { try? Data(contentsOf: $0) }
                        if let location { try? FileManager.default.removeItem(at: location) }
                        continuation.resume(returning: (data, (response as? HTTPURLResponse)?.statusCode))
                    }.resume()
                }
            }
            let direct = await download(audited.direct)
            let intercepted = await download(audited.session)
            let records = try await audited.finish()
            #expect(intercepted.0 == direct.0)
            #expect(intercepted.0?.count == 65_536)
            #expect(intercepted.1 == 200)
            #expect(records.map(\.outcome.kind) == [.systemLoader])
            #expect(records.first?.outcome.status == 200)
        }

        @Test("platform fact: a download's file outlives its completion handler, with and without RequestAudit")
        func downloadFileOutlivesHandler() async throws {
            let audited = try AuditedSession()
            let url = HTTPBin.url(.bytes(4_096))
            func fileAfterHandler(_ session: URLSession) async -> URL? {
                let location = await withCheckedContinuation { continuation in
                    session.downloadTask(with: url) { location, _, _ in
                        continuation.resume(returning: location)
                    }.resume()
                }
                // The completion handler runs on the session's serial delegate queue: once an
                // operation queued after it has run, the handler has returned.
                await withCheckedContinuation { continuation in
                    session.delegateQueue.addOperation { continuation.resume() }
                }
                return location
            }
            let direct = try #require(await fileAfterHandler(audited.direct))
            let intercepted = try #require(await fileAfterHandler(audited.session))
            _ = try await audited.finish()
            #expect(FileManager.default.fileExists(atPath: direct.path))
            #expect(FileManager.default.fileExists(atPath: intercepted.path))
            try FileManager.default.removeItem(at: direct)
            try FileManager.default.removeItem(at: intercepted)
        }

        @Test("a blocked download fails with the refusal and sends nothing")
        func blockedDownload() async throws {
            let audited = try AuditedSession(rules: "[block]\nno-downloads /anything/download-")
            let path = "/anything/download-\(UUID().uuidString)"
            let run = try await CallbackRecorder.run(
                URLRequest(url: HTTPBin.url(HTTPBin.base + path)), kind: .download,
                configuration: audited.session.configuration)
            let records = try await audited.finish()
            #expect(run.callbacks == [.complete(errorCode: RequestAuditError.refusalCode.rawValue)])
            #expect(try await HTTPBin.received(pathPrefix: path) == false)
            #expect(records.map(\.outcome.kind) == [.blocked])
        }

        @Test("a download redirected to a blocked URL fails with the refusal; the delegate gets no file")
        func downloadRedirectedToBlocked() async throws {
            let audited = try AuditedSession(rules: "[block] field=path\nno-downloads ^/anything/hop-")
            let path = "/anything/hop-\(UUID().uuidString)"
            let run = try await CallbackRecorder.run(
                URLRequest(url: HTTPBin.url(HTTPBin.base + "/redirect-to?url=" + path)), kind: .download,
                configuration: audited.session.configuration)
            let records = try await audited.finish()
            #expect(run.callbacks.first == .redirect(status: 302, to: HTTPBin.base + path))
            #expect(run.callbacks.last == .complete(errorCode: RequestAuditError.refusalCode.rawValue))
            #expect(!run.callbacks.contains { if case .finishedDownloading = $0 { true } else { false } })
            #expect(records.map(\.outcome.kind) == [.blocked])
            #expect(records.first?.outcome.finalURL == HTTPBin.base + path)
        }

        @Test("a completion-handler download redirected to a blocked URL gets the refusal and no file")
        func completionDownloadRedirectedToBlocked() async throws {
            let audited = try AuditedSession(rules: "[block] field=path\nno-downloads ^/anything/hop-")
            let path = "/anything/hop-\(UUID().uuidString)"
            let request = URLRequest(url: HTTPBin.url(HTTPBin.base + "/redirect-to?url=" + path))
            let (file, error) = await withCheckedContinuation { continuation in
                audited.session.downloadTask(with: request) { file, _, error in
                    continuation.resume(returning: (file, error.map { ($0 as NSError).code }))
                }.resume()
            }
            let records = try await audited.finish()
            #expect(file == nil)
            #expect(error == RequestAuditError.refusalCode.rawValue)
            #expect(records.map(\.outcome.kind) == [.blocked])
        }

        @Test("an upload redirected (307) to a blocked URL fails with the refusal, not the server's answer")
        func uploadRedirectedToBlocked() async throws {
            let audited = try AuditedSession(rules: "[block] field=path\nno-uploads ^/anything/hop-")
            let path = "/anything/hop-\(UUID().uuidString)"
            var request = URLRequest(
                url: HTTPBin.url(HTTPBin.base + "/redirect-to?status_code=307&url=" + path))
            request.httpMethod = "POST"
            let outcome: Result<Int, Error>
            do {
                let (_, response) = try await audited.session.upload(for: request, from: Data("secret".utf8))
                outcome = .success((response as? HTTPURLResponse)?.statusCode ?? 0)
            } catch {
                outcome = .failure(error)
            }
            let records = try await audited.finish()
            guard case .failure(let error) = outcome else {
                Issue.record("the upload got the blocked server's answer: \(outcome)")
                return
            }
            #expect((error as NSError).code == RequestAuditError.refusalCode.rawValue)
            #expect(records.map(\.outcome.kind) == [.blocked])
        }

        @Test("a blocked upload is decided, counted and logged once")
        func blockedUploadOnce() async throws {
            let audited = try AuditedSession(rules: "[block]\nno-upload /anything/once-")
            var request = URLRequest(url: HTTPBin.url(HTTPBin.base + "/anything/once-\(UUID().uuidString)"))
            request.httpMethod = "POST"
            let events = audited.auditor.events()
            _ = try? await audited.session.upload(for: request, from: Data(repeating: 1, count: 1_000))
            let records = try await audited.finish()
            var published: [String] = []
            for await event in events {
                switch event {
                case .started: published.append("started")
                case .finished: published.append("finished")
                default: break
                }
            }
            #expect(records.map(\.outcome.kind) == [.blocked])
            #expect(audited.auditor.statistics.requests == 1)
            #expect(published == ["started", "finished"])
        }
    }
}
