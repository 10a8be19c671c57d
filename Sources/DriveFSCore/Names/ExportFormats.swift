import DriveClient
import Foundation

/// Which format each Google Workspace type is shown in (`--export-formats`).
///
/// The option is a list of extensions in order of preference, as rclone spells it
/// (`docx,xlsx,pptx,svg`): each Workspace type is exported to the first listed format it supports.
/// Types that support none of them, and types Drive cannot export at all (Forms, Sites, Maps...),
/// are listed with no extension and size 0; opening one answers `EOPNOTSUPP` (see semantics.md).
public struct ExportFormats: Sendable, Equatable {
    public struct Choice: Sendable, Equatable {
        public var mimeType: String
        public var fileExtension: String
    }

    public let preference: [String]

    public static let defaultPreference = ["docx", "xlsx", "pptx", "svg", "pdf"]

    /// Extensions this table knows, with their MIME types.
    public static let mimeTypes: [String: String] = [
        "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "odt": "application/vnd.oasis.opendocument.text",
        "rtf": "application/rtf",
        "pdf": "application/pdf",
        "txt": "text/plain",
        "html": "text/html",
        "epub": "application/epub+zip",
        "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "ods": "application/vnd.oasis.opendocument.spreadsheet",
        "csv": "text/csv",
        "tsv": "text/tab-separated-values",
        "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "odp": "application/vnd.oasis.opendocument.presentation",
        "svg": "image/svg+xml",
        "png": "image/png",
        "jpg": "image/jpeg",
        "json": "application/vnd.google-apps.script+json",
    ]

    /// What Google exports each Workspace type to (about.exportFormats, the part drivefs uses).
    public static let exportable: [String: Set<String>] = [
        "application/vnd.google-apps.document": ["docx", "odt", "rtf", "pdf", "txt", "html", "epub"],
        "application/vnd.google-apps.spreadsheet": ["xlsx", "ods", "csv", "tsv", "pdf", "html"],
        "application/vnd.google-apps.presentation": ["pptx", "odp", "pdf", "txt"],
        "application/vnd.google-apps.drawing": ["svg", "png", "jpg", "pdf"],
        "application/vnd.google-apps.script": ["json"],
    ]

    public init(preference: [String] = ExportFormats.defaultPreference) {
        self.preference = preference
    }

    /// Parses `docx,xlsx,...`; the reason when the text is not such a list of known extensions.
    public static func parse(_ text: String) -> (formats: ExportFormats?, problem: String?) {
        let items = text.split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard !items.isEmpty, !items.contains(where: \.isEmpty) else { return (nil, "expected extensions separated by commas") }
        for item in items where mimeTypes[item] == nil {
            return (nil, "unknown format '\(item)' (known: \(mimeTypes.keys.sorted().joined(separator: ", ")))")
        }
        return (ExportFormats(preference: items), nil)
    }

    /// The format `mimeType` is shown in, or nil when it is not exported.
    public func choice(for mimeType: String) -> Choice? {
        guard let supported = Self.exportable[mimeType] else { return nil }
        for ext in preference where supported.contains(ext) {
            return Choice(mimeType: Self.mimeTypes[ext]!, fileExtension: ext)
        }
        return nil
    }
}

