import AuditPipeline
import AuditReport
import Foundation
import RequestAudit
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// nginx from `Tests/with-httpbin.sh`, serving `Tests/Servers/www`.
private enum Nginx {
    static var base: String {
        get throws {
            try #require(
                ProcessInfo.processInfo.environment["NGINX_URL"], "NGINX_URL is not set: run the tests with `make test`"
            )
        }
    }

    /// Whether nginx has logged a request containing `marker`.
    static func received(_ marker: String) throws -> Bool {
        let path = try #require(ProcessInfo.processInfo.environment["NGINX_ACCESS_LOG"], "NGINX_ACCESS_LOG is not set")
        return try String(contentsOfFile: path, encoding: .utf8).contains(marker)
    }

    /// The bundled file nginx serves as `name`.
    static func file(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Servers/www/\(name)").path
    }
}

/// What a local response and a server's share: status, URL, body, and the body's headers.
private func essentials(_ exchange: Exchange) -> Exchange {
    var essential = exchange
    essential.headers = exchange.headers.filter { $0.key == "content-type" || $0.key == "content-length" }
    return essential
}

/// A handler response whose body comes as `chunks`, `interval` apart.
private func streamed(_ chunks: [String], every interval: Duration) -> HandlerResponse {
    let stream = AsyncThrowingStream<Data, Error> { continuation in
        let producer = Task {
            for chunk in chunks {
                try? await Task.sleep(for: interval)
                continuation.yield(Data(chunk.utf8))
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in producer.cancel() }
    }
    return HandlerResponse(status: 200, headers: ["Content-Type": "text/event-stream"], body: .stream(stream))
}

extension InterceptionTests {
    @Suite struct LocalResponses {
        /// A policy that answers nginx's `page.html` with the very file nginx serves.
        static func pageRules() throws -> String {
            let page = try NSRegularExpression.escapedPattern(for: Nginx.base + "/page.html")
            return "[respond 200] file=\(Nginx.file("page.html")) type=text/html\npage ^\(page)(\\?.*)?$\n"
        }

        @Test(
            "a rule's file reaches every caller style as the same file from nginx does, and nothing is sent",
            arguments: CallerStyle.allCases)
        func fileLikeServer(_ style: CallerStyle) async throws {
            let audited = try AuditedSession(rules: try Self.pageRules())
            let request = URLRequest(url: HTTPBin.url(try Nginx.base + "/page.html"))
            let direct = await style.run(request, on: audited.direct)
            let marker = "local-\(UUID().uuidString)"
            var marked = await style.run(
                URLRequest(url: HTTPBin.url(try Nginx.base + "/page.html?\(marker)")), on: audited.session)
            let records = try await audited.finish()
            marked.url = marked.url?.replacingOccurrences(of: "?\(marker)", with: "")
            #expect(essentials(marked) == essentials(direct), "direct: \(direct)\nlocal: \(marked)")
            #expect(marked.body?.count == 219)
            #expect(try !Nginx.received(marker))
            #expect(records.map(\.decision.verdict) == [.respond])
            #expect(records.map(\.outcome.kind) == [.responded])
            #expect(records.first?.outcome.status == 200)
            #expect(records.first?.outcome.bytes == 219)
        }

        @Test("a delegate gets the same callbacks, in the same order, as from nginx")
        func delegateCallbacks() async throws {
            let audited = try AuditedSession(rules: try Self.pageRules())
            let request = URLRequest(url: HTTPBin.url(try Nginx.base + "/page.html"))
            let direct = try await CallbackRecorder.run(request, configuration: audited.direct.configuration)
            let local = try await CallbackRecorder.run(request, configuration: audited.session.configuration)
            _ = try await audited.finish()
            #expect(local.callbacks == direct.callbacks)
            #expect(
                local.callbacks == [
                    .response(status: 200, url: request.url?.absoluteString ?? ""), .data(bytes: 219, chunks: 1),
                    .complete(errorCode: nil),
                ])
        }

        @Test("an upload task gets the local response as a data task does; its body is never sent")
        func upload() async throws {
            let audited = try AuditedSession(rules: "[respond 202] body=queued\nq /queue$\n")
            var request = URLRequest(url: HTTPBin.url(HTTPBin.base + "/anything/queue"))
            request.httpMethod = "POST"
            let (data, response) = try await audited.session.upload(for: request, from: Data("payload".utf8))
            let records = try await audited.finish()
            #expect((response as? HTTPURLResponse)?.statusCode == 202)
            #expect(String(decoding: data, as: UTF8.self) == "queued")
            #expect(try await HTTPBin.received(pathPrefix: "/anything/queue") == false)
            #expect(records.map(\.outcome.kind) == [.responded])
        }

        @Test("a response handler gets an upload task's body, made from bytes or from a file")
        func uploadBodyToHandler() async throws {
            let bodies = Mutex<[String]>([])
            let audited = try AuditedSession(rules: "[respond handler:echo]\nq /anything/echo-upload$\n") {
                $0.responseHandlers["echo"] = { request in
                    bodies.withLock { $0.append(String(decoding: request.body ?? Data(), as: UTF8.self)) }
                    return HandlerResponse(status: 200, body: .data(request.body ?? Data()))
                }
            }
            var request = URLRequest(url: HTTPBin.url(HTTPBin.base + "/anything/echo-upload"))
            request.httpMethod = "POST"
            let file = URL(fileURLWithPath: NSTemporaryDirectory() + "upload-\(UUID().uuidString)")
            try Data("from a file".utf8).write(to: file)
            let (fromBytes, _) = try await audited.session.upload(for: request, from: Data("from bytes".utf8))
            let (fromFile, _) = try await audited.session.upload(for: request, fromFile: file)
            _ = try await audited.finish()
            #expect(bodies.withLock { $0 } == ["from bytes", "from a file"])
            #expect(
                [fromBytes, fromFile].map { String(decoding: $0, as: UTF8.self) } == ["from bytes", "from a file"])
        }

        @Test("a download task cannot take a local response on this platform: it fails closed, nothing sent")
        func downloadFailsClosed() async throws {
            let audited = try AuditedSession(rules: "[respond 200] body=x\nd /anything/dl-local$\n")
            let url = HTTPBin.url(HTTPBin.base + "/anything/dl-local")
            var caught: URLError?
            do {
                _ = try await audited.session.download(from: url)
            } catch let error as URLError {
                caught = error
            }
            let records = try await audited.finish()
            #expect(caught?.requestAuditError == .responseUnavailable(rule: "test/d", url: url.absoluteString))
            #expect(try await HTTPBin.received(pathPrefix: "/anything/dl-local") == false)
            #expect(records.map(\.outcome.kind) == [.blocked])
        }

        @Test("a handler's stream reaches a delegate chunk by chunk as it is produced")
        func handlerStreamsToDelegate() async throws {
            let audited = try AuditedSession(rules: "[respond handler:events]\ne ^app://events/\n") {
                $0.customSchemes = ["app"]
                $0.responseHandlers["events"] = { _ in
                    streamed((1...5).map { "data: \($0)\n\n" }, every: .milliseconds(150))
                }
            }
            let request = URLRequest(url: HTTPBin.url("app://events/live"))
            let run = try await CallbackRecorder.run(request, configuration: audited.session.configuration)
            let records = try await audited.finish()
            #expect(
                run.callbacks == [
                    .response(status: 200, url: "app://events/live"), .data(bytes: 45, chunks: 5),
                    .complete(errorCode: nil),
                ])
            let spread = try #require(run.chunkTimes.last) - (try #require(run.chunkTimes.first))
            #expect(spread >= .milliseconds(450), "chunks arrived within \(spread)")
            #expect(records.first?.outcome.bytes == 45)
        }

        @Test(
            "a completion handler gets a handler's whole stream as one body",
            arguments: [CallerStyle.completionHandler, .async])
        func handlerStreamWhole(_ style: CallerStyle) async throws {
            let audited = try AuditedSession(rules: "[respond handler:events]\ne ^app://events/\n") {
                $0.customSchemes = ["app"]
                $0.responseHandlers["events"] = { _ in streamed(["a", "bc", "def"], every: .milliseconds(20)) }
            }
            let exchange = await style.run(URLRequest(url: HTTPBin.url("app://events/x")), on: audited.session)
            _ = try await audited.finish()
            #expect(exchange.status == 200)
            #expect(exchange.body == Data("abcdef".utf8))
            #expect(exchange.headers["content-type"] == "text/event-stream")
        }

        @Test("a handler gets the method, URL, headers and body, and its status and headers reach the caller")
        func handlerSeesRequest() async throws {
            let seen = Mutex<HandlerRequest?>(nil)
            let audited = try AuditedSession(rules: "[respond handler:router]\nr ^app://module/\n") {
                $0.customSchemes = ["app"]
                $0.responseHandlers["router"] = { request in
                    seen.withLock { $0 = request }
                    return HandlerResponse(
                        status: 201, headers: ["Content-Type": "application/json", "X-Module": "orders"],
                        body: .data(Data(#"{"id":42}"#.utf8)))
                }
            }
            var request = URLRequest(url: HTTPBin.url("app://module/orders?id=42"))
            request.httpMethod = "POST"
            request.setValue("yes", forHTTPHeaderField: "X-Native")
            request.httpBody = Data("qty=2".utf8)
            let (data, response) = try await audited.session.data(for: request)
            let records = try await audited.finish()
            let http = try #require(response as? HTTPURLResponse)
            #expect(http.statusCode == 201)
            #expect(http.value(forHTTPHeaderField: "X-Module") == "orders")
            #expect(http.value(forHTTPHeaderField: "Content-Length") == "9")
            #expect(data == Data(#"{"id":42}"#.utf8))
            let asked = try #require(seen.withLock { $0 })
            #expect(asked.request.method == "POST")
            #expect(asked.request.url == "app://module/orders?id=42")
            #expect(asked.request.headers.contains { $0.name == "X-Native" && $0.value == "yes" })
            #expect(asked.body == Data("qty=2".utf8))
            #expect(asked.rule == "test/r")
            #expect(records.map(\.outcome.kind) == [.responded])
            #expect(records.first?.outcome.status == 201)
        }

        @Test("a custom scheme no rule answers fails as it does without RequestAudit, and is recorded")
        func unansweredCustomScheme() async throws {
            let audited = try AuditedSession(rules: "[respond 200] body=ok\nknown ^app://known/\n") {
                $0.customSchemes = ["app"]
            }
            let url = HTTPBin.url("app://unknown/path")
            let direct = await CallerStyle.completionHandler.run(URLRequest(url: url), on: audited.direct)
            let audit = await CallerStyle.completionHandler.run(URLRequest(url: url), on: audited.session)
            let answered = await CallerStyle.completionHandler.run(
                URLRequest(url: HTTPBin.url("app://known/x")), on: audited.session)
            let records = try await audited.finish()
            #expect(direct.errorCode == URLError.unsupportedURL.rawValue)
            #expect(audit == direct)
            #expect(answered.body == Data("ok".utf8))
            #expect(records.map(\.decision.verdict) == [.pass, .respond])
            #expect(records.map(\.outcome.kind) == [.failure, .responded])
            #expect(records.first?.outcome.error?.code == URLError.unsupportedURL.rawValue)
        }

        @Test("a scheme not claimed is left alone, as without RequestAudit")
        func unclaimedScheme() async throws {
            let audited = try AuditedSession(rules: "[respond 200] body=ok\nall .\n")
            let exchange = await CallerStyle.completionHandler.run(
                URLRequest(url: HTTPBin.url("bridge://x")), on: audited.session)
            let records = try await audited.finish()
            #expect(exchange.errorCode == URLError.unsupportedURL.rawValue)
            #expect(records.isEmpty)
        }

        @Test("a rule naming a handler nobody registered fails closed, naming the rule and the handler")
        func missingHandler() async throws {
            let audited = try AuditedSession(rules: "[respond handler:absent]\nh /anything/handled$\n")
            let url = HTTPBin.url(HTTPBin.base + "/anything/handled")
            var caught: URLError?
            do {
                _ = try await audited.session.data(from: url)
            } catch let error as URLError {
                caught = error
            }
            let records = try await audited.finish()
            #expect(
                caught?.requestAuditError
                    == .responseFailed(
                        rule: "test/h", reason: "rule test/h responds with handler 'absent', which is not registered",
                        url: url.absoluteString))
            #expect(try await HTTPBin.received(pathPrefix: "/anything/handled") == false)
            #expect(records.map(\.outcome.kind) == [.blocked])
        }

        @Test("a stream that throws midway fails the request with its error after the chunks before it")
        func failingStream() async throws {
            struct Broken: Error {}
            let audited = try AuditedSession(rules: "[respond handler:flaky]\nf ^app://flaky\n") {
                $0.customSchemes = ["app"]
                $0.responseHandlers["flaky"] = { _ in
                    let stream = AsyncThrowingStream<Data, Error> { continuation in
                        continuation.yield(Data("part".utf8))
                        continuation.finish(throwing: Broken())
                    }
                    return HandlerResponse(body: .stream(stream))
                }
            }
            let run = try await CallbackRecorder.run(
                URLRequest(url: HTTPBin.url("app://flaky")), configuration: audited.session.configuration)
            let records = try await audited.finish()
            #expect(
                run.callbacks.prefix(2) == [.response(status: 200, url: "app://flaky"), .data(bytes: 4, chunks: 1)])
            #expect(run.callbacks.count == 3)
            #expect(records.map(\.outcome.kind) == [.failure])
        }

        @Test("cancelling a task while a handler streams stops the handler and records the cancellation")
        func cancelStreaming() async throws {
            let stopped = Mutex(false)
            let audited = try AuditedSession(rules: "[respond handler:slow]\ns ^app://slow\n") {
                $0.customSchemes = ["app"]
                $0.responseHandlers["slow"] = { _ in
                    let stream = AsyncThrowingStream<Data, Error> { continuation in
                        let producer = Task {
                            while !Task.isCancelled {
                                continuation.yield(Data("tick".utf8))
                                try? await Task.sleep(for: .milliseconds(50))
                            }
                        }
                        continuation.onTermination = { _ in
                            stopped.withLock { $0 = true }
                            producer.cancel()
                        }
                    }
                    return HandlerResponse(body: .stream(stream))
                }
            }
            let run = try await CallbackRecorder.run(
                URLRequest(url: HTTPBin.url("app://slow")), configuration: audited.session.configuration,
                cancelAfter: .milliseconds(300))
            let records = try await audited.finish()
            #expect(run.callbacks.last == .complete(errorCode: URLError.cancelled.rawValue))
            #expect(records.map(\.outcome.kind) == [.cancelled])
            #expect(stopped.withLock { $0 })
        }

        @Test("statistics and events count respond verdicts")
        func statistics() async throws {
            let audited = try AuditedSession(rules: "[respond 204]\nn /anything/nothing$\n")
            let events = audited.auditor.events()
            _ = try await audited.session.data(from: HTTPBin.url(HTTPBin.base + "/anything/nothing"))
            #expect(audited.auditor.statistics.verdicts[.respond] == 1)
            _ = try await audited.finish()
            var finished: [AuditRecord] = []
            for await event in events { if case .finished(let record) = event { finished.append(record) } }
            #expect(finished.map(\.outcome.kind) == [.responded])
            #expect(finished.first?.outcome.status == 204)
        }
    }
}
