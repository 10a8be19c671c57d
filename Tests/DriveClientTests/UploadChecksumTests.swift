import DriveClient
import DriveSupport
import XCTest

/// Every upload path checks Drive's final `md5Checksum` against the source's md5 (a scripted server
/// that answers with another, or with none, must be caught on each).
final class UploadChecksumTests: XCTestCase {
    var transport: ScriptedTransport!
    var api: DriveAPI!
    let wrong = "00000000000000000000000000000000"

    override func setUp() {
        transport = ScriptedTransport()
        let executor = DriveRequestExecutor(transport: transport, tokens: nil, pacer: nil, retryPolicy: .none)
        api = DriveAPI(executor: executor, endpoints: .singleHost("http://drive.test/"), chunkSize: 256 * 1024,
                       multipartLimit: 1000, idBatchSize: 3)
    }

    private func fileJSON(_ id: String, md5: String?, size: Int) -> String {
        #"{"id":"\#(id)","name":"f","mimeType":"application/octet-stream","parents":["root1"],"size":"\#(size)"\#(md5.map { #","md5Checksum":"\#($0)""# } ?? "")}"#
    }

    private func assertMismatch(_ reported: String?, _ content: [UInt8], _ what: String, _ call: () throws -> DriveFile,
                                line: UInt = #line) {
        XCTAssertThrowsError(try call(), what, line: line) { error in
            XCTAssertEqual(error as? DriveError, .checksumMismatch(expected: Digest.hex(.md5, of: content), actual: reported ?? "(none reported)"),
                           what, line: line)
        }
    }

    func testEveryUploadPathChecksTheServersMD5() throws {
        let small: [UInt8] = [1, 2, 3]
        let large = [UInt8](repeating: 5, count: 300 * 1024)
        for reported in [wrong, nil] {
            // Multipart create.
            // (Caller IDs: the pool's generateIds is not part of this script.)
            transport.push(status: 200, json: fileJSON("c", md5: reported, size: small.count))
            assertMismatch(reported, small, "multipart create") { try api.createFile(name: "f", parent: "root1", source: .bytes(small), id: "c") }
            // Resumable create: initiation, two chunks.
            transport.push(status: 200, headers: ["location": "http://drive.test/s/1"])
            transport.push(status: 308, headers: ["range": "bytes=0-262143"])
            transport.push(status: 200, json: fileJSON("b", md5: reported, size: large.count))
            assertMismatch(reported, large, "resumable create") { try api.createFile(name: "f", parent: "root1", source: .bytes(large), id: "b") }
            // Multipart update.
            transport.push(status: 200, json: fileJSON("x", md5: reported, size: small.count))
            assertMismatch(reported, small, "multipart update") { try api.updateContent("x", source: .bytes(small)) }
            // Resumable update.
            transport.push(status: 200, headers: ["location": "http://drive.test/s/2"])
            transport.push(status: 308, headers: ["range": "bytes=0-262143"])
            transport.push(status: 200, json: fileJSON("x", md5: reported, size: large.count))
            assertMismatch(reported, large, "resumable update") { try api.updateContent("x", source: .bytes(large)) }
            // A resumable create whose ID is taken by its own earlier upload (409 at initiation):
            // the found file is checked too.
            transport.push(status: 409, json: #"{"error":{"code":409,"message":"A file already exists with the provided ID.","errors":[{"reason":"fileIdInUse","message":"x"}]}}"#)
            transport.push(status: 200, json: fileJSON("a", md5: reported, size: large.count))
            XCTAssertThrowsError(try api.createFile(name: "f", parent: "root1", source: .bytes(large), id: "a")) { error in
                switch error as? DriveError {
                case .conflict, .checksumMismatch: break  // another md5: not ours; none reported: unverifiable
                default: XCTFail("\(error)")
                }
            }
            XCTAssertEqual(transport.remainingSteps, 0)
        }
        // A resumable upload persisted by another process: resumeUpload checks too.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("md5-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("src").path
        FileManager.default.createFile(atPath: path, contents: Data(large))
        let sessionFile = dir.appendingPathComponent("session").path
        transport.push(status: 200, json: #"{"ids":["p","q","r"]}"#)
        transport.push(status: 200, headers: ["location": "http://drive.test/s/3"])
        _ = try api.beginUpload(name: "f", parent: "root1", path: path, sessionFile: sessionFile)
        transport.push(status: 308, headers: ["range": "bytes=0-262143"])  // the probe
        transport.push(status: 200, json: fileJSON("r", md5: wrong, size: large.count))
        assertMismatch(wrong, large, "resumeUpload") { try api.resumeUpload(from: sessionFile) }
    }
}
