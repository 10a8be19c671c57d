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
                       "http://emu.localhost:1/", "http://user@127.0.0.1:5/p?q", "HTTP://127.0.0.1/", "http://[::ffff:127.0.0.1]/"]
        let refused = ["http://www.googleapis.com/", "http://10.0.0.1/", "http://128.0.0.1/", "http://[::2]/", "http://localhost.evil.com/",
                       "http://127.0.0.1.evil.com/", "http://127.0.0.1@evil.com/", "http://[::ffff:10.0.0.1]/", "http://0.0.0.0:80/"]
        for url in allowed { XCTAssertNil(CleartextPolicy.problem(with: url), url) }
        for url in refused { XCTAssertNotNil(CleartextPolicy.problem(with: url), url) }
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
