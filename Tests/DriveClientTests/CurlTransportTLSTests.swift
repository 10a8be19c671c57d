import DriveClient
import Foundation
import XCTest

/// TLS is always verified: a self-signed server is refused, and trusted once its certificate is
/// given as `caFile`. The server is `openssl s_server -www` on loopback (skipped without openssl).
final class CurlTransportTLSTests: XCTestCase {
    var server: Process?
    var dir: URL!
    var port = 0

    override func setUpWithError() throws {
        guard let openssl = ["/usr/bin/openssl", "/usr/local/bin/openssl"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw XCTSkip("openssl is not installed")
        }
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let key = dir.appendingPathComponent("key.pem").path
        let cert = dir.appendingPathComponent("cert.pem").path
        try Self.run(openssl, ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
                               "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"])
        port = try Self.freePort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = ["s_server", "-quiet", "-www", "-accept", "127.0.0.1:\(port)", "-key", key, "-cert", cert]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        server = process
        try Self.waitUntilListening(port: port, timeout: 10)
    }

    override func tearDown() {
        if let server, server.isRunning { server.terminate(); server.waitUntilExit() }
        if let dir { try? FileManager.default.removeItem(at: dir) }
    }

    func testSelfSignedServerIsRefused() throws {
        let transport = try CurlTransport(options: CurlTransport.Options(connectTimeout: 5, stallTimeout: 5))
        XCTAssertThrowsError(try transport.perform(TransportRequest(method: "GET", url: "https://127.0.0.1:\(port)/"))) { error in
            guard case .tls = error as? TransportError else { return XCTFail("\(error)") }
        }
    }

    func testCAFileMakesItTrusted() throws {
        let transport = try CurlTransport(options: CurlTransport.Options(connectTimeout: 5, stallTimeout: 5,
                                                                         caFile: dir.appendingPathComponent("cert.pem").path))
        let response = try transport.perform(TransportRequest(method: "GET", url: "https://localhost:\(port)/"))
        XCTAssertEqual(response.status, 200)
    }

    func testHostnameIsVerified() throws {
        // A trusted certificate for `localhost` does not vouch for `127.0.0.1`, the same server.
        let transport = try CurlTransport(options: CurlTransport.Options(connectTimeout: 5, stallTimeout: 5,
                                                                         caFile: dir.appendingPathComponent("cert.pem").path))
        XCTAssertThrowsError(try transport.perform(TransportRequest(method: "GET", url: "https://127.0.0.1:\(port)/"))) { error in
            guard case .tls = error as? TransportError else { return XCTFail("\(error)") }
        }
    }

    static func run(_ tool: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw XCTSkip("\(tool) \(arguments.first ?? "") failed") }
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw XCTSkip("cannot find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func waitUntilListening(port: Int, timeout: Double) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(port).bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            close(fd)
            if connected { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw XCTSkip("openssl s_server did not start")
    }
}
