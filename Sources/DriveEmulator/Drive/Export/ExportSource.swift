/// What an export is made of: a Workspace file's id, name and type, and its stored "document text"
/// (the content of an import or a seed file; empty for a file created from metadata alone).
///
/// Decisions: the text is UTF-8 (invalid sequences become U+FFFD, a leading BOM is dropped); CRLF,
/// CR and LF all end a line, and a final line break does not start another line, so `"a\nb\n"`
/// is the two paragraphs `a` and `b` and an empty text has none. In `lines` (and in sheet cells)
/// scalars that XML 1.0 forbids become U+FFFD, so that every format can carry them the same way.
struct ExportSource {
    let fileId: String
    let name: String
    let sourceMime: String
    /// The stored bytes, as they were uploaded.
    let raw: [UInt8]
    /// The text with line ends normalised to LF (for the sheet parser).
    let normalizedText: String
    /// One entry per line (paragraph), without its line break.
    let lines: [String]

    init(fileId: String, name: String, sourceMime: String, text: [UInt8]) {
        self.fileId = fileId
        self.name = name
        self.sourceMime = sourceMime
        raw = text
        var decoded = String(decoding: text, as: UTF8.self)
        if decoded.unicodeScalars.first == "\u{FEFF}" { decoded.unicodeScalars.removeFirst() }
        var normalized = String.UnicodeScalarView()
        var previousCR = false
        for scalar in decoded.unicodeScalars {
            if scalar == "\n", previousCR { previousCR = false; continue }
            previousCR = scalar == "\r"
            normalized.append(previousCR ? "\n" : scalar)
        }
        normalizedText = String(normalized)
        var lines = normalizedText.split(separator: "\n", omittingEmptySubsequences: false).map { ExportSource.sanitized($0) }
        if lines.last == "" { lines.removeLast() }
        self.lines = lines
    }

    /// `s` with every scalar that XML 1.0 forbids (and every control other than tab and LF) as U+FFFD.
    static func sanitized(_ s: some StringProtocol) -> String {
        var out = String.UnicodeScalarView()
        for scalar in s.unicodeScalars {
            let ok = scalar == "\t" || scalar == "\n" || (scalar.value >= 0x20 && MarkupText.isAllowedInXML(scalar))
            out.append(ok ? scalar : "\u{FFFD}")
        }
        return String(out)
    }

    /// The title exports carry (HTML `<title>`, PDF `/Title`, `dc:title`).
    var title: String { ExportSource.sanitized(name).replacingOccurrences(of: "\n", with: " ") }

    /// A file name for the entry of a zip export: the title without path separators.
    var entryBaseName: String {
        let cleaned = String(title.map { $0 == "/" || $0 == "\\" ? "_" : $0 })
        return cleaned.isEmpty ? "Untitled" : cleaned
    }

    /// The sheet's rows (see `SheetRows`).
    var rows: [[String]] { SheetRows.parse(normalizedText) }
}

/// A Sheet's stored text read as rows of cells, and written back as CSV and TSV.
///
/// Decisions: the stored text is TSV when its first line holds a tab, else CSV (RFC 4180: fields
/// in double quotes may hold commas, quotes doubled, and line breaks). A line break at the very end
/// does not make an empty row; an empty line in the middle is a row with one empty cell. Cells are
/// sanitized like `ExportSource.lines` (line breaks inside quoted CSV fields are kept).
/// CSV export quotes a field only when it holds a comma, a quote, a line break or leading/trailing
/// spaces and separates rows with CRLF (RFC 4180), no break after the last row; TSV export joins
/// with tabs and CRLF, a tab or line break inside a cell becoming a space (TSV has no quoting).
/// Google's own choices (line ends, final break) are UNVERIFIED.
enum SheetRows {
    static func parse(_ text: String) -> [[String]] {
        let firstLine = text.prefix { $0 != "\n" }
        return firstLine.contains("\t") ? parseTSV(text) : parseCSV(text)
    }

    static func parseTSV(_ text: String) -> [[String]] {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if lines.last == "" { lines.removeLast() }
        return lines.map { $0.split(separator: "\t", omittingEmptySubsequences: false).map { ExportSource.sanitized($0) } }
    }

    static func parseCSV(_ text: String) -> [[String]] {
        var rows: [[String]] = []
        var row: [String] = []
        var field = String.UnicodeScalarView()
        var inQuotes = false, quoteSeen = false, fieldStarted = false
        var it = text.unicodeScalars.makeIterator()
        var pending: Unicode.Scalar? = nil
        func endField() { row.append(ExportSource.sanitized(String(field))); field = .init(); fieldStarted = false; quoteSeen = false }
        while let c = pending ?? it.next() {
            pending = nil
            if inQuotes {
                if c == "\"" {
                    if let n = it.next() {
                        if n == "\"" { field.append("\"") } else { inQuotes = false; pending = n }
                    } else { inQuotes = false }
                } else { field.append(c) }
                continue
            }
            switch c {
            case "\"" where !fieldStarted && !quoteSeen: inQuotes = true; quoteSeen = true; fieldStarted = true
            case ",": endField()
            case "\n": endField(); rows.append(row); row = []
            default: field.append(c); fieldStarted = true
            }
        }
        if fieldStarted || !row.isEmpty || quoteSeen { endField(); rows.append(row) }
        return rows
    }

    static func csv(_ rows: [[String]]) -> String {
        rows.map { row in
            row.map { cell in
                let needsQuotes = cell.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" })
                    || cell.first == " " || cell.last == " "
                return needsQuotes ? "\"" + cell.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : cell
            }.joined(separator: ",")
        }.joined(separator: "\r\n")
    }

    static func tsv(_ rows: [[String]]) -> String {
        rows.map { row in
            row.map { String($0.map { $0 == "\t" || $0 == "\n" ? " " : $0 }) }.joined(separator: "\t")
        }.joined(separator: "\r\n")
    }

    /// A cell written as a number (xlsx `<v>`, ODF `office:value`): a plain decimal of at most 15
    /// digits, so that it reads back as the same text.
    static func isNumber(_ cell: String) -> Bool {
        var s = Substring(cell)
        if s.first == "-" { s = s.dropFirst() }
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isNumber } }) else { return false }
        guard parts[0] == "0" || parts[0].first != "0" else { return false }
        return parts.reduce(0) { $0 + $1.count } <= 15
    }

    /// The text of a sheet for page- and slide-like formats (PDF, plain text): cells joined by two spaces.
    static func textLines(_ rows: [[String]]) -> [String] {
        rows.map { $0.map { $0.replacingOccurrences(of: "\n", with: " ") }.joined(separator: "  ") }
    }
}
