import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import XCTest
@testable import DriveEmulator

/// Test-side readers of the export formats, written independently of the writers (their own
/// bitwise CRC-32 and Adler-32), so that a writer's mistake is not mirrored by its checker.
enum ExportCheck {
    struct Failure: Error, CustomStringConvertible { let description: String }
    static func fail(_ s: String) -> Failure { Failure(description: s) }

    static func crc32(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes {
            c ^= UInt32(b)
            for _ in 0..<8 { c = (c >> 1) ^ (c & 1 == 1 ? 0xEDB8_8320 : 0) }
        }
        return ~c
    }

    static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1, b: UInt32 = 0
        for x in bytes { a = (a + UInt32(x)) % 65521; b = (b + a) % 65521 }
        return b << 16 | a
    }

    static func le16(_ b: [UInt8], _ i: Int) -> Int { Int(b[i]) | Int(b[i + 1]) << 8 }
    static func le32(_ b: [UInt8], _ i: Int) -> Int { le16(b, i) | le16(b, i + 2) << 16 }
    static func be16(_ b: [UInt8], _ i: Int) -> Int { Int(b[i]) << 8 | Int(b[i + 1]) }
    static func be32(_ b: [UInt8], _ i: Int) -> Int { be16(b, i) << 16 | be16(b, i + 2) }

    // MARK: zip

    /// The entries of a stored zip, in order, after checking the end record, every central record
    /// against its local header (offset, name, sizes, CRC), and every entry's CRC over its bytes.
    static func zipEntries(_ z: [UInt8]) throws -> [(name: String, data: [UInt8])] {
        guard z.count >= 22, le32(z, z.count - 22) == 0x0605_4B50 else { throw fail("no end record at the end") }
        let end = z.count - 22
        let count = le16(z, end + 10), size = le32(z, end + 12), offset = le32(z, end + 16)
        guard le16(z, end + 8) == count, offset + size == end else { throw fail("central directory bounds") }
        var entries: [(String, [UInt8])] = []
        var p = offset, expectedLocal = 0
        for _ in 0..<count {
            guard le32(z, p) == 0x0201_4B50 else { throw fail("central record signature at \(p)") }
            let method = le16(z, p + 10), crc = UInt32(le32(z, p + 16)), csize = le32(z, p + 20), usize = le32(z, p + 24)
            let nameLen = le16(z, p + 28), extra = le16(z, p + 30), comment = le16(z, p + 32), local = le32(z, p + 42)
            let name = Array(z[(p + 46)..<(p + 46 + nameLen)])
            guard method == 0, csize == usize else { throw fail("not stored") }
            guard local == expectedLocal, le32(z, local) == 0x0403_4B50 else { throw fail("local header offset \(local)") }
            guard Array(z[(local + 30)..<(local + 30 + le16(z, local + 26))]) == name, le16(z, local + 28) == 0,
                  UInt32(le32(z, local + 14)) == crc, le32(z, local + 18) == csize, le32(z, local + 22) == usize
            else { throw fail("local header disagrees with the central record") }
            let start = local + 30 + nameLen
            let data = Array(z[start..<(start + csize)])
            guard crc32(data) == crc else { throw fail("CRC of \(String(decoding: name, as: UTF8.self))") }
            entries.append((String(decoding: name, as: UTF8.self), data))
            expectedLocal = start + csize
            p += 46 + nameLen + extra + comment
        }
        guard expectedLocal == offset, p == end else { throw fail("bytes between entries") }
        return entries
    }

    static func entry(_ entries: [(name: String, data: [UInt8])], _ name: String) throws -> [UInt8] {
        guard let e = entries.first(where: { $0.name == name }) else { throw fail("no entry \(name) in \(entries.map(\.name))") }
        return e.data
    }

    // MARK: XML

    /// Parses `xml` (throws if not well-formed) and collects, for each element named `container`,
    /// the character data inside it; `inline` maps empty elements to the text they stand for
    /// (given the element's attributes).
    static func texts(_ xml: [UInt8], container: String, textElements: Set<String>? = nil,
                      inline: [String: ([String: String]) -> String] = [:]) throws -> [String] {
        let collector = TextCollector(container: container, textElements: textElements, inline: inline)
        let parser = XMLParser(data: Data(xml))
        parser.delegate = collector
        guard parser.parse() else { throw fail("not well-formed XML: \(parser.parserError.map { "\($0)" } ?? "?")") }
        return collector.found
    }

    /// Like `texts`, with each container's attributes.
    static func elements(_ xml: [UInt8], container: String, textElements: Set<String>? = nil) throws -> [(attributes: [String: String], text: String)] {
        let collector = TextCollector(container: container, textElements: textElements, inline: [:])
        let parser = XMLParser(data: Data(xml))
        parser.delegate = collector
        guard parser.parse() else { throw fail("not well-formed XML: \(parser.parserError.map { "\($0)" } ?? "?")") }
        return Array(zip(collector.attributes, collector.found))
    }

    final class TextCollector: NSObject, XMLParserDelegate {
        let container: String, textElements: Set<String>?, inline: [String: ([String: String]) -> String]
        var found: [String] = [], attributes: [[String: String]] = [], depth = 0, textDepth = 0, current = ""
        init(container: String, textElements: Set<String>?, inline: [String: ([String: String]) -> String]) {
            self.container = container; self.textElements = textElements; self.inline = inline
        }
        func parser(_ p: XMLParser, didStartElement e: String, namespaceURI: String?, qualifiedName q: String?, attributes a: [String: String]) {
            if e == container { depth += 1; if depth == 1 { current = ""; attributes.append(a) } }
            if let t = textElements, t.contains(e) { textDepth += 1 }
            if depth > 0, let f = inline[e] { current += f(a) }
        }
        func parser(_ p: XMLParser, didEndElement e: String, namespaceURI: String?, qualifiedName q: String?) {
            if let t = textElements, t.contains(e) { textDepth -= 1 }
            if e == container { depth -= 1; if depth == 0 { found.append(current) } }
        }
        func parser(_ p: XMLParser, foundCharacters s: String) {
            if depth > 0, textElements == nil || textDepth > 0 { current += s }
        }
    }

    // MARK: PDF

    /// Checks the header, that every xref entry points at its `n 0 obj`, `startxref` at `xref`,
    /// every stream's `/Length`, and `%%EOF`; returns the text shown by `Tj`, page by page, as lines.
    static func pdfLines(_ pdf: [UInt8]) throws -> [String] {
        // Bytes above 0x7F (only the binary comment) as `?`, so that UTF-8 offsets are byte offsets.
        let s = String(decoding: pdf.map { $0 < 0x80 ? $0 : 0x3F }, as: UTF8.self)
        guard s.hasPrefix("%PDF-1."), s.hasSuffix("%%EOF\n") else { throw fail("header or %%EOF") }
        guard let sx = s.range(of: "startxref\n", options: .backwards) else { throw fail("no startxref") }
        let xrefOffset = Int(s[sx.upperBound...].prefix { $0.isNumber })!
        guard Array(pdf[xrefOffset..<(xrefOffset + 5)]) == Array("xref\n".utf8) else { throw fail("startxref does not point at xref") }
        let xrefText = String(decoding: pdf[xrefOffset...], as: UTF8.self)
        let header = xrefText.split(separator: "\n")[1].split(separator: " ")
        let count = Int(header[1])!
        let firstEntry = xrefOffset + 5 + header.joined(separator: " ").utf8.count + 1
        for n in 1..<count {
            let entry = String(decoding: pdf[(firstEntry + 20 * n)..<(firstEntry + 20 * n + 20)], as: UTF8.self)
            guard entry.hasSuffix(" 00000 n\r\n"), let off = Int(entry.prefix(10)) else { throw fail("xref entry \(n): \(entry)") }
            let marker = Array("\(n) 0 obj".utf8)
            guard Array(pdf[off..<(off + marker.count)]) == marker else { throw fail("xref entry \(n) does not point at its object") }
        }
        guard xrefText.contains("/Size \(count)") else { throw fail("trailer /Size") }
        // Streams: /Length N, then "stream\n", N bytes, "\nendstream".
        var lines: [String] = []
        var search = s.startIndex
        while let r = s.range(of: "<< /Length ", range: search..<s.endIndex) {
            let digits = s[r.upperBound...].prefix { $0.isNumber }
            let length = Int(digits)!
            let startMarker = s.utf8.distance(from: s.startIndex, to: r.upperBound) + digits.count + " >>\nstream\n".utf8.count
            guard Array(pdf[(startMarker + length)..<(startMarker + length + 10)]) == Array("\nendstream".utf8) else { throw fail("stream /Length") }
            lines += try contentLines(Array(pdf[startMarker..<(startMarker + length)]))
            search = r.upperBound
        }
        return lines
    }

    /// The strings of `(…) Tj` in a content stream, unescaped and decoded from WinAnsi.
    static func contentLines(_ c: [UInt8]) throws -> [String] {
        var out: [String] = [], i = 0
        while i < c.count {
            guard c[i] == 0x28 else { i += 1; continue }
            var bytes: [UInt8] = []
            i += 1
            while c[i] != 0x29 {
                if c[i] == 0x5C {
                    i += 1
                    if (0x30...0x37).contains(c[i]) {
                        bytes.append((c[i] - 0x30) << 6 | (c[i + 1] - 0x30) << 3 | (c[i + 2] - 0x30)); i += 3
                    } else { bytes.append(c[i]); i += 1 }
                } else {
                    guard (0x20...0x7E).contains(c[i]) else { throw fail("raw byte \(c[i]) in a string") }
                    bytes.append(c[i]); i += 1
                }
            }
            i += 1
            guard Array(c[i..<(i + 3)]) == Array(" Tj".utf8) else { throw fail("string not shown with Tj") }
            out.append(String(String.UnicodeScalarView(bytes.map { b in
                (0x80...0x9F).contains(b) ? Unicode.Scalar(PDFWriter.winAnsiHigh[Int(b) - 0x80])! : Unicode.Scalar(b)
            })))
        }
        return out
    }

    /// What a line looks like after a trip through WinAnsi: unrepresentable scalars as `?`, tab as space.
    static func winAnsiView(_ line: String) -> String {
        String(String.UnicodeScalarView(line.unicodeScalars.map { s -> Unicode.Scalar in
            if s == "\t" { return " " }
            let v = s.value
            if (0x20...0x7E).contains(v) || (0xA0...0xFF).contains(v) || (v != 0 && PDFWriter.winAnsiHigh.contains(v)) { return s }
            return "?"
        }))
    }

    // MARK: PNG

    /// Checks signature, chunk CRCs, IHDR first and IEND last, the zlib stream (header check, stored
    /// blocks, Adler-32) and the image size; returns (width, height, iTXt text).
    static func png(_ p: [UInt8]) throws -> (width: Int, height: Int, text: String) {
        guard Array(p.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] else { throw fail("PNG signature") }
        var i = 8, types: [String] = [], idat: [UInt8] = [], ihdr: [UInt8] = [], text = ""
        while i < p.count {
            let len = be32(p, i)
            let type = String(decoding: p[(i + 4)..<(i + 8)], as: UTF8.self)
            let data = Array(p[(i + 8)..<(i + 8 + len)])
            guard crc32(p[(i + 4)..<(i + 8 + len)]) == UInt32(be32(p, i + 8 + len)) else { throw fail("CRC of \(type)") }
            types.append(type)
            switch type {
            case "IHDR": ihdr = data
            case "IDAT": idat += data
            case "iTXt":
                let fields = data.split(separator: 0, maxSplits: 1, omittingEmptySubsequences: false)
                guard String(decoding: fields[0], as: UTF8.self) == "Description" else { throw fail("iTXt keyword") }
                let rest = Array(fields[1])  // flag, method, lang NUL, translated NUL, text
                guard rest[0] == 0, rest[1] == 0, rest[2] == 0, rest[3] == 0 else { throw fail("iTXt header") }
                text = String(decoding: rest[4...], as: UTF8.self)
            default: break
            }
            i += 12 + len
        }
        guard types.first == "IHDR", types.last == "IEND", i == p.count else { throw fail("chunk order \(types)") }
        let width = be32(ihdr, 0), height = be32(ihdr, 4)
        guard ihdr[8] == 1, ihdr[9] == 0 else { throw fail("not 1-bit greyscale") }
        guard (Int(idat[0]) << 8 | Int(idat[1])) % 31 == 0, idat[0] & 0x0F == 8 else { throw fail("zlib header") }
        var raw: [UInt8] = [], j = 2, final = false
        while !final {
            final = idat[j] & 1 == 1
            guard idat[j] >> 1 == 0 else { throw fail("not a stored block") }
            let n = le16(idat, j + 1)
            guard le16(idat, j + 3) == ~n & 0xFFFF else { throw fail("NLEN") }
            raw += idat[(j + 5)..<(j + 5 + n)]
            j += 5 + n
        }
        guard be32(idat, j) == Int(adler32(raw)), j + 4 == idat.count else { throw fail("Adler-32") }
        guard raw.count == height * (1 + (width + 7) / 8) else { throw fail("image data size") }
        return (width, height, text)
    }

    // MARK: JPEG

    /// Walks the markers (SOI, APP0, COM, DQT, SOF0, DHT, SOS, EOI), then decodes every block of
    /// the scan with the file's own Huffman tables; returns (width, height, COM text, DC of block 0).
    static func jpeg(_ j: [UInt8]) throws -> (width: Int, height: Int, text: String) {
        guard j.prefix(2) == [0xFF, 0xD8], j.suffix(2) == [0xFF, 0xD9] else { throw fail("SOI/EOI") }
        var i = 2, comment: [UInt8] = [], width = 0, height = 0
        var tables: [Int: [(code: Int, length: Int, symbol: UInt8)]] = [:]
        while true {
            guard j[i] == 0xFF else { throw fail("marker expected at \(i)") }
            let marker = j[i + 1], len = be16(j, i + 2)
            let seg = Array(j[(i + 4)..<(i + 2 + len)])
            switch marker {
            case 0xFE: comment += seg
            case 0xC0: height = be16(seg, 1); width = be16(seg, 3)
            case 0xC4:
                var code = 0, k = 17, list: [(Int, Int, UInt8)] = []
                for length in 1...16 {
                    for _ in 0..<Int(seg[length]) { list.append((code, length, seg[k])); code += 1; k += 1 }
                    code <<= 1
                }
                tables[Int(seg[0])] = list
            default: break
            }
            i += 2 + len
            if marker == 0xDA { break }
        }
        // Entropy-coded data up to EOI, unstuffed.
        var data: [UInt8] = []
        while i < j.count - 2 {
            if j[i] == 0xFF { guard j[i + 1] == 0 else { throw fail("marker inside the scan") }; data.append(0xFF); i += 2 }
            else { data.append(j[i]); i += 1 }
        }
        var bit = 0
        func readBit() throws -> Int {
            guard bit < data.count * 8 else { throw fail("scan ends early") }
            defer { bit += 1 }
            return Int(data[bit / 8] >> (7 - UInt8(bit % 8))) & 1
        }
        func decode(_ table: Int) throws -> UInt8 {
            var code = 0, length = 0
            while length < 16 {
                code = code << 1 | (try readBit()); length += 1
                if let hit = tables[table]?.first(where: { $0.code == code && $0.length == length }) { return hit.symbol }
            }
            throw fail("bad Huffman code")
        }
        var dc = 0
        for block in 0..<(((width + 7) / 8) * ((height + 7) / 8)) {
            let category = Int(try decode(0x00))
            var diff = 0
            for _ in 0..<category { diff = diff << 1 | (try readBit()) }
            if category > 0, diff < 1 << (category - 1) { diff -= (1 << category) - 1 }
            dc += diff
            var k = 1
            while k < 64 {
                let rs = try decode(0x10)
                if rs == 0 { break }
                k += Int(rs >> 4) + 1
                for _ in 0..<Int(rs & 15) { _ = try readBit() }
            }
            if block == 0, dc * 8 != 1016 { throw fail("first block is not white") }
        }
        guard data.count * 8 - bit < 8, (bit..<(data.count * 8)).allSatisfy({ _ in (try? readBit()) == 1 }) else { throw fail("padding") }
        return (width, height, String(decoding: comment, as: UTF8.self))
    }

    // MARK: RTF

    /// The paragraphs of an RTF export (only what the writer emits: `\par`, `\tab`, `\uN?`, escapes).
    static func rtfLines(_ r: String) throws -> [String] {
        guard r.hasPrefix("{\\rtf1"), r.hasSuffix("}\n") else { throw fail("RTF envelope") }
        guard let bodyStart = r.range(of: "\\f0\\fs22\n") else { throw fail("RTF header") }
        var units: [UInt16] = [], lines: [String] = []
        let body = Array(r[bodyStart.upperBound...].utf8.dropLast(2))
        var i = 0
        while i < body.count {
            let b = body[i]
            if b == 0x0A { i += 1; continue }
            guard b == 0x5C else { units.append(UInt16(b)); i += 1; continue }
            let next = body[i + 1]
            if [0x5C, 0x7B, 0x7D].contains(next) { units.append(UInt16(next)); i += 2; continue }
            var word = "", k = i + 1
            while k < body.count, (0x61...0x7A).contains(body[k]) { word.unicodeScalars.append(Unicode.Scalar(body[k])); k += 1 }
            if word == "par" { lines.append(String(decoding: units, as: UTF16.self)); units = []; i = k }
            else if word == "tab" { units.append(9); i = k + 1 }
            else if word == "u" {
                var num = "", m = k
                while m < body.count, body[m] == 0x2D || (0x30...0x39).contains(body[m]) { num.unicodeScalars.append(Unicode.Scalar(body[m])); m += 1 }
                guard body[m] == 0x3F else { throw fail("\\u without fallback") }
                units.append(UInt16(bitPattern: Int16(num)!)); i = m + 1
            } else { throw fail("unexpected control word \(word)") }
        }
        guard units.isEmpty else { throw fail("text after the last \\par") }
        return lines
    }

    // MARK: Python

    /// `/usr/bin/python3` (or `python3` on PATH), nil when absent.
    static var python3: String? {
        for candidate in ["/usr/bin/python3", "/usr/local/bin/python3"] where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        return nil
    }
}
