import Foundation
import DriveSupport

/// The Drive v3 + OAuth 2.0 emulator: an HTTP server, the control API, faults and stats,
/// around the OAuth and Drive services. Usable in-process:
///
///     let emu = try Emulator(config: .init(port: 0)); try emu.start(); defer { emu.stop() }
///     // emu.baseURL == "http://127.0.0.1:PORT"
public final class Emulator: Sendable {
    public let config: EmulatorConfig
    private let services: EmulatorServices
    private let counters: EmulatorStats
    private let faults = FaultPlan()
    private let server: HTTPServer
    private let log: EmulatorLog
    private let stopped = Locked(false)
    private let quirks: ListingQuirks

    /// The emulator with its standard services (OAuth, Drive) built from `config`.
    public convenience init(config: EmulatorConfig) throws {
        try self.init(config: config, services: try EmulatorServices.standard(config: config))
    }

    /// An emulator serving the given services (tests assemble fakes this way). Loads
    /// `config.faultsFile`; throws when it is unreadable or malformed.
    public init(config: EmulatorConfig, services: EmulatorServices) throws {
        self.config = config
        self.services = services
        self.log = EmulatorLog(level: config.logLevel)
        if let file = config.faultsFile {
            let data: Data
            do { data = try Data(contentsOf: file) } catch {
                throw EmulatorError.faultsFile(path: file.path, message: "cannot read it (\(error.localizedDescription))")
            }
            do {
                let (rules, seed) = try FaultRule.parseDocument(data)
                faults.add(rules, seed: seed)
            } catch let error as FaultRule.FormatError {
                throw EmulatorError.faultsFile(path: file.path, message: error.description)
            }
        }
        var http = HTTPServerConfig(host: config.host, port: config.port)
        http.publicURL = config.publicURL
        http.bandwidthBytesPerSecond = config.bandwidthBytesPerSecond
        http.totalBandwidthBytesPerSecond = config.totalBandwidthBytesPerSecond
        http.maxConnections = config.maxConnections
        http.idleTimeout = config.idleTimeout
        http.readTimeout = config.readTimeout
        quirks = services.quirks ?? ListingQuirks(config.listingQuirks)
        let driveLimiter = config.driveLimits.metersRequests
            ? DriveLimiter(config.driveLimits, seed: config.listingQuirks.seed) : nil
        counters = EmulatorStats(limiter: driveLimiter, clock: config.clock)
        let control = ControlAPI(stats: counters, faults: faults, quirks: quirks, revoke: services.revoke, usage: services.usage,
                                 extra: services.control)
        let dispatcher = RequestDispatcher(control: control, providers: services.providers, stats: counters, faults: faults,
                                           latencyMs: max(0, config.latencyMs), log: log,
                                           rateLimiter: config.userRateLimit.map(UserRateLimiter.init),
                                           driveLimiter: driveLimiter, clock: config.clock)
        self.server = HTTPServer(config: http, responder: dispatcher)
    }

    /// Starts listening; afterwards `port` and `baseURL` are valid. Writes the service-account
    /// key when configured.
    public func start() throws {
        try server.start()
        if let path = config.writeServiceAccount, let write = services.writeServiceAccountKey {
            do {
                let base = config.publicURL.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 } ?? baseURL
                try write(path, base + "/token")
            } catch {
                stop()
                throw error
            }
        }
    }

    /// Stops accepting, closes connections, waits for their threads, then closes the services.
    /// Idempotent.
    public func stop() {
        let first = stopped.withLock { s -> Bool in
            defer { s = true }
            return !s
        }
        guard first else { return }
        server.stop()
        services.close()
    }

    /// An emulator dropped without `stop()` still ends its threads and services.
    deinit { stop() }

    public var port: Int { server.port }

    /// `http://HOST:PORT` as bound (no trailing slash; IPv6 hosts in brackets).
    public var baseURL: String { server.listenURL }

    // MARK: - In-process control (the same as the control API)

    public func stats() -> EmulatorStatsSnapshot { counters.snapshot() }
    public func resetStats() { counters.reset() }
    public func addFaults(_ rules: [FaultRule], seed: UInt64? = nil) { faults.add(rules, seed: seed) }
    public func clearFaults() { faults.clear() }
    public func revoke(token: String?) { services.revoke(token) }
    /// What the drives hold (as `GET /__emulator/usage`); nil for services without a drive.
    public func usage() -> DriveUsage? { services.usage?() }
    /// The listing quirks now in force (as `GET /__emulator/quirks`).
    public var listingQuirks: ListingQuirks.Settings { quirks.settings }
    /// Switches the listing quirks (as `POST /__emulator/quirks`); restarts their generator.
    public func setListingQuirks(_ settings: ListingQuirks.Settings) { quirks.set(settings) }
}

public enum EmulatorError: Error, CustomStringConvertible {
    case faultsFile(path: String, message: String)

    public var description: String {
        switch self {
        case .faultsFile(let path, let message): return "faults file \(path): \(message)"
        }
    }
}
