import DriveSupport
import Glibc

/// Unbuffered writes to the standard streams (the process may exec, fork or exit right after).
public enum Output {
    public static func standardOutput(_ text: String) { write(1, text) }
    public static func standardError(_ text: String) { write(2, text) }

    /// `rows` as aligned columns, two spaces apart (the last column not padded), a line each.
    public static func columns(_ rows: [[String]]) -> [String] {
        guard let first = rows.first else { return [] }
        let widths = first.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { i, cell in
                i == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[i] - cell.count)
            }.joined(separator: "  ")
        }
    }

    /// A closed or full stream has nowhere to report to: the text is dropped.
    private static func write(_ fd: Int32, _ text: String) {
        try? SystemCall.writeAll(fd, Array(text.utf8))
    }
}
