import DriveClient
import DriveEmulator
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// One mount test's world: its own temporary directory, a seed tree written into it, an in-process
/// emulator serving that tree on a free port, a signed-in drivefs profile in a private XDG tree
/// (`XDG_CONFIG_HOME`, `XDG_CACHE_HOME`, `XDG_STATE_HOME` under the temp directory, holding the
/// emulator's well-known refresh token), and `drivefs mount` against it through `MountedDriveFS`.
///
/// `stop()` tears down every mount made through `mount`, then the emulator, then the directory
/// (never recursively under a mount that is still live).
final class EmulatedDrive {
    let temp: URL
    let seed: URL
    /// Replaced by `restartEmulator()` (same port, same state directory).
    private(set) var emulator: Emulator
    private let emulatorConfig: EmulatorConfig
    /// The child's environment: this process's, without `DRIVEFS_*` settings, plus the XDG tree.
    let environment: [String: String]
    private var mounts: [MountedDriveFS] = []
    private var otherClient: DriveAPI?

    static let refreshToken = "drivefs-emulator-refresh-token"
    /// The emulator's user, as `drivefs auth login` remembers it (from about.get).
    static let account = "user@drivefs-emulator.test"
    /// What drivefs says once the mount is live ("My Drive mounted at", "shared drive 'X' mounted at").
    static let readyLine = " mounted at "

    /// - Parameter writeSeed: fills the seed directory (given) before the emulator imports it.
    init(configure: (inout EmulatorConfig) -> Void = { _ in }, writeSeed: (URL) throws -> Void) throws {
        temp = FileManager.default.temporaryDirectory.appendingPathComponent("drivefs-mounttest-\(UUID().uuidString)")
        seed = temp.appendingPathComponent("seed")
        try FileManager.default.createDirectory(at: seed, withIntermediateDirectories: true)
        try writeSeed(seed)
        var config = EmulatorConfig(port: 0, stateDirectory: temp.appendingPathComponent("emulator-state"), seedDirectory: seed)
        configure(&config)
        emulator = try Emulator(config: config)
        try emulator.start()
        config.port = emulator.port
        emulatorConfig = config

        var env = ProcessInfo.processInfo.environment
        for key in env.keys where key.hasPrefix("DRIVEFS_") && key != "DRIVEFS_BIN" { env[key] = nil }
        env["XDG_CONFIG_HOME"] = temp.appendingPathComponent("config").path
        env["XDG_CACHE_HOME"] = temp.appendingPathComponent("cache").path
        env["XDG_STATE_HOME"] = temp.appendingPathComponent("state").path
        // Where the mount publishes its status (drivefs status): never the machine's /run/drivefs.
        env["DRIVEFS_RUNTIME_DIR"] = temp.appendingPathComponent("runtime").path
        environment = env

        // What `drivefs auth login --api-url … --token-url …` would have left behind.
        let store = CredentialStore(directories: DrivefsDirectories.fromEnvironment(env))
        try store.updateProfile("default", with: ProfileConfig(clientID: "drivefs-mount-tests", clientSecret: "not-secret",
                                                               apiURL: baseURL + "/", tokenURL: tokenURL))
        try store.saveCredential(StoredCredential(kind: .oauth, refreshToken: Self.refreshToken, clientID: "drivefs-mount-tests",
                                                  clientSecret: "not-secret", scopes: ["https://www.googleapis.com/auth/drive"],
                                                  account: Self.account, tokenURL: tokenURL),
                                 profile: "default")
    }

    /// Starts the emulator over the demo's seed tree (scripts/demo-seed), copied.
    static func demo() throws -> EmulatedDrive {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/demo-seed")
        return try EmulatedDrive { seed in
            for name in try FileManager.default.contentsOfDirectory(atPath: source.path) {
                try FileManager.default.copyItem(at: source.appendingPathComponent(name), to: seed.appendingPathComponent(name))
            }
        }
    }

    var baseURL: String { emulator.baseURL.hasSuffix("/") ? String(emulator.baseURL.dropLast()) : emulator.baseURL }
    var tokenURL: String { baseURL + "/token" }
    /// The default cache directory of the profile (index and blocks).
    var cacheDirectory: String { temp.appendingPathComponent("cache/drivefs/default").path }
    /// `$DRIVEFS_RUNTIME_DIR` of this world's mounts.
    var runtimeDirectory: String { temp.appendingPathComponent("runtime").path }

