@testable import DriveClient
import DriveSupport
import Foundation
import XCTest

/// The fake's writes behave as DriveAPI's (what the upload queue and the core rely on).
final class FakeDriveBackendWriteTests: XCTestCase {
    func testCreatesUnderReservedIDsAndARepeatedCreateAnswersTheSameFile() throws {
        let fake = FakeDriveBackend()
        let id = try fake.reserveFileID()
        let bytes = Array("hello".utf8)
        let made = try fake.createFile(name: "a.txt", parent: "root", mimeType: "text/plain", source: .bytes(bytes), modifiedTime: 5_000,
                                       sessionFile: nil, id: id, appProperties: ["mode": "644"])
        XCTAssertEqual(made.id, id)
        XCTAssertEqual(made.md5Checksum, Digest.hex(.md5, of: bytes))
        XCTAssertEqual(made.modifiedTime, 5_000)
        XCTAssertEqual(made.appProperties, ["mode": "644"])
        XCTAssertNotNil(made.headRevisionId)
        let again = try fake.createFile(name: "a.txt", parent: "root", mimeType: "text/plain", source: .bytes(bytes), modifiedTime: 5_000,
                                        sessionFile: nil, id: id, appProperties: ["mode": "644"])
        XCTAssertEqual(again.id, id)
        XCTAssertEqual(fake.children(of: "root").count, 1, "one file for one ID")
        XCTAssertEqual(fake.requests["files.create.upload"], 2)
        XCTAssertEqual(fake.requests["files.get"], 1, "the repeated create fetched the file, as DriveAPI does")
        XCTAssertThrowsError(try fake.createFile(name: "other.txt", parent: "root", mimeType: nil, source: .bytes(bytes),
                                                 modifiedTime: nil, sessionFile: nil, id: id, appProperties: nil)) { error in
            XCTAssertEqual((error as? DriveError)?.reason, "fileIdInUse")
        }
        XCTAssertThrowsError(try fake.createFile(name: "x", parent: "root", mimeType: nil, source: .bytes([]), modifiedTime: nil,
                                                 sessionFile: nil, id: "made-up", appProperties: nil)) { error in
            XCTAssertEqual((error as? DriveError)?.status, 400, "an ID must come from reserveFileID")
        }
    }

    func testIDsComeInBatchesOfAThousand() throws {
        let fake = FakeDriveBackend()
        var ids = Set<String>()
        for _ in 0..<1001 { ids.insert(try fake.reserveFileID()) }
        XCTAssertEqual(ids.count, 1001)
        XCTAssertEqual(fake.requests["files.generateIds"], 2)
    }

