import DriveSupport
import Foundation

/// The service-account grant (`urn:ietf:params:oauth:grant-type:jwt-bearer`): a JWT signed RS256
/// with the account's key, `aud` = the token URL it is posted to, valid one hour; `sub` names the
/// user to impersonate (needs domain-wide delegation on Google's side).
public struct ServiceAccountGrant: TokenGrant {
    public let key: ServiceAccountKey
    public let scopes: [String]
    public let subject: String?
    /// The configured token URL, else the key's `token_uri`, else Google's.
    public let tokenURL: String
    let transport: any HTTPTransport
    let clock: any TimeSource

    public static let assertionLifetime: Double = 3600

    public init(key: ServiceAccountKey, scopes: [String], subject: String? = nil, tokenURL: String? = nil,
                transport: any HTTPTransport, clock: any TimeSource = SystemTimeSource()) {
        self.key = key
        self.scopes = scopes
        self.subject = subject
        self.tokenURL = tokenURL ?? key.tokenURI ?? OAuthEndpoints.googleTokenURL
        self.transport = transport
        self.clock = clock
    }

    /// The signed assertion for `now`.
    func assertion(now: Double) throws -> String {
        let iat = Int(now.rounded(.down))
        let claims = JWT.ServiceAccountClaims(iss: key.clientEmail, scope: scopes.joined(separator: " "), aud: tokenURL,
                                              iat: iat, exp: iat + Int(Self.assertionLifetime),
                                              sub: subject.flatMap { $0.isEmpty ? nil : $0 })
        do {
            return try JWT.signRS256(claims: claims, key: key.key, keyID: key.privateKeyID)
        } catch {
            throw OAuthError.invalidServiceAccountKey("cannot sign with the private key")
        }
    }

    public func fetchToken() throws -> AccessToken {
        let now = clock.now()
        let jwt = try assertion(now: now)
        let response = try TokenEndpointClient(url: tokenURL, transport: transport).requestToken(
            [("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", jwt)], secrets: [jwt])
        return AccessToken(value: response.accessToken, expiresAt: now + response.expiresIn, scope: response.scope ?? scopes.joined(separator: " "))
    }
}
