import Foundation
import Testing

@testable import AuditReport

@Suite struct HTTPDateTests {
    @Test(
        "the three HTTP date formats name the same instant (RFC 9110 §5.6.7)",
        arguments: ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"])
    func formats(text: String) {
        #expect(HTTPDate.parse(text) == Date(timeIntervalSince1970: 784_111_777))
    }

    @Test("written as IMF-fixdate, read back the same, across leap days and centuries")
    func roundTrip() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        var seconds: Int64 = 0
        while seconds < 8_000_000_000 {
            let date = Date(timeIntervalSince1970: Double(seconds))
            #expect(HTTPDate.format(date) == formatter.string(from: date))
            #expect(HTTPDate.parse(HTTPDate.format(date)) == date)
            seconds += 7_777_777
        }
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 951_782_400)) == "Tue, 29 Feb 2000 00:00:00 GMT")
    }

    @Test("what is not an HTTP date is nil", arguments: ["0", "", "yesterday", "Sun, 32 Nov 1994 08:49:37 GMT"])
    func invalid(text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }
}
