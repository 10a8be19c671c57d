import Foundation
import DriveSupport

public enum EmulatorLogLevel: String, Sendable, CaseIterable {
    case info
    /// Adds one line per request to stderr.
    case debug
}

/// Everything that shapes one emulator instance; the `drivefs-emulator` flags map onto it 1:1.
public struct EmulatorConfig: Sendable {
    public var host: String
    /// 0 picks a free port (the default, for in-process use).
    public var port: Int
    /// Base of absolute URLs handed out (resumable `Location`), for use behind a TLS terminator.
    public var publicURL: String?
    /// Where Drive metadata and content persist; nil = a temporary directory.
    public var stateDirectory: URL?
    /// A local tree imported at start.
    public var seedDirectory: URL?
    /// Added to every counted request before it is answered.
    public var latencyMs: Int
    /// Per-connection pacing of request and response bytes; nil = unlimited.
    public var bandwidthBytesPerSecond: Int?
    /// Pacing of the bytes of all connections together, one budget they share fairly; nil = unlimited.
    public var totalBandwidthBytesPerSecond: Int? = nil
    /// Google's per-user rate limit: past it, requests get 403 `userRateLimitExceeded`; nil = off.
    /// Its time is `clock`'s.
    public var userRateLimit: UserRateLimit? = nil
    /// Google's 2026 limits (quota units, writes, daily uploads, items per folder and shared drive);
    /// `.none` (the default) limits nothing. Its time is `clock`'s; the quirk's draws are seeded by
    /// `listingQuirks.seed`.
    public var driveLimits = DriveLimits.none
    /// Access token lifetime, seconds.
    public var tokenLifetime: Int
    /// The refresh token that is always valid, for any client, until revoked.
    public var refreshToken: String
    /// A fault document (JSON, see docs/emulator.md) loaded at start.
    public var faultsFile: URL?
    public var logLevel: EmulatorLogLevel
    /// Where to write a service-account JSON key the emulator trusts, once it listens.
    public var writeServiceAccount: URL?
    /// Time for token expiry and Drive timestamps; tests pass a `ManualTimeSource`.
    public var clock: any TimeSource
    public var maxConnections: Int
    public var idleTimeout: Double
    public var readTimeout: Double
    /// Google's files.list limits (the parent-term budget of a `q`).
    public var listingLimits = ListingLimits()
    /// Google's listing bugs to reproduce from the start (off by default); switchable at run time
    /// through `/__emulator/quirks`.
    public var listingQuirks = ListingQuirks.Settings()

    public init(host: String = "127.0.0.1", port: Int = 0, publicURL: String? = nil, stateDirectory: URL? = nil,
                seedDirectory: URL? = nil, latencyMs: Int = 0, bandwidthBytesPerSecond: Int? = nil,
                tokenLifetime: Int = 3600, refreshToken: String = "drivefs-emulator-refresh-token",
                faultsFile: URL? = nil, logLevel: EmulatorLogLevel = .info, writeServiceAccount: URL? = nil,
                clock: any TimeSource = SystemTimeSource(), maxConnections: Int = 256, idleTimeout: Double = 60,
                readTimeout: Double = 30) {
        self.host = host
        self.port = port
        self.publicURL = publicURL
        self.stateDirectory = stateDirectory
        self.seedDirectory = seedDirectory
        self.latencyMs = latencyMs
        self.bandwidthBytesPerSecond = bandwidthBytesPerSecond
        self.tokenLifetime = tokenLifetime
        self.refreshToken = refreshToken
        self.faultsFile = faultsFile
        self.logLevel = logLevel
        self.writeServiceAccount = writeServiceAccount
        self.clock = clock
        self.maxConnections = maxConnections
        self.idleTimeout = idleTimeout
        self.readTimeout = readTimeout
    }
}

/// The parts the emulator serves besides its control API, behind small seams so that tests can
/// assemble an emulator from fake route providers.
public struct EmulatorServices: Sendable {
    /// Asked in order; the first route wins.
    public var providers: [any RouteProvider]
    /// `POST /__emulator/revoke`: revoke one token, or everything for nil.
    public var revoke: @Sendable (String?) -> Void
    /// Writes a trusted service-account key (`--write-service-account`), given the token URL.
    public var writeServiceAccountKey: (@Sendable (URL, String) throws -> Void)?
    /// Called once by `Emulator.stop()`, after the server stopped.
    public var close: @Sendable () -> Void
    /// The listing quirks that `/__emulator/quirks` switches (the Drive service's own object);
    /// nil: the control API keeps a detached one.
    public var quirks: ListingQuirks?
    /// What the drives hold (`GET /__emulator/usage`); nil: that path answers 404.
    public var usage: (@Sendable () -> DriveUsage)?
    /// More control endpoints (the Drive service's sharing ones): given the path after
    /// `/__emulator/`, an answer, or nil when the path is not theirs.
    public var control: (@Sendable (String, HTTPRequest) -> HTTPResponse?)?

    public init(providers: [any RouteProvider], revoke: @escaping @Sendable (String?) -> Void = { _ in },
                writeServiceAccountKey: (@Sendable (URL, String) throws -> Void)? = nil,
                close: @escaping @Sendable () -> Void = {}, quirks: ListingQuirks? = nil,
                usage: (@Sendable () -> DriveUsage)? = nil, control: (@Sendable (String, HTTPRequest) -> HTTPResponse?)? = nil) {
        self.providers = providers
        self.control = control
        self.quirks = quirks
        self.usage = usage
        self.revoke = revoke
        self.writeServiceAccountKey = writeServiceAccountKey
        self.close = close
    }
}
