import AuditReport
import Foundation
import Testing

/// Headless Chromium, when installed.
let chromiumPath = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first {
    FileManager.default.isExecutableFile(atPath: $0)
}

/// The HTML report opened in a real browser (headless Chromium, Debian's `chromium`, which
/// `.ci/run` installs).
@Suite(.enabled(if: chromiumPath != nil, "needs chromium (apt-get install chromium)"))
struct HTMLInBrowserTests {
    /// Loads `html` in headless Chromium; returns the console lines and the final DOM.
    static func load(_ html: String) throws -> (console: [String], dom: String) {
        let path = try writeTemporary(html, name: "report.html")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: chromiumPath ?? "/usr/bin/chromium")
        process.arguments = [
            "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0", "--dump-dom",
            "file://\(path)",
        ]
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let dom = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (log.split(separator: "\n").filter { $0.contains(":CONSOLE") }.map(String.init), dom)
    }

    @Test("the report renders in Chromium without console errors, with its three charts")
    func rendersCleanly() throws {
        let (console, dom) = try Self.load(try HTMLReportRenderer().render(GoldenReportTests.report()))
        #expect(console.isEmpty, "console: \(console)")
        #expect(dom.components(separatedBy: "<svg").count - 1 == 3)
    }

    @Test("clicking a column header sorts its table")
    func sortableTables() throws {
        let html = try HTMLReportRenderer().render(GoldenReportTests.report())
        let probe = """
            <script>
            var table = document.querySelectorAll('table')[0], header = table.querySelectorAll('th')[1];
            header.click();
            console.log('ascending:' + Array.from(table.tBodies[0].rows).map(function(r){return r.cells[1].textContent}).join(','));
            </script></body>
            """
        let (console, _) = try Self.load(html.replacingOccurrences(of: "</body>", with: probe))
        let line = try #require(console.first { $0.contains("ascending:") })
        let values = line.split(separator: "ascending:")[1].prefix { $0 != "\"" }.split(separator: ",").compactMap {
            Int($0)
        }
        #expect(values.count > 1)
        #expect(values == values.sorted())
    }
}
