import DriveSupport
import Foundation

/// The emulator's OAuth 2.0 server: Google's consent endpoint (consents at once), token endpoint
/// (`authorization_code` with PKCE, `refresh_token`, service-account `jwt-bearer`), revocation and
/// tokeninfo; and the validator the Drive part asks about each request's bearer token.
///
/// Paths: `/o/oauth2/v2/auth` and `/o/oauth2/auth` (`oauth.authorize`); `/token`, `/o/oauth2/token`,
/// `/oauth2/v4/token` (`token`); `/revoke`, `/o/oauth2/revoke` (`oauth.revoke`); `/tokeninfo`,
/// `/oauth2/v3/tokeninfo` (`oauth.tokeninfo`).
///
/// Locks: `grants` (all token state; persistence runs inside it: small writes) and `signingKey`
/// (the parsed key); never held together.
public final class OAuthService: RouteProvider, AccessTokenValidator, Sendable {
    public let config: OAuthConfig
    let clock: TimeSource
    let grants: Locked<OAuthGrants>
    /// The service-account key, parsed once (libcrypto object); its PEM lives in `grants`.
    let signingKey = Locked<RSAKey?>(nil)

    public static let serviceAccountEmail = "drivefs-emulator@drivefs-emulator.iam.gserviceaccount.com"
    public static let serviceAccountClientID = "100000000000000000001"
    public static let projectID = "drivefs-emulator"
    /// The audiences a service-account assertion may name besides this server's own token URL.
    public static let googleTokenURLs = [
        "https://oauth2.googleapis.com/token", "https://www.googleapis.com/oauth2/v4/token", "https://accounts.google.com/o/oauth2/token",
    ]

    static let tokenPaths: Set<String> = ["/token", "/o/oauth2/token", "/oauth2/v4/token"]
    static let authorizePaths: Set<String> = ["/o/oauth2/v2/auth", "/o/oauth2/auth"]
    static let revokePaths: Set<String> = ["/revoke", "/o/oauth2/revoke"]
    static let tokenInfoPaths: Set<String> = ["/tokeninfo", "/oauth2/v3/tokeninfo"]

    public init(config: OAuthConfig = OAuthConfig(), clock: TimeSource = SystemTimeSource()) {
        self.config = config
        self.clock = clock
        self.grants = Locked(OAuthService.load(from: config.stateDirectory) ?? OAuthGrants())
    }

    // MARK: RouteProvider

    public func route(for request: HTTPRequest) -> Route? {
        let path = request.path.count > 1 && request.path.hasSuffix("/") ? String(request.path.dropLast()) : request.path
        if Self.tokenPaths.contains(path) {
            return Route(method: "token") { [unowned self] in try self.handleToken($0) }
        }
        if Self.authorizePaths.contains(path) {
            return Route(method: "oauth.authorize") { [unowned self] in self.handleAuthorize($0) }
        }
        if Self.revokePaths.contains(path) {
            return Route(method: "oauth.revoke") { [unowned self] in try self.handleRevoke($0) }
        }
        if Self.tokenInfoPaths.contains(path) {
            return Route(method: "oauth.tokeninfo") { [unowned self] in try self.handleTokenInfo($0) }
        }
        return nil
    }

    // MARK: AccessTokenValidator

