import XCTest
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import DriveSupport
@testable import DriveEmulator

final class HTTPServerTests: XCTestCase {
    var emulator: Emulator!
    var port: Int { emulator.port }

    override func setUpWithError() throws {
        emulator = try startTestEmulator()
    }

    override func tearDown() {
        emulator?.stop()
        emulator = nil
    }

    /// The server still answers a fresh connection (after something nasty happened).
    func assertStillServing(file: StaticString = #filePath, line: UInt = #line) throws {
        let response = try RawHTTP.request(port: port, "GET", "/hello")
        XCTAssertEqual(response.status, 200, file: file, line: line)
        XCTAssertEqual(response.text, "hello", file: file, line: line)
    }

    func testKeepAliveServesManyRequestsOnOneConnection() throws {
        let connection = try RawHTTPConnection(port: port)
        for i in 0..<300 {
            try connection.sendRequest("POST", "/echo", body: Array("n=\(i)".utf8))
            let response = try connection.readResponse()
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(response.text, "n=\(i)")
            XCTAssertNil(response.header("Connection"))
        }
    }

    func testPipelinedRequestsAreAnsweredInOrder() throws {
        let connection = try RawHTTPConnection(port: port)
        var batch = ""
        for i in 0..<5 {
            batch += "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: \(String(i).count)\r\n\r\n\(i)"
        }
        batch += "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
        try connection.send(batch)
        for i in 0..<5 { XCTAssertEqual(try connection.readResponse().text, "\(i)") }
        XCTAssertEqual(try connection.readResponse().text, "hello")
    }

    func testFiftyConcurrentConnectionsAreServedAtOnce() throws {
        emulator.stop()
        // Each handler waits until all 50 are inside: only a concurrent server can finish.
        let inside = Locked(0)
        let barrier = TestRoutes.Entry(method: "test.barrier", path: "/barrier") { _ in
            inside.withLock { $0 += 1 }
            let deadline = Date().addingTimeInterval(20)
            while inside.withLock({ $0 }) < 50 && Date() < deadline { usleep(5_000) }
            return .json(200, ["inside": inside.withLock { $0 }])
        }
        emulator = try startTestEmulator(extra: [barrier])
        let connections = try (0..<50).map { _ in try RawHTTPConnection(port: port) }
        for c in connections { try c.sendRequest("GET", "/barrier") }
        for c in connections {
            let response = try c.readResponse(timeout: 30)
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(response.json?["inside"] as? Int, 50)
        }
    }

    func testConnectionsOverTheLimitGet503() throws {
        emulator.stop()
        emulator = try startTestEmulator(EmulatorConfig(maxConnections: 2))
        let held = try (0..<2).map { _ in try RawHTTPConnection(port: port) }
        for c in held {
            try c.sendRequest("GET", "/hello")
            XCTAssertEqual(try c.readResponse().status, 200)
        }
        let third = try RawHTTPConnection(port: port)
        try third.sendRequest("GET", "/hello")
        let refused = try third.readResponse()
        XCTAssertEqual(refused.status, 503)
        XCTAssertEqual(refused.json?["error"].flatMap { ($0 as? [String: Any])?["code"] as? Int }, 503)
    }

