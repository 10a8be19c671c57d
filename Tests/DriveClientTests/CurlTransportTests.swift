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
