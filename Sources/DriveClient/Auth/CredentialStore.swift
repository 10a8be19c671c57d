import DriveSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where drivefs keeps its files: `$XDG_CONFIG_HOME/drivefs/` (default `~/.config/drivefs/`) for
/// `config.json` and `tokens/<profile>.json`; `$XDG_CACHE_HOME/drivefs/` (default `~/.cache/drivefs/`)
/// for caches.
public struct DrivefsDirectories: Sendable, Equatable {
    public var config: URL
    public var cache: URL

    public init(config: URL, cache: URL) {
        self.config = config
        self.cache = cache
    }

    public static func fromEnvironment(_ env: [String: String] = ProcessInfo.processInfo.environment) -> DrivefsDirectories {
        let home = env["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        func base(_ variable: String, _ fallback: String) -> URL {
            // XDG: a relative path is invalid and must be ignored.
            if let v = env[variable], v.hasPrefix("/") { return URL(fileURLWithPath: v) }
            return URL(fileURLWithPath: home).appendingPathComponent(fallback)
        }
        return DrivefsDirectories(config: base("XDG_CONFIG_HOME", ".config").appendingPathComponent("drivefs"),
                                  cache: base("XDG_CACHE_HOME", ".cache").appendingPathComponent("drivefs"))
    }
}

/// One profile's settings in `config.json`: the OAuth client and the endpoints.
public struct ProfileConfig: Codable, Sendable, Equatable {
    public var clientID: String?
    public var clientSecret: String?
    public var apiURL: String?
    public var tokenURL: String?
    public var authURL: String?
    public var revokeURL: String?
    /// A PEM file of CA certificates to trust instead of the system store (`--ca-file` at login).
    public var caFile: String?

    enum CodingKeys: String, CodingKey {
        case clientID = "client_id", clientSecret = "client_secret", apiURL = "api_url", tokenURL = "token_url"
        case authURL = "auth_url", revokeURL = "revoke_url", caFile = "ca_file"
    }

    public init(clientID: String? = nil, clientSecret: String? = nil, apiURL: String? = nil, tokenURL: String? = nil,
                authURL: String? = nil, revokeURL: String? = nil, caFile: String? = nil) {
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.apiURL = apiURL
        self.tokenURL = tokenURL
        self.authURL = authURL
        self.revokeURL = revokeURL
        self.caFile = caFile
    }
}

/// `config.json`: `{"profiles": {"default": {...}, "work": {...}}}`.
public struct DrivefsConfig: Codable, Sendable, Equatable {
    public var profiles: [String: ProfileConfig]
    public init(profiles: [String: ProfileConfig] = [:]) { self.profiles = profiles }
}

/// What `drivefs auth login` leaves in `tokens/<profile>.json` (mode 0600).
public struct StoredCredential: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable { case oauth, serviceAccount = "service_account" }

    public var kind: Kind
    /// OAuth: the refresh token, and the client it is bound to.
    public var refreshToken: String?
    public var clientID: String?
    public var clientSecret: String?
    /// Service account: the key file, and the user to impersonate.
    public var serviceAccountKeyPath: String?
    public var impersonate: String?
    public var scopes: [String]
    /// The account, when known (the service account's email, or the impersonated user).
    public var account: String?
    /// The token endpoint used at login.
    public var tokenURL: String?
    /// RFC 3339.
    public var created: String?

    enum CodingKeys: String, CodingKey {
        case kind, refreshToken = "refresh_token", clientID = "client_id", clientSecret = "client_secret"
        case serviceAccountKeyPath = "service_account_key", impersonate, scopes, account, tokenURL = "token_url", created
    }

    public init(kind: Kind, refreshToken: String? = nil, clientID: String? = nil, clientSecret: String? = nil,
                serviceAccountKeyPath: String? = nil, impersonate: String? = nil, scopes: [String], account: String? = nil,
                tokenURL: String? = nil, created: String? = nil) {
        self.kind = kind
        self.refreshToken = refreshToken
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.serviceAccountKeyPath = serviceAccountKeyPath
        self.impersonate = impersonate
        self.scopes = scopes
        self.account = account
        self.tokenURL = tokenURL
        self.created = created
    }
}

/// Reads and writes drivefs's configuration and credentials. Files are written atomically with
/// mode 0600 in directories with mode 0700; a credential file that group or others can read is
/// refused (`OAuthError.insecureCredentialFile`, whose message says `chmod 600 <path>`).
public struct CredentialStore: Sendable {
    public let directories: DrivefsDirectories

