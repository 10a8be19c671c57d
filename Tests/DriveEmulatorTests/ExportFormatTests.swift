import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

/// Every export format is a valid file of its kind that carries the document's text: checked by
/// the independent readers of `ExportCheck`, over the service, over random texts, and (where
/// python3 is installed) by Python's standard library.
final class ExportFormatTests: XCTestCase {
    static let doc = DriveMime.document, sheet = DriveMime.spreadsheet
    static let slides = DriveMime.presentation, drawing = DriveMime.drawing

    // MARK: building blocks

    func testChecksumsMatchTheirCheckValues() {
        XCTAssertEqual(CRC32.checksum(Array("123456789".utf8)), 0xCBF4_3926)
        XCTAssertEqual(CRC32.checksum(Array("6789".utf8), continuing: CRC32.checksum(Array("12345".utf8))), 0xCBF4_3926)
        XCTAssertEqual(CRC32.checksum([UInt8]()), 0)
        XCTAssertEqual(Adler32.checksum(Array("Wikipedia".utf8)), 0x11E6_0398)
        let big = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        XCTAssertEqual(CRC32.checksum(big), ExportCheck.crc32(big))
        XCTAssertEqual(Adler32.checksum(big), ExportCheck.adler32(big))
    }

    func testZipWriterEntriesAndDeterminism() throws {
        func make() -> [UInt8] {
            var z = ZipWriter()
            z.add("mimetype", "application/vnd.oasis.opendocument.text")
            z.add("dir/ünïcode.txt", Array("héllo".utf8))
            z.add("empty", [UInt8]())
            return z.finish()
        }
        let bytes = make()
        XCTAssertEqual(bytes, make())
        let entries = try ExportCheck.zipEntries(bytes)
        XCTAssertEqual(entries.map(\.name), ["mimetype", "dir/ünïcode.txt", "empty"])
        XCTAssertEqual(entries[1].data, Array("héllo".utf8))
        XCTAssertEqual(Array(bytes[30..<38]), Array("mimetype".utf8), "mimetype's name right after the first local header")
        XCTAssertEqual(ExportCheck.le16(bytes, 6), 0, "ASCII names: no UTF-8 flag")
        XCTAssertEqual(try ExportCheck.zipEntries(ZipWriter().finish()).count, 0)
    }

    func testSheetRowsParseAndWrite() {
        XCTAssertEqual(SheetRows.parse("a,b\n\"c, d\",\"e \"\"q\"\"\"\n\"multi\nline\",\n"), [["a", "b"], ["c, d", "e \"q\""], ["multi\nline", ""]])
        XCTAssertEqual(SheetRows.parse("a\tb,c\nd\t\n"), [["a", "b,c"], ["d", ""]])
        XCTAssertEqual(SheetRows.parse(""), [])
        XCTAssertEqual(SheetRows.parse("x\n\ny"), [["x"], [""], ["y"]])
        XCTAssertEqual(SheetRows.csv([["a", "b,c"], ["q\"", " s"], ["m\nl"]]), "a,\"b,c\"\r\n\"q\"\"\",\" s\"\r\n\"m\nl\"")
        XCTAssertEqual(SheetRows.tsv([["a", "b\tc"], ["d\ne"]]), "a\tb c\r\nd e")
        for (cell, number) in [("42", true), ("-3.5", true), ("0.25", true), ("007", false), ("1e5", false), ("", false),
                               ("4.", false), (".5", false), ("1234567890123456", false), ("١٢", false)] {
            XCTAssertEqual(SheetRows.isNumber(cell), number, cell)
        }
        XCTAssertEqual([0, 25, 26, 701, 702, 16383].map(OfficeOpenXML.columnName), ["A", "Z", "AA", "ZZ", "AAA", "XFD"])
    }

    func testSourceLinesNormaliseLineEndsAndForbiddenScalars() {
        let s = ExportSource(fileId: "f", name: "n", sourceMime: Self.doc, text: [0xEF, 0xBB, 0xBF] + Array("a\r\nb\rc\n\nd\u{1}e\n".utf8) + [0xFF])
        XCTAssertEqual(s.lines, ["a", "b", "c", "", "d\u{FFFD}e", "\u{FFFD}"])
        XCTAssertEqual(ExportSource(fileId: "f", name: "n", sourceMime: Self.doc, text: []).lines, [])
        XCTAssertEqual(ExportSource(fileId: "f", name: "n", sourceMime: Self.doc, text: Array("\n".utf8)).lines, [""])
    }