    func testChunkedRequestBodyWithExtensionsAndTrailers() throws {
        let connection = try RawHTTPConnection(port: port)
        try connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;name=value\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: yes\r\n\r\n")
        let response = try connection.readResponse()
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.text, "hello 0123456789")
        // The connection stays usable.
        try connection.sendRequest("GET", "/hello")
        XCTAssertEqual(try connection.readResponse().text, "hello")
    }

    func testStreamedResponseIsChunked() throws {
        let connection = try RawHTTPConnection(port: port)
        try connection.sendRequest("GET", "/chunked?chunks=4&size=1000")
        let response = try connection.readResponse()
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.header("Transfer-Encoding"), "chunked")
        XCTAssertNil(response.header("Content-Length"))
        XCTAssertEqual(response.body.count, 4000)
        try connection.sendRequest("GET", "/hello")
        XCTAssertEqual(try connection.readResponse().text, "hello")
    }

    func testStreamedResponseToHTTP10ClientIsCloseDelimited() throws {
        let connection = try RawHTTPConnection(port: port)
        try connection.send("GET /chunked?chunks=2&size=5 HTTP/1.0\r\n\r\n")
        let raw = String(decoding: try connection.readToEnd(), as: UTF8.self)
        XCTAssertTrue(raw.hasPrefix("HTTP/1.1 200"))
        XCTAssertFalse(raw.lowercased().contains("transfer-encoding"))
        XCTAssertTrue(raw.hasSuffix("\r\n\r\nbbbbbccccc"), raw)
    }

    func testExpectContinueIsSentWhenTheHandlerReadsTheBody() throws {
        let connection = try RawHTTPConnection(port: port)
        try connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
        let interim = try connection.readResponse(returnInterim: true)
        XCTAssertEqual(interim.status, 100)
        try connection.send("ping")
        let response = try connection.readResponse()
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.text, "ping")
    }

    func testExpectContinueIsNotSentWhenTheHandlerIgnoresTheBody() throws {
        let connection = try RawHTTPConnection(port: port)
        try connection.send("POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\nExpect: 100-continue\r\n\r\n")
        let response = try connection.readResponse(returnInterim: true)
        XCTAssertEqual(response.status, 200, "the final answer comes without 100 Continue")
        XCTAssertEqual(response.header("Connection"), "close", "the unsent body cannot be skipped: the connection closes")
        XCTAssertNotEqual(connection.waitForClose(timeout: 5), .timedOut)
    }

    func testHeadHasLengthButNoBody() throws {
        let connection = try RawHTTPConnection(port: port)
        try connection.sendRequest("HEAD", "/bytes?size=5000")
        let head = try connection.readResponse(forHead: true)
        XCTAssertEqual(head.status, 200)
        XCTAssertEqual(head.header("Content-Length"), "5000")
        // The next response starts right after the head: no body bytes were sent.
        try connection.sendRequest("GET", "/hello")
        XCTAssertEqual(try connection.readResponse().text, "hello")
    }

    func testFileBodyIsStreamedFromTheRange() throws {
        emulator.stop()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("httpserver-\(UUID().uuidString)")
        let content = (0..<600_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try Data(content).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let path = file.path
        emulator = try startTestEmulator(extra: [TestRoutes.Entry(method: "test.file", path: "/file") { _ in
            HTTPResponse(status: 206, body: .file(path: path, offset: 1000, length: 500_000))
        }])
        let response = try RawHTTP.request(port: port, "GET", "/file")
        XCTAssertEqual(response.status, 206)
        XCTAssertEqual(response.body, Array(content[1000..<501_000]))
    }

    func testUnknownPathIsGoogle404() throws {
        let response = try RawHTTP.request(port: port, "GET", "/nowhere?x=1")
        XCTAssertEqual(response.status, 404)
        XCTAssertEqual(response.googleReason, "notFound")
        XCTAssertTrue(response.header("Content-Type")?.hasPrefix("application/json") ?? false)
    }

    func testHandlerErrorsBecomeGoogleErrors() throws {
        let google = try RawHTTP.request(port: port, "GET", "/throws?google=1")
        XCTAssertEqual(google.status, 400)
        XCTAssertEqual(google.googleReason, "invalidParameter")
        let other = try RawHTTP.request(port: port, "GET", "/throws")
        XCTAssertEqual(other.status, 500)
        XCTAssertEqual(other.googleReason, "backendError")
    }

    func testBaseURLComesFromHostOrPublicURL() throws {
        emulator.stop()
        let base = TestRoutes.Entry(method: "test.base", path: "/base") { request in .json(200, ["base": request.baseURL]) }
        emulator = try startTestEmulator(extra: [base])
        let fromHost = try RawHTTP.request(port: port, "GET", "/base") // Host: 127.0.0.1
        XCTAssertEqual(fromHost.json?["base"] as? String, "http://127.0.0.1")
        let connection = try RawHTTPConnection(port: port)
        try connection.send("GET /base HTTP/1.1\r\nHost: www.googleapis.com:8443\r\n\r\n")
        XCTAssertEqual(try connection.readResponse().json?["base"] as? String, "http://www.googleapis.com:8443")
        emulator.stop()
        emulator = try startTestEmulator(EmulatorConfig(publicURL: "https://www.googleapis.com/"), extra: [base])
        XCTAssertEqual(try RawHTTP.request(port: port, "GET", "/base").json?["base"] as? String, "https://www.googleapis.com")
    }

    func testListensOnIPv6Loopback() throws {
        emulator.stop()
        do {
            emulator = try startTestEmulator(EmulatorConfig(host: "::1"))
        } catch {
            throw XCTSkip("no IPv6 loopback here: \(error)")
        }
        XCTAssertTrue(emulator.baseURL.hasPrefix("http://[::1]:"))
        let connection = try RawHTTPConnection(port: port, host: "::1")
        try connection.sendRequest("GET", "/hello")
        XCTAssertEqual(try connection.readResponse().text, "hello")
    }

    func testStopClosesIdleConnectionsPromptly() throws {
        let connection = try RawHTTPConnection(port: port)
        try connection.sendRequest("GET", "/hello")
        XCTAssertEqual(try connection.readResponse().status, 200)
        // Without the prompt close, stop() would wait out the 60 s idle timeout: 15 s is far from
        // both that and from what a loaded machine needs.
        let started = Date()
        emulator.stop()
        XCTAssertLessThan(Date().timeIntervalSince(started), 15)
        XCTAssertNotEqual(connection.waitForClose(timeout: 15), .timedOut)
        emulator = nil
    }

    func testIdleKeepAliveConnectionTimesOut() throws {
        emulator.stop()
        emulator = try startTestEmulator(EmulatorConfig(idleTimeout: 0.3))
        let connection = try RawHTTPConnection(port: port)
        try connection.sendRequest("GET", "/hello")
        XCTAssertEqual(try connection.readResponse().status, 200)
        XCTAssertEqual(connection.waitForClose(timeout: 5), .eof)
    }
}

