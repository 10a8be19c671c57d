import Foundation

/// What Workspace files export to and what imports to them (about.exportFormats / importFormats),
/// the bytes of each export, and the MIME type the emulator guesses from a file name (seed
/// import, uploads without a type). This folder owns the export formats: the text model
/// (`ExportSource`, `SheetRows`), one zip writer, one CRC-32, and one writer per family
/// (`OfficeOpenXML`, `OpenDocument`, `PDFWriter`, `TextExports`, `RasterExports`).
///
/// INVARIANT: `exportBytes` answers every (type, target) pair of `targets` (a test checks it), so
/// `about.exportFormats` and `exportLinks` list exactly what files.export serves.
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

    /// The bytes of `source` exported as `target` (one of `targets[source.sourceMime]`), or nil
    /// when the emulator cannot make that format. Deterministic: the same file (text and name)
    /// always gives the same bytes. What each format holds is in docs/emulator-drive.md ("Exports").
    static func exportBytes(_ source: ExportSource, target: String) -> [UInt8]? {
        guard targets[source.sourceMime]?.contains(target) == true else { return nil }
        let text = Array(source.lines.joined(separator: "\n").utf8)
        switch (source.sourceMime, target) {
        case (_, "text/plain"), (DriveMime.document, "text/markdown"): return source.raw
        case (DriveMime.document, "text/html"): return Array(TextExports.html(source).utf8)
        case (DriveMime.document, "application/rtf"): return Array(TextExports.rtf(source).utf8)
        case (DriveMime.document, "application/zip"), ("application/vnd.google-apps.form", "application/zip"):
            return TextExports.htmlZip(source)
        case (DriveMime.document, "application/epub+zip"): return TextExports.epub(source)
        case (DriveMime.document, OfficeOpenXML.docx): return OfficeOpenXML.document(source)
        case (DriveMime.document, OpenDocument.odt): return OpenDocument.text(source)

        case (DriveMime.spreadsheet, "text/csv"): return Array(SheetRows.csv(source.rows).utf8)
        case (DriveMime.spreadsheet, "text/tab-separated-values"): return Array(SheetRows.tsv(source.rows).utf8)
        case (DriveMime.spreadsheet, OfficeOpenXML.xlsx): return OfficeOpenXML.workbook(source)
        case (DriveMime.spreadsheet, OpenDocument.ods), (DriveMime.spreadsheet, OpenDocument.odsLegacy):
            return OpenDocument.spreadsheet(source, mime: target)
        case (DriveMime.spreadsheet, "application/zip"): return TextExports.htmlZip(source, table: source.rows)
        case (DriveMime.spreadsheet, pdf): return PDFWriter.pdf(title: source.title, lines: SheetRows.textLines(source.rows))

        case (DriveMime.presentation, OfficeOpenXML.pptx): return OfficeOpenXML.presentation(source, lines: source.lines)
        case (DriveMime.presentation, OpenDocument.odp): return OpenDocument.presentation(source, lines: source.lines)

        case (_, "image/svg+xml"):
            let size = imageSize(source.sourceMime)
            return Array(TextExports.svg(source, lines: source.lines, width: size.width, height: size.height).utf8)
        case (_, "image/png"):
            let size = imageSize(source.sourceMime)
            return RasterExports.png(width: size.width, height: size.height, text: String(decoding: text, as: UTF8.self))
        case (_, "image/jpeg"):
            let size = imageSize(source.sourceMime)
            return RasterExports.jpeg(width: size.width, height: size.height, text: String(decoding: text, as: UTF8.self))
        case ("application/vnd.google-apps.script", "application/vnd.google-apps.script+json"): return TextExports.scriptJSON(source)
        case (_, pdf): return PDFWriter.pdf(title: source.title, lines: source.lines)
        default: return nil
        }
    }

    /// Slides export at 16:9 (960×540), Drawings (and anything else) at 800×600.
    static func imageSize(_ mime: String) -> (width: Int, height: Int) {
        mime == DriveMime.presentation ? (960, 540) : (800, 600)
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