    // MARK: the table

    func testEveryListedTargetIsServedAndDeterministic() throws {
        for (mime, targets) in ExportFormats.targets {
            let source = ExportSource(fileId: "1abc", name: "Plan", sourceMime: mime, text: Array("one\ntwo, three\n".utf8))
            for target in targets {
                let bytes = try XCTUnwrap(ExportFormats.exportBytes(source, target: target), "\(mime) → \(target)")
                XCTAssertEqual(bytes, ExportFormats.exportBytes(source, target: target), "\(mime) → \(target) deterministic")
                try Self.validate(bytes, source: source, target: target)
            }
        }
        XCTAssertNil(ExportFormats.exportBytes(ExportSource(fileId: "1", name: "n", sourceMime: Self.doc, text: []), target: "image/png"))
    }

    // MARK: through the service

    func testExportsThroughTheService() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        let texts: [(String, String)] = [
            (Self.doc, "Tom & Jerry <3 \"quotes\"\nnaïve café (paren) back\\slash €\n\nlast line\n"),
            (Self.sheet, "name,qty,note\nTom & Jerry,42,\"a, b\"\ncafé,3.5,\"multi\nline\"\n"),
            (Self.slides, "Title slide\n• bullet <one>\n"),
            (Self.drawing, "Box → Arrow\n"),
        ]
        for (mime, text) in texts {
            let id = try Self.importFile(h, name: "Shared/Notes", mime: mime, text: text)
            let (status, meta) = try h.call("GET", "/drive/v3/files/\(id)?fields=exportLinks")
            XCTAssertEqual(status, 200)
            let links = try XCTUnwrap(meta["exportLinks"] as? [String: String])
            XCTAssertEqual(Set(links.keys), Set(ExportFormats.targets[mime]!), mime)
            let source = ExportSource(fileId: id, name: "Shared/Notes", sourceMime: mime, text: Array(text.utf8))
            for target in ExportFormats.targets[mime]! {
                let r = try h.send("GET", "/drive/v3/files/\(id)/export?mimeType=\(FileResource.queryEscape(target))")
                XCTAssertEqual(r.status, 200, "\(mime) → \(target)")
                XCTAssertEqual(r.headers["Content-Type"], target)
                try Self.validate(DriveHarness.bytes(r), source: source, target: target)
            }
        }
        // A Doc created from metadata alone is an empty document; every format is still valid.
        let empty = try h.create("Blank", mime: Self.doc)
        let source = ExportSource(fileId: empty, name: "Blank", sourceMime: Self.doc, text: [])
        for target in ExportFormats.targets[Self.doc]! {
            let r = try h.send("GET", "/drive/v3/files/\(empty)/export?mimeType=\(FileResource.queryEscape(target))")
            XCTAssertEqual(r.status, 200, target)
            try Self.validate(DriveHarness.bytes(r), source: source, target: target)
        }
        // A Sheet target on a Doc: Google's 400.
        let wrong = try h.send("GET", "/drive/v3/files/\(empty)/export?mimeType=text/csv")
        XCTAssertEqual(wrong.status, 400)
        XCTAssertEqual(DriveHarness.reason(DriveHarness.object(wrong)), "badRequest")
        XCTAssertEqual(DriveHarness.location(DriveHarness.object(wrong)), "convertTo")
    }

    /// The 10 MB cap applies to what is exported, not only to the stored text: 3 MB of `<` is
    /// 12 MB of HTML (403 exportSizeLimitExceeded) but still exports as text.
    func testExportAboveTenMegabytesIsRefused() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        let id = try Self.importFile(h, name: "Angles", mime: Self.doc, text: String(repeating: "<", count: 3 * 1024 * 1024))
        let html = try h.send("GET", "/drive/v3/files/\(id)/export?mimeType=text/html")
        XCTAssertEqual(html.status, 403)
        XCTAssertEqual(DriveHarness.reason(DriveHarness.object(html)), "exportSizeLimitExceeded")
        XCTAssertEqual(try h.send("GET", "/drive/v3/files/\(id)/export?mimeType=text/plain").status, 200)
    }

    static func importFile(_ h: DriveHarness, name: String, mime: String, text: String) throws -> String {
        let type = mime == sheet ? "text/csv" : "text/plain"
        let meta = String(decoding: JSONText.encode(["name": name, "mimeType": mime]), as: UTF8.self)
        let body = Array("--b\r\nContent-Type: application/json\r\n\r\n\(meta)\r\n--b\r\nContent-Type: \(type)\r\n\r\n\(text)\r\n--b--\r\n".utf8)
        let r = try h.send("POST", "/upload/drive/v3/files?uploadType=multipart", headers: [("Content-Type", "multipart/related; boundary=b")], bytes: body)
        guard r.status == 200, let id = DriveHarness.object(r)["id"] as? String else { throw ExportCheck.fail("import: \(r.status)") }
        return id
    }

    // MARK: property

    func testRandomTextsKeepEveryFormatValid() throws {
        let pieces: [[UInt8]] = ["a", "Hello", " ", "  ", "\t", "\n", "\r\n", "\r", "<", ">", "&", "\"", "'", "(", ")", "\\", ",",
                                 "\"\"", "é", "€", "日本語", "😀", "e\u{301}", "\u{1}", "\u{7F}", "\u{FEFF}", "42", "-3.5", "]]>",
                                 "%%EOF", "\u{2028}", "{\\rtf}", "endstream", "\u{FFFE}"].map { Array($0.utf8) } + [[0xFF], [0xC3], [0xED, 0xA0, 0x80]]
        var rng = SplitMix64(seed: 0xE0F0_2026)
        var texts: [[UInt8]] = [[], Array("\n".utf8), Array("x".utf8)]
        for i in 0..<40 {
            let n = i % 10 == 9 ? 1500 + rng.next(below: 1500) : rng.next(below: 30)
            texts.append((0..<n).flatMap { _ in pieces[rng.next(below: pieces.count)] })
        }
        for (i, text) in texts.enumerated() {
            for mime in [Self.doc, Self.sheet, Self.slides, Self.drawing] {
                let source = ExportSource(fileId: "1id\(i)", name: "T<\(i)>&\"/x", sourceMime: mime, text: text)
                for target in ExportFormats.targets[mime]! {
                    let bytes = try XCTUnwrap(ExportFormats.exportBytes(source, target: target))
                    do { try Self.validate(bytes, source: source, target: target) }
                    catch { XCTFail("text #\(i) \(mime) → \(target): \(error); text \(text)"); return }
                }
            }
        }
    }

    // MARK: Python's standard library

    func testPythonStandardLibraryReadsTheExports() throws {
        guard let python = ExportCheck.python3 else { throw XCTSkip("python3 is not installed") }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("exports-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let docText = "Tom & Jerry <3 \"quotes\"\nnaïve café (paren) back\\slash €\n\nlast line\n"
        let cases: [(String, String, [(String, String)], [String])] = [
            (Self.doc, docText, [(OfficeOpenXML.docx, "docx"), (OpenDocument.odt, "odt"), ("application/epub+zip", "epub"),
                                 ("application/zip", "zip"), ("text/html", "html"), ("application/pdf", "pdf")],
             ["Tom & Jerry <3 \"quotes\"", "naïve café (paren) back\\slash €", "last line"]),
            (Self.sheet, "name,qty,note\nTom & Jerry,42,\"a, b\"\ncafé,3.5,\"multi\nline\"\n",
             [(OfficeOpenXML.xlsx, "xlsx"), (OpenDocument.ods, "ods"), ("text/csv", "csv"), ("text/tab-separated-values", "tsv"),
              ("application/zip", "zip"), ("application/pdf", "pdf")], ["Tom & Jerry", "42", "a, b", "café", "3.5"]),
            (Self.slides, "Slide (one)\n<b>bold</b> & more\n", [(OfficeOpenXML.pptx, "pptx"), (OpenDocument.odp, "odp"),
                                                              ("image/png", "png"), ("image/svg+xml", "svg"), ("application/pdf", "pdf")],
             ["Slide (one)", "<b>bold</b> & more"]),
            (Self.drawing, "Box → arrow & \"label\"\n", [("image/png", "png"), ("image/svg+xml", "svg")], ["Box → arrow & \"label\""]),
        ]
        var expect: [String: Any] = [:]
        for (n, (mime, text, targets, wanted)) in cases.enumerated() {
            let source = ExportSource(fileId: "1py", name: "Notes", sourceMime: mime, text: Array(text.utf8))
            for (target, ext) in targets {
                let file = "case\(n).\(ext)"
                try Data(XCTUnwrap(ExportFormats.exportBytes(source, target: target))).write(to: dir.appendingPathComponent(file))
                expect[file] = wanted
            }
        }
        try Data(JSONText.encode(expect)).write(to: dir.appendingPathComponent("expect.json"))
        let script = dir.appendingPathComponent("check.py")
        try Data(Self.pythonChecker.utf8).write(to: script)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: python)
        p.arguments = [script.path, dir.path]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        try p.run()
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, output)
        XCTAssertTrue(output.contains("checked 19 files"), output)
    }

    static let pythonChecker = #"""
