import Foundation

/// Writes the JSON trees that handlers build (`[String: Any]` of strings, booleans, integers,
/// arrays and objects) as pretty-printed UTF-8 text, keys sorted, slashes unescaped: the same text
/// layout as `JSONSerialization` with `[.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]`
/// (two-space indent, `"key" : value`), at a fraction of its cost. A page of 1000 files was
/// 80% JSONSerialization, most of it in its locale-aware key sort.
///
/// Decisions: keys sort by Swift's `String <` (code points), not by `NSString.compare`: JSON key
/// order carries no meaning, and every key Drive sends is lowercase camelCase ASCII, where the two
/// orders agree on nearly every pair. Empty objects and arrays are `{}` and `[]`. Values of other
/// types (NSNumber from parsed JSON, Double) are written through JSONSerialization as fragments.
enum JSONText {
    static func encode(_ value: Any) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(4096)
        write(value, into: &out, indent: 0)
        return out
    }

    private static func newline(_ out: inout [UInt8], _ indent: Int) {
        out.append(0x0A)
        for _ in 0..<indent { out.append(0x20); out.append(0x20) }
    }

    private static func write(_ value: Any, into out: inout [UInt8], indent: Int) {
        let type = Swift.type(of: value)
        if let s = value as? String {
            writeString(s, into: &out)
        } else if type == Bool.self {
            out.append(contentsOf: (value as! Bool) ? Array("true".utf8) : Array("false".utf8))
        } else if type == Int.self {
            out.append(contentsOf: String(value as! Int).utf8)
        } else if type == Int64.self {
            out.append(contentsOf: String(value as! Int64).utf8)
        } else if type == Int32.self {
            out.append(contentsOf: String(value as! Int32).utf8)
        } else if let dict = value as? [String: Any] {
            guard !dict.isEmpty else { out.append(0x7B); out.append(0x7D); return }
            out.append(0x7B)
            var first = true
            for key in dict.keys.sorted() {
                if !first { out.append(0x2C) }
                first = false
                newline(&out, indent + 1)
                writeString(key, into: &out)
                out.append(contentsOf: [0x20, 0x3A, 0x20])
                write(dict[key]!, into: &out, indent: indent + 1)
            }
            newline(&out, indent)
            out.append(0x7D)
        } else if let array = value as? [Any] {
            guard !array.isEmpty else { out.append(0x5B); out.append(0x5D); return }
            out.append(0x5B)
            for (i, element) in array.enumerated() {
                if i > 0 { out.append(0x2C) }
                newline(&out, indent + 1)
                write(element, into: &out, indent: indent + 1)
            }
            newline(&out, indent)
            out.append(0x5D)
        } else if value is NSNull {
            out.append(contentsOf: Array("null".utf8))
        } else if let data = try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed]) {
            out.append(contentsOf: data)
        } else {
            out.append(contentsOf: Array("null".utf8))
        }
    }

    /// The same JSON text without insignificant whitespace (spaces, tabs and line breaks outside
    /// strings). `json` must be valid JSON; nothing else is changed.
    static func compact(_ json: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(json.count)
        var inString = false, escaped = false
        for byte in json {
            if inString {
                out.append(byte)
                if escaped { escaped = false } else if byte == 0x5C { escaped = true } else if byte == 0x22 { inString = false }
                continue
            }
            switch byte {
            case 0x20, 0x0A, 0x0D, 0x09: continue
            case 0x22: inString = true; out.append(byte)
            default: out.append(byte)
            }
        }
        return out
    }

    private static let hex = Array("0123456789abcdef".utf8)

    /// A JSON string literal: `"` and `\` escaped, control characters as `\n`, `\t`… or `\u00XX`;
    /// everything else (slashes, non-ASCII) as is, in UTF-8.
    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(0x22)
        for byte in s.utf8 {
            switch byte {
            case 0x22: out.append(0x5C); out.append(0x22)
            case 0x5C: out.append(0x5C); out.append(0x5C)
            case 0x0A: out.append(0x5C); out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(0x5C); out.append(UInt8(ascii: "r"))
            case 0x09: out.append(0x5C); out.append(UInt8(ascii: "t"))
            case 0x08: out.append(0x5C); out.append(UInt8(ascii: "b"))
            case 0x0C: out.append(0x5C); out.append(UInt8(ascii: "f"))
            case 0..<0x20:
                out.append(contentsOf: Array("\\u00".utf8))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(0x22)
    }
}
