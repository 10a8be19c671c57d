import Foundation

/// Every failure of drivefs's own OAuth code: the grants, the login flow, the credential store.
///
/// Contract: no case ever carries a token, a client secret, an authorization code, a PKCE verifier
/// or a signed assertion. Server descriptions are Google's fixed texts, and the token endpoint
/// client scrubs any secret it sent from them before they get here.
public enum OAuthError: Error, Sendable, Equatable, CustomStringConvertible, TokenGrantFailure {
    /// 400 `invalid_grant`: the refresh token is expired or revoked, the code was spent, the assertion
    /// was refused. Retrying cannot help; the user must log in again.
    case invalidGrant(description: String)
    /// 401 `invalid_client` / `unauthorized_client`: the client ID or secret is wrong, or the token
    /// belongs to another client.
    case invalidClient(description: String)
    /// 400 `invalid_request`, `unsupported_grant_type`: drivefs sent something the server refused.
    case invalidRequest(description: String)
    /// 400 `invalid_scope`.
    case invalidScope(description: String)
    /// Any other answer that is not a token (5xx included), with Google's `error` when there was one.
    case server(status: Int, error: String?, description: String?)
    /// A 200 that is not a token response.
    case malformedResponse(String)
    /// No HTTP answer at all.
    case transport(TransportError)
    /// The login redirect came back with another `state` than the one sent: nothing was exchanged.
    case stateMismatch
    /// The consent page answered `error=...` (e.g. `access_denied`).
    case authorizationDenied(String)
    /// No redirect arrived in time.
    case loginTimedOut(seconds: Int)
    /// The service-account key file cannot be used (names the field, never the key).
    case invalidServiceAccountKey(String)
    /// A credential file that group or others can read.
    case insecureCredentialFile(path: String)
    /// No credentials stored for the profile.
    case notLoggedIn(profile: String)
    /// A configuration problem the user can fix (missing client ID, unreadable config, ...).
    case configuration(String)

    public static let loginAgain = "Run `drivefs auth login` to sign in again."

    public var description: String {
        switch self {
        case .invalidGrant(let d):
            return "the authorization was refused (invalid_grant: \(d)). \(Self.loginAgain)"
        case .invalidClient(let d):
            return "the OAuth client was refused (\(d)): check --client-id and --client-secret (or the profile's config.json)"
        case .invalidRequest(let d):
            return "the token endpoint refused the request: \(d)"
        case .invalidScope(let d):
            return "the requested scope was refused: \(d)"
        case .server(let status, let error, let d):
            var s = "the token endpoint answered HTTP \(status)"
            if let error { s += " \(error)" }
            if let d, !d.isEmpty { s += ": \(d)" }
            return s
        case .malformedResponse(let why):
            return "the token endpoint sent an unusable answer: \(why)"
        case .transport(let e):
            return "cannot reach the token endpoint: \(e)"
        case .stateMismatch:
            return "the login redirect carried the wrong state (a stale or forged redirect); nothing was exchanged. Start `drivefs auth login` again."
        case .authorizationDenied(let e):
            return "the authorization was not granted (\(e)). Start `drivefs auth login` again and allow access."
        case .loginTimedOut(let s):
            return "no login redirect arrived within \(s) seconds. Start `drivefs auth login` again."
        case .invalidServiceAccountKey(let why):
            return "the service-account key file cannot be used: \(why)"
        case .insecureCredentialFile(let path):
            return "\(path) can be read by other users; refusing to use it. Fix it with: chmod 600 \(path)"
        case .notLoggedIn(let profile):
            return "no credentials for profile '\(profile)'. Run `drivefs auth login" + (profile == "default" ? "" : " --profile \(profile)") + "` first."
        case .configuration(let why):
            return why
        }
    }

    public var requiresLogin: Bool {
        switch self {
        case .invalidGrant, .notLoggedIn: return true
        default: return false
        }
    }

    public var isTransient: Bool {
        switch self {
        case .transport: return true
        case .server(let status, _, _): return status >= 500 || status == 429 || status == 408
        default: return false
        }
    }
}

extension OAuthError: LocalizedError {
    public var errorDescription: String? { description }
}