import csv, io, json, os, re, struct, sys, zipfile, zlib
from xml.dom import minidom

def text_of(node):
    if node.nodeType == node.TEXT_NODE:
        return node.data
    return "".join(text_of(c) for c in node.childNodes)

def xml_text(data):
    return text_of(minidom.parseString(data).documentElement)

def pdf_text(data):
    assert data.startswith(b"%PDF-1.") and data.endswith(b"%%EOF\n"), "pdf envelope"
    xref = int(re.search(rb"startxref\n(\d+)\n%%EOF\n$", data).group(1))
    assert data[xref:xref + 5] == b"xref\n", "startxref"
    lines = data[xref:].split(b"\n")
    count = int(lines[1].split()[1])
    body = data[xref:].split(b"\n", 2)[2]
    for n in range(1, count):
        entry = body[20 * n:20 * n + 20]
        off = int(entry[:10])
        assert data[off:].startswith(b"%d 0 obj" % n), "xref entry %d" % n
    shown = []
    for m in re.finditer(rb"\(((?:\\.|[^\\)])*)\) Tj", data):
        s = re.sub(rb"\\([0-7]{3})", lambda g: bytes([int(g.group(1), 8)]), m.group(1))
        s = re.sub(rb"\\(.)", rb"\1", s)
        shown.append(s.decode("cp1252"))
    return "\n".join(shown)

