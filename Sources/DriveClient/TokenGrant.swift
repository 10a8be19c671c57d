import Foundation

/// An OAuth 2.0 access token as the token endpoint issued it.
public struct AccessToken: Sendable, Equatable {
    public var value: String
    /// Seconds since the epoch (from the injected `TimeSource`) when the token stops being valid.
    public var expiresAt: Double
    public var scope: String?

    public init(value: String, expiresAt: Double, scope: String? = nil) {
        self.value = value
        self.expiresAt = expiresAt
        self.scope = scope
    }
}

/// One way of getting a fresh access token from the token endpoint: the refresh-token grant,
/// the service-account JWT bearer grant. Each call is one exchange with the endpoint; caching,
/// the expiry margin and single flight belong to the layer above (`TokenManager`).
///
/// Contract: throws `OAuthError.invalidGrant` when the grant is dead (revoked or expired refresh
/// token, rejected assertion): the user must log in again, and retrying cannot help.
public protocol TokenGrant: Sendable {
    func fetchToken() throws -> AccessToken
}