    /// `drivefs mount MOUNTPOINT -f --poll-interval …` with this world's environment; returns once
    /// drivefs said the mount is live.
    ///
    /// drivefs paces writes to Google's write limit (2.5 a second) by default. An emulator that
    /// limits no writes (the default here) gets a mount paced to match it, 100 writes a second
    /// after a burst of 200, unless the test sets a write rate: tests of what a copy of 1,000 files
    /// sends or lands would otherwise wait 400 s on a limit the emulator does not have. The pacing
    /// itself is tested against the emulator's Google limits (PacerEmulatorTests).
    func mount(pollInterval: String = "1s", extraArguments: [String] = [], mountpoint: String? = nil,
               workingDirectory: String? = nil, extraEnvironment: [String: String] = [:]) throws -> MountedDriveFS {
        var pacing: [String] = []
        if emulatorConfig.driveLimits.writesPerSecond == nil, !extraArguments.contains(where: { $0.hasPrefix("--write-rate") }) {
            pacing = ["--write-rate", "100", "--write-burst", "200"]
        }
        let mount = try MountedDriveFS.start(command: ["mount"], extraArguments: ["--poll-interval", pollInterval] + pacing + extraArguments,
                                             environment: environment.merging(extraEnvironment) { $1 }, mountpoint: mountpoint, readyLine: Self.readyLine,
                                             workingDirectory: workingDirectory)
        mounts.append(mount)
        return mount
    }

    /// files.create of a shortcut through the other client (DriveAPI has no call for it: drivefs
    /// only reads them).
    @discardableResult
    func createShortcut(name: String, parent: String, target: String) throws -> String {
        let body: [String: Any] = ["name": name, "parents": [parent], "mimeType": "application/vnd.google-apps.shortcut",
                                   "shortcutDetails": ["targetId": target]]
        let request = TransportRequest(method: "POST", url: baseURL + "/drive/v3/files",
                                       headers: [("Content-Type", "application/json")],
                                       body: .bytes([UInt8](try JSONSerialization.data(withJSONObject: body))))
        let response = try api().executor.execute("files.create", request)
        XCTAssertEqual(response.status, 200, String(decoding: response.body, as: UTF8.self))
        let created = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        return created?["id"] as? String ?? ""
    }

    /// A second Drive client ("another client" changing files behind the mount's back).
    func api() throws -> DriveAPI {
        if let otherClient { return otherClient }
        let transport = try CurlTransport()
        let grant = RefreshTokenGrant(tokenURL: tokenURL, clientID: "other-client", clientSecret: "not-secret",
                                      refreshToken: Self.refreshToken, transport: transport)
        let executor = DriveRequestExecutor(transport: transport, tokens: TokenManager(grant: grant), pacer: nil,
                                            retryPolicy: RetryPolicy(maxAttempts: 4, maxElapsed: 20, baseDelay: 0.01, maxDelay: 0.2))
        let api = DriveAPI(executor: executor, endpoints: DriveEndpoints.singleHost(emulator.baseURL))
        otherClient = api
        return api
    }

