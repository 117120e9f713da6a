import Foundation

/// HTTP dates (RFC 9110 §5.6.7): read in all three formats, written as IMF-fixdate. A cookie's
/// `Expires` (`Wed, 21-Oct-2026 07:28:00 GMT`) reads as the second.
package enum HTTPDate {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]

    /// The date `text` names, or nil when it is not an HTTP date: `Sun, 06 Nov 1994 08:49:37 GMT`,
    /// `Sunday, 06-Nov-94 08:49:37 GMT` or `Sun Nov  6 08:49:37 1994`.
    package static func parse(_ text: String) -> Date? {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
        var day: Int?
        var month: Int?
        var year: Int?
        var time: [Int]?
        switch words.count {
        case 4 where words[3] == "GMT" && words[1].contains("-"):  // RFC 850
            let parts = words[1].split(separator: "-")
            guard parts.count == 3 else { return nil }
            day = Int(parts[0])
            month = months.firstIndex(of: String(parts[1]))
            year = Int(parts[2]).map { $0 < 70 ? 2000 + $0 : $0 < 100 ? 1900 + $0 : $0 }
            time = clock(words[2])
        case 6 where words[5] == "GMT":  // IMF-fixdate
            day = Int(words[1])
            month = months.firstIndex(of: words[2])
            year = Int(words[3])
            time = clock(words[4])
        case 5:  // asctime
            month = months.firstIndex(of: words[1])
            day = Int(words[2])
            time = clock(words[3])
            year = Int(words[4])
        default:
            return nil
        }
        guard let day, let month, let year, let time, (1...31).contains(day), year >= 1970, year < 10_000 else {
            return nil
        }
        let days = CivilDate.daysSince1970(year: year, month: month + 1, day: day)
        return Date(timeIntervalSince1970: Double(days * 86_400 + time[0] * 3_600 + time[1] * 60 + time[2]))
    }

    /// `date` as an IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
    package static func format(_ date: Date) -> String {
        let seconds = Int(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let time = seconds - days * 86_400
        let (year, month, day) = CivilDate.date(daysSince1970: days)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        // 1970-01-01 was a Thursday.
        let weekday = weekdays[((days % 7) + 11) % 7]
        return "\(weekday), \(two(day)) \(months[month - 1]) \(year) "
            + "\(two(time / 3_600)):\(two(time / 60 % 60)):\(two(time % 60)) GMT"
    }

    private static func clock(_ text: String) -> [Int]? {
        let parts = text.split(separator: ":").compactMap { Int($0) }
        guard parts.count == 3, parts[0] < 24, parts[1] < 60, parts[2] < 61 else { return nil }
        return parts
    }
}
