import XCTest
import Foundation
import DriveSupport
@testable import DriveEmulator

/// Which side of an exchange a reset cuts, and resets that cannot apply staying armed.
final class FaultResetPhaseTests: XCTestCase {
    var emulator: Emulator!
    let calls = Locked(0)
    var port: Int { emulator.port }

    override func setUpWithError() throws {
        let calls = self.calls
        emulator = try startTestEmulator(extra: [TestRoutes.Entry(method: "test.create", path: "/create") { request in
            calls.withLock { $0 += 1 }
            let body = try request.body.readAll(limit: 1 << 20)
            return HTTPResponse(status: 200, body: .bytes(body + [UInt8](repeating: 0x41, count: 5000)))
        }])
    }
    override func tearDown() { emulator?.stop(); emulator = nil }

    func remainingFaults() throws -> Int {
        (try RawHTTP.request(port: port, "GET", "/__emulator/faults").json?["faults"] as? [Any])?.count ?? -1
    }

    func testResponsePhaseRunsTheHandlerThenCutsTheAnswer() throws {
        emulator.addFaults([FaultRule(method: "test.create", action: .reset(afterBytes: 0, phase: .response))])
        let connection = try RawHTTPConnection(port: port)
        try connection.sendRequest("POST", "/create", body: Array(#"{"name":"once"}"#.utf8))
        XCTAssertThrowsError(try connection.readResponse())
        XCTAssertEqual(connection.partialBody, [])
        XCTAssertEqual(calls.withLock { $0 }, 1, "the handler ran: the side effect happened")
        XCTAssertEqual(try remainingFaults(), 0)
    }

    func testAutoPhaseCutsTheRequestBodyWithoutCallingTheHandler() throws {
        emulator.addFaults([FaultRule(method: "test.create", action: .reset(afterBytes: 10))])
        let connection = try RawHTTPConnection(port: port)
        try? connection.sendRequest("POST", "/create", body: [UInt8](repeating: 1, count: 100))
        XCTAssertEqual(connection.waitForClose(timeout: 5), .reset)
        XCTAssertEqual(calls.withLock { $0 }, 0)
    }

    func testResetLongerThanTheRequestBodyStaysArmed() throws {
        emulator.addFaults([FaultRule(method: "test.create", action: .reset(afterBytes: 1000))])
        let small = try RawHTTP.request(port: port, "POST", "/create", body: [UInt8](repeating: 1, count: 1000))
        XCTAssertEqual(small.status, 200)
        XCTAssertEqual(try remainingFaults(), 1, "a 1000-byte body cannot be cut after 1000 bytes")
        let connection = try RawHTTPConnection(port: port)
        try? connection.sendRequest("POST", "/create", body: [UInt8](repeating: 1, count: 5000))
        XCTAssertEqual(connection.waitForClose(timeout: 5), .reset)
        XCTAssertEqual(try remainingFaults(), 0)
    }

    func testResetLongerThanTheResponseStaysArmed() throws {
        emulator.addFaults([FaultRule(method: "test.bytes", action: .reset(afterBytes: 2000))])
        XCTAssertEqual(try RawHTTP.request(port: port, "GET", "/bytes?size=100").body.count, 100)
        XCTAssertEqual(try RawHTTP.request(port: port, "HEAD", "/bytes?size=100000").status, 200)
        XCTAssertEqual(try remainingFaults(), 1)
        let connection = try RawHTTPConnection(port: port)
        try connection.sendRequest("GET", "/bytes?size=300000")
        XCTAssertThrowsError(try connection.readResponse())
        XCTAssertEqual(connection.partialBody.count, 2000, "exactly the budget arrives before the reset")
        XCTAssertEqual(try remainingFaults(), 0)
    }

    func testPhaseInTheFaultDocument() throws {
        let added = try RawHTTP.request(port: port, "POST", "/__emulator/faults",
                                        body: Array(#"{"method":"test.create","resetAfterBytes":0,"phase":"response"}"#.utf8))
        XCTAssertEqual(added.status, 200)
        XCTAssertEqual((added.json?["faults"] as? [[String: Any]])?.first?["phase"] as? String, "response")
        for bad in [#"{"method":"x","resetAfterBytes":0,"phase":"sideways"}"#, #"{"method":"x","status":500,"phase":"request"}"#,
                    #"{"method":"x","stallSeconds":1,"phase":"request"}"#] {
            XCTAssertEqual(try RawHTTP.request(port: port, "POST", "/__emulator/faults", body: Array(bad.utf8)).status, 400, bad)
        }
    }
}
