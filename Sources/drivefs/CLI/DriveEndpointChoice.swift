import DriveClient

/// Endpoints chosen on the command line or in the environment; `nil` means "not chosen here".
struct DriveEndpointChoice: Equatable, Sendable {
    var apiURL: String?
    var tokenURL: String?
    var authURL: String?
    var profile: String
    var caFile: String?

    /// Fills what the command line and environment left open from the profile's configuration
    /// (keys `api-url`, `token-url`, `auth-url`, `ca-file`), then from Google's defaults.
    func apply(profileDefaults: [String: String] = [:]) -> (apiURL: String, tokenURL: String, authURL: String, caFile: String?) {
        (apiURL ?? profileDefaults["api-url"] ?? DriveOptions.defaultAPIURL,
         tokenURL ?? profileDefaults["token-url"] ?? DriveOptions.defaultTokenURL,
         authURL ?? profileDefaults["auth-url"] ?? DriveOptions.defaultAuthURL,
         caFile ?? profileDefaults["ca-file"])
    }

    /// The API root and OAuth endpoints: this choice, then the profile's configuration, then Google's.
    func driveEndpoints(profile config: ProfileConfig?) -> DriveEndpoints {
        DriveEndpoints(
            apiRoot: apiURL ?? config?.apiURL ?? DriveEndpoints.googleAPIRoot,
            tokenURL: tokenURL ?? config?.tokenURL ?? DriveEndpoints.googleTokenURL,
            authURL: authURL ?? config?.authURL ?? DriveEndpoints.googleAuthURL)
    }

    /// The OAuth endpoints, with the revoke URL from `DRIVEFS_REVOKE_URL`, the profile, or next to
    /// the token URL (see `OAuthEndpoints.resolve`).
    func oauthEndpoints(profile config: ProfileConfig?, environment: [String: String]) -> OAuthEndpoints {
        OAuthEndpoints.resolve(tokenURL: tokenURL, authURL: authURL, environment: environment, profile: config)
    }
}
