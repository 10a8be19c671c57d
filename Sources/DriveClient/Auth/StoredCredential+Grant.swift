import DriveSupport
import Foundation

extension StoredCredential {
    /// The grant that turns this credential into access tokens, against `tokenURL` (the resolved
    /// endpoint; for a service account nil means the key's own `token_uri`).
    public func makeGrant(tokenURL: String?, transport: any HTTPTransport, clock: any TimeSource = SystemTimeSource()) throws -> any TokenGrant {
        switch kind {
        case .oauth:
            guard let refreshToken, !refreshToken.isEmpty else {
                throw OAuthError.configuration("the token file has no refresh token. \(OAuthError.loginAgain)")
            }
            guard let clientID, !clientID.isEmpty else {
                throw OAuthError.configuration("the token file names no OAuth client. \(OAuthError.loginAgain)")
            }
            return RefreshTokenGrant(tokenURL: tokenURL ?? self.tokenURL ?? OAuthEndpoints.googleTokenURL, clientID: clientID,
                                     clientSecret: clientSecret, refreshToken: refreshToken, transport: transport, clock: clock)
        case .serviceAccount:
            guard let path = serviceAccountKeyPath else {
                throw OAuthError.configuration("the token file names no service-account key. \(OAuthError.loginAgain)")
            }
            try CredentialStore.requirePrivateFile(path)
            let key = try ServiceAccountKey.load(path: path)
            return ServiceAccountGrant(key: key, scopes: scopes, subject: impersonate, tokenURL: tokenURL ?? self.tokenURL,
                                       transport: transport, clock: clock)
        }
    }
}

extension CredentialStore {
    /// A profile's configuration and its stored credential, for the commands that need a sign-in
    /// (`drivefs mount`, `auth status`; the grant is then `credential.makeGrant`). Throws
    /// `OAuthError.notLoggedIn` when the profile has no credential, `.insecureCredentialFile` when
    /// the token file is readable by others.
    public func signedIn(profile name: String) throws -> (profile: ProfileConfig?, credential: StoredCredential) {
        let profile = try profile(name)
        guard let credential = try loadCredential(profile: name) else { throw OAuthError.notLoggedIn(profile: name) }
        return (profile, credential)
    }
}
