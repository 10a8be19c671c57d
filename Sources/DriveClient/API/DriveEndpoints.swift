import Foundation

/// Where the client talks to: the API root (Google's `rootUrl`: `drive/v3/` and `upload/drive/v3/`
/// are appended), the OAuth token endpoint and the consent page. Everything is overridable so the
/// same binary talks to Google or to the emulator.
public struct DriveEndpoints: Sendable, Equatable {
    /// Ends with `/`.
    public var apiRoot: String
    public var tokenURL: String
    public var authURL: String

    public static let googleAPIRoot = "https://www.googleapis.com/"
    public static let googleTokenURL = "https://oauth2.googleapis.com/token"
    public static let googleAuthURL = "https://accounts.google.com/o/oauth2/v2/auth"

    public static let google = DriveEndpoints()

    public init(apiRoot: String = DriveEndpoints.googleAPIRoot, tokenURL: String = DriveEndpoints.googleTokenURL,
                authURL: String = DriveEndpoints.googleAuthURL) {
        self.apiRoot = apiRoot.hasSuffix("/") ? apiRoot : apiRoot + "/"
        self.tokenURL = tokenURL
        self.authURL = authURL
    }

    /// For a server that serves everything under one root (the emulator): `<root>/token`, `<root>/o/oauth2/v2/auth`.
    public static func singleHost(_ root: String) -> DriveEndpoints {
        let base = root.hasSuffix("/") ? root : root + "/"
        return DriveEndpoints(apiRoot: base, tokenURL: base + "token", authURL: base + "o/oauth2/v2/auth")
    }

    /// `<root>drive/v3/`
    public var driveBase: String { apiRoot + "drive/v3/" }
    /// `<root>upload/drive/v3/`
    public var uploadBase: String { apiRoot + "upload/drive/v3/" }

    /// `base` with `DRIVEFS_API_URL`, `DRIVEFS_TOKEN_URL`, `DRIVEFS_AUTH_URL` applied where set and non-empty.
    /// (Command-line options, applied after this by the CLI, win over the environment.)
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment,
                                       base: DriveEndpoints = .google) -> DriveEndpoints {
        var endpoints = base
        if let api = environment["DRIVEFS_API_URL"], !api.isEmpty {
            endpoints.apiRoot = api.hasSuffix("/") ? api : api + "/"
        }
        if let token = environment["DRIVEFS_TOKEN_URL"], !token.isEmpty { endpoints.tokenURL = token }
        if let auth = environment["DRIVEFS_AUTH_URL"], !auth.isEmpty { endpoints.authURL = auth }
        return endpoints
    }
}
