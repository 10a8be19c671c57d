/// Office Open XML exports (ECMA-376): `.docx`, `.xlsx` and `.pptx`, each the smallest package
/// that Word, Excel and PowerPoint (and LibreOffice) open: content types, package relationships,
/// core properties with the title, and the main part holding the text.
///
/// - docx: `word/document.xml`, one `w:p` per line (an empty line is an empty paragraph; no lines,
///   one empty paragraph), Letter page with 1-inch margins.
/// - xlsx: `xl/workbook.xml` with one sheet `Sheet1`, `xl/worksheets/sheet1.xml` with the rows of
///   `SheetRows`; cells that are plain decimals are numbers, the rest inline strings; empty cells
///   are left out; at most 16384 columns (XFD), as Excel allows.
/// - pptx: one 16:9 slide whose text box holds one `a:p` per line, with the slide layout, master
///   and theme PowerPoint requires.
enum OfficeOpenXML {
    static let docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    static let xlsx = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    static let pptx = "application/vnd.openxmlformats-officedocument.presentationml.presentation"

    static let declaration = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
    static let relationshipNS = "http://schemas.openxmlformats.org/package/2006/relationships"
    static let officeRel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"

    static func document(_ source: ExportSource) -> [UInt8] {
        var body = ""
        for line in source.lines.isEmpty ? [""] : source.lines {
            body += line.isEmpty ? "<w:p/>" : "<w:p><w:r><w:t xml:space=\"preserve\">\(MarkupText.escape(line))</w:t></w:r></w:p>"
        }
        let document = declaration + "<w:document xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\"><w:body>"
            + body + "<w:sectPr><w:pgSz w:w=\"12240\" w:h=\"15840\"/><w:pgMar w:top=\"1440\" w:right=\"1440\" w:bottom=\"1440\" "
            + "w:left=\"1440\" w:header=\"720\" w:footer=\"720\" w:gutter=\"0\"/></w:sectPr></w:body></w:document>"
        return package(source, main: ("word/document.xml", "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml", document),
                       parts: [])
    }

