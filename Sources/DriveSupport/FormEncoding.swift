import Foundation

/// `application/x-www-form-urlencoded` and RFC 3986 percent-encoding, one of each for every layer:
/// the client's URLs and token forms, the OAuth redirect it listens for, the emulator's query
/// strings and form bodies.
public enum FormEncoding {
    /// `s` percent-encoded byte by byte (UTF-8), only RFC 3986's unreserved characters
    /// (`A-Z a-z 0-9 - . _ ~`) left as they are: safe in a path segment, a query name or value,
    /// and a form field.
    public static func encodeComponent(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(UnicodeScalar(b))
            default:
                out += "%" + hex(b >> 4) + hex(b & 0x0F)
            }
        }
        return out
    }

    /// `name=value` pairs joined with `&`, each side encoded by `encodeComponent`.
    public static func encode(_ pairs: [(String, String)]) -> String {
        pairs.map { encodeComponent($0.0) + "=" + encodeComponent($0.1) }.joined(separator: "&")
    }

    /// Form-decodes `text` (a query string or a form body): pairs split on `&` (empty ones
    /// skipped), `+` read as a space, then percent-decoded; a malformed escape is kept as
    /// written. Pairs in order; a name may repeat; a pair without `=` has the value "".
    public static func decode<S: StringProtocol>(_ text: S) -> [(name: String, value: String)] {
        text.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (name: decodeComponent(kv[0]), value: kv.count > 1 ? decodeComponent(kv[1]) : "")
        }
    }

    /// The query of a URL or request-target (after `?`, before `#`), form-decoded.
    public static func query<S: StringProtocol>(of urlOrTarget: S) -> [(name: String, value: String)] {
        guard let q = urlOrTarget.firstIndex(of: "?") else { return [] }
        var query = urlOrTarget[urlOrTarget.index(after: q)...]
        if let hash = query.firstIndex(of: "#") { query = query[..<hash] }
        return decode(query)
    }

    private static func decodeComponent<S: StringProtocol>(_ s: S) -> String {
        let spaced = s.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }

    private static func hex(_ nibble: UInt8) -> String {
        String(UnicodeScalar(nibble < 10 ? nibble + 48 : nibble + 55))
    }
}
