import Foundation

/// Plain `http://` is allowed only to loopback addresses (127.0.0.0/8, `::1`): the emulator and
/// test servers. Everything else must be `https://`, so that bearer tokens, refresh tokens, client
/// secrets and file contents never cross a network in clear. Enforced by `CurlTransport` for every
/// request (whatever chose the URL: option, environment, profile, stored credential) and by the
/// command line's URL options for an early, clear message.
///
/// Decision: a name (`localhost`, `emu.localhost`, anything else) counts by what it resolves to,
/// never by its spelling: every address must be loopback, and the transport then connects to
/// exactly those addresses (`CURLOPT_RESOLVE`), so that a second lookup cannot send the token
/// elsewhere.
public enum CleartextPolicy {
    /// The addresses a host name resolves to (numeric, as `getaddrinfo` gives them); empty when it
    /// does not resolve.
    public typealias Resolver = @Sendable (String) -> [String]

    public enum Decision: Equatable, Sendable {
        /// https, or http to an IP literal on loopback: nothing to pin.
        case allowed
        /// http to a name whose every address is loopback: connect only to these.
        case pinned([String])
        /// A sentence that does not repeat the URL.
        case refused(String)
    }

    static let refusal = "plain http:// is allowed only for loopback hosts (127.0.0.0/8, ::1, or a name such as localhost that resolves only to them), so that tokens never cross a network in clear: use https://"

    /// Why `url` may not be used (a sentence that does not repeat the URL), or nil when it may
    /// (https, or http to a loopback address). URLs of other schemes are not judged here.
    public static func problem(with url: String, resolver: Resolver = systemResolver) -> String? {
        if case .refused(let why) = check(url, resolver: resolver) { return why }
        return nil
    }

    public static func check(_ url: String, resolver: Resolver = systemResolver) -> Decision {
        guard url.lowercased().hasPrefix("http://") else { return .allowed }
        guard let host = host(of: url) else { return .refused(refusal) }
        if isNumeric(host) { return isLoopback(host: host) ? .allowed : .refused(refusal) }
        var name = host.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        let addresses = resolver(name)
        guard !addresses.isEmpty, addresses.allSatisfy({ isNumeric($0) && isLoopback(host: $0) }) else {
            return .refused(refusal)
        }
        return .pinned(addresses)
    }

    /// `getaddrinfo`'s numeric answers for `name` (TCP), without duplicates, in its order.
    public static let systemResolver: Resolver = { name in
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(name, nil, &hints, &list) == 0 else { return [] }
        defer { freeaddrinfo(list) }
        var result: [String] = []
        var entry = list
        while let current = entry {
            var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(current.pointee.ai_addr, current.pointee.ai_addrlen, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0 {
                let address = String(cString: text)
                if !result.contains(address) { result.append(address) }
            }
            entry = current.pointee.ai_next
        }
        return result
    }

    static func isNumeric(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
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

    /// The explicit port of an `http(s)://` URL, nil when it has none.
    public static func port(of url: String) -> Int? {
        guard let schemeEnd = url.range(of: "://") else { return nil }
        var authority = url[schemeEnd.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if let close = authority.lastIndex(of: "]") { authority = authority[authority.index(after: close)...] }
        guard let colon = authority.lastIndex(of: ":") else { return nil }
        return Int(authority[authority.index(after: colon)...])
    }

    /// An IP literal in 127.0.0.0/8, or `::1` (also spelled out, or as `::ffff:127.x.y.z`). Names are
    /// never loopback here: `check` resolves them.
    public static func isLoopback(host: String) -> Bool {
        let name = host.lowercased()
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
