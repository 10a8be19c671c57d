import DriveSupport
import Foundation

/// The token endpoint: `authorization_code` (one-shot code bound to client, redirect and PKCE
/// challenge), `refresh_token` (the well-known one for any client; issued ones for their client)
/// and `urn:ietf:params:oauth:grant-type:jwt-bearer` (an RS256 assertion signed by the key this
/// server wrote). Errors are Google's `{"error","error_description"}` (drive-behaviours §2.9).
extension OAuthService {
    static let jwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    static let maxFormBytes = 64 * 1024

    /// The parsed form, with the client credentials from the form or from HTTP Basic.
    struct TokenRequest {
        var fields: [String: String]
        var clientID: String?
        var clientSecret: String?
        var baseURL: String
        var path: String
        func value(_ name: String) -> String? {
            guard let v = fields[name], !v.isEmpty else { return nil }
            return v
        }
    }

    func handleToken(_ request: HTTPRequest) throws -> HTTPResponse {
        guard request.method == "POST" else {
            try? request.body.drain()
            return OAuthResponses.tokenError(405, "invalid_request", "Method not allowed: \(request.method). Use POST.")
        }
        let form: TokenRequest
        switch try Self.parseForm(request) {
        case .failure(let response): return response
        case .success(let parsed): form = parsed
        }
        guard let grantType = form.fields["grant_type"], !grantType.isEmpty else {
            return OAuthResponses.tokenError(400, "unsupported_grant_type", "Invalid grant_type: ")
        }
        switch grantType {
        case "authorization_code": return authorizationCodeGrant(form)
        case "refresh_token": return refreshTokenGrant(form)
        case Self.jwtBearerGrant: return jwtBearerGrant(form)
        default:
            return OAuthResponses.tokenError(400, "unsupported_grant_type", "Invalid grant_type: \(String(grantType.prefix(200)))")
        }
    }

    enum ParsedForm { case success(TokenRequest), failure(HTTPResponse) }

    static func parseForm(_ request: HTTPRequest) throws -> ParsedForm {
        let bytes: [UInt8]
        do {
            bytes = try request.body.readAll(limit: maxFormBytes)
        } catch HTTPBodyError.tooLarge {
            return .failure(OAuthResponses.tokenError(413, "invalid_request", "Request body too large."))
        }
        guard let text = String(bytes: bytes, encoding: .utf8) else {
            return .failure(OAuthResponses.tokenError(400, "invalid_request", "Request body is not valid UTF-8."))
        }
        var fields: [String: String] = [:]
        let contentType = request.headers["Content-Type"]?.lowercased() ?? ""
        if contentType.hasPrefix("application/json") {
            // Google's endpoint takes JSON bodies too (some client libraries send them).
            guard let object = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] else {
                return .failure(OAuthResponses.tokenError(400, "invalid_request", "Invalid JSON payload received."))
            }
            for (k, v) in object {
                if let s = v as? String { fields[k] = s } else if let n = v as? NSNumber { fields[k] = n.stringValue }
            }
        } else {
            // A repeated field keeps its first value.
            for pair in HTTPRequest.parseQuery(text) where fields[pair.name] == nil { fields[pair.name] = pair.value }
        }
        // Query parameters count as form fields for Google's endpoint; the body wins.
        for pair in request.query where fields[pair.name] == nil { fields[pair.name] = pair.value }

