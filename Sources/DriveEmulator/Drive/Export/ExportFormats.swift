import Foundation

/// What Workspace files export to and what imports to them (about.exportFormats / importFormats),
/// and the MIME type the emulator guesses from a file name (seed import, uploads without a type).
enum ExportFormats {
    static let pdf = "application/pdf"
    static let targets: [String: [String]] = [
        DriveMime.document: [
            "application/rtf", "application/vnd.oasis.opendocument.text", "text/html", pdf, "text/markdown",
            "application/epub+zip", "application/zip",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document", "text/plain",
        ],
        DriveMime.spreadsheet: [
            "application/x-vnd.oasis.opendocument.spreadsheet", "text/tab-separated-values", pdf,
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "text/csv", "application/zip",
            "application/vnd.oasis.opendocument.spreadsheet",
        ],
        DriveMime.presentation: [
            "application/vnd.oasis.opendocument.presentation", pdf,
            "application/vnd.openxmlformats-officedocument.presentationml.presentation", "text/plain",
            "image/jpeg", "image/png", "image/svg+xml",
        ],
        DriveMime.drawing: ["image/svg+xml", "image/png", pdf, "image/jpeg"],
        "application/vnd.google-apps.script": ["application/vnd.google-apps.script+json"],
        "application/vnd.google-apps.form": ["application/zip"],
        "application/vnd.google-apps.jam": [pdf],
        "application/vnd.google-apps.site": ["text/plain"],
    ]

    static let imports: [String: [String]] = [
        "text/plain": [DriveMime.document], "text/html": [DriveMime.document], "text/markdown": [DriveMime.document],
        "application/rtf": [DriveMime.document], "application/vnd.oasis.opendocument.text": [DriveMime.document],
        "application/msword": [DriveMime.document],
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document": [DriveMime.document],
        "text/csv": [DriveMime.spreadsheet], "text/tab-separated-values": [DriveMime.spreadsheet],
        "application/vnd.ms-excel": [DriveMime.spreadsheet],
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": [DriveMime.spreadsheet],
        "application/vnd.oasis.opendocument.spreadsheet": [DriveMime.spreadsheet],
        "application/vnd.ms-powerpoint": [DriveMime.presentation],
        "application/vnd.openxmlformats-officedocument.presentationml.presentation": [DriveMime.presentation],
        "application/vnd.oasis.opendocument.presentation": [DriveMime.presentation],
        "image/png": [DriveMime.document], "image/jpeg": [DriveMime.document],
    ]

    /// Deterministic export bytes for (file, format): `text/plain` (and the other plain-text
    /// targets) is the document text itself; any other format is a fixed header followed by it, so
    /// tests can predict every byte.
    static func exportBytes(fileId: String, sourceMime: String, target: String, text: [UInt8]) -> [UInt8] {
        if ["text/plain", "text/csv", "text/tab-separated-values", "text/markdown"].contains(target) { return text }
        let header = "drivefs-emulator export\nfile: \(fileId)\nsource: \(sourceMime)\nformat: \(target)\n\n"
        return Array(header.utf8) + text
    }

    static let byExtension: [String: String] = [
        "txt": "text/plain", "text": "text/plain", "md": "text/markdown", "csv": "text/csv", "tsv": "text/tab-separated-values",
        "html": "text/html", "htm": "text/html", "css": "text/css", "js": "text/javascript", "json": "application/json",
        "xml": "text/xml", "yaml": "application/x-yaml", "yml": "application/x-yaml", "sh": "application/x-sh",
        "py": "text/x-python", "swift": "text/x-swift", "c": "text/x-c", "h": "text/x-c", "go": "text/x-go",
        "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "svg": "image/svg+xml",
        "webp": "image/webp", "bmp": "image/bmp", "ico": "image/x-icon", "pdf": "application/pdf",
        "zip": "application/zip", "gz": "application/gzip", "tgz": "application/gzip", "tar": "application/x-tar",
        "bz2": "application/x-bzip2", "xz": "application/x-xz", "7z": "application/x-7z-compressed",
        "mp3": "audio/mpeg", "wav": "audio/wav", "ogg": "audio/ogg", "flac": "audio/flac", "mp4": "video/mp4",
        "mkv": "video/x-matroska", "webm": "video/webm", "mov": "video/quicktime", "avi": "video/x-msvideo",
        "doc": "application/msword", "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xls": "application/vnd.ms-excel", "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "ppt": "application/vnd.ms-powerpoint", "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "odt": "application/vnd.oasis.opendocument.text", "ods": "application/vnd.oasis.opendocument.spreadsheet",
        "odp": "application/vnd.oasis.opendocument.presentation", "rtf": "application/rtf", "epub": "application/epub+zip",
        "bin": "application/octet-stream",
    ]

    static func mimeType(forName name: String) -> String {
        let ext = FileResource.extensions(of: name).last.lowercased()
        return byExtension[ext] ?? "application/octet-stream"
    }
}
