import Foundation

/// How the emulator's OAuth 2.0 server behaves (flags `--token-lifetime`, `--refresh-token`, `--state-dir`).
public struct OAuthConfig: Sendable {
    /// Seconds an access token stays valid (`expires_in`).
    public var tokenLifetime: Double
    /// A refresh token that is valid for any client ID and secret until revoked, so that external
    /// clients (rclone, google-api-python-client) can start without a browser.
    public var refreshToken: String
    /// Where grants, revocations and the service-account key survive restarts; nil = this process only.
    public var stateDirectory: URL?
    /// What the well-known refresh token grants when the request names no scope.
    public var wellKnownScopes: [String]
    /// Seconds an authorization code may wait before it is exchanged (Google: about 10 minutes).
    public var codeLifetime: Double
    /// Clock skew tolerated on a service-account assertion's `iat` and `exp`.
    public var assertionClockSkew: Double

    public init(tokenLifetime: Double = 3600, refreshToken: String = "drivefs-emulator-refresh-token", stateDirectory: URL? = nil,
                wellKnownScopes: [String] = ["https://www.googleapis.com/auth/drive"], codeLifetime: Double = 600,
                assertionClockSkew: Double = 300) {
        self.tokenLifetime = tokenLifetime
        self.refreshToken = refreshToken
        self.stateDirectory = stateDirectory
        self.wellKnownScopes = wellKnownScopes
        self.codeLifetime = codeLifetime
        self.assertionClockSkew = assertionClockSkew
    }
}
