import DriveClient
import DriveEmulator
import DriveSupport
import XCTest

/// CurlTransport against a real HTTP server on loopback (the emulator's server with test routes).
final class CurlTransportServerTests: XCTestCase {
    var emulator: Emulator!
    var transport: CurlTransport!
    var base: String { emulator.baseURL }
    var temp: URL!

    override func setUpWithError() throws {
        emulator = try Emulator(config: EmulatorConfig(port: 0), services: EmulatorServices(providers: [TransportTestRoutes()]))
        try emulator.start()
        var options = CurlTransport.Options(connectTimeout: 5, stallTimeout: 2)
        options.maxIdleHandles = 4
        transport = try CurlTransport(options: options)
        temp = FileManager.default.temporaryDirectory.appendingPathComponent("curl-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: temp, withIntermediateDirectories: true)
    }

    override func tearDown() {
        emulator?.stop()
        try? FileManager.default.removeItem(at: temp)
    }

    private func json(_ response: TransportResponse) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
    }

    func testHeadersAreSentAndReceived() throws {
        let response = try transport.perform(TransportRequest(method: "GET", url: base + "/headers", headers: [("X-Test", "hello world")]))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.headers["content-type"], "application/json; charset=UTF-8")
        let echoed = try json(response)
        XCTAssertEqual(echoed["x-test"] as? String, "hello world")
        XCTAssertNil(echoed["expect"], "no 100-continue round trip")
    }

    func testFileBodyStreamsASliceOfTheFile() throws {
        let path = temp.appendingPathComponent("up").path
        let content = TransportTestRoutes.bytes(0..<(3 << 20))
        _ = FileManager.default.createFile(atPath: path, contents: Data(content))
        let slice = content[1000..<(1000 + 2_000_000)]
        let response = try transport.perform(TransportRequest(method: "PUT", url: base + "/sink",
                                                              body: .file(path: path, offset: 1000, length: 2_000_000)))
        let echoed = try json(response)
        XCTAssertEqual(echoed["size"] as? Int, 2_000_000)
        XCTAssertEqual(echoed["md5"] as? String, Digest.hex(.md5, of: Array(slice)))
        XCTAssertEqual(echoed["method"] as? String, "PUT")
    }

    func testBodylessPostAndBytesPatch() throws {
        let post = try json(transport.perform(TransportRequest(method: "POST", url: base + "/sink")))
        XCTAssertEqual(post["size"] as? Int, 0)
        XCTAssertEqual(post["method"] as? String, "POST")
        let patch = try json(transport.perform(TransportRequest(method: "PATCH", url: base + "/sink", body: .bytes([1, 2, 3]))))
        XCTAssertEqual(patch["size"] as? Int, 3)
        XCTAssertEqual(patch["method"] as? String, "PATCH")
    }

    func testDownloadIntoFileDescriptorAtOffset() throws {
        let path = temp.appendingPathComponent("down").path
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        let size: Int64 = 5 << 20
        let response = try transport.perform(TransportRequest(method: "GET", url: base + "/blob?size=\(size)", sink: .fileDescriptor(fd, offset: 100)))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.bodyBytes, size)
        XCTAssertTrue(response.body.isEmpty)
        let written = try Data(contentsOf: URL(fileURLWithPath: path))
        XCTAssertEqual(written.count, Int(size) + 100)
        XCTAssertEqual(Array(written[100...]), TransportTestRoutes.bytes(0..<size))
    }

    func testCallbackSinkCanAbort() throws {
        let seen = Locked<Int>(0)
        XCTAssertThrowsError(try transport.perform(TransportRequest(method: "GET", url: base + "/blob?size=\(4 << 20)", sink: .callback { chunk in
            seen.withLock { $0 += chunk.count }
            return seen.withLock { $0 } < 100_000
        }))) { error in
            XCTAssertEqual(error as? TransportError, .aborted)
        }
    }

    func testErrorBodiesGoToMemoryNotTheSink() throws {
        let delivered = Locked<Int>(0)
        let response = try transport.perform(TransportRequest(method: "GET", url: base + "/status/404", sink: .callback { chunk in
            delivered.withLock { $0 += chunk.count }
            return true
        }))
        XCTAssertEqual(response.status, 404)
        XCTAssertEqual(delivered.withLock { $0 }, 0)
        XCTAssertEqual(GoogleErrorEnvelope.parse(response.body)?.reason, "scripted")
    }

    func testResetMidBodyIsConnectionLost() throws {
        emulator.addFaults([FaultRule(method: "test.blob", action: .reset(afterBytes: 100_000))])
        XCTAssertThrowsError(try transport.perform(TransportRequest(method: "GET", url: base + "/blob?size=\(1 << 20)", sink: .callback { _ in true }))) { error in
            guard case .connectionLost = error as? TransportError else { return XCTFail("\(error)") }
        }
        // The pool recovers: the next request works.
        XCTAssertEqual(try transport.perform(TransportRequest(method: "GET", url: base + "/blob?size=10")).body, TransportTestRoutes.bytes(0..<10))
    }

    func testStalledServerTimesOut() throws {
        emulator.addFaults([FaultRule(method: "test.headers", action: .stall(seconds: 6))])
        let start = Date()
        XCTAssertThrowsError(try transport.perform(TransportRequest(method: "GET", url: base + "/headers"))) { error in
            guard case .timedOut = error as? TransportError else { return XCTFail("\(error)") }
        }
        XCTAssertLessThan(Date().timeIntervalSince(start), 5, "the stall timeout (2 s) fires, not the server's close")
    }

    func testCancellationAbandonsAStalledExchange() throws {
        emulator.addFaults([FaultRule(method: "test.headers", action: .stall(seconds: 6))])
        let flag = CancellationFlag()
        var request = TransportRequest(method: "GET", url: base + "/headers")
        request.cancellation = flag
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { flag.cancel() }
        let start = Date()
        XCTAssertThrowsError(try transport.perform(request)) { error in
            XCTAssertEqual(error as? TransportError, .aborted)
        }
        let elapsed = Date().timeIntervalSince(start)
        // `.aborted` (not `.timedOut`) already shows the flag won the race against the 2 s stall timeout.
        XCTAssertGreaterThan(elapsed, 0.25)
    }

    func testSequentialRequestsReuseOneConnection() throws {
        for i in 0..<30 {
            let response = try transport.perform(TransportRequest(method: i % 2 == 0 ? "GET" : "PUT",
                                                                  url: base + (i % 2 == 0 ? "/blob?size=1000" : "/sink"),
                                                                  body: i % 2 == 0 ? .none : .bytes([1, 2, 3])))
            XCTAssertEqual(response.status, 200)
        }
        XCTAssertEqual(transport.connectionsOpened, 1)
    }

    func testManyRequestsFromManyThreads() throws {
        let failures = Locked<Int>(0)
        let transport = self.transport!
        let base = self.base
        DispatchQueue.concurrentPerform(iterations: 40) { i in
            let size = Int64(i * 1000)
            do {
                let response = try transport.perform(TransportRequest(method: "GET", url: base + "/blob?size=\(size)"))
                if response.body != TransportTestRoutes.bytes(0..<size) { failures.withLock { $0 += 1 } }
            } catch {
                failures.withLock { $0 += 1 }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, 0)
    }
}
