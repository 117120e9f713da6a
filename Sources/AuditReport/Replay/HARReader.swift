import AuditPolicy
import Foundation

/// Reads the parts of HAR 1.2 files (browser network exports) a replay needs: each entry's method,
/// URL, headers and body size, response status and size, start time and total time.
enum HARReader {
    private struct File: Decodable {
        let log: Log
    }

    private struct Log: Decodable {
        let entries: [Lossy<Entry>]
    }

    private struct Entry: Decodable {
        let startedDateTime: String?
        let time: Double?
        let request: Request
        let response: Response?
    }

    private struct Request: Decodable {
        let method: String
        let url: String
        let headers: [Header]?
        let bodySize: Int?
    }

    private struct Response: Decodable {
        let status: Int?
        let bodySize: Int?
        let content: Content?
    }

    private struct Content: Decodable {
        let size: Int?
    }

    private struct Header: Decodable {
        let name: String
        let value: String
    }

    /// An array element that decodes, or the error it gave, without failing the array.
    private struct Lossy<Value: Decodable>: Decodable {
        let result: Result<Value, Error>

        init(from decoder: any Decoder) throws {
            do {
                result = .success(try Value(from: decoder))
            } catch {
                result = .failure(error)
            }
        }
    }

    static func read(_ data: Data, file: String) -> (entries: [ReplayEntry], problems: [ReplayProblem]) {
        let parsed: File
        do {
            parsed = try JSONDecoder().decode(File.self, from: data)
        } catch {
            if let syntax = JSONSyntaxError(in: data) {
                return (
                    [],
                    [
                        ReplayProblem(
                            position: "\(file):\(syntax.line):\(syntax.column)",
                            message: "not valid JSON: \(syntax.reason)")
                    ]
                )
            }
            return ([], [ReplayProblem(position: file, message: "not a HAR file: \(describe(error))")])
        }
        var entries: [ReplayEntry] = []
        var problems: [ReplayProblem] = []
        for (index, element) in parsed.log.entries.enumerated() {
            let position = "\(file): entry \(index + 1)"
            switch element.result {
            case .failure(let error):
                problems.append(ReplayProblem(position: position, message: describe(error)))
            case .success(let entry):
                do {
                    entries.append(try replayEntry(entry, position: position))
                } catch {
                    problems.append(error)
                }
            }
        }
        return (entries, problems)
    }

    private static func replayEntry(_ entry: Entry, position: String) throws(ReplayProblem) -> ReplayEntry {
        let method = entry.request.method
        guard !method.isEmpty, method.allSatisfy({ $0.isLetter || $0 == "-" }) else {
            throw ReplayProblem(position: position, message: "invalid method '\(method)'")
        }
        guard RequestListReader.isAbsoluteHTTPURL(entry.request.url) else {
            throw ReplayProblem(
                position: position, message: "request.url '\(entry.request.url)' is not an absolute http(s) URL")
        }
        var time: Date?
        if let started = entry.startedDateTime {
            time = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(started)
            if time == nil { time = try? Date.ISO8601FormatStyle().parse(started) }
            if time == nil {
                throw ReplayProblem(position: position, message: "startedDateTime '\(started)' is not an ISO 8601 time")
            }
        }
        let headers = (entry.request.headers ?? []).map { AuditRequest.Header(name: $0.name, value: $0.value) }
        let status = entry.response?.status.flatMap { $0 > 0 ? $0 : nil }
        let size = entry.response?.content?.size ?? entry.response?.bodySize
        return ReplayEntry(
            request: AuditRequest(method: method, url: entry.request.url, headers: headers), time: time,
            status: status, bytes: size.flatMap { $0 >= 0 ? $0 : nil },
            requestBodyBytes: entry.request.bodySize.flatMap { $0 >= 0 ? $0 : nil },
            durationMilliseconds: entry.time.flatMap { $0 >= 0 ? $0 : nil }, position: position
        )
    }

    private static func describe(_ error: Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
                .trimmingCharacters(in: CharacterSet(charactersIn: "."))
        }
        switch error {
        case .keyNotFound(let key, let context):
            let parent = path(context)
            return "missing \(parent.isEmpty ? "" : parent + ".")\(key.stringValue)"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "wrong type at \(path(context))"
        case .dataCorrupted(let context):
            return "not valid JSON (\(context.debugDescription))"
        @unknown default:
            return "\(error)"
        }
    }
}
