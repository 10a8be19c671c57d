import Foundation

/// A JSON value whose object members keep the order they were given, for bodies whose member order
/// is part of what Google sends (Foundation's `JSONSerialization` sorts or scrambles keys).
/// Rendering is Google's ESF style: 2-space indentation, `"key": value`, slashes unescaped.
public indirect enum OrderedJSON: Sendable, Equatable {
    case string(String)
    case int(Int)
    case bool(Bool)
    case array([OrderedJSON])
    case object([(String, OrderedJSON)])

    public static func == (a: OrderedJSON, b: OrderedJSON) -> Bool { a.rendered() == b.rendered() }

    /// The text; `pretty: false` gives the compact form (no whitespace at all).
    public func rendered(pretty: Bool = true) -> String {
        var out = ""
        write(to: &out, pretty: pretty, depth: 0)
        return out
    }

    private func write(to out: inout String, pretty: Bool, depth: Int) {
        let newline = pretty ? "\n" : ""
        func pad(_ d: Int) -> String { pretty ? String(repeating: "  ", count: d) : "" }
        switch self {
        case .string(let s): OrderedJSON.quote(s, into: &out)
        case .int(let n): out += String(n)
        case .bool(let b): out += b ? "true" : "false"
        case .array(let items):
            guard !items.isEmpty else { out += "[]"; return }
            out += "[" + newline
            for (i, item) in items.enumerated() {
                out += pad(depth + 1)
                item.write(to: &out, pretty: pretty, depth: depth + 1)
                out += (i < items.count - 1 ? "," : "") + newline
            }
            out += pad(depth) + "]"
        case .object(let members):
            guard !members.isEmpty else { out += "{}"; return }
            out += "{" + newline
            for (i, (key, value)) in members.enumerated() {
                out += pad(depth + 1)
                OrderedJSON.quote(key, into: &out)
                out += pretty ? ": " : ":"
                value.write(to: &out, pretty: pretty, depth: depth + 1)
                out += (i < members.count - 1 ? "," : "") + newline
            }
            out += pad(depth) + "}"
        }
    }

    /// A JSON string literal: `"` and `\` escaped, control characters as `\n`, `\t`… or `\u00XX`;
    /// everything else (slashes, non-ASCII) as is, in UTF-8.
    static func quote(_ s: String, into out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}