    func testUploadsReadFilesAndMakeANewRevisionPerContentChange() throws {
        let fake = FakeDriveBackend()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("fake-writes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("content").path
        try Data("one".utf8).write(to: URL(fileURLWithPath: path))
        let first = try fake.createFile(name: "f", parent: "root", mimeType: nil, source: .file(path: path), modifiedTime: nil,
                                        sessionFile: nil, id: try fake.reserveFileID(), appProperties: nil)
        try Data("two!".utf8).write(to: URL(fileURLWithPath: path))
        let second = try fake.updateContent(first.id, source: .file(path: path), mimeType: nil, name: "g", modifiedTime: 9_000,
                                            sessionFile: nil, appProperties: ["k": "v"])
        XCTAssertNotEqual(first.headRevisionId, second.headRevisionId)
        XCTAssertEqual(second.name, "g")
        XCTAssertEqual(second.size, 4)
        XCTAssertEqual(fake.content(of: first.id), Array("two!".utf8))
        let renamed = try fake.updateMetadata(first.id, name: "h", mimeType: nil, modifiedTime: nil, appProperties: ["j": "w"])
        XCTAssertEqual(renamed.appProperties, ["k": "v", "j": "w"], "appProperties are merged")
        XCTAssertEqual(renamed.headRevisionId, second.headRevisionId, "metadata changes keep the revision")
        XCTAssertEqual(fake.requests["files.update.upload"], 1)
        XCTAssertEqual(fake.requests["files.update"], 1)
    }

    func testFaultsBeforeAndAfterLandingAndTheChecksum() throws {
        let fake = FakeDriveBackend()
        let id = try fake.reserveFileID()
        fake.failNext(method: "files.create.upload", count: 2)
        for _ in 0..<2 {
            XCTAssertThrowsError(try fake.createFile(name: "a", parent: "root", mimeType: nil, source: .bytes([1]), modifiedTime: nil,
                                                     sessionFile: nil, id: id, appProperties: nil))
        }
        XCTAssertNil(fake.file(id), "a failure before landing changes nothing")
        fake.failNext(method: "files.create.upload", afterLanding: true)
        XCTAssertThrowsError(try fake.createFile(name: "a", parent: "root", mimeType: nil, source: .bytes([1]), modifiedTime: nil,
                                                 sessionFile: nil, id: id, appProperties: nil))
        XCTAssertNotNil(fake.file(id), "a lost answer: the file landed")
        XCTAssertEqual(try fake.createFile(name: "a", parent: "root", mimeType: nil, source: .bytes([1]), modifiedTime: nil,
                                           sessionFile: nil, id: id, appProperties: nil).id, id)
        XCTAssertEqual(fake.children(of: "root").count, 1)
        fake.corruptNextUpload()
        XCTAssertThrowsError(try fake.updateContent(id, source: .bytes([2]), mimeType: nil, name: nil, modifiedTime: nil,
                                                    sessionFile: nil, appProperties: nil)) { error in
            guard case .checksumMismatch = error as? DriveError else { return XCTFail("\(error)") }
        }
        let phases = Locked<[String]>([])
        fake.writeHook = { method, phase, _ in phases.withLock { $0.append("\(method) \(phase)") } }
        _ = try fake.trash(id)
        XCTAssertEqual(phases.withLock { $0 }, ["files.update before", "files.update after"])
    }

    func testTrashIsInheritedDeleteAndEmptyTrashRemoveTrees() throws {
        let fake = FakeDriveBackend()
        let folder = try fake.createFolder(name: "d", parent: "root", modifiedTime: nil, id: try fake.reserveFileID(), appProperties: nil)
        let inner = try fake.createFile(name: "x", parent: folder.id, mimeType: nil, source: .bytes([1]), modifiedTime: nil,
                                        sessionFile: nil, id: nil, appProperties: nil)
        let other = try fake.createEmpty(name: "y", parent: "root", mimeType: "text/plain", modifiedTime: nil, id: nil, appProperties: nil)
        _ = try fake.trash(folder.id)
        XCTAssertEqual(fake.file(inner.id)?.trashed, true)
        _ = try fake.untrash(folder.id)
        XCTAssertEqual(fake.file(inner.id)?.trashed, false)
        let moved = try fake.move(inner.id, addParent: "root", removeParent: folder.id, newName: "z")
        XCTAssertEqual(moved.parents, [fake.rootID])
        XCTAssertEqual(moved.name, "z")
        _ = try fake.trash(folder.id)
        try fake.emptyTrash()
        XCTAssertNil(fake.file(folder.id))
        XCTAssertNotNil(fake.file(inner.id), "moved out before the trash was emptied")
        try fake.delete(other.id)
        XCTAssertNil(fake.file(other.id))
        XCTAssertThrowsError(try fake.delete(other.id)) { XCTAssertEqual(($0 as? DriveError)?.status, 404) }
        let changes = try fake.changes(pageToken: "1", pageSize: 1000).changes
        XCTAssertTrue(changes.contains { $0.fileId == other.id && $0.removed })
        XCTAssertEqual(fake.requests["files.delete"], 2)
        XCTAssertEqual(fake.requests["files.emptyTrash"], 1)
    }
}
