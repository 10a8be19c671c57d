import Foundation

/// Text for the generated manual pages (roff, `man -l`): CommandLineKit's `ManPageFormatter`
/// renders both executables' pages from their option tables (`drivefs debug man`,
/// `drivefs-emulator --man`) with this one escaping.
public enum Roff {
    /// A line of text safe in roff: backslashes and hyphens escaped, a leading `.` or `'` protected
    /// (it would be read as a request).
    public static func escape(_ text: String) -> String {
        var s = text.replacingOccurrences(of: "\\", with: "\\e").replacingOccurrences(of: "-", with: "\\-")
        if s.hasPrefix(".") || s.hasPrefix("'") { s = "\\&" + s }
        return s
    }

    /// An argument of a request such as `.TH`: escaped, in double quotes.
    public static func quoted(_ text: String) -> String {
        "\"" + escape(text).replacingOccurrences(of: "\"", with: "\\(dq") + "\""
    }

    /// Text as roff paragraphs: blank lines separate them, lines within one are joined (the page
    /// reflows them).
    public static func paragraphs(_ text: String) -> [String] {
        var out: [String] = []
        var current: [String] = []
        func flush() {
            if !current.isEmpty { out.append(".PP"); out.append(escape(current.joined(separator: " "))) }
            current = []
        }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { flush() } else { current.append(trimmed) }
        }
        flush()
        return out
    }

    /// An option as a tagged paragraph: `\fB\-\-name\fR=\fIVALUE\fR`, then its help joined into
    /// one line (help text is wrapped for an 80-column terminal; the page reflows it).
    public static func option(long: String, short: Character? = nil, valueName: String?, help: String,
                              separator: String = "=") -> [String] {
        var head = short.map { "\\fB\\-\($0)\\fR, " } ?? ""
        head += "\\fB\\-\\-\(escape(long))\\fR"
        if let valueName { head += "\(separator)\\fI\(escape(valueName))\\fR" }
        let text = help.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        return [".TP", head, escape(text)]
    }

    /// The page's date, `YYYY-MM-DD` in UTC: `$SOURCE_DATE_EPOCH`'s when set (reproducible
    /// builds), else today's.
    public static func pageDate(_ environment: [String: String]) -> String {
        let seconds = environment["SOURCE_DATE_EPOCH"].flatMap(TimeInterval.init) ?? Date().timeIntervalSince1970
        return String(RFC3339.format(millis: Int64(seconds * 1000)).prefix(10))
    }
}
