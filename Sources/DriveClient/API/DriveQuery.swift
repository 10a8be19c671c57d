import Foundation

/// Building `q` for files.list safely.
public enum DriveQuery {
    /// A string literal for `q`: single-quoted, with `\` → `\\` and `'` → `\'`.
    public static func quote(_ value: String) -> String {
        "'" + escape(value) + "'"
    }

    /// `\` → `\\`, `'` → `\'` (the backslash first).
    public static func escape(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'")
    }

    /// `'<id>' in parents and trashed = false`
    public static func children(of folderID: String) -> String {
        "\(quote(folderID)) in parents and trashed = false"
    }

    /// Exact-name lookup in a folder. Drive compares names case-insensitively: filter the result by exact case.
    public static func child(named name: String, in folderID: String) -> String {
        "name = \(quote(name)) and \(quote(folderID)) in parents and trashed = false"
    }

    /// `('a' in parents or 'b' in parents ...) and trashed = false`: one query for many folders.
    public static func children(ofAny folderIDs: [String]) -> String {
        if folderIDs.count == 1 { return children(of: folderIDs[0]) }
        return "(" + folderIDs.map { "\(quote($0)) in parents" }.joined(separator: " or ") + ") and trashed = false"
    }

    /// Everything in the trash: what was trashed and what is in a trashed folder.
    public static let trashed = "trashed = true"

    /// Google's 400 for an OR chain that is too long: "The query is too complex."
    public static func isQueryTooComplex(_ error: DriveError) -> Bool {
        guard case .invalidArgument(let info) = error else { return false }
        return info.message.lowercased().contains("too complex")
    }
}
