/// A PDF 1.4 file of text lines: US Letter pages of 47 lines in 11-point Helvetica (a standard
/// font, not embedded, WinAnsiEncoding), lines wrapped at 85 characters, the title in the
/// document information dictionary.
///
/// Structure: header and binary comment; objects 1 Catalog, 2 Pages, 3 Font, 4 Info, then per
/// page a Page and its (uncompressed) content stream; a classic cross-reference table whose
/// entries are the exact byte offsets of each `n 0 obj`; trailer; `startxref`; `%%EOF`.
/// Decisions: characters outside WinAnsi (what a standard font can show) become `?`; strings
/// escape `\`, `(` and `)` and write every byte outside printable ASCII as `\ooo`, so the file
/// is ASCII after its binary comment; a tab is a space. No dates: the same lines give the same bytes.
enum PDFWriter {
    static let linesPerPage = 47, wrapColumn = 85

    static func pdf(title: String, lines: [String]) -> [UInt8] {
        let wrapped = lines.flatMap { wrap($0) }
        var pages: [[String]] = stride(from: 0, to: wrapped.count, by: linesPerPage).map {
            Array(wrapped[$0..<min($0 + linesPerPage, wrapped.count)])
        }
        if pages.isEmpty { pages = [[]] }

        var objects: [[UInt8]] = []
        let pageIds = pages.indices.map { 5 + 2 * $0 }
        objects.append(Array("<< /Type /Catalog /Pages 2 0 R >>".utf8))
        objects.append(Array("<< /Type /Pages /Kids [\(pageIds.map { "\($0) 0 R" }.joined(separator: " "))] /Count \(pages.count) >>".utf8))
        objects.append(Array("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".utf8))
        let titleHex = ([0xFE, 0xFF] + title.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }).map { hex2($0) }.joined()
        objects.append(Array("<< /Title <\(titleHex)> /Producer (drivefs-emulator) >>".utf8))
        for (i, page) in pages.enumerated() {
            objects.append(Array(("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
                + "/Contents \(pageIds[i] + 1) 0 R >>").utf8))
            var content = Array("BT\n/F1 11 Tf\n14 TL\n72 720 Td\n".utf8)
            for (n, line) in page.enumerated() {
                if n > 0 { content += Array("T*\n".utf8) }
                content += stringLiteral(line) + Array(" Tj\n".utf8)
            }
            content += Array("ET".utf8)
            objects.append(Array("<< /Length \(content.count) >>\nstream\n".utf8) + content + Array("\nendstream".utf8))
        }

        var out: [UInt8] = Array("%PDF-1.4\n".utf8) + [0x25, 0xE2, 0xE3, 0xCF, 0xD3, 0x0A]
        var offsets: [Int] = []
        for (i, object) in objects.enumerated() {
            offsets.append(out.count)
            out += Array("\(i + 1) 0 obj\n".utf8) + object + Array("\nendobj\n".utf8)
        }
        let xref = out.count
        out += Array("xref\n0 \(objects.count + 1)\n0000000000 65535 f\r\n".utf8)
        for offset in offsets { out += Array((pad10(offset) + " 00000 n\r\n").utf8) }
        out += Array("trailer\n<< /Size \(objects.count + 1) /Root 1 0 R /Info 4 0 R >>\nstartxref\n\(xref)\n%%EOF\n".utf8)
        return out
    }

    /// `line` cut into pieces of at most `wrapColumn` characters (an empty line stays one line).
    static func wrap(_ line: String) -> [String] {
        let chars = Array(line)
        guard chars.count > wrapColumn else { return [line] }
        return stride(from: 0, to: chars.count, by: wrapColumn).map { String(chars[$0..<min($0 + wrapColumn, chars.count)]) }
    }

    /// A PDF literal string of `line` in WinAnsiEncoding.
    static func stringLiteral(_ line: String) -> [UInt8] {
        var out: [UInt8] = [0x28]
        for scalar in line.unicodeScalars {
            let b = scalar == "\t" ? 0x20 : winAnsi(scalar)
            switch b {
            case 0x28, 0x29, 0x5C: out += [0x5C, b]
            case 0x20...0x7E: out.append(b)
            default: out += [0x5C, 0x30 + (b >> 6), 0x30 + ((b >> 3) & 7), 0x30 + (b & 7)]
            }
        }
        out.append(0x29)
        return out
    }

    /// The WinAnsiEncoding byte of a scalar, or `?`.
    static func winAnsi(_ scalar: Unicode.Scalar) -> UInt8 {
        let v = scalar.value
        if (0x20...0x7E).contains(v) || (0xA0...0xFF).contains(v) { return UInt8(v) }
        if v != 0, let i = winAnsiHigh.firstIndex(of: v) { return UInt8(0x80 + i) }
        return 0x3F
    }

    /// Bytes 0x80…0x9F of WinAnsiEncoding (0 where the encoding has no character).
    static let winAnsiHigh: [UInt32] = [
        0x20AC, 0, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017D, 0,
        0, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0, 0x017E, 0x0178,
    ]

    private static func pad10(_ n: Int) -> String { let s = String(n); return String(repeating: "0", count: max(0, 10 - s.count)) + s }
    private static func hex2(_ b: UInt8) -> String { let s = String(b, radix: 16, uppercase: true); return b < 16 ? "0" + s : s }
}
