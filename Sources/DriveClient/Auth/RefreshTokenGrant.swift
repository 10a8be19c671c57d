import DriveSupport
import Foundation

/// The `refresh_token` grant: an OAuth user's stored refresh token → an access token.
public struct RefreshTokenGrant: TokenGrant {
    public let tokenURL: String
    public let clientID: String
    /// Installed-app secrets are not secret to Google, but are kept out of errors all the same.
    public let clientSecret: String?
    let refreshToken: String
    let transport: any HTTPTransport
    let clock: any TimeSource

    public init(tokenURL: String, clientID: String, clientSecret: String?, refreshToken: String,
                transport: any HTTPTransport, clock: any TimeSource = SystemTimeSource()) {
        self.tokenURL = tokenURL
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.refreshToken = refreshToken
        self.transport = transport
        self.clock = clock
    }

    public func fetchToken() throws -> AccessToken {
        var form = [("grant_type", "refresh_token"), ("refresh_token", refreshToken), ("client_id", clientID)]
        if let clientSecret, !clientSecret.isEmpty { form.append(("client_secret", clientSecret)) }
        let started = clock.now()
        let response = try TokenEndpointClient(url: tokenURL, transport: transport)
            .requestToken(form, secrets: [refreshToken, clientSecret ?? ""])
        // Expiry counts from when the request left: never later than the server's own clock.
        return AccessToken(value: response.accessToken, expiresAt: started + response.expiresIn, scope: response.scope)
    }
}
