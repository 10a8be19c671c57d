/// OpenDocument exports (ODF 1.2): `.odt`, `.ods`, `.odp`. Each is a zip whose first entry is
/// `mimetype` (stored, no extra field, as ODF requires), then `META-INF/manifest.xml`,
/// `content.xml` (and for presentations `styles.xml` with the master page a `draw:page` names).
///
/// - odt: one `text:p` per line; runs of spaces as `text:s`, tabs as `text:tab` (ODF collapses
///   white space otherwise).
/// - ods: one table `Sheet1`, one row per `SheetRows` row; plain decimals are `float` cells, the
///   rest `string` cells (a line break inside a cell starts another `text:p`).
/// - odp: one page whose text frame holds one `text:p` per line.
enum OpenDocument {
    static let odt = "application/vnd.oasis.opendocument.text"
    static let ods = "application/vnd.oasis.opendocument.spreadsheet"
    static let odsLegacy = "application/x-vnd.oasis.opendocument.spreadsheet"
    static let odp = "application/vnd.oasis.opendocument.presentation"

    static let namespaces = "xmlns:office=\"urn:oasis:names:tc:opendocument:xmlns:office:1.0\" "
        + "xmlns:style=\"urn:oasis:names:tc:opendocument:xmlns:style:1.0\" "
        + "xmlns:text=\"urn:oasis:names:tc:opendocument:xmlns:text:1.0\" "
        + "xmlns:table=\"urn:oasis:names:tc:opendocument:xmlns:table:1.0\" "
        + "xmlns:draw=\"urn:oasis:names:tc:opendocument:xmlns:drawing:1.0\" "
        + "xmlns:svg=\"urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0\" "
        + "xmlns:presentation=\"urn:oasis:names:tc:opendocument:xmlns:presentation:1.0\" office:version=\"1.2\""

    static func text(_ source: ExportSource) -> [UInt8] {
        package(mime: odt, body: "<office:text>" + source.lines.map(paragraph).joined() + "</office:text>")
    }

    static func spreadsheet(_ source: ExportSource, mime: String) -> [UInt8] {
        let rows = source.rows
        let columns = max(1, rows.map(\.count).max() ?? 1)
        var table = "<table:table table:name=\"Sheet1\"><table:table-column table:number-columns-repeated=\"\(columns)\"/>"
        for row in rows {
            table += "<table:table-row>"
            for cell in row.isEmpty ? [""] : row {
                if cell.isEmpty { table += "<table:table-cell/>" }
                else if SheetRows.isNumber(cell) {
                    table += "<table:table-cell office:value-type=\"float\" office:value=\"\(cell)\"><text:p>\(cell)</text:p></table:table-cell>"
                } else {
                    let ps = cell.split(separator: "\n", omittingEmptySubsequences: false).map { paragraph(String($0)) }.joined()
                    table += "<table:table-cell office:value-type=\"string\">\(ps)</table:table-cell>"
                }
            }
            table += "</table:table-row>"
        }
        if rows.isEmpty { table += "<table:table-row><table:table-cell/></table:table-row>" }
        return package(mime: mime, body: "<office:spreadsheet>\(table)</table:table></office:spreadsheet>")
    }

    static func presentation(_ source: ExportSource, lines: [String]) -> [UInt8] {
        let frame = "<draw:frame svg:x=\"1cm\" svg:y=\"1cm\" svg:width=\"26cm\" svg:height=\"13cm\"><draw:text-box>"
            + (lines.isEmpty ? "<text:p/>" : lines.map(paragraph).joined()) + "</draw:text-box></draw:frame>"
        let styles = "<office:document-styles \(namespaces)><office:automatic-styles><style:page-layout style:name=\"PM1\">"
            + "<style:page-layout-properties fo:page-width=\"28cm\" fo:page-height=\"15.75cm\" "
            + "xmlns:fo=\"urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0\"/></style:page-layout></office:automatic-styles>"
            + "<office:master-styles><style:master-page style:name=\"Default\" style:page-layout-name=\"PM1\"/></office:master-styles>"
            + "</office:document-styles>"
        return package(mime: odp, body: "<office:presentation><draw:page draw:name=\"page1\" draw:master-page-name=\"Default\">"
                       + frame + "</draw:page></office:presentation>", styles: styles)
    }

    /// One `text:p`: a space after a space (or at the start) is written as `text:s`, a tab as `text:tab`.
    static func paragraph(_ line: String) -> String {
        guard !line.isEmpty else { return "<text:p/>" }
        var out = "<text:p>", run = "", spaces = 0, previousSpace = true
        func flushSpaces() { if spaces > 0 { out += spaces == 1 ? "<text:s/>" : "<text:s text:c=\"\(spaces)\"/>"; spaces = 0 } }
        for c in line {
            if c == " " && previousSpace { out += MarkupText.escape(run); run = ""; spaces += 1; continue }
            flushSpaces()
            if c == "\t" { out += MarkupText.escape(run) + "<text:tab/>"; run = ""; previousSpace = true; continue }
            run.append(c)
            previousSpace = c == " "
        }
        out += MarkupText.escape(run)
        flushSpaces()
        return out + "</text:p>"
    }

    private static func package(mime served: String, body: String, styles: String? = nil) -> [UInt8] {
        // The legacy x-vnd spreadsheet type is served with the registered type inside, as ODF readers expect.
        let mime = served == odsLegacy ? ods : served
        let declaration = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        let content = declaration + "<office:document-content \(namespaces)><office:body>\(body)</office:body></office:document-content>"
        var manifest = declaration + "<manifest:manifest xmlns:manifest=\"urn:oasis:names:tc:opendocument:xmlns:manifest:1.0\" "
            + "manifest:version=\"1.2\"><manifest:file-entry manifest:full-path=\"/\" manifest:version=\"1.2\" "
            + "manifest:media-type=\"\(mime)\"/><manifest:file-entry manifest:full-path=\"content.xml\" manifest:media-type=\"text/xml\"/>"
        if styles != nil { manifest += "<manifest:file-entry manifest:full-path=\"styles.xml\" manifest:media-type=\"text/xml\"/>" }
        manifest += "</manifest:manifest>"
        var zip = ZipWriter()
        zip.add("mimetype", mime)
        zip.add("META-INF/manifest.xml", manifest)
        zip.add("content.xml", content)
        if let styles { zip.add("styles.xml", declaration + styles) }
        return zip.finish()
    }
}
