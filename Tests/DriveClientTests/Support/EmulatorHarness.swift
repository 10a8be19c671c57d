import DriveClient
import DriveEmulator
import DriveSupport
import Foundation
import XCTest

/// An in-process emulator and a DriveAPI stack talking to it over real HTTP (libcurl), with the
/// well-known refresh token through `RefreshTokenGrant`, a fast real-time backoff (base 0.01 s)
/// and a generous pacer.
final class EmulatorHarness {
    let emulator: Emulator
    let transport: CurlTransport
    let tokens: TokenManager
    let executor: DriveRequestExecutor
    let api: DriveAPI
    let endpoints: DriveEndpoints
    let temp: URL

    static let refreshToken = "drivefs-emulator-refresh-token"

    init(config: EmulatorConfig = EmulatorConfig(port: 0), extraProviders: [any RouteProvider] = [],
         retry: RetryPolicy = RetryPolicy(maxAttempts: 8, maxElapsed: 30, baseDelay: 0.01, maxDelay: 0.2),
         chunkSize: Int64 = 8 * 1024 * 1024, stallTimeout: Int = 10) throws {
        var services = try EmulatorServices.standard(config: config)
        if !services.providers.contains(where: { $0 is DriveService }),
           let oauth = services.providers.first(where: { $0 is OAuthService }) as? OAuthService {
            // Until the standard services wire Drive in, assemble it here behind the same OAuth server.
            let drive = try DriveService(stateDirectory: config.stateDirectory, seedDirectory: config.seedDirectory,
                                         validator: oauth, clock: config.clock)
            services.providers.append(drive)
            let closeOthers = services.close
            services.close = { drive.close(); closeOthers() }
        }
        services.providers += extraProviders
        emulator = try Emulator(config: config, services: services)
        try emulator.start()
        endpoints = DriveEndpoints.singleHost(emulator.baseURL)
        transport = try CurlTransport(options: CurlTransport.Options(connectTimeout: 5, stallTimeout: stallTimeout))
        tokens = TokenManager(grant: Self.grant(tokenURL: endpoints.tokenURL, transport: transport))
        executor = DriveRequestExecutor(transport: transport, tokens: tokens, pacer: Pacer(ratePerSecond: 1000, burst: 1000),
                                        retryPolicy: retry)
        api = DriveAPI(executor: executor, endpoints: endpoints, chunkSize: chunkSize)
        temp = FileManager.default.temporaryDirectory.appendingPathComponent("drivefs-client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: temp, withIntermediateDirectories: true)
    }

    static func grant(tokenURL: String, transport: any HTTPTransport) -> RefreshTokenGrant {
        RefreshTokenGrant(tokenURL: tokenURL, clientID: "drivefs-tests", clientSecret: "not-secret",
                          refreshToken: refreshToken, transport: transport)
    }

    /// A second, independent client (its own transport, tokens, executor) on the same emulator.
    func secondAPI(chunkSize: Int64 = 8 * 1024 * 1024) throws -> DriveAPI {
        let transport = try CurlTransport()
        let executor = DriveRequestExecutor(transport: transport,
                                            tokens: TokenManager(grant: Self.grant(tokenURL: endpoints.tokenURL, transport: transport)),
                                            pacer: nil, retryPolicy: self.executor.retryPolicy)
        return DriveAPI(executor: executor, endpoints: endpoints, chunkSize: chunkSize)
    }

    func requests(_ method: String) -> Int { emulator.stats().methods[method]?.requests ?? 0 }

    /// A file of `size` deterministic bytes in the temp directory: 1 MiB blocks of a fixed pattern,
    /// each stamped with its index (fast to make in a debug build).
    func makeFile(_ name: String, size: Int) throws -> (path: String, md5: String) {
        let path = temp.appendingPathComponent(name).path
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        var block = TransportTestRoutes.bytes(0..<Int64(1 << 20))
        var digest = Digest(.md5)
        var written = 0
        var index: UInt32 = 0
        while written < size {
            withUnsafeBytes(of: index.bigEndian) { stamp in block.replaceSubrange(0..<4, with: stamp) }
            let n = min(block.count, size - written)
            let chunk = n == block.count ? block : Array(block[0..<n])
            digest.update(chunk)
            handle.write(Data(chunk))
            written += n
            index += 1
        }
        return (path, digest.hexDigest())
    }

    func stop() {
        emulator.stop()
        try? FileManager.default.removeItem(at: temp)
    }
}
