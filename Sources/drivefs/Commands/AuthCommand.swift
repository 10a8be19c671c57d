import CommandLineKit
import DriveClient
import DriveSupport
import Foundation

/// `drivefs auth login|status|logout`: the credentials of a profile (see docs/auth.md).
enum AuthCommand {
    static func make() -> Command {
        let auth = Command(
            name: "auth", summary: "Sign in to Google Drive, show or forget the credentials",
            discussion: """
                Credentials live in $XDG_CONFIG_HOME/drivefs/ (default ~/.config/drivefs/): config.json
                holds each profile's OAuth client and endpoints, tokens/PROFILE.json its refresh token
                (or service-account key path). Both are written with mode 0600; drivefs refuses a token
                file that other users can read.
                """,
            examples: [
                ("auth login --client-id ID --client-secret SECRET", "Sign in with your own OAuth client (a browser opens)"),
                ("auth login --service-account key.json", "Use a service account instead of a user"),
                ("auth status", "Who is signed in, with which scopes"),
                ("auth logout", "Revoke and forget the credentials"),
            ])
        auth.add(AuthLoginCommand.make())
        auth.add(AuthStatusCommand.make())
        auth.add(AuthLogoutCommand.make())
        return auth
    }

    /// The profile's stored settings as `DriveEndpointChoice.apply(profileDefaults:)` takes them.
    static func profileDefaults(_ p: ProfileConfig?) -> [String: String] {
        var d: [String: String] = [:]
        if let v = p?.apiURL { d["api-url"] = v }
        if let v = p?.tokenURL { d["token-url"] = v }
        if let v = p?.authURL { d["auth-url"] = v }
        if let v = p?.caFile { d["ca-file"] = v }
        return d
    }

    static func store(_ invocation: Invocation) -> CredentialStore {
        CredentialStore(directories: DrivefsDirectories.fromEnvironment(invocation.environment))
    }

    static func transport(caFile: String?) throws -> CurlTransport {
        do {
            return try CurlTransport(options: CurlTransport.Options(connectTimeout: 15, stallTimeout: 30, caFile: caFile))
        } catch {
            throw CLIError.failure("cannot start the HTTP client: \(error)")
        }
    }

    /// OAuth errors as CLI failures, with the next step where there is one.
    static func failure(_ error: Error, doing what: String) -> CLIError {
        if let cli = error as? CLIError { return cli }
        if let t = error as? TransportError { return .failure("\(what): \(t.summary)", hint: t.hint) }
        if case .transport(let t)? = error as? DriveError { return .failure("\(what): \(t.summary)", hint: t.hint) }
        guard let e = error as? OAuthError else { return .failure("\(what): \(error)") }
        switch e {
        case .insecureCredentialFile(let path):
            return .failure("\(path) can be read by other users; refusing to use it", hint: "Fix it with: chmod 600 \(path)")
        case .notLoggedIn(let profile):
            return .failure("no credentials for profile '\(profile)'",
                            hint: "Sign in with: drivefs auth login" + (profile == DriveOptions.defaultProfile ? "" : " --profile \(profile)"))
        case .invalidGrant(let d):
            return .failure("\(what): the authorization was refused (invalid_grant: \(d))", hint: "Sign in again with: drivefs auth login")
        case .invalidClient(let d):
            return .failure("\(what): the OAuth client was refused (\(d))",
                            hint: "Check --client-id and --client-secret (a \"Desktop app\" client; see docs/auth.md)")
        case .transport(let t):
            return .failure("\(what): cannot reach the token endpoint: \(t.summary)", hint: t.hint)
        default:
            return .failure("\(what): \(e)")
        }
    }

    static func scopeURL(_ name: String?) -> String { (name.flatMap(OAuthScope.init(name:)) ?? .drive).url }

    static func validateScope(_ text: String) -> String? {
        OAuthScope(name: text) == nil ? "expected drive, drive.readonly or drive.file" : nil
    }

    /// `59m58s`, `2h00m`, `12s`.
    static func duration(_ seconds: Double) -> String {
        let s = max(0, Int(seconds.rounded(.down)))
        if s >= 3600 { return String(format: "%dh%02dm", s / 3600, (s % 3600) / 60) }
        if s >= 60 { return String(format: "%dm%02ds", s / 60, s % 60) }
        return "\(s)s"
    }

    /// `path` made absolute against the working directory (a path remembered in the profile must
    /// not depend on where a later command runs); nil stays nil.
    static func absolutePath(_ path: String?) -> String? {
        guard let path, !path.hasPrefix("/") else { return path }
        return URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath)).standardizedFileURL.path
    }

    static func timestamp(_ epochSeconds: Double) -> String {
        RFC3339.format(millis: Int64((epochSeconds * 1000).rounded(.down)))
    }
}