    static func workbook(_ source: ExportSource) -> [UInt8] {
        var sheetData = ""
        for (r, row) in source.rows.enumerated() {
            var cells = ""
            for (c, cell) in row.prefix(16384).enumerated() where !cell.isEmpty {
                let ref = columnName(c) + String(r + 1)
                if SheetRows.isNumber(cell) { cells += "<c r=\"\(ref)\"><v>\(cell)</v></c>" }
                else { cells += "<c r=\"\(ref)\" t=\"inlineStr\"><is><t xml:space=\"preserve\">\(MarkupText.escape(cell))</t></is></c>" }
            }
            if !cells.isEmpty { sheetData += "<row r=\"\(r + 1)\">\(cells)</row>" }
        }
        let main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
        let workbook = declaration + "<workbook xmlns=\"\(main)\" xmlns:r=\"\(officeRel)\"><sheets>"
            + "<sheet name=\"Sheet1\" sheetId=\"1\" r:id=\"rId1\"/></sheets></workbook>"
        let sheet = declaration + "<worksheet xmlns=\"\(main)\"><sheetData>\(sheetData)</sheetData></worksheet>"
        return package(source, main: ("xl/workbook.xml", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml", workbook),
                       parts: [("xl/worksheets/sheet1.xml", "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml", sheet)],
                       mainRels: [("worksheet", "worksheets/sheet1.xml")])
    }

    static func presentation(_ source: ExportSource, lines: [String]) -> [UInt8] {
        let ns = "xmlns:a=\"http://schemas.openxmlformats.org/drawingml/2006/main\" xmlns:r=\"\(officeRel)\" "
            + "xmlns:p=\"http://schemas.openxmlformats.org/presentationml/2006/main\""
        let emptyTree = "<p:nvGrpSpPr><p:cNvPr id=\"1\" name=\"\"/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>"
        var paragraphs = ""
        for line in lines.isEmpty ? [""] : lines {
            paragraphs += line.isEmpty ? "<a:p><a:endParaRPr lang=\"en-US\"/></a:p>"
                : "<a:p><a:r><a:rPr lang=\"en-US\"/><a:t>\(MarkupText.escape(line))</a:t></a:r></a:p>"
        }
        let presentation = declaration + "<p:presentation \(ns)><p:sldMasterIdLst><p:sldMasterId id=\"2147483648\" r:id=\"rId1\"/>"
            + "</p:sldMasterIdLst><p:sldIdLst><p:sldId id=\"256\" r:id=\"rId2\"/></p:sldIdLst>"
            + "<p:sldSz cx=\"9144000\" cy=\"5143500\"/><p:notesSz cx=\"6858000\" cy=\"9144000\"/></p:presentation>"
        let slide = declaration + "<p:sld \(ns)><p:cSld><p:spTree>\(emptyTree)<p:sp><p:nvSpPr><p:cNvPr id=\"2\" name=\"Text\"/>"
            + "<p:cNvSpPr txBox=\"1\"/><p:nvPr/></p:nvSpPr><p:spPr><a:xfrm><a:off x=\"457200\" y=\"457200\"/>"
            + "<a:ext cx=\"8229600\" cy=\"4229100\"/></a:xfrm><a:prstGeom prst=\"rect\"><a:avLst/></a:prstGeom></p:spPr>"
            + "<p:txBody><a:bodyPr wrap=\"square\"/><a:lstStyle/>\(paragraphs)</p:txBody></p:sp></p:spTree></p:cSld>"
            + "<p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sld>"
        let layout = declaration + "<p:sldLayout \(ns) type=\"blank\" preserve=\"1\"><p:cSld name=\"Blank\"><p:spTree>\(emptyTree)</p:spTree>"
            + "</p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sldLayout>"
        let master = declaration + "<p:sldMaster \(ns)><p:cSld><p:spTree>\(emptyTree)</p:spTree></p:cSld>"
            + "<p:clrMap bg1=\"lt1\" tx1=\"dk1\" bg2=\"lt2\" tx2=\"dk2\" accent1=\"accent1\" accent2=\"accent2\" accent3=\"accent3\" "
            + "accent4=\"accent4\" accent5=\"accent5\" accent6=\"accent6\" hlink=\"hlink\" folHlink=\"folHlink\"/>"
            + "<p:sldLayoutIdLst><p:sldLayoutId id=\"2147483649\" r:id=\"rId1\"/></p:sldLayoutIdLst></p:sldMaster>"
        let pml = "application/vnd.openxmlformats-officedocument.presentationml"
        return package(source, main: ("ppt/presentation.xml", "\(pml).presentation.main+xml", presentation),
                       parts: [("ppt/slides/slide1.xml", "\(pml).slide+xml", slide),
                               ("ppt/slides/_rels/slide1.xml.rels", nil, relationships([("slideLayout", "../slideLayouts/slideLayout1.xml")])),
                               ("ppt/slideLayouts/slideLayout1.xml", "\(pml).slideLayout+xml", layout),
                               ("ppt/slideLayouts/_rels/slideLayout1.xml.rels", nil, relationships([("slideMaster", "../slideMasters/slideMaster1.xml")])),
                               ("ppt/slideMasters/slideMaster1.xml", "\(pml).slideMaster+xml", master),
                               ("ppt/slideMasters/_rels/slideMaster1.xml.rels", nil,
                                relationships([("slideLayout", "../slideLayouts/slideLayout1.xml"), ("theme", "../theme/theme1.xml")])),
                               ("ppt/theme/theme1.xml", "application/vnd.openxmlformats-officedocument.theme+xml", theme)],
                       mainRels: [("slideMaster", "slideMasters/slideMaster1.xml"), ("slide", "slides/slide1.xml"), ("theme", "theme/theme1.xml")])
    }

    /// Excel's column name of a zero-based index: A…Z, AA…ZZ, AAA….
    static func columnName(_ index: Int) -> String {
        var n = index + 1, name = ""
        while n > 0 {
            let r = (n - 1) % 26
            name = String(UnicodeScalar(UInt8(65 + r))) + name
            n = (n - 1) / 26
        }
        return name
    }

    /// A relationships part; `rId1`, `rId2`… in order, types relative to the officeDocument namespace.
    static func relationships(_ rels: [(type: String, target: String)], absoluteTypes: Bool = false) -> String {
        var out = declaration + "<Relationships xmlns=\"\(relationshipNS)\">"
        for (i, rel) in rels.enumerated() {
            let type = absoluteTypes ? rel.type : "\(officeRel)/\(rel.type)"
            out += "<Relationship Id=\"rId\(i + 1)\" Type=\"\(type)\" Target=\"\(rel.target)\"/>"
        }
        return out + "</Relationships>"
    }

    /// The package: `[Content_Types].xml`, `_rels/.rels` (main part and core properties), the main
    /// part and its relationships, `docProps/core.xml`, then `parts` (content type nil: a .rels part).
    private static func package(_ source: ExportSource, main: (path: String, type: String, xml: String),
                                parts: [(path: String, type: String?, xml: String)], mainRels: [(String, String)] = []) -> [UInt8] {
        var types = declaration + "<Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\">"
            + "<Default Extension=\"rels\" ContentType=\"application/vnd.openxmlformats-package.relationships+xml\"/>"
            + "<Default Extension=\"xml\" ContentType=\"application/xml\"/>"
            + "<Override PartName=\"/\(main.path)\" ContentType=\"\(main.type)\"/>"
            + "<Override PartName=\"/docProps/core.xml\" ContentType=\"application/vnd.openxmlformats-package.core-properties+xml\"/>"
        for part in parts { if let type = part.type { types += "<Override PartName=\"/\(part.path)\" ContentType=\"\(type)\"/>" } }
        types += "</Types>"
        let root = relationships([("\(officeRel)/officeDocument", main.path),
                                  ("http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties", "docProps/core.xml")],
                                 absoluteTypes: true)
        let core = declaration + "<cp:coreProperties xmlns:cp=\"http://schemas.openxmlformats.org/package/2006/metadata/core-properties\" "
            + "xmlns:dc=\"http://purl.org/dc/elements/1.1/\"><dc:title>\(MarkupText.escape(source.title))</dc:title></cp:coreProperties>"
        var zip = ZipWriter()
        zip.add("[Content_Types].xml", types)
        zip.add("_rels/.rels", root)
        zip.add(main.path, main.xml)
        if !mainRels.isEmpty {
            let slash = main.path.lastIndex(of: "/")!
            let relsPath = main.path[..<slash] + "/_rels/" + main.path[main.path.index(after: slash)...] + ".rels"
            zip.add(String(relsPath), relationships(mainRels))
        }
        zip.add("docProps/core.xml", core)
        for part in parts { zip.add(part.path, part.xml) }
        return zip.finish()
    }

    /// The DrawingML theme a presentation's master must name: colours, fonts, and three of each style.
    static let theme: String = {
        let colours = [("dk1", "000000"), ("lt1", "FFFFFF"), ("dk2", "1F1F1F"), ("lt2", "EEEEEE"), ("accent1", "4285F4"),
                       ("accent2", "DB4437"), ("accent3", "F4B400"), ("accent4", "0F9D58"), ("accent5", "AB47BC"),
                       ("accent6", "00ACC1"), ("hlink", "1155CC"), ("folHlink", "6611CC")]
            .map { "<a:\($0.0)><a:srgbClr val=\"\($0.1)\"/></a:\($0.0)>" }.joined()
        let font = "<a:latin typeface=\"Arial\"/><a:ea typeface=\"\"/><a:cs typeface=\"\"/>"
        let fill = "<a:solidFill><a:schemeClr val=\"phClr\"/></a:solidFill>"
        let three = { (s: String) in String(repeating: s, count: 3) }
        return declaration + "<a:theme xmlns:a=\"http://schemas.openxmlformats.org/drawingml/2006/main\" name=\"drivefs\"><a:themeElements>"
            + "<a:clrScheme name=\"drivefs\">\(colours)</a:clrScheme>"
            + "<a:fontScheme name=\"drivefs\"><a:majorFont>\(font)</a:majorFont><a:minorFont>\(font)</a:minorFont></a:fontScheme>"
            + "<a:fmtScheme name=\"drivefs\"><a:fillStyleLst>\(three(fill))</a:fillStyleLst>"
            + "<a:lnStyleLst>\(three("<a:ln w=\"9525\">\(fill)</a:ln>"))</a:lnStyleLst>"
            + "<a:effectStyleLst>\(three("<a:effectStyle><a:effectLst/></a:effectStyle>"))</a:effectStyleLst>"
            + "<a:bgFillStyleLst>\(three(fill))</a:bgFillStyleLst></a:fmtScheme></a:themeElements></a:theme>"
    }()
}