def png_text(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "signature"
    i, idat, text, width, height = 8, b"", "", 0, 0
    while i < len(data):
        (length,) = struct.unpack(">I", data[i:i + 4])
        kind, chunk = data[i + 4:i + 8], data[i + 8:i + 8 + length]
        (crc,) = struct.unpack(">I", data[i + 8 + length:i + 12 + length])
        assert zlib.crc32(kind + chunk) == crc, "crc of %r" % kind
        if kind == b"IHDR":
            width, height = struct.unpack(">II", chunk[:8])
        elif kind == b"IDAT":
            idat += chunk
        elif kind == b"iTXt":
            keyword, rest = chunk.split(b"\0", 1)
            text = rest[4:].decode("utf-8")
        i += 12 + length
    raw = zlib.decompress(idat)
    assert len(raw) == height * (1 + (width + 7) // 8), "image size"
    return text

def main(d):
    expect = json.load(open(os.path.join(d, "expect.json")))
    for name in sorted(expect):
        data = open(os.path.join(d, name), "rb").read()
        ext = name.rsplit(".", 1)[1]
        if ext in ("docx", "xlsx", "pptx", "odt", "ods", "odp", "epub", "zip"):
            z = zipfile.ZipFile(io.BytesIO(data))
            assert z.testzip() is None, name
            infos = z.infolist()
            if ext in ("odt", "ods", "odp", "epub"):
                assert infos[0].filename == "mimetype" and infos[0].compress_type == zipfile.ZIP_STORED, name
            parts = []
            for info in infos:
                body = z.read(info)
                if info.filename.endswith((".xml", ".rels", ".xhtml", ".opf", ".html")):
                    parts.append(xml_text(body))
            found = "\n".join(parts)
        elif ext in ("html", "svg"):
            found = xml_text(data)
        elif ext == "csv":
            found = "\n".join("|".join(row) for row in csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
        elif ext == "tsv":
            found = "\n".join(data.decode("utf-8").split("\r\n"))
        elif ext == "pdf":
            found = pdf_text(data)
        elif ext == "png":
            found = png_text(data)
        for want in expect[name]:
            assert want in found, "%s lacks %r in %r" % (name, want, found[:500])
    print("checked %d files" % len(expect))

main(sys.argv[1])
"""#
}
