import DriveSupport
import XCTest
import Foundation
@testable import DriveEmulator

/// Whatever a client sends, the server answers 4xx in Google's format (or closes) and keeps
/// serving other connections.
final class HTTPServerMalformedInputTests: XCTestCase {
    var emulator: Emulator!
    var port: Int { emulator.port }

    override func setUpWithError() throws { emulator = try startTestEmulator() }
    override func tearDown() { emulator?.stop(); emulator = nil }

    /// Sends raw bytes on a fresh connection and expects a Google error with this status, then a
    /// healthy server.
    func assertRefused(_ raw: [UInt8], status: Int, file: StaticString = #filePath, line: UInt = #line) throws {
        let connection = try RawHTTPConnection(port: port)
        try? connection.send(raw)
        let response = try connection.readResponse()
        XCTAssertEqual(response.status, status, "for \(String(decoding: raw.prefix(60), as: UTF8.self))", file: file, line: line)
        let error = response.json?["error"] as? [String: Any]
        XCTAssertEqual(error?["code"] as? Int, status, "Google's error envelope", file: file, line: line)
        XCTAssertNotNil((error?["errors"] as? [[String: Any]])?.first?["reason"], file: file, line: line)
        XCTAssertEqual(response.header("Connection"), "close", file: file, line: line)
        try assertStillServing(file: file, line: line)
    }

    func assertRefused(_ raw: String, status: Int, file: StaticString = #filePath, line: UInt = #line) throws {
        try assertRefused(Array(raw.utf8), status: status, file: file, line: line)
    }

    func assertStillServing(file: StaticString = #filePath, line: UInt = #line) throws {
        let response = try RawHTTP.request(port: port, "GET", "/hello")
        XCTAssertEqual(response.text, "hello", file: file, line: line)
    }

    func testMalformedRequestLines() throws {
        try assertRefused("GARBAGE\r\n\r\n", status: 400)
        try assertRefused("GET /hello\r\n\r\n", status: 400)
        try assertRefused("GET  /hello HTTP/1.1\r\n\r\n", status: 400)
        try assertRefused("GET hello HTTP/1.1\r\nHost: x\r\n\r\n", status: 400)
        try assertRefused("G(T /hello HTTP/1.1\r\nHost: x\r\n\r\n", status: 400)
        try assertRefused("GET /hello HTTP/9.9\r\nHost: x\r\n\r\n", status: 505)
        try assertRefused("GET /hello FTP/1.1\r\nHost: x\r\n\r\n", status: 400)
    }

    func testMalformedHeaders() throws {
        try assertRefused("GET /hello HTTP/1.1\r\nNoColonHere\r\n\r\n", status: 400)
        try assertRefused("GET /hello HTTP/1.1\r\nBad Name: x\r\n\r\n", status: 400)
        try assertRefused("GET /hello HTTP/1.1\r\nX-A: 1\r\n folded\r\n\r\n", status: 400)
        try assertRefused("GET /hello HTTP/1.1\r\nX-A: a\u{1}b\r\n\r\n", status: 400)
    }

    func testInvalidUTF8InHeaderOrTarget() throws {
        try assertRefused(Array("GET /hello HTTP/1.1\r\nX-Name: ".utf8) + [0xC3, 0x28, 0xFF] + Array("\r\n\r\n".utf8), status: 400)
        try assertRefused(Array("GET /h".utf8) + [0xFF, 0xFE] + Array(" HTTP/1.1\r\nHost: x\r\n\r\n".utf8), status: 400)
        // Percent-encoded invalid UTF-8 is not a framing error: the path just does not match.
        let response = try RawHTTP.request(port: port, "GET", "/%FF%FE?q=%C3%28")
        XCTAssertEqual(response.status, 404)
    }

    func testBadContentLengths() throws {
        try assertRefused("POST /echo HTTP/1.1\r\nContent-Length: -1\r\n\r\n", status: 400)
        try assertRefused("POST /echo HTTP/1.1\r\nContent-Length: abc\r\n\r\n", status: 400)
        try assertRefused("POST /echo HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", status: 400)
        try assertRefused("POST /echo HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", status: 400)
        try assertRefused("POST /echo HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", status: 400)
        try assertRefused("POST /echo HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", status: 501)
    }

