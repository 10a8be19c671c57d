import Foundation

/// Plain `http://` is allowed only to loopback hosts (127.0.0.0/8, `::1`, `localhost`): the emulator
/// and test servers. Everything else must be `https://`, so that bearer tokens, refresh tokens,
/// client secrets and file contents never cross a network in clear. Enforced by `CurlTransport` for
/// every request (whatever chose the URL: option, environment, profile, stored credential) and by
/// the command line's URL options for an early, clear message.
public enum CleartextPolicy {
    /// Why `url` may not be used (a sentence that does not repeat the URL), or nil when it may
    /// (https, or http to a loopback host). URLs of other schemes are not judged here.
    public static func problem(with url: String) -> String? {
        guard url.lowercased().hasPrefix("http://") else { return nil }
        guard let host = host(of: url), isLoopback(host: host) else {
            return "plain http:// is allowed only for loopback hosts (127.0.0.0/8, ::1, localhost), so that tokens never cross a network in clear: use https://"
        }
        return nil
    }

    /// The host of an `http(s)://` URL, without brackets, userinfo or port; nil if there is none.
    public static func host(of url: String) -> String? {
        guard let schemeEnd = url.range(of: "://") else { return nil }
        var authority = url[schemeEnd.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            let inner = authority[authority.index(after: authority.startIndex)..<close]
            return inner.isEmpty ? nil : String(inner)
        }
        let host = authority.prefix { $0 != ":" }
        return host.isEmpty ? nil : String(host)
    }

    /// 127.0.0.0/8, `::1` (also spelled out, or as `::ffff:127.x.y.z`), `localhost` (and names under
    /// `.localhost`, which resolvers keep on loopback).
    public static func isLoopback(host: String) -> Bool {
        var name = host.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        if name == "localhost" || name.hasSuffix(".localhost") { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, name, &v4) == 1 {
            return UInt32(bigEndian: v4.s_addr) >> 24 == 127
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, name, &v6) == 1 {
            let bytes = withUnsafeBytes(of: v6) { Array($0) }
            if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return true }
            let mapped = bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xff && bytes[11] == 0xff
            return mapped && bytes[12] == 127
        }
        return false
    }
}
