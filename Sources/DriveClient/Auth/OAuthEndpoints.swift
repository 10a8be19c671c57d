import Foundation

/// Where the OAuth endpoints are: Google's by default; overridden by a flag, then the environment
/// (`DRIVEFS_TOKEN_URL`, `DRIVEFS_AUTH_URL`, `DRIVEFS_REVOKE_URL`), then the profile's config.
public struct OAuthEndpoints: Sendable, Equatable {
    public static let googleTokenURL = "https://oauth2.googleapis.com/token"
    public static let googleAuthURL = "https://accounts.google.com/o/oauth2/v2/auth"
    public static let googleRevokeURL = "https://oauth2.googleapis.com/revoke"

    public var tokenURL: String
    public var authURL: String
    public var revokeURL: String

    public init(tokenURL: String = OAuthEndpoints.googleTokenURL, authURL: String = OAuthEndpoints.googleAuthURL, revokeURL: String? = nil) {
        self.tokenURL = tokenURL
        self.authURL = authURL
        self.revokeURL = revokeURL ?? OAuthEndpoints.revokeURL(forTokenURL: tokenURL)
    }

    /// Google's revoke endpoint for Google's token URL; otherwise `revoke` next to the token path
    /// (`http://127.0.0.1:PORT/token` → `http://127.0.0.1:PORT/revoke`, as the emulator serves it).
    public static func revokeURL(forTokenURL tokenURL: String) -> String {
        if knownGoogleTokenURLs.contains(tokenURL) { return googleRevokeURL }
        guard var c = URLComponents(string: tokenURL), c.host != nil else { return googleRevokeURL }
        var path = c.path
        if let slash = path.lastIndex(of: "/") { path = String(path[..<slash]) }
        c.path = path + "/revoke"
        c.query = nil
        return c.string ?? googleRevokeURL
    }

    private static let knownGoogleTokenURLs: Set<String> = [
        googleTokenURL, "https://www.googleapis.com/oauth2/v4/token", "https://accounts.google.com/o/oauth2/token",
    ]

    /// Flag, else environment, else profile, else Google's.
    public static func resolve(tokenURL flagToken: String? = nil, authURL flagAuth: String? = nil, revokeURL flagRevoke: String? = nil,
                               environment: [String: String] = ProcessInfo.processInfo.environment,
                               profile: ProfileConfig? = nil) -> OAuthEndpoints {
        func pick(_ flag: String?, _ env: String, _ fromProfile: String?) -> String? {
            for candidate in [flag, environment[env], fromProfile] {
                if let c = candidate?.trimmingCharacters(in: .whitespaces), !c.isEmpty { return c }
            }
            return nil
        }
        let token = pick(flagToken, "DRIVEFS_TOKEN_URL", profile?.tokenURL) ?? googleTokenURL
        let auth = pick(flagAuth, "DRIVEFS_AUTH_URL", profile?.authURL) ?? googleAuthURL
        let revoke = pick(flagRevoke, "DRIVEFS_REVOKE_URL", profile?.revokeURL)
        return OAuthEndpoints(tokenURL: token, authURL: auth, revokeURL: revoke)
    }
}
