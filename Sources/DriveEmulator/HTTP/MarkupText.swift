/// One escaper for XML and HTML text and attribute values (exports, the OAuth consent page).
///
/// Decisions: escapes by Unicode scalar, not by `Character`, so a quote followed by a combining
/// mark is still escaped; `'` becomes `&#39;` (valid in XML and in HTML 4, unlike `&apos;`).
/// Scalars that XML 1.0 forbids (C0 controls other than tab, LF and CR; U+FFFE, U+FFFF) become
/// U+FFFD, so that every export stays well-formed whatever the document text holds.
enum MarkupText {
    static func escape(_ s: some StringProtocol) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for scalar in s.unicodeScalars {
            switch scalar {
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "&": out += "&amp;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(isAllowedInXML(scalar) ? scalar : "\u{FFFD}")
            }
        }
        return out
    }

    /// XML 1.0 `Char`: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF].
    static func isAllowedInXML(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x9, 0xA, 0xD, 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: return true
        default: return false
        }
    }
}
