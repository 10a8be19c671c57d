/// The text-like exports: HTML (and the zip and EPUB that wrap it), RTF, SVG and the Apps Script
/// JSON. HTML is written as well-formed XHTML so that XML tools read it as well as browsers.
enum TextExports {
    /// `<p>` per line (an empty line is `<p><br/></p>`), or for a sheet a `<table>` of its rows.
    static func html(_ source: ExportSource, table rows: [[String]]? = nil, xmlns: Bool = false) -> String {
        var body = ""
        if let rows {
            body = "<table>" + rows.map { row in
                "<tr>" + row.map { "<td>" + MarkupText.escape($0).replacingOccurrences(of: "\n", with: "<br/>") + "</td>" }.joined() + "</tr>"
            }.joined() + "</table>"
        } else {
            body = source.lines.map { $0.isEmpty ? "<p><br/></p>" : "<p>\(MarkupText.escape($0))</p>" }.joined()
        }
        let ns = xmlns ? " xmlns=\"http://www.w3.org/1999/xhtml\"" : ""
        return "<!DOCTYPE html>\n<html\(ns)><head><meta charset=\"utf-8\"/><title>\(MarkupText.escape(source.title))</title>"
            + "<style>p{margin:0;white-space:pre-wrap}td{white-space:pre-wrap;border:1px solid #ccc}</style></head>"
            + "<body>\(body)</body></html>\n"
    }

    /// Google's zip export of a Doc or Sheet: the HTML in one entry named after the file.
    static func htmlZip(_ source: ExportSource, table rows: [[String]]? = nil) -> [UInt8] {
        var zip = ZipWriter()
        zip.add((rows == nil ? source.entryBaseName : "Sheet1") + ".html", html(source, table: rows))
        return zip.finish()
    }

    /// EPUB 3: `mimetype` first (stored), the container, the package document, the navigation
    /// document and one XHTML chapter. `dcterms:modified` is fixed (1980-01-01, like the zip dates).
    static func epub(_ source: ExportSource) -> [UInt8] {
        let declaration = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        let title = MarkupText.escape(source.title)
        let container = declaration + "<container version=\"1.0\" xmlns=\"urn:oasis:names:tc:opendocument:xmlns:container\"><rootfiles>"
            + "<rootfile full-path=\"OEBPS/content.opf\" media-type=\"application/oebps-package+xml\"/></rootfiles></container>"
        let opf = declaration + "<package xmlns=\"http://www.idpf.org/2007/opf\" version=\"3.0\" unique-identifier=\"uid\">"
            + "<metadata xmlns:dc=\"http://purl.org/dc/elements/1.1/\"><dc:identifier id=\"uid\">urn:drivefs-emulator:\(MarkupText.escape(source.fileId))</dc:identifier>"
            + "<dc:title>\(title)</dc:title><dc:language>en</dc:language><meta property=\"dcterms:modified\">1980-01-01T00:00:00Z</meta></metadata>"
            + "<manifest><item id=\"nav\" href=\"nav.xhtml\" media-type=\"application/xhtml+xml\" properties=\"nav\"/>"
            + "<item id=\"text\" href=\"text.xhtml\" media-type=\"application/xhtml+xml\"/></manifest><spine><itemref idref=\"text\"/></spine></package>"
        let nav = declaration + "<html xmlns=\"http://www.w3.org/1999/xhtml\" xmlns:epub=\"http://www.idpf.org/2007/ops\"><head><title>\(title)</title></head>"
            + "<body><nav epub:type=\"toc\"><ol><li><a href=\"text.xhtml\">\(title)</a></li></ol></nav></body></html>"
        var zip = ZipWriter()
        zip.add("mimetype", "application/epub+zip")
        zip.add("META-INF/container.xml", container)
        zip.add("OEBPS/content.opf", opf)
        zip.add("OEBPS/nav.xhtml", nav)
        zip.add("OEBPS/text.xhtml", declaration + html(source, xmlns: true).replacingOccurrences(of: "<!DOCTYPE html>\n", with: ""))
        return zip.finish()
    }

    /// RTF 1.x: one `\par` per line; `\`, `{`, `}` escaped, a tab as `\tab`, everything outside
    /// printable ASCII as `\uN?` (N the signed 16-bit UTF-16 unit, `?` the fallback).
    static func rtf(_ source: ExportSource) -> String {
        var out = "{\\rtf1\\ansi\\ansicpg1252\\deff0{\\fonttbl{\\f0\\fswiss Arial;}}{\\info{\\title \(rtfEscape(source.title))}}\\f0\\fs22\n"
        for line in source.lines { out += rtfEscape(line) + "\\par\n" }
        return out + "}\n"
    }

    static func rtfEscape(_ s: String) -> String {
        var out = ""
        for unit in s.utf16 {
            switch unit {
            case 0x5C: out += "\\\\"
            case 0x7B: out += "\\{"
            case 0x7D: out += "\\}"
            case 0x09: out += "\\tab "
            case 0x20...0x7E: out.unicodeScalars.append(Unicode.Scalar(UInt8(unit)))
            default: out += "\\u\(Int16(bitPattern: unit))?"
            }
        }
        return out
    }

    /// An SVG of `width`×`height` on white, one `<text>` per line (20 px Arial, 28 px apart).
    static func svg(_ source: ExportSource, lines: [String], width: Int, height: Int) -> String {
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(width)\" height=\"\(height)\" "
            + "viewBox=\"0 0 \(width) \(height)\"><title>\(MarkupText.escape(source.title))</title>"
            + "<rect width=\"\(width)\" height=\"\(height)\" fill=\"#ffffff\"/>"
        for (i, line) in lines.enumerated() {
            out += "<text x=\"40\" y=\"\(60 + 28 * i)\" font-family=\"Arial, sans-serif\" font-size=\"20\" xml:space=\"preserve\">"
                + MarkupText.escape(line) + "</text>"
        }
        return out + "</svg>\n"
    }

    /// `application/vnd.google-apps.script+json`: the project as one server-side file `Code`
    /// whose source is the stored text.
    static func scriptJSON(_ source: ExportSource) -> [UInt8] {
        JSONText.encode(["files": [["name": "Code", "type": "server_js", "source": source.normalizedText] as [String: Any]]])
    }
}
