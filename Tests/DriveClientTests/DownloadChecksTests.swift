@testable import DriveClient
import DriveSupport
import XCTest

/// What a download accepts from the server: exact ranges, a clamp at the file's end, one file size
/// across attempts, never more bytes than asked; for files and pinned revisions alike.
final class DownloadChecksTests: XCTestCase {
    var time: ManualTimeSource!
    var transport: ScriptedTransport!
    var api: DriveAPI!
    let content = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7) }

    override func setUp() {
        time = ManualTimeSource()
        transport = ScriptedTransport()
        let executor = DriveRequestExecutor(transport: transport, tokens: TokenManager(grant: CountingGrant(time: time), time: time),
                                            pacer: nil, retryPolicy: RetryPolicy(random: FixedRandom(value: 0.5)), time: time)
        api = DriveAPI(executor: executor, endpoints: .singleHost("http://drive.test/"))
    }

    private func collect(_ id: String = "f", revision: String? = nil, offset: Int64 = 0, length: Int64? = nil) throws -> (count: Int64, bytes: [UInt8]) {
        let seen = Locked<[UInt8]>([])
        let count = try api.download(id, revision: revision, offset: offset, length: length,
                                     to: .callback { chunk in seen.withLock { $0 += chunk }; return true })
        return (count, seen.withLock { $0 })
    }

    private func partial(_ range: ClosedRange<Int>, total: Int = 1000, body: [UInt8]? = nil) -> ScriptedTransport.Step {
        let body = body ?? Array(content[range])
        return { _ in ScriptedTransport.response(206, headers: ["content-range": "bytes \(range.lowerBound)-\(range.upperBound)/\(total)"], body: body) }
    }

    private func assertRefused(_ what: String, offset: Int64 = 0, length: Int64? = nil, revision: String? = nil,
                               line: UInt = #line, _ step: @escaping ScriptedTransport.Step) {
        setUp()
        transport.push(step)
        let seen = Locked<Int>(0)
        XCTAssertThrowsError(try api.download("f", revision: revision, offset: offset, length: length,
                                              to: .callback { chunk in seen.withLock { $0 += chunk.count }; return true }),
                             what, line: line) { error in
            guard case .malformedResponse = error as? DriveError else { return XCTFail("\(what): \(error)", line: line) }
        }
        XCTAssertEqual(seen.withLock { $0 }, 0, "\(what): nothing reaches the sink", line: line)
        XCTAssertEqual(transport.requests.count, 1, "\(what): not retried", line: line)
    }

    func testAnswersThatDoNotMatchTheAskedRangeAreRefusedBeforeTheSink() {
        assertRefused("206 ending before the asked end, not at the file's end", offset: 10, length: 20, partial(10...19))
        assertRefused("206 ending past the asked end", offset: 10, length: 20, partial(10...39))
        assertRefused("206 starting elsewhere", offset: 10, length: 20, partial(0...19))
        assertRefused("206 without Content-Range", offset: 10, length: 20) { _ in ScriptedTransport.response(206, body: [1]) }
        assertRefused("206 past the file's end", offset: 10, length: 20) { _ in
            ScriptedTransport.response(206, headers: ["content-range": "bytes 10-29/20"], body: Array(repeating: 0, count: 20))
        }
        assertRefused("206 of an open range stopping before the end", offset: 10, partial(10...99))
        assertRefused("206 from byte 0 ending elsewhere", length: 100, partial(0...49))
        assertRefused("200 longer than asked from byte 0", length: 100) { [content] _ in
            ScriptedTransport.response(200, headers: ["content-length": "1000"], body: content)
        }
        assertRefused("200 for a range past byte 0", offset: 5, length: 10) { [content] _ in ScriptedTransport.response(200, body: content) }
        assertRefused("the same checks for a revision", offset: 10, length: 20, revision: "r1", partial(10...19))
    }

    func testARangeClampedAtTheFilesEndReturnsFewerBytes() throws {
        transport.push(partial(990...999))
        let (count, bytes) = try collect(offset: 990, length: 100)
        XCTAssertEqual(count, 10)
        XCTAssertEqual(bytes, Array(content[990...]))
        XCTAssertEqual(transport.requests.first?.header("Range"), "bytes=990-1089")
    }

    func testTheSinkNeverGetsMoreThanAsked() throws {
        // A 206 whose body runs past its own Content-Range, and a 200 of unknown length.
        transport.push(partial(0...99, body: content))
        XCTAssertEqual(try collect(length: 100).bytes, Array(content[0..<100]))
        transport.push { [content] _ in ScriptedTransport.response(200, body: content) }
        let (count, bytes) = try collect(length: 64)
        XCTAssertEqual(count, 64)
        XCTAssertEqual(bytes, Array(content[0..<64]))
        XCTAssertEqual(api.executor.stats.counters(for: "files.get.media").requests, 2, "a full answer is not asked again")
    }

    func testAResumeThatMeetsAnotherFileSizeIsRefused() {
        transport.push { [content] request in
            guard case .callback(let deliver) = request.sink else { throw TransportError.other(code: 0, message: "sink") }
            request.onResponseHead?(206, ["content-range": "bytes 0-999/1000"])
            _ = content[0..<400].withUnsafeBytes { deliver($0) }
            throw TransportError.connectionLost("reset")
        }
        transport.push(partial(400...1199, total: 1200, body: Array(repeating: 9, count: 800)))
        let seen = Locked<Int>(0)
        XCTAssertThrowsError(try api.download("f", to: .callback { chunk in seen.withLock { $0 += chunk.count }; return true })) { error in
            guard case .malformedResponse(let what) = error as? DriveError else { return XCTFail("\(error)") }
            XCTAssertTrue(what.contains("the file changed"), what)
        }
        XCTAssertEqual(seen.withLock { $0 }, 400, "only the first file's bytes")
    }

    func testARevisionDownloadUsesItsOwnPathCounterAndResumes() throws {
        transport.push { [content] request in
            XCTAssertEqual(request.url, "http://drive.test/drive/v3/files/f1/revisions/r%2F7?alt=media")
            XCTAssertEqual(request.header("Range"), "bytes=100-599")
            guard case .callback(let deliver) = request.sink else { throw TransportError.other(code: 0, message: "sink") }
            request.onResponseHead?(206, ["content-range": "bytes 100-599/1000"])
            _ = content[100..<300].withUnsafeBytes { deliver($0) }
            throw TransportError.connectionLost("reset")
        }
        transport.push { [content] request in
            XCTAssertEqual(request.header("Range"), "bytes=300-599")
            return ScriptedTransport.response(206, headers: ["content-range": "bytes 300-599/1000"], body: Array(content[300..<600]))
        }
        let (count, bytes) = try collect("f1", revision: "r/7", offset: 100, length: 500)
        XCTAssertEqual(count, 500)
        XCTAssertEqual(bytes, Array(content[100..<600]))
        let counters = api.executor.stats.counters(for: "revisions.get.media")
        XCTAssertEqual(counters.requests, 2)
        XCTAssertEqual(counters.retries, 1)
        XCTAssertEqual(api.executor.stats.counters(for: "files.get.media").requests, 0)
    }

    func testMediaRequestsDoNotAskForCompression() throws {
        transport.push(partial(0...9))
        _ = try collect(length: 10)
        XCTAssertEqual(transport.requests.first?.acceptsCompressedResponse, false)
        transport.push(status: 200, json: "{}")
        _ = try api.executor.execute("files.get", TransportRequest(method: "GET", url: "http://drive.test/x"))
        XCTAssertEqual(transport.requests.last?.acceptsCompressedResponse, true, "JSON answers may be compressed")
    }

    func testRangeCheckTable() {
        typealias Row = (start: Int64, end: Int64?, status: Int, headers: [String: String], known: Int64?, total: Int64??)
        // total: .some(x) = accepted stating size x; nil = refused.
        let rows: [Row] = [
            (0, nil, 200, [:], nil, .some(nil)),
            (0, nil, 200, ["content-length": "50"], nil, .some(50)),
            (0, 99, 200, ["content-length": "50"], nil, .some(50)),
            (0, 99, 200, ["content-length": "101"], nil, nil),
            (0, nil, 200, ["content-length": "50"], 60, nil),
            (5, nil, 200, [:], nil, nil),
            (5, 9, 206, ["content-range": "bytes 5-9/100"], nil, .some(100)),
            (5, 9, 206, ["content-range": "bytes 5-9/*"], nil, .some(nil)),
            (5, 9, 206, ["content-range": "bytes 5-7/8"], nil, .some(8)),
            (5, 9, 206, ["content-range": "bytes 5-7/*"], nil, nil),
            (5, 9, 206, ["content-range": "bytes 5-7/100"], nil, nil),
            (5, 9, 206, ["content-range": "bytes 5-10/100"], nil, nil),
            (5, 9, 206, ["content-range": "bytes 6-9/100"], nil, nil),
            (5, 9, 206, ["content-range": "bytes 5-9/100"], 100, .some(100)),
            (5, 9, 206, ["content-range": "bytes 5-9/100"], 200, nil),
            (5, nil, 206, ["content-range": "bytes 5-99/100"], nil, .some(100)),
            (5, nil, 206, ["content-range": "bytes 5-50/100"], nil, nil),
            (5, nil, 206, ["content-range": "bytes 5-9"], nil, nil),
            (5, nil, 206, ["content-range": "items 5-9/10"], nil, nil),
            (5, nil, 206, [:], nil, nil),
            (0, nil, 204, [:], nil, .some(nil)),
            (3, nil, 204, [:], nil, nil),
        ]
        for row in rows {
            let result = DriveAPI.rangeCheck(start: row.start, end: row.end, status: row.status, headers: row.headers, knownTotal: row.known)
            let label = "\(row.start)-\(row.end.map(String.init) ?? "") \(row.status) \(row.headers) known \(row.known.map(String.init) ?? "-")"
            switch (result, row.total) {
            case (.success(let total), .some(let expected)): XCTAssertEqual(total, expected ?? row.known, label)
            case (.failure, nil): break
            case (.success(let total), nil): XCTFail("\(label): accepted (total \(String(describing: total)))")
            case (.failure(let problem), .some): XCTFail("\(label): refused: \(problem.message)")
            }
        }
    }
}