        var clientID = fields["client_id"].flatMap { $0.isEmpty ? nil : $0 }
        var clientSecret = fields["client_secret"].flatMap { $0.isEmpty ? nil : $0 }
        if let auth = request.headers["Authorization"], auth.lowercased().hasPrefix("basic ") {
            guard let decoded = Data(base64Encoded: String(auth.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
                  let pair = String(data: decoded, encoding: .utf8), let colon = pair.firstIndex(of: ":") else {
                return .failure(OAuthResponses.tokenError(401, "invalid_client", "Unauthorized"))
            }
            // RFC 6749 §2.3.1: both halves are form-encoded.
            let id = String(pair[..<colon]).removingPercentEncoding ?? String(pair[..<colon])
            let secret = String(pair[pair.index(after: colon)...]).removingPercentEncoding ?? String(pair[pair.index(after: colon)...])
            if clientID == nil, !id.isEmpty { clientID = id }
            if clientSecret == nil, !secret.isEmpty { clientSecret = secret }
        }
        return .success(TokenRequest(fields: fields, clientID: clientID, clientSecret: clientSecret, baseURL: request.baseURL, path: request.path))
    }

    // MARK: authorization_code

    func authorizationCodeGrant(_ form: TokenRequest) -> HTTPResponse {
        guard let clientID = form.clientID else {
            return OAuthResponses.tokenError(400, "invalid_request", "Could not determine client ID from request.")
        }
        guard let code = form.value("code") else {
            return OAuthResponses.tokenError(400, "invalid_request", "Missing required parameter: code")
        }
        guard let redirectURI = form.value("redirect_uri") else {
            return OAuthResponses.tokenError(400, "invalid_request", "Missing required parameter: redirect_uri")
        }
        let now = clock.now()
        return grants.withLock { g -> HTTPResponse in
            // One shot: a code is spent by any attempt that names it, right or wrong.
            guard let pending = g.codes.removeValue(forKey: code) else {
                return OAuthResponses.tokenError(400, "invalid_grant", code.hasPrefix("4/") ? "Bad Request" : "Malformed auth code.")
            }
            guard pending.expiresAt > now, pending.clientID == clientID, pending.redirectURI == redirectURI else {
                return OAuthResponses.tokenError(400, "invalid_grant", "Bad Request")
            }
            if let challenge = pending.codeChallenge {
                guard let verifier = form.value("code_verifier") else {
                    return OAuthResponses.tokenError(400, "invalid_grant", "Missing code verifier.")
                }
                let expected = pending.codeChallengeMethod == "S256"
                    ? Base64URL.encode(Self.sha256(Array(verifier.utf8))) : verifier
                guard Self.isPKCEString(verifier), expected == challenge else {
                    return OAuthResponses.tokenError(400, "invalid_grant", "Invalid code verifier.")
                }
            }
            var refreshToken: String?
            if pending.offline {
                let token = Self.newRefreshToken()
                g.refreshTokens[token] = OAuthGrants.RefreshGrant(clientID: clientID, clientSecret: form.clientSecret, scopes: pending.scopes)
                refreshToken = token
            }
            let access = mintAccessToken(&g, scopes: pending.scopes, source: refreshToken, clientID: clientID)
            if refreshToken != nil { save(g) } else { appendAccessToken(access, g) }
            var body: [String: Any] = [
                "access_token": access, "expires_in": expiresIn, "token_type": "Bearer", "scope": pending.scopes.joined(separator: " "),
            ]
            if let refreshToken { body["refresh_token"] = refreshToken }
            return OAuthResponses.tokenSuccess(body)
        }
    }

    // MARK: refresh_token

    func refreshTokenGrant(_ form: TokenRequest) -> HTTPResponse {
        guard let clientID = form.clientID else {
            return OAuthResponses.tokenError(400, "invalid_request", "Could not determine client ID from request.")
        }
        guard let refreshToken = form.value("refresh_token") else {
            return OAuthResponses.tokenError(400, "invalid_request", "Missing required parameter: refresh_token")
        }
        let requested = form.value("scope").map { $0.split(separator: " ").map(String.init) }
        return grants.withLock { g -> HTTPResponse in
            let scopes: [String]
            if refreshToken == config.refreshToken {
                guard !g.wellKnownRevoked else {
                    return OAuthResponses.tokenError(400, "invalid_grant", "Token has been expired or revoked.")
                }
                // The well-known token is all-powerful: it grants whatever is asked.
                scopes = requested ?? config.wellKnownScopes
            } else {
                guard let grant = g.refreshTokens[refreshToken] else {
                    return OAuthResponses.tokenError(400, "invalid_grant", "Token has been expired or revoked.")
                }
                guard grant.clientID == clientID else {
                    return OAuthResponses.tokenError(401, "unauthorized_client", "Unauthorized")
                }
                if let secret = grant.clientSecret, secret != form.clientSecret {
                    return OAuthResponses.tokenError(401, "invalid_client", "Unauthorized")
                }
                if let requested {
                    guard Set(requested).isSubset(of: Set(grant.scopes)) else {
                        return OAuthResponses.tokenError(400, "invalid_scope", "Some requested scopes were not granted by the user.")
                    }
                    scopes = requested
                } else {
                    scopes = grant.scopes
                }
            }
            let access = mintAccessToken(&g, scopes: scopes, source: refreshToken, clientID: clientID)
            appendAccessToken(access, g)
            return OAuthResponses.tokenSuccess([
                "access_token": access, "expires_in": expiresIn, "token_type": "Bearer", "scope": scopes.joined(separator: " "),
            ])
        }
    }

    // MARK: jwt-bearer

    static let shortLivedMessage = "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."

    /// Google's checks of a service account's assertion, in Google's order, each with its answer:
    /// the issuer (unknown: "account not found"), the signature, the audience, the times, the
    /// scope. Each check decodes strictly the claims it reads (`JWT.ServiceAccountClaims`' fields,
    /// typed): a claim missing or of another JSON type fails that check with its answer. Then the
    /// whole `ServiceAccountClaims`, whose only claim left unchecked is `sub`: one that is no
    /// string is the generic "Bad Request".
    func jwtBearerGrant(_ form: TokenRequest) -> HTTPResponse {
        guard let assertion = form.value("assertion") else {
            return OAuthResponses.tokenError(400, "invalid_request", "Missing required parameter: assertion")
        }
        let badRequest = OAuthResponses.tokenError(400, "invalid_grant", "Bad Request")
        let issuer: String
        do {
            issuer = try JWT.unverifiedClaims(assertion, as: IssuerClaim.self).iss
        } catch JWT.ClaimFailure.missing, JWT.ClaimFailure.illTyped {
            return OAuthResponses.tokenError(400, "invalid_grant", "Invalid grant: account not found")
        } catch {
            return badRequest
        }
        guard issuer == Self.serviceAccountEmail, let (key, _) = try? serviceAccountKey() else {
            return OAuthResponses.tokenError(400, "invalid_grant", "Invalid grant: account not found")
        }
        let verified: JWT.Verified
        do {
            verified = try JWT.verifyRS256(assertion, key: key)
        } catch {
            return OAuthResponses.tokenError(400, "invalid_grant", "Invalid JWT Signature.")
        }
        let ownURL = form.baseURL + form.path
        let audiences = Set(Self.googleTokenURLs + [ownURL, form.baseURL + "/token"] + grants.withLock { $0.writtenTokenURLs })
        guard let aud = try? verified.claims(as: AudienceClaim.self).aud, audiences.contains(aud) else {
            return OAuthResponses.tokenError(400, "invalid_grant", "Invalid JWT: Failed audience check.")
        }
        let now = clock.now()
        let skew = config.assertionClockSkew
        guard let times = try? verified.claims(as: TimeClaims.self) else {
            return OAuthResponses.tokenError(400, "invalid_grant", Self.shortLivedMessage)
        }
        let iat = Double(times.iat), exp = Double(times.exp)
        guard exp > iat, exp - iat <= 3600, iat <= now + skew, exp >= now - skew else {
            return OAuthResponses.tokenError(400, "invalid_grant", Self.shortLivedMessage)
        }
        guard let scope = try? verified.claims(as: ScopeClaim.self).scope, !scope.trimmingCharacters(in: .whitespaces).isEmpty else {
            return OAuthResponses.tokenError(400, "invalid_scope", "Invalid OAuth scope or ID token audience provided.")
        }
        guard (try? verified.claims(as: JWT.ServiceAccountClaims.self)) != nil else { return badRequest }
        let scopes = scope.split(separator: " ").map(String.init)
        return grants.withLock { g -> HTTPResponse in
            let access = mintAccessToken(&g, scopes: scopes, source: nil, clientID: Self.serviceAccountClientID, serviceAccount: true)
            appendAccessToken(access, g)
            // Google's service-account answer has no `scope` and no `refresh_token`.
            return OAuthResponses.tokenSuccess(["access_token": access, "expires_in": expiresIn, "token_type": "Bearer"])
        }
    }

    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var d = Digest(.sha256)
        d.update(bytes)
        return d.finalize()
    }

