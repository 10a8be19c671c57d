import CCurl
@testable import DriveClient
import DriveEmulator
import DriveSupport
import XCTest

/// The transport's connection pool, compression negotiation and libcurl error mapping.
final class CurlPoolingTests: XCTestCase {
    var emulator: Emulator!
    var base: String { emulator.baseURL }

    override func setUpWithError() throws {
        emulator = try Emulator(config: EmulatorConfig(port: 0), services: EmulatorServices(providers: [TransportTestRoutes()]))
        try emulator.start()
    }

    override func tearDown() { emulator?.stop() }

    /// `n` requests surely in flight at once (the gate answers none before all are in).
    private func concurrentRound(_ transport: CurlTransport, n: Int, key: String) {
        let statuses = Locked<[Int]>([])
        let done = DispatchSemaphore(value: 0)
        for _ in 0..<n {
            Thread { [base] in
                let status = (try? transport.perform(TransportRequest(method: "GET", url: base + "/gate?key=\(key)&n=\(n)")))?.status ?? -1
                statuses.withLock { $0.append(status) }
                done.signal()
            }.start()
        }
        for _ in 0..<n { XCTAssertEqual(done.wait(timeout: .now() + 30), .success) }
        XCTAssertEqual(statuses.withLock { $0 }, Array(repeating: 200, count: n))
    }

    func testAPoolSizedToTheConcurrencyReusesEveryConnection() throws {
        let transport = try CurlTransport(options: CurlTransport.Options(concurrency: 8, connectTimeout: 5))
        XCTAssertEqual(transport.options.maxIdleHandles, 8)
        concurrentRound(transport, n: 8, key: "a")
        XCTAssertEqual(transport.connectionsOpened, 8)
        concurrentRound(transport, n: 8, key: "b")
        XCTAssertEqual(transport.connectionsOpened, 8, "the second round rides the first round's connections")
    }

    func testAPoolSmallerThanTheConcurrencyOpensConnectionsAgain() throws {
        var options = CurlTransport.Options(connectTimeout: 5)
        options.maxIdleHandles = 2
        let transport = try CurlTransport(options: options)
        concurrentRound(transport, n: 6, key: "a")
        concurrentRound(transport, n: 6, key: "b")
        XCTAssertEqual(transport.connectionsOpened, 10, "only 2 of 6 connections survive between rounds")
    }

    func testMakeSizesThePoolToTheConcurrency() throws {
        struct NoGrant: TokenGrant { func fetchToken() throws -> AccessToken { AccessToken(value: "t", expiresAt: 0) } }
        let api = try DriveAPI.make(grant: NoGrant(), endpoints: .singleHost(base + "/"), concurrency: 24)
        XCTAssertEqual((api.executor.transport as? CurlTransport)?.options.maxIdleHandles, 24)
        let byDefault = try DriveAPI.make(grant: NoGrant(), endpoints: .singleHost(base + "/"))
        XCTAssertEqual((byDefault.executor.transport as? CurlTransport)?.options.maxIdleHandles, 16)
    }

    func testJSONRequestsNegotiateCompressionAndMediaRequestsDoNot() throws {
        let transport = try CurlTransport(options: CurlTransport.Options(connectTimeout: 5))
        func echoed(_ request: TransportRequest) throws -> [String: String] {
            let response = try transport.perform(request)
            return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(response.body)) as? [String: String])
        }
        let json = try echoed(TransportRequest(method: "GET", url: base + "/headers"))
        let offered = try XCTUnwrap(json["accept-encoding"], "JSON requests offer compression")
        XCTAssertTrue(offered.contains("gzip"), offered)
        var media = TransportRequest(method: "GET", url: base + "/headers")
        media.acceptsCompressedResponse = false
        XCTAssertNil(try echoed(media)["accept-encoding"], "media asks for identity bytes")
        let ranged = TransportRequest(method: "GET", url: base + "/headers", headers: [("Range", "bytes=0-")])
        XCTAssertNil(try echoed(ranged)["accept-encoding"], "never with a Range header")
    }

    func testCurlResultsMapToRetryableOrFinalErrors() {
        let policy = RetryPolicy()
        let rows: [(CURLcode, retried: Bool)] = [
            (CURLE_COULDNT_RESOLVE_HOST, true), (CURLE_COULDNT_CONNECT, true), (CURLE_OPERATION_TIMEDOUT, true),
            (CURLE_SEND_ERROR, true), (CURLE_RECV_ERROR, true), (CURLE_GOT_NOTHING, true), (CURLE_PARTIAL_FILE, true),
            (CURLE_SEND_FAIL_REWIND, true), (CURLE_HTTP2, true), (CURLE_HTTP2_STREAM, true),
            (CURLE_SSL_CONNECT_ERROR, true),
            (CURLE_PEER_FAILED_VERIFICATION, false), (CURLE_SSL_CACERT_BADFILE, false), (CURLE_SSL_CERTPROBLEM, false),
            (CURLE_URL_MALFORMAT, false), (CURLE_UNSUPPORTED_PROTOCOL, false), (CURLE_ABORTED_BY_CALLBACK, false),
            (CURLE_OUT_OF_MEMORY, false),
        ]
        for (code, retried) in rows {
            let error = CurlTransport.classify(code, detail: "detail")
            XCTAssertEqual(policy.isRetryable(.transport(error)), retried, "libcurl \(code.rawValue) → \(error)")
        }
        XCTAssertEqual(CurlTransport.classify(CURLE_SSL_CONNECT_ERROR, detail: "reset"), .connectionLost("TLS handshake failed: reset"))
        guard case .tls = CurlTransport.classify(CURLE_PEER_FAILED_VERIFICATION, detail: "x") else { return XCTFail() }
    }
}
