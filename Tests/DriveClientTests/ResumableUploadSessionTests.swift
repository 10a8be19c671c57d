import DriveClient
import DriveSupport
import XCTest

final class ResumableUploadSessionTests: XCTestCase {
    var dir: URL!

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("sessions-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    private func session(source: String, size: Int64) -> ResumableUploadSession {
        ResumableUploadSession(sessionURI: "http://drive.test/upload?upload_id=abc", sourcePath: source, size: size,
                               md5: "d41d8cd98f00b204e9800998ecf8427e", sourceModifiedNanos: nil, confirmedBytes: 262_144,
                               chunkSize: 8 << 20, fileId: "id1", isUpdate: false, metadataJSON: #"{"name":"x"}"#,
                               contentType: "application/octet-stream", method: "files.create.upload")
    }

    func testSaveAndLoadRoundTripWithPrivateMode() throws {
        let path = dir.appendingPathComponent("s.json").path
        let original = session(source: "/tmp/x", size: 10)
        try original.save(to: path)
        XCTAssertEqual(try ResumableUploadSession.load(from: path), original)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o600)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        XCTAssertEqual(leftovers, ["s.json"], "no temporary file is left behind")
    }

    func testGarbageIsAClearError() throws {
        let path = dir.appendingPathComponent("bad.json").path
        _ = FileManager.default.createFile(atPath: path, contents: Data("{not json".utf8))
        XCTAssertThrowsError(try ResumableUploadSession.load(from: path)) { error in
            guard case .invalidArgument(let info) = error as? DriveError else { return XCTFail("\(error)") }
            XCTAssertTrue(info.message.contains("not an upload session"))
        }
        XCTAssertThrowsError(try ResumableUploadSession.load(from: dir.appendingPathComponent("missing").path))
    }

    func testResumeRefusesAChangedSourceWithoutSendingAnything() throws {
        let source = dir.appendingPathComponent("src").path
        _ = FileManager.default.createFile(atPath: source, contents: Data(repeating: 1, count: 100))
        let path = dir.appendingPathComponent("s.json").path
        try session(source: source, size: 99).save(to: path)
        let transport = ScriptedTransport()
        let time = ManualTimeSource()
        let api = DriveAPI(executor: DriveRequestExecutor(transport: transport, tokens: nil, pacer: nil, time: time))
        XCTAssertThrowsError(try api.resumeUpload(from: path)) { error in
            guard case .invalidArgument(let info) = error as? DriveError else { return XCTFail("\(error)") }
            XCTAssertTrue(info.message.contains("changed"))
        }
        XCTAssertTrue(transport.requests.isEmpty)
    }
}
