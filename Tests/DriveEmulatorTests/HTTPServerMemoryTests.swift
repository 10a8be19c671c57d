import XCTest
import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import DriveEmulator

/// A 1 GiB request body streams through a handler that reads and discards it, with the
/// process's resident memory staying flat.
final class HTTPServerMemoryTests: XCTestCase {
    static let gib = 1 << 30
    static let allowedGrowth = 64 << 20

    func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        return (fields.count > 1 ? Int(fields[1]) ?? 0 : 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    func streamOneGiB(chunked: Bool) throws {
        let emulator = try startTestEmulator()
        defer { emulator.stop() }
        let connection = try RawHTTPConnection(port: emulator.port)
        // Warm up (threads, buffers) before the baseline.
        try connection.sendRequest("POST", "/discard", body: [UInt8](repeating: 1, count: 1 << 20))
        XCTAssertEqual(try connection.readResponse().json?["bytes"] as? Int, 1 << 20)
        let before = residentBytes()

        let piece = [UInt8](repeating: 0x5A, count: 1 << 20)
        if chunked {
            try connection.send("POST /discard HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
            let framed = Array("100000\r\n".utf8) + piece + [13, 10]
            for _ in 0..<(Self.gib >> 20) { try connection.send(framed) }
            try connection.send("0\r\n\r\n")
        } else {
            try connection.send("POST /discard HTTP/1.1\r\nHost: x\r\nContent-Length: \(Self.gib)\r\n\r\n")
            for _ in 0..<(Self.gib >> 20) { try connection.send(piece) }
        }
        let response = try connection.readResponse(timeout: 60)
        XCTAssertEqual(response.json?["bytes"] as? Int, Self.gib)
        let growth = residentBytes() - before
        XCTAssertLessThan(growth, Self.allowedGrowth, "RSS grew by \(growth >> 20) MiB")
        XCTAssertEqual(emulator.stats().methods["test.discard"]?.requests, 2)
        let stats = waitForStats(emulator) { $0.methods["test.discard"]?.bytesIn == Int64(Self.gib) + (1 << 20) }.methods["test.discard"]
        XCTAssertEqual(stats?.bytesIn, Int64(Self.gib) + (1 << 20))
    }

    func testOneGiBContentLengthBodyStreamsWithFlatMemory() throws {
        try streamOneGiB(chunked: false)
    }

    func testOneGiBChunkedBodyStreamsWithFlatMemory() throws {
        try streamOneGiB(chunked: true)
    }
}
