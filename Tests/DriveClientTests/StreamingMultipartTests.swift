@testable import DriveClient
import DriveEmulator
import DriveSupport
import Foundation
import XCTest

/// Records every request, then sends it through the real transport.
final class RecordingTransport: HTTPTransport, @unchecked Sendable {
    // @unchecked: `seen` is a Locked box; `inner` is Sendable.
    let inner: any HTTPTransport
    let seen = Locked<[TransportRequest]>([])

    init(_ inner: any HTTPTransport) { self.inner = inner }

    func perform(_ request: TransportRequest) throws -> TransportResponse {
        seen.withLock { $0.append(request) }
        return try inner.perform(request)
    }
}

/// Multipart uploads stream their file between the framing and hash it as it is read: no copy of
/// the file in memory (eight parallel 5 MiB uploads must not cost 120 MiB), no pass of its own.
final class StreamingMultipartTests: XCTestCase {
    func testAPiecewiseBodyStreamsItsPiecesInOrderAndTheObserverSeesExactlyTheFileBytes() throws {
        let emulator = try Emulator(config: EmulatorConfig(port: 0), services: EmulatorServices(providers: [TransportTestRoutes()]))
        try emulator.start()
        defer { emulator.stop() }
        let transport = try CurlTransport(options: CurlTransport.Options(connectTimeout: 5, stallTimeout: 5))
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("parts-\(UUID().uuidString)").path
        defer { unlink(path) }
        let content = TransportTestRoutes.bytes(0..<(3 << 20))
        _ = FileManager.default.createFile(atPath: path, contents: Data(content))
        let head = Array("head\r\n".utf8)
        let tail = Array("\r\ntail".utf8)
        let slice = Array(content[100..<(100 + 2_500_000)])
        for _ in 0..<2 {  // the observer starts over with each request
            let observer = StreamedMD5(size: Int64(slice.count))
            var request = TransportRequest(method: "PUT", url: emulator.baseURL + "/sink",
                                           body: .parts([.bytes(head), .file(path: path, offset: 100, length: Int64(slice.count)), .bytes([]),
                                                         .bytes(tail)]))
            request.bodyObserver = observer
            let response = try transport.perform(request)
            let echoed = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
            XCTAssertEqual(echoed["size"] as? Int, head.count + slice.count + tail.count)
            XCTAssertEqual(echoed["md5"] as? String, Digest.hex(.md5, of: head + slice + tail))
            XCTAssertEqual(observer.md5, Digest.hex(.md5, of: slice), "hashed while read, the file's bytes only")
        }
        XCTAssertEqual(TransportRequest.Body.parts([.bytes(head), .file(path: path, offset: 0, length: 10)]).length, Int64(head.count + 10))
    }

    func testAnObserverThatMissedBytesHasNoMD5AndTheCallerHashesTheFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("partial-\(UUID().uuidString)").path
        defer { unlink(path) }
        _ = FileManager.default.createFile(atPath: path, contents: Data([1, 2, 3, 4]))
        let observer = StreamedMD5(size: 4)
        observer.begin()
        [UInt8]([1, 2]).withUnsafeBytes { observer.read($0) }
        XCTAssertNil(observer.md5, "an attempt cut short")
        XCTAssertEqual(try observer.md5(orReadFrom: path), Digest.hex(.md5, of: [1, 2, 3, 4]))
        observer.begin()
        [UInt8]([1, 2, 3, 4]).withUnsafeBytes { observer.read($0) }
        XCTAssertEqual(observer.md5, Digest.hex(.md5, of: [1, 2, 3, 4]))
        let empty = StreamedMD5(size: 0)
        empty.begin()
        XCTAssertEqual(empty.md5, Digest.hex(.md5, of: [UInt8]()))
    }

    /// A create and an update at the multipart limit against the emulator: one request each, a
    /// body that holds only the framing in memory and streams the file, the emulator holding exactly
    /// those bytes (its md5 through the API, and the bytes downloaded).
    func testMultipartUploadsAtTheLimitStreamTheFileAndLandExactly() throws {
        let h = try EmulatorHarness()
        defer { h.stop() }
        let recorder = RecordingTransport(h.transport)
        let executor = DriveRequestExecutor(transport: recorder, tokens: TokenManager(grant: EmulatorHarness.grant(tokenURL: h.endpoints.tokenURL,
                                                                                                                     transport: h.transport)),
                                            pacer: nil, retryPolicy: h.executor.retryPolicy)
        let api = DriveAPI(executor: executor, endpoints: h.endpoints)
        let limit = Int(api.multipartLimit)
        let first = try h.makeFile("first", size: limit)
        let second = try h.makeFile("second", size: limit - 12_345)
        let root = try api.getFile("root").id

        let created = try api.createFile(name: "big.bin", parent: root, source: .file(path: first.path), id: try api.reserveFileID())
        XCTAssertEqual(created.md5Checksum, first.md5)
        let updated = try api.updateContent(created.id, source: .file(path: second.path))
        XCTAssertEqual(updated.md5Checksum, second.md5)

        let uploads = recorder.seen.withLock { $0 }.filter { $0.url.contains("uploadType=multipart") }
        XCTAssertEqual(uploads.count, 2, "one request each")
        for (request, size) in zip(uploads, [limit, limit - 12_345]) {
            guard case .parts(let parts) = request.body else { return XCTFail("a streamed body, not .bytes of the file's size") }
            var inMemory = 0
            var streamed: Int64 = 0
            for part in parts {
                switch part {
                case .bytes(let bytes): inMemory += bytes.count
                case .file(_, _, let length): streamed += length
                }
            }
            XCTAssertEqual(streamed, Int64(size))
            XCTAssertLessThan(inMemory, 4096, "only the framing and the metadata are in memory")
            XCTAssertNotNil((request.bodyObserver as? StreamedMD5)?.md5, "hashed while it was sent, no pass of its own")
        }
        XCTAssertEqual(h.requests("files.create.upload"), 1)
        XCTAssertEqual(h.requests("files.update.upload"), 1)
        XCTAssertEqual(try api.getFile(created.id).md5Checksum, second.md5)
        XCTAssertEqual(try api.downloadData(created.id), [UInt8](try Data(contentsOf: URL(fileURLWithPath: second.path))))
    }
}