    // MARK: revoke and tokeninfo

    func handleRevoke(_ request: HTTPRequest) throws -> HTTPResponse {
        guard request.method == "POST" || request.method == "GET" else {
            try? request.body.drain()
            return OAuthResponses.tokenError(405, "invalid_request", "Method not allowed: \(request.method).")
        }
        let form: TokenRequest
        switch try Self.parseForm(request) {
        case .failure(let response): return response
        case .success(let parsed): form = parsed
        }
        guard let token = form.value("token") else {
            return OAuthResponses.tokenError(400, "invalid_request", "Bad Request")
        }
        guard revoke(token: token) else {
            return OAuthResponses.tokenError(400, "invalid_token", "Token expired or revoked")
        }
        return OAuthResponses.tokenSuccess([:])
    }

    /// Google's `tokeninfo`: what an access token grants and when it expires (numbers as strings, as Google sends them).
    func handleTokenInfo(_ request: HTTPRequest) throws -> HTTPResponse {
        let form: TokenRequest
        switch try Self.parseForm(request) {
        case .failure(let response): return response
        case .success(let parsed): form = parsed
        }
        let now = clock.now()
        let found = form.value("access_token").flatMap { token in grants.withLock { $0.accessTokens[token] } }
        guard let grant = found, grant.expiresAt > now else {
            return OAuthResponses.tokenError(400, "invalid_token", "Invalid Value")
        }
        var body: [String: Any] = [
            "scope": grant.scopes.joined(separator: " "), "exp": String(Int(grant.expiresAt)),
            "expires_in": String(max(0, Int(grant.expiresAt - now))), "access_type": grant.source == nil ? "online" : "offline",
        ]
        if let client = grant.clientID { body["azp"] = client; body["aud"] = client }
        return OAuthResponses.tokenSuccess(body)
    }
}

// The claims each check of `jwtBearerGrant` reads, typed as in `JWT.ServiceAccountClaims`.
private struct IssuerClaim: Decodable { let iss: String }
private struct AudienceClaim: Decodable { let aud: String }
private struct TimeClaims: Decodable { let iat: Int; let exp: Int }
private struct ScopeClaim: Decodable { let scope: String }
