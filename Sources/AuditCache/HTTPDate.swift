import Foundation

/// HTTP dates (RFC 9110 §5.6.7): read in all three formats, written as IMF-fixdate.
enum HTTPDate {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]

    /// The date `text` names, or nil when it is not an HTTP date: `Sun, 06 Nov 1994 08:49:37 GMT`,
    /// `Sunday, 06-Nov-94 08:49:37 GMT` or `Sun Nov  6 08:49:37 1994`.
    static func parse(_ text: String) -> Date? {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
        var day: Int?
        var month: Int?
        var year: Int?
        var time: [Int]?
        switch words.count {
        case 5 where words[4] == "GMT" && words[1].contains("-"):  // RFC 850
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
        guard let day, let month, let year, let time, (1...31).contains(day), year >= 1970 else { return nil }
        var components = DateComponents()
        components.calendar = calendar
        components.timeZone = calendar.timeZone
        (components.year, components.month, components.day) = (year, month + 1, day)
        (components.hour, components.minute, components.second) = (time[0], time[1], time[2])
        return components.date
    }

    /// `date` as an IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func format(_ date: Date) -> String {
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
        func two(_ value: Int?) -> String { value.map { $0 < 10 ? "0\($0)" : "\($0)" } ?? "00" }
        return "\(weekdays[(parts.weekday ?? 1) - 1]), \(two(parts.day)) \(months[(parts.month ?? 1) - 1]) "
            + "\(parts.year ?? 1970) \(two(parts.hour)):\(two(parts.minute)):\(two(parts.second)) GMT"
    }

    private static func clock(_ text: String) -> [Int]? {
        let parts = text.split(separator: ":").compactMap { Int($0) }
        guard parts.count == 3, parts[0] < 24, parts[1] < 60, parts[2] < 61 else { return nil }
        return parts
    }

    private static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "GMT") ?? .current
        return calendar
    }()
}
