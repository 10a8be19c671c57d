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

    /// A JSON string literal, escaped exactly as every other body the emulator writes (`JSONText`).
    static func quote(_ s: String, into out: inout String) {
        var bytes: [UInt8] = []
        JSONText.writeString(s, into: &bytes)
        out += String(decoding: bytes, as: UTF8.self)
    }
}