    public init(directories: DrivefsDirectories = .fromEnvironment()) { self.directories = directories }

    public var configFile: URL { directories.config.appendingPathComponent("config.json") }
    public var tokensDirectory: URL { directories.config.appendingPathComponent("tokens") }

    public func tokenFile(profile: String) throws -> URL {
        try Self.validate(profile: profile)
        return tokensDirectory.appendingPathComponent("\(profile).json")
    }

    /// Profile names become file names: `[A-Za-z0-9._-]`, 1 to 64 characters, not starting with a dot.
    public static func validate(profile: String) throws {
        let ok = !profile.isEmpty && profile.utf8.count <= 64 && !profile.hasPrefix(".")
            && profile.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "._-".unicodeScalars.contains($0)) }
        guard ok else { throw OAuthError.configuration("invalid profile name '\(profile)': use letters, digits, '.', '_' and '-'") }
    }

    // MARK: config.json

    public func loadConfig() throws -> DrivefsConfig {
        guard let data = FileManager.default.contents(atPath: configFile.path) else { return DrivefsConfig() }
        do {
            return try JSONDecoder().decode(DrivefsConfig.self, from: data)
        } catch {
            throw OAuthError.configuration("\(configFile.path) is not valid drivefs configuration JSON; fix or remove it")
        }
    }

    public func profile(_ name: String) throws -> ProfileConfig? {
        try Self.validate(profile: name)
        return try loadConfig().profiles[name]
    }

    /// Merges the non-nil fields of `update` into the profile.
    public func updateProfile(_ name: String, with update: ProfileConfig) throws {
        try Self.validate(profile: name)
        var config = try loadConfig()
        var p = config.profiles[name] ?? ProfileConfig()
        if let v = update.clientID { p.clientID = v }
        if let v = update.clientSecret { p.clientSecret = v }
        if let v = update.apiURL { p.apiURL = v }
        if let v = update.tokenURL { p.tokenURL = v }
        if let v = update.authURL { p.authURL = v }
        if let v = update.revokeURL { p.revokeURL = v }
        if let v = update.caFile { p.caFile = v }
        config.profiles[name] = p
        try CredentialFileWriter.ensureDirectory(directories.config)
        try CredentialFileWriter.write(Array(try Self.encoder.encode(config)), to: configFile)
    }

    // MARK: tokens/<profile>.json

    /// The profile's credential, or nil when there is none. Throws when the file is readable by
    /// group or others, or is not valid.
    public func loadCredential(profile: String) throws -> StoredCredential? {
        let url = try tokenFile(profile: profile)
        var st = stat()
        guard stat(url.path, &st) == 0 else {
            if errno == ENOENT { return nil }
            throw OAuthError.configuration("cannot read \(url.path): \(String(cString: strerror(errno)))")
        }
        try Self.requirePrivate(url.path, st)
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw OAuthError.configuration("cannot read \(url.path)")
        }
        do {
            return try JSONDecoder().decode(StoredCredential.self, from: data)
        } catch {
            throw OAuthError.configuration("\(url.path) is not a valid drivefs token file. Run `drivefs auth login` again.")
        }
    }

    public func saveCredential(_ credential: StoredCredential, profile: String) throws {
        let url = try tokenFile(profile: profile)
        try CredentialFileWriter.ensureDirectory(directories.config)
        try CredentialFileWriter.ensureDirectory(tokensDirectory)
        try CredentialFileWriter.write(Array(try Self.encoder.encode(credential)), to: url)
    }

    /// Removes the profile's credential; false when there was none.
    @discardableResult
    public func deleteCredential(profile: String) throws -> Bool {
        let url = try tokenFile(profile: profile)
        if unlink(url.path) == 0 { return true }
        if errno == ENOENT { return false }
        throw OAuthError.configuration("cannot remove \(url.path): \(String(cString: strerror(errno)))")
    }

    /// Refuses files that group or others may read or write (they hold secrets).
    static func requirePrivate(_ path: String, _ st: stat) throws {
        if st.st_mode & 0o077 != 0 { throw OAuthError.insecureCredentialFile(path: path) }
    }

    /// The same check for a file named by the user (a service-account key).
    public static func requirePrivateFile(_ path: String) throws {
        var st = stat()
        guard stat(path, &st) == 0 else {
            throw OAuthError.invalidServiceAccountKey("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        try requirePrivate(path, st)
    }

    static var encoder: JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return e
    }
}
