import DriveSupport
import Foundation

/// Google's installed-app ("Desktop app") login: consent in a browser, redirect to a one-shot
/// loopback listener, PKCE S256, a random `state` checked on return, then the code exchange.
///
/// Contracts:
/// - The authorization URL is always announced (printed); a browser is opened only when asked.
/// - With `pastedURL`, a second source races the listener: the user may paste the final redirected
///   URL (from a browser on another machine). The first valid arrival wins.
/// - A redirect to the listener with a wrong or missing `state` fails the login and nothing is
///   exchanged. A pasted URL with a wrong or missing `state` (a stale URL, one from another sign-in)
///   is reported through `notice` and ignored: the listener and further pastes can still complete.
public struct InstalledAppLogin: Sendable {
    public struct Options: Sendable {
        public var clientID: String
        public var clientSecret: String?
        public var scopes: [String]
        public var endpoints: OAuthEndpoints
        /// Seconds to wait for the redirect.
        public var timeout: Double

        public init(clientID: String, clientSecret: String?, scopes: [String], endpoints: OAuthEndpoints, timeout: Double = 300) {
            self.clientID = clientID
            self.clientSecret = clientSecret
            self.scopes = scopes
            self.endpoints = endpoints
            self.timeout = timeout
        }
    }

    public struct Result: Sendable {
        public var refreshToken: String
        public var accessToken: AccessToken
        /// What was granted (may be fewer scopes than asked for).
        public var scopes: [String]
    }

    public let options: Options
    let transport: any HTTPTransport
    let clock: any TimeSource

    public init(options: Options, transport: any HTTPTransport, clock: any TimeSource = SystemTimeSource()) {
        self.options = options
        self.transport = transport
        self.clock = clock
    }

    /// The consent URL for this redirect, challenge and state.
    public func authorizationURL(redirectURI: String, pkce: PKCE, state: String) -> String {
        let params = [
            ("client_id", options.clientID), ("redirect_uri", redirectURI), ("response_type", "code"),
            ("scope", options.scopes.joined(separator: " ")), ("access_type", "offline"), ("prompt", "consent"),
            ("code_challenge", pkce.challenge), ("code_challenge_method", pkce.method), ("state", state),
        ]
        let separator = options.endpoints.authURL.contains("?") ? "&" : "?"
        return options.endpoints.authURL + separator + TokenEndpointClient.formEncode(params)
    }

    /// Runs the whole flow. `announce` gets the authorization URL (print it); `openBrowser`, when
    /// given, is called with it too; `pastedURL`, when given, is a blocking read of a pasted
    /// redirect URL (nil at end of input), raced against the listener; `notice` gets messages for
    /// the user about pasted input that was ignored (print them).
    public func run(announce: @Sendable (String) -> Void, openBrowser: (@Sendable (String) -> Void)? = nil,
                    pastedURL: (@Sendable () -> String?)? = nil, notice: (@Sendable (String) -> Void)? = nil) throws -> Result {
        let listener = try LoopbackListener()
        defer { listener.close() }
        let pkce = PKCE()
        let state = SecureRandom.token(length: 32)
        let redirectURI = listener.redirectURI
        let url = authorizationURL(redirectURI: redirectURI, pkce: pkce, state: state)

        let arrival = Arrival()
        // The deadline is on the injected clock; waits wake at least every 200 ms of real time to check it.
        let clock = self.clock
        let deadline = clock.now() + options.timeout
        let listenerThread = Thread {
            let params = listener.waitForCallback(until: deadline, clock: clock) { params in
                params["state"] == state
                    ? (200, Self.donePage(ok: params["code"] != nil))
                    : (400, Self.donePage(ok: false))
            }
            if let params { arrival.deliver(params) }
            arrival.finishedSource()
        }
        listenerThread.name = "drivefs-login-listener"
        var sources = 1
        announce(url)
        openBrowser?(url)
        listenerThread.start()
        if let pastedURL {
            sources += 1
            let reader = Thread {
                while let line = pastedURL() {
                    let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
                    if trimmed.isEmpty { continue }
                    let params = LoopbackListener.queryParameters(of: trimmed.contains("?") ? trimmed : "?" + trimmed)
                    guard params["code"] != nil || params["error"] != nil || params["state"] != nil else {
                        notice?(Self.notARedirectNotice)
                        continue
                    }
                    guard params["state"] == state else {
                        notice?(Self.wrongStateNotice)
                        continue
                    }
                    arrival.deliver(params)
                    break
                }
                arrival.finishedSource()
            }
            reader.name = "drivefs-login-paste"
            reader.start()
        }
        guard let params = arrival.wait(until: deadline, clock: clock, sources: sources) else {
            throw OAuthError.loginTimedOut(seconds: Int(options.timeout))
        }
        listener.close()
        return try complete(params, expectedState: state, redirectURI: redirectURI, pkce: pkce)
    }

