extension Redaction {
    /// A `multipart/form-data` body (parts separated by `boundary`) with the values of its secret
    /// fields hidden, as a form's or a URL query's parameters are (`password`, `client_secret`,
    /// `api_key`, a value of a secret's shape), and every other byte as sent; files (parts with a
    /// `filename`) are left as they are. A body without such a field comes back as it is.
    public func redact(multipartBody body: [UInt8], boundary: String) -> [UInt8] {
        let delimiter = Array(("--" + boundary).utf8)
        guard !boundary.isEmpty else { return body }
        var starts: [Int] = []
        var index = 0
        while let found = body[index...].firstRange(of: delimiter) {
            starts.append(found.lowerBound)
            index = found.upperBound
        }
        var spans: [Range<Int>] = []
        for (start, next) in zip(starts, starts.dropFirst()) {
            // A part: its delimiter's line, headers, a blank line, the value, CRLF before the next delimiter.
            let partStart = start + delimiter.count
            let valueEnd = next >= 2 && body[(next - 2)..<next].elementsEqual([0x0D, 0x0A]) ? next - 2 : next
            guard let headerEnd = body[partStart..<next].firstRange(of: [0x0D, 0x0A, 0x0D, 0x0A])?.lowerBound,
                headerEnd + 4 <= valueEnd,
                let name = Self.fieldName(in: body[partStart..<headerEnd])
            else { continue }
            let value = (headerEnd + 4)..<valueEnd
            if !value.isEmpty,
                Self.isCredentialField(name) || isSecretParameter(Array(name.utf8)[...], body[value], { true })
            {
                spans.append(value)
            }
        }
        return spans.isEmpty ? body : hiding(spans, of: body)
    }

    /// The boundary a `multipart/…` content type names, its quotes removed; nil when it names none.
    public static func multipartBoundary(of contentType: String) -> String? {
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, pair[0].lowercased() == "boundary" else { continue }
            let value = pair[1]
            return value.count >= 2 && value.hasPrefix("\"") && value.hasSuffix("\"")
                ? String(value.dropFirst().dropLast()) : value
        }
        return nil
    }

    /// The `name` of a form field's `Content-Disposition` in a part's `headers`; nil for a file
    /// (a part with a `filename`) or a part without one.
    private static func fieldName(in headers: ArraySlice<UInt8>) -> String? {
        let text = String(decoding: headers, as: UTF8.self)
        for line in text.split(separator: "\r\n") {
            let lowered = line.lowercased()
            guard lowered.hasPrefix("content-disposition:") else { continue }
            guard !lowered.contains("filename") else { return nil }
            guard let range = lowered.range(of: "name=\"") ?? lowered.range(of: "name=") else { return nil }
            let rest = lowered[range.upperBound...]
            let isQuoted = lowered[range].hasSuffix("\"")
            let end = rest.firstIndex(where: { isQuoted ? $0 == "\"" : $0 == ";" || $0 == " " }) ?? rest.endIndex
            return String(rest[..<end])
        }
        return nil
    }
}
