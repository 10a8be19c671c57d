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

/// How the request wrapper treats a failure thrown by a `TokenGrant`. Grant errors that adopt it
/// (`OAuthError`) are classified by it; `TransportError`s are transient; anything else is treated
/// as a failed login that retrying cannot fix.
public protocol TokenGrantFailure: Error {
    /// The grant is dead (`invalid_grant`): the user must run `drivefs auth login` again.
    var requiresLogin: Bool { get }
    /// A temporary failure of the token endpoint (5xx, network): the request may be retried.
    var isTransient: Bool { get }
}