    /// Checks the redirect's parameters and exchanges the code.
    func complete(_ params: [String: String], expectedState: String, redirectURI: String, pkce: PKCE) throws -> Result {
        guard params["state"] == expectedState else { throw OAuthError.stateMismatch }
        if let error = params["error"] {
            throw OAuthError.authorizationDenied(String(error.prefix(80)))
        }
        guard let code = params["code"], !code.isEmpty else {
            throw OAuthError.malformedResponse("the login redirect carried no code")
        }
        var form = [("grant_type", "authorization_code"), ("code", code), ("client_id", options.clientID),
                    ("redirect_uri", redirectURI), ("code_verifier", pkce.verifier)]
        if let secret = options.clientSecret, !secret.isEmpty { form.append(("client_secret", secret)) }
        let started = clock.now()
        let response = try TokenEndpointClient(url: options.endpoints.tokenURL, transport: transport)
            .requestToken(form, secrets: [code, pkce.verifier, options.clientSecret ?? ""])
        guard let refresh = response.refreshToken else {
            throw OAuthError.malformedResponse("no refresh_token in the answer (was access_type=offline ignored?)")
        }
        let granted = (response.scope ?? params["scope"]).map { $0.split(separator: " ").map(String.init) } ?? options.scopes
        return Result(refreshToken: refresh,
                      accessToken: AccessToken(value: response.accessToken, expiresAt: started + response.expiresIn, scope: response.scope),
                      scopes: granted)
    }

    static let wrongStateNotice =
        "That URL does not belong to this sign-in (its state does not match): it was ignored. Paste the URL that this sign-in led to, or finish in the browser.\n"
    static let notARedirectNotice =
        "That is not a sign-in redirect (no code, error or state in it): it was ignored. Paste the whole URL from the address bar.\n"

    static func donePage(ok: Bool) -> String {
        let message = ok
            ? "drivefs is signed in. You may close this tab."
            : "drivefs could not complete the sign-in. Go back to the terminal for details; you may close this tab."
        return "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>drivefs</title></head><body><p>\(message)</p></body></html>\n"
    }
}

/// The first redirect parameters delivered by any source; waiters give up at the deadline or
/// when every source has finished without delivering.
final class Arrival: @unchecked Sendable {  // @unchecked: `params` and `finished` only with `condition` held
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var params: [String: String]?
    private var finished = 0

    func deliver(_ p: [String: String]) {
        condition.lock()
        if params == nil { params = p }
        condition.broadcast()
        condition.unlock()
    }

    func finishedSource() {
        condition.lock()
        finished += 1
        condition.broadcast()
        condition.unlock()
    }

    /// `deadline` in `clock`'s seconds, checked at least every 200 ms of real time.
    func wait(until deadline: Double, clock: any TimeSource, sources: Int) -> [String: String]? {
        condition.lock()
        defer { condition.unlock() }
        while params == nil && finished < sources && clock.now() < deadline {
            _ = condition.wait(until: Date().addingTimeInterval(0.2))
        }
        return params
    }
}
