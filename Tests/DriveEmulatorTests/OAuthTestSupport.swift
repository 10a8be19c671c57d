import DriveEmulator
import DriveSupport
import Foundation
import XCTest

/// Drives an `OAuthService` without a server: builds requests, runs the route, decodes answers.
struct OAuthHarness {
    let service: OAuthService
    let clock: ManualTimeSource
    var baseURL = "http://127.0.0.1:8080"

    init(lifetime: Double = 3600, stateDirectory: URL? = nil, clock: ManualTimeSource = ManualTimeSource()) {
        self.clock = clock
        service = OAuthService(config: OAuthConfig(tokenLifetime: lifetime, stateDirectory: stateDirectory), clock: clock)
    }

    func send(_ method: String, _ target: String, form: [(String, String)]? = nil, rawBody: [UInt8]? = nil,
              headers: [(String, String)] = []) throws -> HTTPResponse {
        var h = HTTPHeaders(headers)
        var body: [UInt8] = rawBody ?? []
        if let form {
            body = Array(form.map { "\(Self.encode($0.0))=\(Self.encode($0.1))" }.joined(separator: "&").utf8)
            if h["Content-Type"] == nil { h.set("Content-Type", "application/x-www-form-urlencoded") }
        }
        let request = HTTPRequest(method: method, target: target, headers: h, body: BufferedRequestBody(body), baseURL: baseURL)
        guard let route = service.route(for: request) else { throw NSError(domain: "no route for \(target)", code: 0) }
        return try route.handle(request)
    }

    func token(_ form: [(String, String)], headers: [(String, String)] = []) throws -> (status: Int, json: [String: Any]) {
        let r = try send("POST", "/token", form: form, headers: headers)
        return (r.status, Self.json(r))
    }

    static func json(_ r: HTTPResponse) -> [String: Any] {
        guard case .bytes(let b) = r.body else { return [:] }
        return (try? JSONSerialization.jsonObject(with: Data(b))) as? [String: Any] ?? [:]
    }

    static func text(_ r: HTTPResponse) -> String {
        guard case .bytes(let b) = r.body else { return "" }
        return String(decoding: b, as: UTF8.self)
    }

    static func encode(_ s: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return s.addingPercentEncoding(withAllowedCharacters: allowed) ?? s
    }

    static func query(_ items: [(String, String)]) -> String {
        items.map { "\(encode($0.0))=\(encode($0.1))" }.joined(separator: "&")
    }

    /// Query items of a redirect `Location`.
    static func redirectParams(_ location: String) -> [String: String] {
        var out: [String: String] = [:]
        for item in URLComponents(string: location)?.queryItems ?? [] { out[item.name] = item.value ?? "" }
        return out
    }

    static let redirect = "http://127.0.0.1:45678/callback"
    static let verifier = "verifier-0123456789-0123456789-0123456789-0123456789"
    static var challenge: String {
        var d = Digest(.sha256)
        d.update(Array(verifier.utf8))
        return Base64URL.encode(d.finalize())
    }

    /// Runs the consent step and returns the code from the redirect.
    func authorize(client: String = "client-1", scope: String = "https://www.googleapis.com/auth/drive", state: String? = "st-1",
                   challenge: String? = OAuthHarness.challenge, method: String? = "S256", offline: Bool = true,
                   redirect: String = OAuthHarness.redirect) throws -> String {
        var q: [(String, String)] = [("client_id", client), ("redirect_uri", redirect), ("response_type", "code"), ("scope", scope)]
        if let state { q.append(("state", state)) }
        if let challenge { q.append(("code_challenge", challenge)) }
        if let method { q.append(("code_challenge_method", method)) }
        if offline { q.append(("access_type", "offline")); q.append(("prompt", "consent")) }
        let r = try send("GET", "/o/oauth2/v2/auth?" + Self.query(q))
        XCTAssertEqual(r.status, 302, Self.text(r))
        let code = Self.redirectParams(r.headers["Location"] ?? "")["code"]
        return try XCTUnwrap(code)
    }

    func exchange(_ code: String, client: String = "client-1", secret: String = "secret-1", verifier: String? = OAuthHarness.verifier,
                  redirect: String = OAuthHarness.redirect) throws -> (status: Int, json: [String: Any]) {
        var form = [("grant_type", "authorization_code"), ("code", code), ("client_id", client), ("client_secret", secret), ("redirect_uri", redirect)]
        if let verifier { form.append(("code_verifier", verifier)) }
        return try token(form)
    }

    func bearer(_ token: Any?) -> AccessCheck { service.check(authorization: "Bearer \(token as? String ?? "none")") }
}