    /// The Drive file at a path below My Drive's root, through the other client.
    func file(at path: String) throws -> DriveFile {
        var current = try api().getFile("root")
        for name in path.split(separator: "/") {
            guard let child = try api().listChildren(of: current.id).first(where: { $0.name == String(name) }) else {
                throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: path])
            }
            current = child
        }
        return current
    }

    // MARK: Request counts

    /// Every counted request but the token endpoint's: what the budgets are about.
    func apiRequests() -> Int {
        let stats = emulator.stats()
        return stats.totals.requests - (stats.methods["token"]?.requests ?? 0)
    }

    func requests(_ method: String) -> Int { emulator.stats().methods[method]?.requests ?? 0 }

    /// Per-method counts, for failure messages: `files.list=12 changes.list=1 …`.
    func statsSummary() -> String {
        let stats = emulator.stats()
        return stats.methods.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.requests) (\($0.value.bytesOut) B out)" }
            .joined(separator: ", ")
    }

    /// Bytes served by the media routes (downloads).
    func mediaBytes() -> Int64 {
        let stats = emulator.stats()
        return ["files.get.media", "revisions.get.media"].reduce(0) { $0 + (stats.methods[$1]?.bytesOut ?? 0) }
    }

    /// Waits (bounded) until the mount has read the change feed at least `count` times in total.
    func waitForPolls(_ count: Int, timeout: TimeInterval = 20) -> Bool {
        poll(timeout: timeout) { self.requests("changes.list") >= count }
    }

    /// Waits (bounded) until no request has arrived for `quiet` seconds: background work the mount
    /// started (prefetching below a listed folder) is over, so what follows is counted alone.
    @discardableResult
    func settle(quiet: TimeInterval = 0.5, timeout: TimeInterval = 15) -> Bool {
        var last = emulator.stats().totals.requests
        var since = Date()
        return poll(timeout: timeout) {
            let now = emulator.stats().totals.requests
            if now != last { last = now; since = Date() }
            return Date().timeIntervalSince(since) >= quiet
        }
    }

    /// Stops the emulator and starts a new one on the same port over the same state directory (what
    /// a server restart looks like to a client: its connections are cut, then the same Drive answers
    /// again). `configure` may change what the new instance does (latency, bandwidth), not where it
    /// listens or what it stores. The new instance's stats start at zero.
    func restartEmulator(configure: (inout EmulatorConfig) -> Void = { _ in }) throws {
        emulator.stop()
        var config = emulatorConfig
        configure(&config)
        config.port = emulatorConfig.port
        config.stateDirectory = emulatorConfig.stateDirectory
        emulator = try Emulator(config: config)
        try emulator.start()
    }

    /// Stops the emulator (its port answers nothing: Drive unreachable) until `startEmulatorAgain`
    /// starts a new one on the same port over the same state.
    func stopEmulator() { emulator.stop() }

    func startEmulatorAgain() throws {
        var config = emulatorConfig
        config.port = emulatorConfig.port
        emulator = try Emulator(config: config)
        try emulator.start()
    }

    func stop() {
        for mount in mounts.reversed() { mount.tearDown() }
        emulator.stop()
        if !mounts.contains(where: { $0.isMounted }) { try? FileManager.default.removeItem(at: temp) }
    }
}

/// Deterministic file content: SplitMix64 words from `seed`, fast enough for hundreds of MiB.
enum TestContent {
    static func bytes(count: Int, seed: UInt64) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var state = seed &+ 0x9E37_79B9_7F4A_7C15
        out.withUnsafeMutableBytes { raw in
            var i = 0
            while i < count {
                state = state &+ 0x9E37_79B9_7F4A_7C15
                var z = state
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                z = z ^ (z >> 31)
                withUnsafeBytes(of: z.littleEndian) { word in
                    let n = min(8, count - i)
                    for k in 0..<n { raw[i + k] = word[k] }
                }
                i += 8
            }
        }
        return out
    }

    /// Writes `size` bytes to `url`, never holding the whole file: one 4 MiB block of SplitMix64
    /// words from `seed`, repeated, with every 4 KiB window's first 8 bytes replaced by its offset
    /// (big-endian), so no two windows of the file are equal and a read from a wrong offset shows.
    static func writeFile(_ url: URL, size: Int, seed: UInt64) throws {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        let pieceSize = 4 << 20
        var piece = bytes(count: min(pieceSize, size), seed: seed)
        var written = 0
        while written < size {
            let n = min(piece.count, size - written)
            var window = 0
            while window + 8 <= n {
                withUnsafeBytes(of: UInt64(written + window).bigEndian) { stamp in
                    piece.replaceSubrange(window..<(window + 8), with: stamp)
                }
                window += 4096
            }
            try handle.write(contentsOf: n == piece.count ? piece : Array(piece[0..<n]))
            written += n
        }
    }
}

extension ExternalCommand {
    /// `runTool` that fails the test when the tool is missing or times out, and returns its result.
    static func tool(_ name: String, _ arguments: [String], timeout: TimeInterval = 30,
                     file: StaticString = #filePath, line: UInt = #line) throws -> Result {
        let result = try runTool(name, arguments, timeout: timeout)
        XCTAssertFalse(result.timedOut, "\(name) \(arguments) timed out after \(Int(timeout)) s", file: file, line: line)
        return result
    }

    /// `/bin/sh -c SCRIPT` (for pipelines), bounded.
    static func shell(_ script: String, timeout: TimeInterval = 30, file: StaticString = #filePath, line: UInt = #line) throws -> Result {
        let result = try run("/bin/sh", ["-c", script], timeout: timeout)
        XCTAssertFalse(result.timedOut, "sh -c '\(script)' timed out after \(Int(timeout)) s", file: file, line: line)
        return result
    }
}