extension HTTPServerTests {
    func testHTTP10KeepAliveOnRequest() throws {
        let connection = try RawHTTPConnection(port: port)
        try connection.send("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let first = try connection.readResponse()
        XCTAssertEqual(first.header("Connection"), "keep-alive")
        try connection.send("GET /hello HTTP/1.0\r\n\r\n")
        let second = try connection.readResponse()
        XCTAssertEqual(second.text, "hello")
        XCTAssertEqual(second.header("Connection"), "close")
        XCTAssertEqual(connection.waitForClose(timeout: 5), .eof)
    }
}

extension HTTPServerTests {
    func testStreamWithStatedLengthIsNotChunkedAndShortStreamsAreCut() throws {
        emulator.stop()
        func sized(_ stated: Int, produce: Int) -> @Sendable (HTTPRequest) throws -> HTTPResponse {
            { _ in
                var left = produce
                return HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Length", String(stated))]), body: .stream({
                    guard left > 0 else { return nil }
                    let n = min(left, 4000)
                    left -= n
                    return [UInt8](repeating: 9, count: n)
                }))
            }
        }
        emulator = try startTestEmulator(extra: [
            TestRoutes.Entry(method: "test.sized", path: "/sized", handler: sized(10_000, produce: 10_000)),
            TestRoutes.Entry(method: "test.short", path: "/short", handler: sized(10_000, produce: 5_000)),
        ])
        let connection = try RawHTTPConnection(port: port)
        try connection.sendRequest("GET", "/sized")
        let response = try connection.readResponse()
        XCTAssertEqual(response.header("Content-Length"), "10000")
        XCTAssertNil(response.header("Transfer-Encoding"))
        XCTAssertEqual(response.body.count, 10_000)
        try connection.sendRequest("GET", "/short")
        XCTAssertThrowsError(try connection.readResponse())
        XCTAssertEqual(connection.partialBody.count, 5_000)
    }
}
