import Foundation

/// What the OAuth server remembers. Refresh and access tokens (and the service-account key) are
/// persisted when a state directory is configured; authorization codes live in memory only.
///
/// INVARIANT: a revoked or unknown refresh token is absent from `refreshTokens` (so both answer
/// `invalid_grant` alike); every access token issued from a refresh token names it in `source`,
/// and revoking that refresh token removes those access tokens.
struct OAuthGrants: Codable {
    struct RefreshGrant: Codable {
        var clientID: String
        /// The secret presented when the grant was made; later refreshes must present the same one.
        var clientSecret: String?
        var scopes: [String]
    }

    struct AccessGrant: Codable {
        var scopes: [String]
        var expiresAt: Double
        /// The refresh token this access token was minted from (nil: code without offline access, or a service account).
        var source: String?
        var clientID: String?
    }

    /// An authorization code waiting for its exchange; bound to the client, the redirect and the PKCE challenge.
    struct PendingCode {
        var clientID: String
        var redirectURI: String
        var scopes: [String]
        var codeChallenge: String?
        var codeChallengeMethod: String?
        var offline: Bool
        var expiresAt: Double
    }

    var refreshTokens: [String: RefreshGrant] = [:]
    var accessTokens: [String: AccessGrant] = [:]
    var wellKnownRevoked = false
    var serviceAccountKeyPEM: String?
    var serviceAccountKeyID: String?
    /// Token URLs written into service-account key files: accepted as an assertion's `aud`.
    var writtenTokenURLs: [String] = []
    var codes: [String: PendingCode] = [:]
    /// Expired access tokens are swept when the table reaches this size (then twice the survivors):
    /// amortised O(1) per token, however many a benchmark mints.
    var pruneThreshold = 1024

    enum CodingKeys: String, CodingKey {
        case refreshTokens, accessTokens, wellKnownRevoked, serviceAccountKeyPEM, serviceAccountKeyID, writtenTokenURLs
    }

    /// Removes a refresh token and every access token minted from it.
    mutating func revokeRefreshToken(_ token: String) {
        refreshTokens[token] = nil
        accessTokens = accessTokens.filter { $0.value.source != token }
    }

    mutating func pruneExpired(now: Double) {
        accessTokens = accessTokens.filter { $0.value.expiresAt > now }
        codes = codes.filter { $0.value.expiresAt > now }
    }
}