    func testInvalidChunkSizes() throws {
        for size in ["zz", "", "-1", "ffffffffffffffffffff", "1 2", "0x10"] {
            try assertRefused("POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\(size)\r\nabc\r\n0\r\n\r\n", status: 400)
        }
        // Data longer than its chunk size.
        try assertRefused("POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n", status: 400)
        // An endless chunk-size line.
        try assertRefused("POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + String(repeating: "1", count: 10_000), status: 400)
    }

    func testTruncatedBodyIsRefusedAndTheServerGoesOn() throws {
        let connection = try RawHTTPConnection(port: port)
        try connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly a few bytes")
        connection.shutdownWrite()
        let response = try connection.readResponse()
        XCTAssertEqual(response.status, 400)
        XCTAssertEqual(response.googleReason, "badRequest")
        try assertStillServing()
    }

    func testTruncatedChunkedBody() throws {
        let connection = try RawHTTPConnection(port: port)
        try connection.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc")
        connection.shutdownWrite()
        XCTAssertEqual(try connection.readResponse().status, 400)
        try assertStillServing()
    }

    func testHugeHeaderBlockGets431() throws {
        let big = String(repeating: "a", count: 70 * 1024)
        try assertRefused("GET /hello HTTP/1.1\r\nHost: x\r\nX-Big: \(big)\r\n\r\n", status: 431)
        // Many small headers past the limit too.
        let many = (0..<5000).map { "X-\($0): \(String(repeating: "v", count: 10))\r\n" }.joined()
        try assertRefused("GET /hello HTTP/1.1\r\n\(many)\r\n", status: 431)
    }

    func testHeadJustUnderTheLimitIsServed() throws {
        let value = String(repeating: "b", count: 60 * 1024)
        let connection = try RawHTTPConnection(port: port)
        try connection.send("GET /hello HTTP/1.1\r\nHost: x\r\nX-Big: \(value)\r\n\r\n")
        XCTAssertEqual(try connection.readResponse().text, "hello")
    }

    func testGarbageBytesAndEarlyCloses() throws {
        // Random binary, a bare close, a half head: none may hurt the server.
        var generator = SplitMix64(seed: 42)
        for _ in 0..<20 {
            let connection = try RawHTTPConnection(port: port)
            let bytes = (0..<Int(generator.next() % 3000)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            try? connection.send(bytes + [13, 10, 13, 10])
            _ = connection.waitForClose(timeout: 5)
        }
        let half = try RawHTTPConnection(port: port)
        try half.send("GET /hello HTT")
        half.shutdownWrite()
        _ = half.waitForClose(timeout: 5)
        try assertStillServing()
    }

    func testUnreadSmallBodyIsSkippedAndTheConnectionKeptAlive() throws {
        let connection = try RawHTTPConnection(port: port)
        try connection.sendRequest("POST", "/hello", body: [UInt8](repeating: 7, count: 5000))
        let first = try connection.readResponse()
        XCTAssertEqual(first.text, "hello")
        XCTAssertNil(first.header("Connection"))
        try connection.sendRequest("GET", "/hello")
        XCTAssertEqual(try connection.readResponse().text, "hello")
    }

    /// A client still sending when the server refuses must still get the answer (no RST eating it).
    func testRefusalReachesAClientThatKeepsSending() throws {
        let connection = try RawHTTPConnection(port: port)
        try connection.send("GET /hello HTTP/1.1\r\nHost: x\r\nX-Big: ")
        try? connection.send([UInt8](repeating: 0x61, count: 3 << 20))
        let response = try connection.readResponse()
        XCTAssertEqual(response.status, 431)
        try assertStillServing()
    }

    func testAnswerWithoutContinueSurvivesABodySentAnyway() throws {
        // curl sends the body after waiting a second for 100 Continue; the server has answered and
        // closes, but must not reset the answer away.
        let connection = try RawHTTPConnection(port: port)
        try connection.send("POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 4194304\r\nExpect: 100-continue\r\n\r\n")
        XCTAssertTrue(connection.waitReadable(timeout: 10), "the server answers without waiting for the body")
        try? connection.send([UInt8](repeating: 1, count: 4 << 20))
        let response = try connection.readResponse()
        XCTAssertEqual(response.text, "hello")
        XCTAssertEqual(response.header("Connection"), "close")
    }
}