    public func check(authorization: String?) -> AccessCheck {
        guard let authorization, !authorization.trimmingCharacters(in: .whitespaces).isEmpty else { return .missing }
        let parts = authorization.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return .invalid }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        let now = clock.now()
        return grants.withLock { g in
            guard let grant = g.accessTokens[token], grant.expiresAt > now else { return .invalid }
            return .granted(scopes: Set(grant.scopes))
        }
    }

    /// The Cloud project number charged for clients whose ID does not start with one (Google's
    /// client IDs are `PROJECTNUMBER-….apps.googleusercontent.com`), and for the service account.
    public static let projectNumber = "100000000001"

    /// The account behind an access token: the emulator's one user for tokens from its consent and
    /// refresh-token grants, the service account for JWT grants; the project is the client's.
    public func quotaIdentity(authorization: String?) -> QuotaIdentity? {
        guard let token = Self.bearerToken(authorization) else { return nil }
        let now = clock.now()
        guard let grant = grants.withLock({ g in g.accessTokens[token].flatMap { $0.expiresAt > now ? $0 : nil } }) else {
            return nil
        }
        if grant.clientID == Self.serviceAccountClientID {
            return QuotaIdentity(subject: Self.serviceAccountEmail, project: Self.projectNumber)
        }
        let prefix = (grant.clientID ?? "").prefix { $0 != "-" }
        let project = !prefix.isEmpty && prefix.allSatisfy({ $0.isASCII && $0.isNumber }) ? String(prefix) : Self.projectNumber
        return QuotaIdentity(subject: DriveUser().emailAddress, project: project)
    }

    /// The token of `Bearer TOKEN` (any case), or nil.
    static func bearerToken(_ authorization: String?) -> String? {
        guard let authorization, !authorization.trimmingCharacters(in: .whitespaces).isEmpty else { return nil }
        let parts = authorization.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return parts[1].trimmingCharacters(in: .whitespaces)
    }

    // MARK: Control

    /// Revokes one token (a refresh token with its access tokens, an access token with the refresh
    /// token it came from, as Google does), or, with nil, every token and pending code, the
    /// well-known refresh token included. New logins still work afterwards.
    /// Returns whether anything was revoked.
    @discardableResult
    public func revoke(token: String?) -> Bool {
        grants.withLock { g in
            defer { save(g) }
            guard let token else {
                g.refreshTokens = [:]
                g.accessTokens = [:]
                g.codes = [:]
                g.wellKnownRevoked = true
                return true
            }
            if token == config.refreshToken {
                let was = !g.wellKnownRevoked
                g.wellKnownRevoked = true
                g.revokeRefreshToken(token)
                return was
            }
            if g.refreshTokens[token] != nil {
                g.revokeRefreshToken(token)
                return true
            }
            if let access = g.accessTokens[token] {
                g.accessTokens[token] = nil
                if let source = access.source {
                    if source == config.refreshToken { g.wellKnownRevoked = true }
                    g.revokeRefreshToken(source)
                }
                return true
            }
            return false
        }
    }

    /// Writes a service-account key file in Google's JSON format whose key this server trusts
    /// (mode 0600). `tokenURL` becomes its `token_uri` and an accepted assertion audience.
    public func writeServiceAccountKey(to url: URL, tokenURL: String) throws {
        let (key, keyID) = try serviceAccountKey()
        let pem = try key.privateKeyPEM()
        grants.withLock { g in
            if !g.writtenTokenURLs.contains(tokenURL) {
                g.writtenTokenURLs.append(tokenURL)
                save(g)
            }
        }
        var base = tokenURL
        if let r = base.range(of: "://") , let slash = base[r.upperBound...].firstIndex(of: "/") { base = String(base[..<slash]) }
        let email = Self.serviceAccountEmail
        // Google's member order, kept by writing the object by hand.
        let fields: [(String, String)] = [
            ("type", "service_account"),
            ("project_id", Self.projectID),
            ("private_key_id", keyID),
            ("private_key", pem),
            ("client_email", email),
            ("client_id", Self.serviceAccountClientID),
            ("auth_uri", base + "/o/oauth2/auth"),
            ("token_uri", tokenURL),
            ("auth_provider_x509_cert_url", "https://www.googleapis.com/oauth2/v1/certs"),
            ("client_x509_cert_url", "https://www.googleapis.com/robot/v1/metadata/x509/" + email.replacingOccurrences(of: "@", with: "%40")),
            ("universe_domain", "googleapis.com"),
        ]
        let body = fields.map { "  \(Self.jsonString($0.0)): \(Self.jsonString($0.1))" }.joined(separator: ",\n")
        try AtomicFile.write(Array("{\n\(body)\n}\n".utf8), to: url.path, mode: 0o600)
    }

    /// The trusted key and its ID, made on first use (and persisted with the state).
    func serviceAccountKey() throws -> (RSAKey, String) {
        if let existing = signingKey.withLock({ $0 }), let id = grants.withLock({ $0.serviceAccountKeyID }) { return (existing, id) }
        if let pem = grants.withLock({ $0.serviceAccountKeyPEM }), let id = grants.withLock({ $0.serviceAccountKeyID }) {
            let key = try RSAKey(privateKeyPEM: pem)
            signingKey.withLock { $0 = key }
            return (key, id)
        }
        // Generated outside the lock (tens of milliseconds); the first writer wins.
        let fresh = try RSAKey.generate(bits: 2048)
        let freshPEM = try fresh.privateKeyPEM()
        let freshID = Hex.encode(SecureRandom.bytes(20))
        let (pem, id) = grants.withLock { g -> (String, String) in
            if let pem = g.serviceAccountKeyPEM, let id = g.serviceAccountKeyID { return (pem, id) }
            g.serviceAccountKeyPEM = freshPEM
            g.serviceAccountKeyID = freshID
            save(g)
            return (freshPEM, freshID)
        }
        let key = pem == freshPEM ? fresh : try RSAKey(privateKeyPEM: pem)
        signingKey.withLock { $0 = key }
        return (key, id)
    }

    // MARK: Tokens

    static func newAccessToken(serviceAccount: Bool = false) -> String {
        (serviceAccount ? "ya29.c." : "ya29.a0") + SecureRandom.token(length: 160)
    }
    static func newRefreshToken() -> String { "1//0" + SecureRandom.token(length: 100) }
    static func newCode() -> String { "4/0A" + SecureRandom.token(length: 70) }

    /// Records a fresh access token. Call inside `grants.withLock`.
    func mintAccessToken(_ g: inout OAuthGrants, scopes: [String], source: String?, clientID: String?, serviceAccount: Bool = false) -> String {
        let token = Self.newAccessToken(serviceAccount: serviceAccount)
        let now = clock.now()
        if g.accessTokens.count >= g.pruneThreshold {
            g.pruneExpired(now: now)
            g.pruneThreshold = max(1024, 2 * g.accessTokens.count)
        }
        g.accessTokens[token] = OAuthGrants.AccessGrant(scopes: scopes, expiresAt: now + config.tokenLifetime, source: source, clientID: clientID)
        return token
    }

    var expiresIn: Int { max(0, Int(config.tokenLifetime.rounded(.down))) }

    // MARK: Persistence

    /// `oauth.json` holds everything durable (refresh tokens, revocations, the key) and the access
    /// tokens alive when it was written; access tokens minted since are appended, one JSON line
    /// each, to `oauth-access.log`, fdatasynced before the token is answered (a client such as rclone
    /// does not refresh on a 401, so a token lost in a crash would stop it). Every full write
    /// truncates the log. Both are mode 0600.
    static let stateFileName = "oauth.json"
    static let accessLogName = "oauth-access.log"

    private struct AccessLogLine: Codable {
        var token: String
        var grant: OAuthGrants.AccessGrant
    }

    static func load(from directory: URL?) -> OAuthGrants? {
        guard let directory, let data = try? Data(contentsOf: directory.appendingPathComponent(stateFileName)),
              var grants = try? JSONDecoder().decode(OAuthGrants.self, from: data) else { return nil }
        if let log = try? Data(contentsOf: directory.appendingPathComponent(accessLogName)) {
            let decoder = JSONDecoder()
            for line in log.split(separator: UInt8(ascii: "\n")) {
                guard let entry = try? decoder.decode(AccessLogLine.self, from: Data(line)) else { continue }
                // Every revocation rewrites the base file and empties the log, so each line postdates the
                // last revocation: replaying it cannot resurrect a revoked token.
                grants.accessTokens[entry.token] = entry.grant
            }
        }
        return grants
    }

    /// Writes the whole state. Call inside `grants.withLock`. Failures to persist are not the
    /// client's problem: the in-memory state stays authoritative for this process.
    func save(_ g: OAuthGrants) {
        guard let directory = config.stateDirectory else { return }
        var copy = g
        copy.pruneExpired(now: clock.now())
        guard let data = try? JSONEncoder().encode(copy) else { return }
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // The log exists before the base file's write fsyncs the directory, so that its entry is on
        // disk before any line appended to it is answered; it is emptied only once the base holds all.
        let logPath = directory.appendingPathComponent(Self.accessLogName).path
        let log = open(logPath, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        if log >= 0 { close(log) }
        guard (try? AtomicFile.write(data, to: directory.appendingPathComponent(Self.stateFileName).path, mode: 0o600)) != nil else {
            return  // the log still holds what the old base lacks
        }
        _ = truncate(logPath, 0)
    }

    /// Records one freshly minted access token. Call inside `grants.withLock`.
    func appendAccessToken(_ token: String, _ g: OAuthGrants) {
        guard let directory = config.stateDirectory, let grant = g.accessTokens[token] else { return }
        if !FileManager.default.fileExists(atPath: directory.appendingPathComponent(Self.stateFileName).path) {
            // The log only makes sense next to a base file.
            save(g)
            return
        }
        guard var line = try? JSONEncoder().encode(AccessLogLine(token: token, grant: grant)) else { return }
        line.append(UInt8(ascii: "\n"))
        try? AtomicFile.append(Array(line), to: directory.appendingPathComponent(Self.accessLogName).path, mode: 0o600, durable: true)
    }

    static func jsonString(_ s: String) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: [s], options: [.withoutEscapingSlashes])) ?? Data("[\"\"]".utf8)
        let text = String(decoding: data, as: UTF8.self)
        return String(text.dropFirst().dropLast())
    }
}
