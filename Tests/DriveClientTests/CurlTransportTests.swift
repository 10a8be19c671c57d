import DriveClient
import Foundation
import XCTest

/// CurlTransport without a server: failures below HTTP map to the right `TransportError`.
/// (Exchanges with a server are covered against the in-process emulator.)
final class CurlTransportTests: XCTestCase {
    func testRefusedConnectionIsCouldNotConnect() throws {
        let transport = try CurlTransport()
        // Port 1 on loopback: nothing listens there.
        XCTAssertThrowsError(try transport.perform(TransportRequest(method: "GET", url: "http://127.0.0.1:1/x"))) { error in
            guard case .couldNotConnect = error as? TransportError else { return XCTFail("\(error)") }
        }
    }

    func testNonHTTPURLIsRejected() throws {
        let transport = try CurlTransport()
        XCTAssertThrowsError(try transport.perform(TransportRequest(method: "GET", url: "file:///etc/passwd"))) { error in
            guard case .invalidURL = error as? TransportError else { return XCTFail("\(error)") }
        }
    }

    /// Tokens never cross a network in clear: plain http only to loopback.
    func testPlainHTTPIsRefusedBeyondLoopback() throws {
        let transport = try CurlTransport()
        XCTAssertThrowsError(try transport.perform(TransportRequest(method: "GET", url: "http://192.0.2.1/upload?upload_id=secret",
                                                                    headers: [("Authorization", "Bearer tok")]))) { error in
            guard case .invalidURL(let what) = error as? TransportError else { return XCTFail("\(error)") }
            XCTAssertTrue(what.hasPrefix("http://192.0.2.1/upload: plain http:// is allowed only for loopback hosts"), what)
            XCTAssertTrue(what.hasSuffix("use https://"), what)
            XCTAssertFalse(what.contains("secret"), what)
            XCTAssertTrue("\(error)".contains("--api-url"), "the description carries a hint: \(error)")
        }
        for loopback in ["http://127.0.0.1:1/x", "http://127.8.9.10:1/x", "http://[::1]:1/x", "http://localhost:1/x"] {
            XCTAssertThrowsError(try transport.perform(TransportRequest(method: "GET", url: loopback))) { error in
                guard case .couldNotConnect = error as? TransportError else { return XCTFail("\(loopback): \(error)") }
            }
        }
    }

    func testCleartextPolicyTable() {
        let allowed = ["https://www.googleapis.com/", "https://10.0.0.1/", "http://127.0.0.1:8080/", "http://127.255.0.1/",
                       "http://[::1]:9/", "http://[0:0:0:0:0:0:0:1]/", "http://LOCALHOST:80/", "http://localhost./",
                       "http://user@127.0.0.1:5/p?q", "HTTP://127.0.0.1/", "http://[::ffff:127.0.0.1]/"]
        let refused = ["http://www.googleapis.com/", "http://10.0.0.1/", "http://128.0.0.1/", "http://[::2]/", "http://localhost.evil.com/",
                       "http://127.0.0.1.evil.com/", "http://127.0.0.1@evil.com/", "http://[::ffff:10.0.0.1]/", "http://0.0.0.0:80/"]
        for url in allowed { XCTAssertNil(CleartextPolicy.problem(with: url), url) }
        for url in refused { XCTAssertNotNil(CleartextPolicy.problem(with: url), url) }
    }

    /// A name counts as loopback only by what it resolves to: `*.localhost` is no exception (a
    /// resolver may send it anywhere), and every address it resolves to must be loopback.
    func testNamesAreJudgedByTheirAddresses() {
        let addresses: [String: [String]] = [
            "emu.localhost": ["10.0.0.7"], "evil.localhost": ["127.0.0.1", "192.0.2.1"], "localhost": ["127.0.0.1", "::1"],
            "emulator.test": ["127.0.0.2"], "nowhere.localhost": [],
        ]
        let resolver: CleartextPolicy.Resolver = { addresses[$0] ?? [] }
        for url in ["http://emu.localhost:1/", "http://evil.localhost/", "http://nowhere.localhost/", "http://unknown.example/"] {
            XCTAssertNotNil(CleartextPolicy.problem(with: url, resolver: resolver), url)
        }
        for url in ["http://localhost:1/", "http://emulator.test:8/x", "http://127.0.0.1/", "https://emu.localhost/"] {
            XCTAssertNil(CleartextPolicy.problem(with: url, resolver: resolver), url)
        }
        XCTAssertEqual(CleartextPolicy.check("http://emulator.test:8/x", resolver: resolver), .pinned(["127.0.0.2"]))
    }

    /// The transport connects to the addresses it judged, not to what curl might resolve later.
    func testTransportPinsTheAddressesItJudged() throws {
        var options = CurlTransport.Options()
        options.resolver = { $0 == "emulator.test" ? ["127.0.0.1"] : ($0 == "emu.localhost" ? ["192.0.2.1"] : []) }
        let transport = try CurlTransport(options: options)
        XCTAssertThrowsError(try transport.perform(TransportRequest(method: "GET", url: "http://emu.localhost:1/x",
                                                                    headers: [("Authorization", "Bearer tok")]))) { error in
            guard case .invalidURL = error as? TransportError else { return XCTFail("\(error)") }
        }
        // Pinned to 127.0.0.1: nothing listens on port 1 there (without the pin, curl could not resolve the name).
        XCTAssertThrowsError(try transport.perform(TransportRequest(method: "GET", url: "http://emulator.test:1/x"))) { error in
            guard case .couldNotConnect = error as? TransportError else { return XCTFail("\(error)") }
        }
    }

    func testTransportErrorsReadWell() {
        XCTAssertEqual(TransportError.couldNotConnect("Failed to connect to 127.0.0.1 port 1").description,
                       "could not connect: Failed to connect to 127.0.0.1 port 1. Check the network connection, and the endpoints if you set them (--api-url, --token-url).")
        XCTAssertTrue(TransportError.tls("certificate verify failed").description.contains("--ca-file"))
        XCTAssertEqual(TransportError.aborted.description, "the transfer was aborted")
        XCTAssertEqual(DriveError.transport(.timedOut("after 30 s")).description,
                       "network failure: the connection timed out: after 30 s. Check the network connection, and the endpoints if you set them (--api-url, --token-url).")
    }

    func testMissingUploadSourceIsAClearError() throws {
        let transport = try CurlTransport()
        let request = TransportRequest(method: "PUT", url: "http://127.0.0.1:1/x",
                                       body: .file(path: "/nonexistent/file", offset: 0, length: 10))
        XCTAssertThrowsError(try transport.perform(request)) { error in
            guard case .other(_, let message) = error as? TransportError else { return XCTFail("\(error)") }
            XCTAssertTrue(message.contains("/nonexistent/file"))
        }
    }

    func testVersionIsReported() {
        XCTAssertTrue(CurlTransport.libcurlVersion.hasPrefix("libcurl/"))
    }
}
