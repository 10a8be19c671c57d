import DriveSupport
import Foundation

/// The consent endpoint. It consents at once (there is no user to ask) and redirects to the
/// client's loopback `redirect_uri` with `state`, a one-shot `code` and the granted `scope`.
/// Anything wrong answers Google's HTML error page (400), never a redirect: the redirect target
/// is not trusted until it has been checked.
extension OAuthService {
    func handleAuthorize(_ request: HTTPRequest) -> HTTPResponse {
        guard request.method == "GET" || request.method == "HEAD" else {
            return OAuthResponses.consentErrorPage(405, "invalid_request", "Method not allowed: \(request.method)")
        }
        func param(_ name: String) -> String? {
            guard let v = request.param(name), !v.isEmpty else { return nil }
            return v
        }
        guard let clientID = param("client_id") else { return missing("client_id") }
        guard let redirectURI = param("redirect_uri") else { return missing("redirect_uri") }
        if redirectURI.hasPrefix("urn:ietf:wg:oauth:2.0:oob") {
            return OAuthResponses.consentErrorPage(400, "invalid_request",
                "The out-of-band (OOB) flow has been blocked in order to keep users secure. Use a loopback redirect_uri.")
        }
        guard Self.isLoopbackRedirect(redirectURI) else {
            return OAuthResponses.consentErrorPage(400, "redirect_uri_mismatch",
                "Invalid redirect_uri: the emulator accepts only loopback http redirects (http://127.0.0.1:PORT/, http://[::1]:PORT/, http://localhost:PORT/).")
        }
        guard let responseType = param("response_type") else { return missing("response_type") }
        guard responseType == "code" else {
            return OAuthResponses.consentErrorPage(400, "unsupported_response_type", "Invalid response_type: \(responseType)")
        }
        guard let scope = param("scope") else { return missing("scope") }
        let scopes = scope.split(whereSeparator: { $0 == " " || $0 == "+" }).map(String.init)
        guard !scopes.isEmpty else { return missing("scope") }

        let challenge = param("code_challenge")
        var method = param("code_challenge_method")
        if let challenge {
            method = method ?? "plain"
            guard method == "S256" || method == "plain" else {
                return OAuthResponses.consentErrorPage(400, "invalid_request", "Invalid code_challenge_method: \(method!)")
            }
            guard Self.isPKCEString(challenge) else {
                return OAuthResponses.consentErrorPage(400, "invalid_request", "Invalid code_challenge")
            }
        } else if method != nil {
            return missing("code_challenge")
        }

        let code = Self.newCode()
        let pending = OAuthGrants.PendingCode(
            clientID: clientID, redirectURI: redirectURI, scopes: scopes, codeChallenge: challenge,
            codeChallengeMethod: challenge == nil ? nil : method, offline: param("access_type") == "offline",
            expiresAt: clock.now() + config.codeLifetime)
        grants.withLock { g in
            g.pruneExpired(now: clock.now())
            g.codes[code] = pending
        }

        var query: [String] = []
        if let state = request.param("state") { query.append("state=" + OAuthResponses.formEncode(state)) }
        query.append("code=" + OAuthResponses.formEncode(code))
        query.append("scope=" + OAuthResponses.formEncode(scopes.joined(separator: " ")))
        let separator = redirectURI.contains("?") ? "&" : "?"
        var location = redirectURI
        var fragment = ""
        if let hash = location.firstIndex(of: "#") {
            fragment = String(location[hash...])
            location = String(location[..<hash])
        }
        location += separator + query.joined(separator: "&") + fragment
        var headers = HTTPHeaders([("Location", location), ("Content-Type", "text/html; charset=UTF-8"), ("Server", "ESF")])
        headers.set("Cache-Control", "no-cache, no-store, max-age=0, must-revalidate")
        let body = "<HTML><HEAD><TITLE>Moved Temporarily</TITLE></HEAD><BODY>The document has moved <A HREF=\"\(OAuthResponses.escapeHTML(location))\">here</A>.</BODY></HTML>\n"
        return HTTPResponse(status: 302, headers: headers, body: request.method == "HEAD" ? .empty : .bytes(Array(body.utf8)))
    }

    private func missing(_ name: String) -> HTTPResponse {
        OAuthResponses.consentErrorPage(400, "invalid_request", "Missing required parameter: \(name)")
    }

    /// Installed apps may only redirect to loopback over plain http, any port and path.
    static func isLoopbackRedirect(_ uri: String) -> Bool {
        guard let c = URLComponents(string: uri), c.scheme?.lowercased() == "http", let host = c.host?.lowercased() else { return false }
        guard c.user == nil, c.password == nil else { return false }
        return host == "127.0.0.1" || host == "localhost" || host == "::1" || host == "[::1]"
    }

    /// RFC 7636: 43 to 128 characters of `[A-Za-z0-9-._~]`.
    static func isPKCEString(_ s: String) -> Bool {
        guard (43...128).contains(s.utf8.count) else { return false }
        return s.utf8.allSatisfy { b in
            (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == 0x2D || b == 0x2E || b == 0x5F || b == 0x7E
        }
    }
}
