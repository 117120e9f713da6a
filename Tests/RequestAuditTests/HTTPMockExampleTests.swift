import Foundation
import RequestAudit
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// An example: a rule file as an HTTP mock for an app's networking code. The app's client below is
// ordinary URLSession code that knows nothing of RequestAudit; the test installs an auditor whose
// policy (Fixtures/weather-mock/weather.rules) answers the API's URLs locally and blocks the rest,
// so the client runs offline against canned answers, including an outage.

/// The app's networking code under test.
struct WeatherClient {
    struct Forecast: Decodable, Equatable {
        struct Day: Decodable, Equatable {
            let date: String
            let high: Int
            let low: Int
            let summary: String
        }
        let city: String
        let days: [Day]
    }

    enum Failure: Error, Equatable {
        case unavailable(status: Int)
    }

    let session: URLSession

    func forecast(for city: String) async throws -> Forecast {
        var components = URLComponents(string: "https://api.weather.example/v1/forecast")
        components?.queryItems = [URLQueryItem(name: "city", value: city)]
        guard let url = components?.url else { throw URLError(.badURL) }
        let (data, response) = try await session.data(from: url)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard status == 200 else { throw Failure.unavailable(status: status) }
        return try JSONDecoder().decode(Forecast.self, from: data)
    }
}

extension InterceptionTests {
    @Suite struct HTTPMockExample {
        /// A session whose requests the weather mock answers, and the auditor behind it.
        static func mockedSession() throws -> (URLSession, Auditor) {
            let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("Fixtures/weather-mock").path
            let auditor = try Auditor(policy: Policy(directory: folder))
            let configuration = URLSessionConfiguration.ephemeral
            try auditor.install(into: configuration)
            return (URLSession(configuration: configuration), auditor)
        }

        @Test("the client decodes the recorded forecast the mock serves from a file")
        func recordedForecast() async throws {
            let (session, auditor) = try Self.mockedSession()
            let forecast = try await WeatherClient(session: session).forecast(for: "Berlin")
            try await auditor.shutdown()
            #expect(forecast.city == "Berlin")
            #expect(forecast.days.map(\.summary) == ["Light rain", "Cloudy"])
            #expect(forecast.days.first?.high == 6)
        }

        @Test("any other city gets an empty forecast naming that city (the rule's capture)")
        func anyCity() async throws {
            let (session, auditor) = try Self.mockedSession()
            let forecast = try await WeatherClient(session: session).forecast(for: "Lisbon")
            try await auditor.shutdown()
            #expect(forecast == WeatherClient.Forecast(city: "Lisbon", days: []))
        }

        @Test("the client reports an outage when the API answers 503")
        func outage() async throws {
            let (session, auditor) = try Self.mockedSession()
            await #expect(throws: WeatherClient.Failure.unavailable(status: 503)) {
                try await WeatherClient(session: session).forecast(for: "Atlantis")
            }
            try await auditor.shutdown()
        }

        @Test("a request the mock does not cover fails instead of reaching the network")
        func unmocked() async throws {
            let (session, auditor) = try Self.mockedSession()
            var caught: URLError?
            do {
                _ = try await session.data(from: try #require(URL(string: "https://api.weather.example/v2/alerts")))
            } catch let error as URLError {
                caught = error
            }
            try await auditor.shutdown()
            #expect(
                caught?.requestAuditError
                    == .blocked(
                        rule: "weather/unmocked", message: "Not mocked", url: "https://api.weather.example/v2/alerts"))
        }
    }
}
