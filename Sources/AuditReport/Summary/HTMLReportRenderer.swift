import Foundation

/// `summary.html`: one self-contained page (no network, no external scripts) with inline SVG
/// charts — verdicts over time, top blocked hosts, category split — and sortable tables.
public struct HTMLReportRenderer: ReportRenderer {
    /// Creates the renderer.
    public init() {}
    /// `summary.html`.
    public var fileName: String { "summary.html" }

    static let colors = [
        "pass": "#8c8c8c", "allow": "#2e8b57", "block": "#c0392b", "redirect": "#2874a6", "warn": "#d68910",
        "respond": "#7d3c98",
    ]

    /// The HTML text.
    public func render(_ report: SummaryReport) throws -> String {
        var body: [String] = []
        body.append("<h1>RequestAudit summary</h1>")
        body.append(
            "<p>\(report.totalRequests) requests from \(escape(ReportText.time(report.firstRequest))) to \(escape(ReportText.time(report.lastRequest))). Logs: \(escape(report.logs.joined(separator: ", "))).</p>"
        )
        body.append(
            "<div class=\"cards\">"
                + ReportText.verdictOrder.map { verdict in
                    let count = report.verdicts[verdict] ?? 0
                    return
                        "<div class=\"card\" style=\"border-color:\(Self.colors[verdict] ?? "#000")\"><b>\(count)</b><span>\(verdict) · \(ReportText.percent(count, of: report.totalRequests))</span></div>"
                }.joined() + "</div>")
        body.append("<h2>Verdicts per \(escape(report.timelineBucket))</h2>" + timelineChart(report))
        body.append(
            "<div class=\"row\"><section><h2>Top blocked hosts</h2>"
                + barChart(report.topHostsByVerdict["block"] ?? [], color: Self.colors["block"] ?? "#c0392b")
                + "</section>")
        body.append("<section><h2>Categories</h2>" + categoryChart(report) + "</section></div>")
        body.append(
            "<h2>Rules</h2>"
                + table(
                    ["rule", "decided", "recorded"], report.rules.map { [$0.rule, "\($0.decided)", "\($0.recorded)"] }))
        if let unused = report.rulesWithoutHits {
            body.append(
                "<p>Rules without hits: \(unused.isEmpty ? "none" : escape(unused.joined(separator: ", "))).</p>")
        }
        body.append(
            "<h2>Top hosts by verdict</h2>"
                + table(
                    ["verdict", "host", "requests"],
                    ReportText.verdictOrder.flatMap { verdict in
                        (report.topHostsByVerdict[verdict] ?? []).map { [verdict, $0.name, "\($0.count)"] }
                    }))
        body.append(
            "<h2>Redirects</h2>"
                + table(["from", "to", "count"], report.redirects.map { [$0.from, $0.to, "\($0.count)"] }))
        if let differences = report.shadowDifferences {
            body.append(
                "<h2>Shadow differences</h2>"
                    + table(
                        ["live", "shadow", "rule", "requests"],
                        differences.map { [$0.live, $0.shadow, $0.rule ?? "–", "\($0.count)"] }))
        }
        if let byRule = report.cacheByRule, let byHost = report.cacheByHost {
            let header = ["requests", "hits", "hit ratio", "stored", "bytes saved"]
            body.append(
                "<h2>Cache</h2>" + table(["rule"] + header, byRule.map(\.tableRow))
                    + table(["host"] + header, byHost.map(\.tableRow)))
        }
        body.append(
            "<h2>Statistics (record rules)</h2>"
                + table(
                    ["rule", "matches"],
                    report.recordedByRule.sorted { $0.key < $1.key }.map { [$0.key, "\($0.value)"] }))
        let time = report.decisionTime
        body.append(
            "<h2>Decision time</h2>"
                + table(
                    ["decisions", "p50", "p90", "p99", "max"],
                    [
                        [
                            "\(time.count)", ReportText.duration(time.p50), ReportText.duration(time.p90),
                            ReportText.duration(time.p99), ReportText.duration(time.max),
                        ]
                    ]))
        body.append(
            "<h2>Outcomes and errors</h2>"
                + table(
                    ["outcome", "requests"], report.outcomes.sorted { $0.key < $1.key }.map { [$0.key, "\($0.value)"] })
        )
        body.append(
            table(
                ["error", "description", "requests"],
                report.errors.map { ["\($0.domain) \($0.code)", $0.description, "\($0.count)"] }))
        body.append(
            "<p>Requests with failed matches: \(report.requestsWithMatchErrors). Log lines skipped: \(report.skippedLines) (torn: \(report.tornLines)).</p>"
        )
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>RequestAudit summary</title>
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <style>
            body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#222}
            h1{margin-bottom:.2em}h2{margin-top:1.6em;font-size:1.15em}
            .cards{display:flex;gap:.8em;flex-wrap:wrap}.card{border-left:6px solid;padding:.4em .8em;background:#f6f6f6;min-width:8em}
            .card b{display:block;font-size:1.6em}.row{display:flex;gap:2em;flex-wrap:wrap}.row section{flex:1;min-width:320px}
            table{border-collapse:collapse;width:100%;margin:.5em 0}th,td{border-bottom:1px solid #ddd;padding:.25em .5em;text-align:left}
            th{cursor:pointer;background:#f0f0f0;user-select:none}td.n{text-align:right;font-variant-numeric:tabular-nums}
            svg text{font:11px system-ui,sans-serif;fill:#333}.legend span{display:inline-block;margin-right:1em}
            .legend i{display:inline-block;width:.8em;height:.8em;margin-right:.3em}
            </style></head><body>
            \(body.joined(separator: "\n"))
            <script>
            document.querySelectorAll('table').forEach(function(t){t.querySelectorAll('th').forEach(function(th,i){th.addEventListener('click',function(){
              var rows=Array.from(t.tBodies[0].rows),asc=th.dataset.asc!=='1';th.dataset.asc=asc?'1':'0';
              rows.sort(function(a,b){var x=a.cells[i].textContent,y=b.cells[i].textContent,p=parseFloat(x),q=parseFloat(y);
                var c=(!isNaN(p)&&!isNaN(q))?p-q:x.localeCompare(y);return asc?c:-c;});
              rows.forEach(function(r){t.tBodies[0].appendChild(r);});});});});
            </script>
            </body></html>

            """
    }

    private func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    private func table(_ header: [String], _ rows: [[String]]) -> String {
        guard !rows.isEmpty else { return "<p>(none)</p>" }
        let head = "<thead><tr>" + header.map { "<th>\(escape($0))</th>" }.joined() + "</tr></thead>"
        let body = rows.map { row in
            "<tr>"
                + row.map { cell in
                    let isNumber = !cell.isEmpty && cell.allSatisfy { $0.isNumber || $0 == "." }
                    return "<td\(isNumber ? " class=\"n\"" : "")>\(escape(cell))</td>"
                }.joined() + "</tr>"
        }.joined()
        return "<table>\(head)<tbody>\(body)</tbody></table>"
    }

    private func legend() -> String {
        "<div class=\"legend\">"
            + ReportText.verdictOrder.map {
                "<span><i style=\"background:\(Self.colors[$0] ?? "#000")\"></i>\($0)</span>"
            }.joined() + "</div>"
    }

    /// Stacked bars of verdicts per time bucket.
    private func timelineChart(_ report: SummaryReport) -> String {
        let points = report.timeline
        guard !points.isEmpty else { return "<p>(no requests)</p>" }
        let width = 1_000.0
        let height = 220.0
        let top = points.map { $0.verdicts.values.reduce(0, +) }.max() ?? 1
        let slot = (width - 50) / Double(points.count)
        var shapes: [String] = []
        for (index, point) in points.enumerated() {
            var y = height - 20
            let x = 45 + Double(index) * slot
            for verdict in ReportText.verdictOrder {
                let count = point.verdicts[verdict] ?? 0
                guard count > 0 else { continue }
                let barHeight = (height - 40) * Double(count) / Double(max(top, 1))
                y -= barHeight
                shapes.append(
                    String(
                        format:
                            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%@\"><title>%@ %@: %d</title></rect>",
                        x, y, max(slot * 0.8, 1), barHeight, Self.colors[verdict] ?? "#000",
                        escape(ReportText.bucketLabel(point.start, bucket: report.timelineBucket)), verdict, count))
            }
        }
        let first = escape(ReportText.bucketLabel(points[0].start, bucket: report.timelineBucket))
        let last = escape(ReportText.bucketLabel(points[points.count - 1].start, bucket: report.timelineBucket))
        return
            "<svg viewBox=\"0 0 \(Int(width)) \(Int(height))\" width=\"100%\" role=\"img\" aria-label=\"verdicts over time\">"
            + "<line x1=\"44\" y1=\"\(Int(height - 20))\" x2=\"\(Int(width))\" y2=\"\(Int(height - 20))\" stroke=\"#999\"/>"
            + "<text x=\"0\" y=\"24\">\(top)</text><text x=\"0\" y=\"\(Int(height - 22))\">0</text>"
            + shapes.joined()
            + "<text x=\"45\" y=\"\(Int(height - 4))\">\(first)</text><text x=\"\(Int(width))\" y=\"\(Int(height - 4))\" text-anchor=\"end\">\(last)</text>"
            + "</svg>" + legend()
    }

    /// Horizontal bars for named counts.
    private func barChart(_ counts: [SummaryReport.Count], color: String) -> String {
        guard let top = counts.map(\.count).max() else { return "<p>(none)</p>" }
        let rowHeight = 22.0
        let height = rowHeight * Double(counts.count) + 4
        let bars = counts.enumerated().map { index, item in
            let y = Double(index) * rowHeight + 2
            let width = 300 * Double(item.count) / Double(top)
            return String(
                format:
                    "<text x=\"0\" y=\"%.1f\">%@</text><rect x=\"200\" y=\"%.1f\" width=\"%.1f\" height=\"16\" fill=\"%@\"/><text x=\"%.1f\" y=\"%.1f\">%d</text>",
                y + 13, escape(String(item.name.prefix(32))), y, max(width, 1), color, 206 + width, y + 13, item.count)
        }.joined()
        return
            "<svg viewBox=\"0 0 560 \(Int(height))\" width=\"100%\" role=\"img\" aria-label=\"top blocked hosts\">\(bars)</svg>"
    }

    /// One stacked horizontal bar per category, split by verdict.
    private func categoryChart(_ report: SummaryReport) -> String {
        guard let top = report.categories.map(\.total).max() else { return "<p>(none)</p>" }
        let rowHeight = 24.0
        let height = rowHeight * Double(report.categories.count) + 4
        var shapes: [String] = []
        for (index, category) in report.categories.enumerated() {
            let y = Double(index) * rowHeight + 2
            shapes.append(
                String(
                    format: "<text x=\"0\" y=\"%.1f\">%@ (%d)</text>", y + 14, escape(category.category), category.total
                ))
            var x = 160.0
            for verdict in ReportText.verdictOrder {
                let count = category.verdicts[verdict] ?? 0
                guard count > 0 else { continue }
                let width = 380 * Double(count) / Double(top)
                shapes.append(
                    String(
                        format:
                            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"18\" fill=\"%@\"><title>%@: %d</title></rect>",
                        x, y, width, Self.colors[verdict] ?? "#000", verdict, count))
                x += width
            }
        }
        return
            "<svg viewBox=\"0 0 560 \(Int(height))\" width=\"100%\" role=\"img\" aria-label=\"category split\">\(shapes.joined())</svg>"
            + legend()
    }
}
