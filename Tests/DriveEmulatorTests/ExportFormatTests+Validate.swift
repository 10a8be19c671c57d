import Foundation
import XCTest
@testable import DriveEmulator

extension ExportFormatTests {
    /// Throws unless `bytes` is a valid file of `target` that carries `source`'s text.
    static func validate(_ bytes: [UInt8], source: ExportSource, target: String) throws {
        let lines = source.lines, orOne = source.lines.isEmpty ? [""] : source.lines
        func check(_ ok: Bool, _ what: @autoclosure () -> String) throws { if !ok { throw ExportCheck.fail(what()) } }
        func same<T: Equatable>(_ a: T, _ b: T, _ what: String) throws { try check(a == b, "\(what): \(a) ≠ \(b)") }
        let pdfLines = { (lines: [String]) in lines.flatMap(PDFWriter.wrap).map(ExportCheck.winAnsiView) }
        let odfInline: [String: ([String: String]) -> String] = [
            "text:s": { String(repeating: " ", count: Int($0["text:c"] ?? "1")!) }, "text:tab": { _ in "\t" },
        ]

        switch (source.sourceMime, target) {
        case (_, "text/plain"), (doc, "text/markdown"):
            try same(bytes, source.raw, "plain text is the stored text")

        case (doc, OfficeOpenXML.docx):
            let z = try ooxml(bytes, main: "word/document.xml")
            try same(try ExportCheck.texts(ExportCheck.entry(z, "word/document.xml"), container: "w:p", textElements: ["w:t"]), orOne, "docx paragraphs")
        case (doc, OpenDocument.odt):
            let z = try odf(bytes, mime: OpenDocument.odt)
            try same(try ExportCheck.texts(ExportCheck.entry(z, "content.xml"), container: "text:p", inline: odfInline), lines, "odt paragraphs")
        case (doc, "text/html"):
            try same(try ExportCheck.texts(bytes, container: "p"), lines, "html paragraphs")
        case (doc, "application/epub+zip"):
            let z = try ExportCheck.zipEntries(bytes)
            try same(z.first?.name, "mimetype", "epub first entry")
            try same(z.first?.data, Array("application/epub+zip".utf8), "epub mimetype")
            for e in z where e.name != "mimetype" { _ = try ExportCheck.texts(e.data, container: "-") }
            try same(try ExportCheck.texts(ExportCheck.entry(z, "OEBPS/text.xhtml"), container: "p"), lines, "epub paragraphs")
        case (doc, "application/zip"), ("application/vnd.google-apps.form", "application/zip"):
            let z = try ExportCheck.zipEntries(bytes)
            try same(z.map(\.name), [source.entryBaseName + ".html"], "zip entries")
            try same(try ExportCheck.texts(z[0].data, container: "p"), lines, "zip html paragraphs")
        case (doc, "application/rtf"):
            try same(try ExportCheck.rtfLines(String(decoding: bytes, as: UTF8.self)), lines, "rtf paragraphs")

        case (sheet, "text/csv"):
            let parsed = SheetRows.parseCSV(String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n"))
            try same(trimmed(parsed), trimmed(source.rows), "csv rows")
        case (sheet, "text/tab-separated-values"):
            let parsed = SheetRows.parseTSV(String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n"))
            let flat = source.rows.map { $0.map { String($0.map { $0 == "\t" || $0 == "\n" ? " " : $0 }) } }
            try same(trimmed(parsed), trimmed(flat), "tsv rows")
        case (sheet, OfficeOpenXML.xlsx):
            let z = try ooxml(bytes, main: "xl/workbook.xml")
            _ = try ExportCheck.texts(ExportCheck.entry(z, "xl/_rels/workbook.xml.rels"), container: "Relationship")
            var grid: [[String]] = []
            for cell in try ExportCheck.elements(ExportCheck.entry(z, "xl/worksheets/sheet1.xml"), container: "c", textElements: ["t", "v"]) {
                let ref = cell.attributes["r"] ?? ""
                let letters = ref.prefix { $0.isLetter }, row = Int(ref.dropFirst(letters.count))! - 1
                let column = letters.unicodeScalars.reduce(0) { $0 * 26 + Int($1.value) - 64 } - 1
                while grid.count <= row { grid.append([]) }
                while grid[row].count <= column { grid[row].append("") }
                try check(cell.attributes["t"] == "inlineStr" || SheetRows.isNumber(cell.text), "a number cell holds \(cell.text)")
                grid[row][column] = cell.text
            }
            try same(trimmed(grid), trimmed(source.rows.map { Array($0.prefix(16384)) }), "xlsx cells")
        case (sheet, OpenDocument.ods), (sheet, OpenDocument.odsLegacy):
            let z = try odf(bytes, mime: OpenDocument.ods)
            var inline = odfInline
            inline["table:table-cell"] = { _ in "\u{2}" }
            inline["text:p"] = { _ in "\u{1}" }
            let rows = try ExportCheck.texts(ExportCheck.entry(z, "content.xml"), container: "table:table-row", inline: inline).map { row in
                row.split(separator: "\u{2}", omittingEmptySubsequences: false).dropFirst().map { cell in
                    cell.split(separator: "\u{1}", omittingEmptySubsequences: false).dropFirst().joined(separator: "\n")
                }
            }
            try same(trimmed(rows), trimmed(source.rows), "ods cells")
        case (sheet, "application/zip"):
            let z = try ExportCheck.zipEntries(bytes)
            try same(z.map(\.name), ["Sheet1.html"], "zip entries")
            let rows = try ExportCheck.texts(z[0].data, container: "tr", inline: ["td": { _ in "\u{2}" }, "br": { _ in "\n" }]).map {
                $0.split(separator: "\u{2}", omittingEmptySubsequences: false).dropFirst().map(String.init)
            }
            try same(trimmed(rows), trimmed(source.rows), "zip html cells")
        case (sheet, ExportFormats.pdf):
            try same(try ExportCheck.pdfLines(bytes), pdfLines(SheetRows.textLines(source.rows)), "sheet pdf lines")

        case (slides, OfficeOpenXML.pptx):
            let z = try ooxml(bytes, main: "ppt/presentation.xml")
            try same(try ExportCheck.texts(ExportCheck.entry(z, "ppt/slides/slide1.xml"), container: "a:p", textElements: ["a:t"]), orOne, "pptx paragraphs")
        case (slides, OpenDocument.odp):
            let z = try odf(bytes, mime: OpenDocument.odp)
            _ = try ExportCheck.texts(ExportCheck.entry(z, "styles.xml"), container: "-")
            try same(try ExportCheck.texts(ExportCheck.entry(z, "content.xml"), container: "text:p", inline: odfInline), orOne, "odp paragraphs")

        case (_, "image/svg+xml"):
            try same(try ExportCheck.texts(bytes, container: "text"), lines, "svg lines")
        case (_, "image/png"):
            let png = try ExportCheck.png(bytes)
            try same(png.text, lines.joined(separator: "\n"), "png text")
            try check(png.width == ExportFormats.imageSize(source.sourceMime).width, "png width")
        case (_, "image/jpeg"):
            let jpeg = try ExportCheck.jpeg(bytes)
            try same(jpeg.text, lines.joined(separator: "\n"), "jpeg text")
            try check(jpeg.height == ExportFormats.imageSize(source.sourceMime).height, "jpeg height")
        case ("application/vnd.google-apps.script", "application/vnd.google-apps.script+json"):
            let object = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
            try same((object?["files"] as? [[String: Any]])?.first?["source"] as? String, source.normalizedText, "script source")
        case (_, ExportFormats.pdf):
            try same(try ExportCheck.pdfLines(bytes), pdfLines(lines), "pdf lines")
        default:
            throw ExportCheck.fail("no check for \(source.sourceMime) → \(target)")
        }
    }

    /// Rows without trailing empty cells, and without trailing empty rows (formats that leave
    /// empty cells out cannot say how many there were).
    static func trimmed(_ rows: [[String]]) -> [[String]] {
        var out = rows.map { row -> [String] in
            var r = row
            while r.last == "" { r.removeLast() }
            return r
        }
        while out.last?.isEmpty == true { out.removeLast() }
        return out
    }

    /// An OOXML package: the zip, every part well-formed XML, every content-type override an
    /// entry, and the package relationships naming `main`.
    static func ooxml(_ bytes: [UInt8], main: String) throws -> [(name: String, data: [UInt8])] {
        let z = try ExportCheck.zipEntries(bytes)
        try checkXML(z)
        let overrides = try ExportCheck.elements(ExportCheck.entry(z, "[Content_Types].xml"), container: "Override")
        for o in overrides { _ = try ExportCheck.entry(z, String(o.attributes["PartName"]!.dropFirst())) }
        let rels = try ExportCheck.elements(ExportCheck.entry(z, "_rels/.rels"), container: "Relationship")
        guard rels.contains(where: { $0.attributes["Target"] == main && $0.attributes["Type"]!.hasSuffix("/officeDocument") })
        else { throw ExportCheck.fail("_rels/.rels does not name \(main)") }
        return z
    }

    /// An ODF package: `mimetype` first with the type, a manifest, every part well-formed.
    static func odf(_ bytes: [UInt8], mime: String) throws -> [(name: String, data: [UInt8])] {
        let z = try ExportCheck.zipEntries(bytes)
        guard z.first?.name == "mimetype", z.first?.data == Array(mime.utf8) else { throw ExportCheck.fail("ODF mimetype entry") }
        try checkXML(z)
        let manifest = try ExportCheck.elements(ExportCheck.entry(z, "META-INF/manifest.xml"), container: "manifest:file-entry")
        guard manifest.first?.attributes["manifest:media-type"] == mime else { throw ExportCheck.fail("manifest media type") }
        return z
    }

    static func checkXML(_ z: [(name: String, data: [UInt8])]) throws {
        for e in z where e.name.hasSuffix(".xml") || e.name.hasSuffix(".rels") { _ = try ExportCheck.texts(e.data, container: "-") }
    }
}
