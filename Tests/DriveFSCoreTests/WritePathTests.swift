import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// The write side of the core over the in-memory Drive: every operation, the orders that must
/// cost nothing (a file renamed or removed before its upload), lazy copies, conflicts, and what
/// Drive holds at the end (content, names, appProperties) and how many requests it took.
final class WritePathTests: XCTestCase {
    private var harness: CoreHarness!
    private var fake: FakeDriveBackend { harness.backend }
    private var fs: DriveFilesystem { harness.fs }

    override func setUpWithError() throws {
        harness = try CoreHarness { $0.readOnly = false }
        try harness.mount()
        fake.resetCounters()
    }

    override func tearDown() {
        harness?.remove()
        harness = nil
    }

    // MARK: Kernel-style helpers (CoreHarness's)

    private func create(_ parent: Inode, _ name: String, mode: UInt32 = 0o644) throws -> CreatedFile {
        try harness.create(parent, name, mode: mode)
    }

    private func open(_ inode: Inode, _ flags: Int32) throws -> UInt64 { try harness.open(inode, flags) }

    @discardableResult
    private func write(_ inode: Inode, _ handle: UInt64, _ bytes: [UInt8], at offset: Int64) throws -> Int {
        try harness.write(inode, handle, bytes, at: offset)
    }

    private func close(_ inode: Inode, _ handle: UInt64) throws { try harness.close(inode, handle) }

    @discardableResult
    private func writeFile(_ parent: Inode, _ name: String, _ bytes: [UInt8]) throws -> Inode {
        try harness.writeFile(parent, name, bytes)
    }

    private func drain(file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(fs.drainUploads(timeout: 60), "uploads did not drain: \(fs.uploadStatus)", file: file, line: line)
    }

    private func driveChild(_ name: String, in parent: String? = nil) -> DriveFile? {
        fake.children(of: parent ?? fake.rootID).first { $0.name == name }
    }

    // MARK: Creating and writing

    func testANewFileIsUploadedOnceWithItsBytesInOneRequest() throws {
        let bytes = CoreHarness.pattern(300_000, seed: 1)
        try writeFile(.root, "new.bin", bytes)
        drain()
        let file = try XCTUnwrap(driveChild("new.bin"), "the file is not on Drive")
        XCTAssertEqual(fake.content(of: file.id), bytes)
        XCTAssertEqual(fake.children(of: fake.rootID).filter { $0.name == "new.bin" }.count, 1, "a duplicate was made")
        let creates = fake.requests.filter { $0.key.hasPrefix("files.create") }.values.reduce(0, +)
        XCTAssertEqual(creates, 1, "requests: \(fake.requests)")
    }

    func testANewFileShowsInItsFolderAtOnceWithItsSize() throws {
        let created = try create(.root, "visible.txt")
        try write(created.attributes.inode, created.opened.handle, Array("hello".utf8), at: 0)
        let names = try harness.listPlus(.root).map(\.entry.name)
        XCTAssertTrue(names.contains("visible.txt"), "listing: \(names)")
        let attributes = try harness.lookup(.root, "visible.txt")
        XCTAssertEqual(attributes.size, 5)
        XCTAssertEqual(attributes.inode, created.attributes.inode)
        try close(created.attributes.inode, created.opened.handle)
        // Still there after a listing of Drive that does not show it yet, and after it landed.
        XCTAssertTrue(try harness.listPlus(.root).map(\.entry.name).contains("visible.txt"))
        drain()
        try fs.pollChanges()
        XCTAssertEqual(try harness.lookup(.root, "visible.txt").inode, created.attributes.inode, "the inode changed after the upload")
        XCTAssertEqual(try harness.read(created.attributes.inode), Array("hello".utf8))
    }

    func testReadsOfAFileBeingWrittenSeeWhatWasWritten() throws {
        let created = try create(.root, "live.txt")
        let inode = created.attributes.inode
        try write(inode, created.opened.handle, Array("abcdef".utf8), at: 0)
        XCTAssertEqual(try harness.read(inode, handle: created.opened.handle, offset: 0, size: 100), Array("abcdef".utf8))
        let reader = try open(inode, O_RDONLY)
        XCTAssertEqual(try harness.read(inode, handle: reader, offset: 2, size: 2), Array("cd".utf8))
        fs.release(inode, handle: reader)
        try close(inode, created.opened.handle)
        XCTAssertEqual(try harness.read(inode), Array("abcdef".utf8), "after close, before the upload landed")
    }

    func testReadingBackWhatWasUploadedDownloadsNothing() throws {
        let bytes = CoreHarness.pattern(700_000, seed: 9)
        let inode = try writeFile(.root, "back.bin", bytes)
        drain()
        XCTAssertEqual(fake.children(of: fake.rootID).first { $0.name == "back.bin" }.flatMap { fake.content(of: $0.id) }, bytes)
        fake.resetCounters()
        XCTAssertEqual(try harness.read(inode), bytes)
        XCTAssertEqual(fake.downloadedBytes, 0, "the uploaded copy should serve reads of the new version")
    }

    func testOpenWithTruncateFetchesNothing() throws {
        let id = fake.addFile("big.bin", content: CoreHarness.pattern(2 << 20, seed: 2))
        let inode = try harness.lookup(.root, "big.bin").inode
        fake.resetCounters()
        let handle = try open(inode, O_WRONLY | O_TRUNC)
        try write(inode, handle, Array("short".utf8), at: 0)
        try close(inode, handle)
        drain()
        XCTAssertEqual(fake.downloadedBytes, 0, "a truncating open downloaded the old content")
        XCTAssertEqual(fake.content(of: id), Array("short".utf8))
    }

    /// A shell's `echo x > file`: the file opened with O_TRUNC, the descriptor duplicated and
    /// closed (a flush, not the last close), the bytes written through the duplicate, then the last
    /// close. One upload, of the bytes: before, the first flush's empty content went to Drive at
    /// once (an empty revision, a write spent, other machines shown an empty file).
    func testAFlushThatIsNotTheLastCloseSendsNothingBeforeTheLastClose() throws {
        harness.remove()
        // A settle longer than any stall of this machine: only the release may end it.
        harness = try CoreHarness {
            $0.readOnly = false
            $0.newFileSettle = 600
        }
        try harness.mount()
        let id = fake.addFile("log.txt", content: Array("old content\n".utf8))
        let inode = try harness.lookup(.root, "log.txt").inode
        fake.resetCounters()
        let handle = try open(inode, O_WRONLY | O_TRUNC)
        try BlockingCall.wait { fs.flush(inode, handle: handle, reply: $0) }
        let queue = try XCTUnwrap(fs.uploads as? UploadQueue)
        // Before the fix the empty content's upload could start here at once.
        XCTAssertTrue(queue.isSettling(id), "what the flush committed waits for the last close: \(fs.uploadStatus)")
        try write(inode, handle, Array("new\n".utf8), at: 0)
        try close(inode, handle)
        waitUntil("the last close's upload waits its settle no longer: \(fs.uploadStatus)") {
            fake.content(of: id) == Array("new\n".utf8)
        }
        XCTAssertFalse(queue.isSettling(id))
        drain()
        XCTAssertEqual(try fake.listRevisions(id).map(\.size), [12, 4], "one new revision, no empty one")
    }

    func testAPartialWriteKeepsTheRestOfTheFile() throws {
        var original = CoreHarness.pattern(1 << 20, seed: 3)
        let id = fake.addFile("edit.bin", content: original)
        let inode = try harness.lookup(.root, "edit.bin").inode
        let handle = try open(inode, O_RDWR)
        try write(inode, handle, Array(repeating: 0xAB, count: 1000), at: 300_000)
        try close(inode, handle)
        drain()
        original.replaceSubrange(300_000..<301_000, with: Array(repeating: 0xAB, count: 1000))
        XCTAssertEqual(fake.content(of: id), original)
        XCTAssertEqual(fake.file(id)?.parents, [fake.rootID])
        XCTAssertNil(driveChild("edit (conflicted copy"), "our own base taken for a conflict")
    }

    func testWritesPastTheEndLeaveZerosAndTruncateCuts() throws {
        let created = try create(.root, "sparse.bin")
        let inode = created.attributes.inode
        try write(inode, created.opened.handle, [1, 2, 3], at: 500_000)
        try close(inode, created.opened.handle)
        _ = try BlockingCall.wait { fs.setAttributes(inode, AttributeChanges(size: 400_001), handle: nil, reply: $0) }
        drain()
        let file = try XCTUnwrap(driveChild("sparse.bin"))
        XCTAssertEqual(fake.content(of: file.id), [UInt8](repeating: 0, count: 400_001))
        XCTAssertEqual(try harness.lookup(.root, "sparse.bin").size, 400_001)
    }

    func testTruncateOfAClosedFileOnDrive() throws {
        let id = fake.addFile("cut.txt", content: Array("0123456789".utf8))
        let inode = try harness.lookup(.root, "cut.txt").inode
        let attributes = try BlockingCall.wait { fs.setAttributes(inode, AttributeChanges(size: 4), handle: nil, reply: $0) }
        XCTAssertEqual(attributes.size, 4)
        drain()
        XCTAssertEqual(fake.content(of: id), Array("0123".utf8))
    }

    func testAppendsFromTwoHandlesBothLand() throws {
        let created = try create(.root, "log.txt")
        let inode = created.attributes.inode
        try write(inode, created.opened.handle, Array("one\n".utf8), at: 0)
        let second = try open(inode, O_WRONLY | O_APPEND)
        try write(inode, second, Array("two\n".utf8), at: 4)
        try close(inode, second)
        try write(inode, created.opened.handle, Array("three\n".utf8), at: 8)
        try close(inode, created.opened.handle)
        drain()
        let file = try XCTUnwrap(driveChild("log.txt"))
        XCTAssertEqual(fake.content(of: file.id).map { String(decoding: $0, as: UTF8.self) }, "one\ntwo\nthree\n")
    }

    func testAFileWrittenAgainAfterItsUploadIsUploadedAgain() throws {
        let inode = try writeFile(.root, "twice.txt", Array("first".utf8))
        drain()
        let handle = try open(inode, O_WRONLY | O_TRUNC)
        try write(inode, handle, Array("second".utf8), at: 0)
        try close(inode, handle)
        drain()
        let files = fake.children(of: fake.rootID).filter { $0.name.hasPrefix("twice") }
        XCTAssertEqual(files.map(\.name), ["twice.txt"], "expected one file, found \(files.map(\.name))")
        XCTAssertEqual(fake.content(of: files[0].id), Array("second".utf8))
    }

    // MARK: Orders that cost nothing

    func testAFileRenamedBeforeItsUploadLandsOnceUnderItsFinalName() throws {
        let folder = try BlockingCall.wait { fs.makeDirectory(parent: .root, name: "dest", mode: 0o755, reply: $0) }
        let created = try create(.root, ".tmp-1234")
        try write(created.attributes.inode, created.opened.handle, Array("content".utf8), at: 0)
        // Renamed while still open (not committed): the upload carries the final name.
        try BlockingCall.wait { fs.rename(parent: .root, name: ".tmp-1234", newParent: folder.inode, newName: "final.txt", flags: 0,
                                          reply: $0) }
        try close(created.attributes.inode, created.opened.handle)
        drain()
        let folderID = try XCTUnwrap(driveChild("dest")?.id)
        XCTAssertEqual(fake.children(of: folderID).map(\.name), ["final.txt"])
        XCTAssertNil(driveChild(".tmp-1234"))
        XCTAssertEqual(fake.requests["files.update"] ?? 0, 0, "a move was sent for a file not on Drive: \(fake.requests)")
        XCTAssertEqual(try harness.lookup(folder.inode, "final.txt").inode, created.attributes.inode, "the inode changed on rename")
    }

    func testAFileRemovedBeforeItWasCommittedCostsNoUpload() throws {
        let created = try create(.root, "scratch")
        try write(created.attributes.inode, created.opened.handle, Array("x".utf8), at: 0)
        try BlockingCall.wait { fs.removeFile(parent: .root, name: "scratch", reply: $0) }
        try close(created.attributes.inode, created.opened.handle)
        drain()
        XCTAssertNil(driveChild("scratch"))
        let uploads = fake.requests.filter { $0.key.contains("create") || $0.key.contains("update") || $0.key == "files.delete" }
        XCTAssertTrue(uploads.isEmpty, "requests: \(fake.requests)")
        XCTAssertThrowsError(try harness.lookup(.root, "scratch"))
    }

    func testRsyncStyleSaveCarriesTimeAndModeInTheUpload() throws {
        let created = try create(.root, ".data.XXXXXX", mode: 0o600)
        let inode = created.attributes.inode
        try write(inode, created.opened.handle, Array("payload".utf8), at: 0)
        try close(inode, created.opened.handle)
        let mtime: Int64 = 1_600_000_000_000
        _ = try BlockingCall.wait {
            fs.setAttributes(inode, AttributeChanges(permissions: 0o755, modified: .millis(mtime)), handle: nil, reply: $0)
        }
        try BlockingCall.wait { fs.rename(parent: .root, name: ".data.XXXXXX", newParent: .root, newName: "data", flags: 0, reply: $0) }
        XCTAssertEqual(try harness.lookup(.root, "data").permissions, 0o755)
        XCTAssertEqual(try harness.lookup(.root, "data").modifiedMillis, mtime)
        drain()
        let file = try XCTUnwrap(driveChild("data"), "on Drive: \(fake.children(of: fake.rootID).map(\.name))")
        XCTAssertEqual(fake.content(of: file.id), Array("payload".utf8))
        XCTAssertEqual(file.modifiedTime, mtime)
        XCTAssertEqual(file.appProperties?["drivefs.mode"], "755")
    }

    // MARK: Names

    func testMkdirRmdirAndNotEmpty() throws {
        let folder = try BlockingCall.wait { fs.makeDirectory(parent: .root, name: "box", mode: 0o755, reply: $0) }
        XCTAssertEqual(folder.kind, .directory)
        XCTAssertEqual(driveChild("box")?.isFolder, true)
        try writeFile(folder.inode, "inside", Array("1".utf8))
        XCTAssertThrowsError(try BlockingCall.wait { fs.removeDirectory(parent: .root, name: "box", reply: $0) }) { error in
            XCTAssertEqual(error as? FilesystemError, .notEmpty)
        }
        XCTAssertThrowsError(try BlockingCall.wait { fs.makeDirectory(parent: .root, name: "box", mode: 0o755, reply: $0) }) { error in
            XCTAssertEqual(error as? FilesystemError, .exists)
        }
        try BlockingCall.wait { fs.removeFile(parent: folder.inode, name: "inside", reply: $0) }
        try BlockingCall.wait { fs.removeDirectory(parent: .root, name: "box", reply: $0) }
        drain()
        XCTAssertNil(driveChild("box"))
        XCTAssertEqual(fake.children(of: fake.rootID, includingTrashed: true).first { $0.name == "box" }?.trashed, true,
                       "rmdir should move the folder to the trash")
    }

    func testRenameReplacingAFileTrashesTheOldOne() throws {
        let oldID = fake.addFile("target.txt", content: Array("old".utf8))
        _ = try harness.lookup(.root, "target.txt")
        let inode = try writeFile(.root, "source.txt", Array("new".utf8))
        drain()
        try BlockingCall.wait { fs.rename(parent: .root, name: "source.txt", newParent: .root, newName: "target.txt", flags: 0,
                                          reply: $0) }
        XCTAssertEqual(fake.file(oldID)?.trashed, true, "the replaced file should be in the trash")
        let shown = try harness.lookup(.root, "target.txt")
        XCTAssertEqual(shown.inode, inode)
        XCTAssertEqual(try harness.read(shown.inode), Array("new".utf8))
        XCTAssertThrowsError(try harness.lookup(.root, "source.txt"))
        let live = fake.children(of: fake.rootID).filter { $0.name == "target.txt" }
        XCTAssertEqual(live.count, 1)
        XCTAssertThrowsError(try BlockingCall.wait {
            fs.rename(parent: .root, name: "target.txt", newParent: .root, newName: "x", flags: 2, reply: $0)
        }, "RENAME_EXCHANGE is not supported")
    }

    /// The source takes the name first, the target is trashed after (a crash in between leaves
    /// both, never neither: RenameCrashTests); when the trash fails, the rename fails as a whole.
    func testARenameOverAFileThatCannotBeTrashedFailsAndPutsTheSourceBack() throws {
        let oldID = fake.addFile("target.txt", content: Array("old".utf8))
        let sourceID = fake.addFile("source.txt", content: Array("new".utf8))
        _ = try harness.lookup(.root, "target.txt")
        let inode = try harness.lookup(.root, "source.txt").inode
        fake.resetCounters()
        // The rename (the first files.update) lands; the trash (the second) fails.
        fake.failNext(method: "files.update", after: 1)
        XCTAssertThrowsError(try harness.rename(.root, "source.txt", to: .root, "target.txt"))
        XCTAssertEqual(fake.requests["files.update"], 3, "rename, trash, rename back: \(fake.requests)")
        XCTAssertEqual(fake.file(sourceID)?.name, "source.txt", "put back")
        XCTAssertEqual(fake.file(oldID)?.trashed, false, "the target stays")
        XCTAssertEqual(try harness.lookup(.root, "source.txt").inode, inode)
        XCTAssertEqual(try harness.read(try harness.lookup(.root, "target.txt").inode), Array("old".utf8))
    }

    /// The rename's request lands but its answer is lost and the retry refused (a reset, then a
    /// 401): Drive is asked, the source holds the name, so the rename goes on and the old file goes
    /// to the trash: never both under the name (the chaos run's duplicate, seed 166019463).
    func testARenameOverAFileWhoseRequestLandedButFailedIsFinished() throws {
        let oldID = fake.addFile("target.txt", content: Array("old".utf8))
        let sourceID = fake.addFile("source.txt", content: Array("new".utf8))
        _ = try harness.lookup(.root, "target.txt")
        let inode = try harness.lookup(.root, "source.txt").inode
        fake.failNext(method: "files.update", afterLanding: true)
        try harness.rename(.root, "source.txt", to: .root, "target.txt")
        XCTAssertEqual(fake.children(of: fake.rootID).map(\.name), ["target.txt"])
        XCTAssertEqual(fake.file(sourceID)?.name, "target.txt")
        XCTAssertEqual(fake.file(oldID)?.trashed, true, "the old file in the trash")
        XCTAssertEqual(try harness.lookup(.root, "target.txt").inode, inode)
        XCTAssertEqual(try harness.read(inode), Array("new".utf8))
    }

    func testARenameOfAQueuedFileOverAFileThatCannotBeTrashedUploadsItUnderItsOwnName() throws {
        let oldID = fake.addFile("target.txt", content: Array("old".utf8))
        let target = try harness.lookup(.root, "target.txt").inode
        // Open: the rename is not an editor's save (new content for it), but a rename over it.
        let reader = try harness.open(target, O_RDONLY)
        try writeFile(.root, "source.txt", Array("new".utf8))
        // Not on Drive yet: the rename is in its queued upload, the trash fails, the rename is taken
        // back. (Landed already: the rename itself is this request, and fails.) Both end the same.
        fake.failNext(method: "files.update")
        XCTAssertThrowsError(try harness.rename(.root, "source.txt", to: .root, "target.txt"))
        try harness.close(target, reader)
        drain()
        XCTAssertEqual(fake.children(of: fake.rootID).map(\.name), ["source.txt", "target.txt"])
        XCTAssertEqual(fake.file(oldID)?.trashed, false)
        XCTAssertEqual(fake.content(of: try XCTUnwrap(driveChild("source.txt")).id), Array("new".utf8))
        XCTAssertEqual(try harness.read(try harness.lookup(.root, "source.txt").inode), Array("new".utf8))
    }

    func testAFolderCannotMoveIntoItself() throws {
        let a = try BlockingCall.wait { fs.makeDirectory(parent: .root, name: "a", mode: 0o755, reply: $0) }
        let b = try BlockingCall.wait { fs.makeDirectory(parent: a.inode, name: "b", mode: 0o755, reply: $0) }
        XCTAssertThrowsError(try BlockingCall.wait { fs.rename(parent: .root, name: "a", newParent: b.inode, newName: "a", flags: 0,
                                                               reply: $0) }) { error in
            XCTAssertEqual(error as? FilesystemError, .invalidArgument)
        }
    }

    func testRenameAcrossFoldersOnDriveIsOneMove() throws {
        let id = fake.addFile("doc.txt", content: Array("d".utf8))
        let inode = try harness.lookup(.root, "doc.txt").inode
        let folder = try BlockingCall.wait { fs.makeDirectory(parent: .root, name: "archive", mode: 0o755, reply: $0) }
        fake.resetCounters()
        try BlockingCall.wait { fs.rename(parent: .root, name: "doc.txt", newParent: folder.inode, newName: "doc-2020.txt", flags: 0,
                                          reply: $0) }
        XCTAssertEqual(fake.requests["files.update"], 1, "requests: \(fake.requests)")
        let moved = try XCTUnwrap(fake.file(id))
        XCTAssertEqual(moved.name, "doc-2020.txt")
        XCTAssertEqual(moved.parents, [try XCTUnwrap(driveChild("archive")?.id)])
        XCTAssertEqual(try harness.lookup(folder.inode, "doc-2020.txt").inode, inode)
    }

    func testSymbolicLinksAreKeptInAppProperties() throws {
        let link = try BlockingCall.wait { fs.symbolicLink(parent: .root, name: "latest", target: "releases/v1.2/bin", reply: $0) }
        XCTAssertEqual(link.kind, .symbolicLink)
        XCTAssertEqual(try BlockingCall.wait { fs.readLink(link.inode, reply: $0) }, "releases/v1.2/bin")
        drain()
        let file = try XCTUnwrap(driveChild("latest"))
        XCTAssertEqual(file.appProperties?["drivefs.link"], "releases/v1.2/bin")
    }

    func testHardLinksArePermissionErrors() throws {
        let inode = try writeFile(.root, "one", Array("1".utf8))
        XCTAssertThrowsError(try BlockingCall.wait { fs.link(inode, newParent: .root, newName: "two", reply: $0) }) { error in
            XCTAssertEqual(error as? FilesystemError, .notPermitted)
        }
    }

    func testChmodOfAFileOnDriveIsOneUpdate() throws {
        let id = fake.addFile("tool.sh", content: Array("#!/bin/sh\n".utf8))
        let inode = try harness.lookup(.root, "tool.sh").inode
        fake.resetCounters()
        let attributes = try BlockingCall.wait { fs.setAttributes(inode, AttributeChanges(permissions: 0o755), handle: nil, reply: $0) }
        XCTAssertEqual(attributes.permissions, 0o755)
        XCTAssertEqual(fake.requests["files.update"], 1)
        XCTAssertEqual(fake.file(id)?.appProperties?["drivefs.mode"], "755")
        XCTAssertThrowsError(try BlockingCall.wait {
            fs.setAttributes(inode, AttributeChanges(userID: 4242), handle: nil, reply: $0)
        }, "chown to another user must fail")
    }

    // MARK: Conflicts and errors

    func testAChangeOnDriveMeanwhileMakesAConflictedCopy() throws {
        let id = fake.addFile("shared.txt", content: Array("base".utf8))
        let inode = try harness.lookup(.root, "shared.txt").inode
        let handle = try open(inode, O_WRONLY | O_TRUNC)
        try write(inode, handle, Array("mine".utf8), at: 0)
        fake.replaceContent(id, with: Array("theirs".utf8))
        try close(inode, handle)
        drain()
        XCTAssertEqual(fake.content(of: id), Array("theirs".utf8), "Drive's newer version was overwritten")
        let copies = fake.children(of: fake.rootID).filter { $0.name.hasPrefix("shared (conflicted copy ") && $0.name.hasSuffix(".txt") }
        XCTAssertEqual(copies.count, 1, "files: \(fake.children(of: fake.rootID).map(\.name))")
        XCTAssertEqual(copies.first.flatMap { fake.content(of: $0.id) }, Array("mine".utf8))
    }

    /// A reader that opened the file while its local copy was what it showed keeps one version:
    /// the copy's bytes at the copy's size, though the copy's upload landed as a conflicted copy
    /// meanwhile; once the reader closes, the file shows Drive's version. (Chaos, seed 663910146966:
    /// the size became Drive's at once while the open handle read the copy, and the read got the
    /// copy's first 13,792 bytes, a version nobody saved.)
    func testAReaderOfACopyThatLandsAsAConflictedCopyReadsOneVersion() throws {
        let id = fake.addFile("shared.txt", content: Array("base".utf8))
        let inode = try harness.lookup(.root, "shared.txt").inode
        let mine = Array("mine, longer than theirs and the base".utf8)
        let writer = try open(inode, O_WRONLY | O_TRUNC)
        try write(inode, writer, mine, at: 0)
        let reader = try open(inode, O_RDONLY)
        fake.replaceContent(id, with: Array("theirs".utf8))
        try close(inode, writer)
        drain()
        XCTAssertEqual(fake.children(of: fake.rootID).filter { $0.name.hasPrefix("shared (conflicted copy ") }.count, 1)
        func size() throws -> UInt64 { try BlockingCall.wait { fs.attributes(of: inode, reply: $0) }.size }
        XCTAssertEqual(try size(), UInt64(mine.count), "while the reader reads the copy, the file is the copy's size")
        XCTAssertEqual(try harness.read(inode, handle: reader, offset: 0, size: 4096), mine)
        fs.release(inode, handle: reader)
        waitUntil("the file shows Drive's version once nothing reads the copy: \(String(describing: try? size()))") {
            (try? size()) != UInt64(mine.count)
        }
        XCTAssertNotEqual(try harness.read(inode), mine, "not the copy any longer (Drive's, as the table knows it)")
    }

    func testSyncCloseWaitsForTheUploadAndReportsItsFailure() throws {
        harness.remove()
        harness = try CoreHarness { $0.readOnly = false; $0.syncClose = true }
        try harness.mount()
        let folderID = fake.addFolder("box")
        let folder = try harness.lookup(.root, "box")
        let created = try create(folder.inode, "sure.txt")
        try write(created.attributes.inode, created.opened.handle, Array("on Drive at close".utf8), at: 0)
        try close(created.attributes.inode, created.opened.handle)
        let landed = fake.children(of: folderID).first { $0.name == "sure.txt" }
        XCTAssertEqual(landed.flatMap { fake.content(of: $0.id) }, Array("on Drive at close".utf8),
                       "with --sync-close the file is on Drive when close returns")

        // The folder goes away on Drive before the next file's close: close reports the failure.
        let doomed = try create(folder.inode, "lost.txt")
        try write(doomed.attributes.inode, doomed.opened.handle, Array("x".utf8), at: 0)
        _ = try fake.delete(folderID)
        XCTAssertThrowsError(try BlockingCall.wait { fs.flush(doomed.attributes.inode, handle: doomed.opened.handle, reply: $0) },
                             "close must report an upload that failed for good")
        fs.release(doomed.attributes.inode, handle: doomed.opened.handle)
    }

    /// With no upload delay (`--upload-delay 0`): an fsync of a new file waits for Drive. (With
    /// one, the fsync answers once the file is kept here, and a later fsync reports the failure:
    /// EditorSaveTests.testAnFsyncedNewFileThatCannotLandReportsItAtTheNextFsync.)
    func testFsyncReportsAnUploadThatFailedAfterClose() throws {
        harness.remove()
        harness = try CoreHarness {
            $0.readOnly = false
            $0.newFileSettle = 0
        }
        try harness.mount()
        let folderID = fake.addFolder("gone")
        let folder = try harness.lookup(.root, "gone")
        let created = try create(folder.inode, "late.txt")
        let inode = created.attributes.inode
        try write(inode, created.opened.handle, Array("late".utf8), at: 0)
        _ = try fake.delete(folderID)
        try BlockingCall.wait { fs.flush(inode, handle: created.opened.handle, reply: $0) }
        XCTAssertThrowsError(try BlockingCall.wait { fs.synchronize(inode, handle: created.opened.handle, dataOnly: false, reply: $0) },
                             "fsync must report the upload's failure")
        fs.release(inode, handle: created.opened.handle)
    }

    func testAReadOnlyMountRefusesWrites() throws {
        harness.remove()
        harness = try CoreHarness()
        try harness.mount()
        fake.addFile("f", content: [1])
        let inode = try harness.lookup(.root, "f").inode
        XCTAssertThrowsError(try open(inode, O_WRONLY)) { XCTAssertEqual($0 as? FilesystemError, .readOnly) }
        XCTAssertThrowsError(try create(.root, "g")) { XCTAssertEqual($0 as? FilesystemError, .readOnly) }
        XCTAssertEqual(try harness.lookup(.root, "f").permissions & 0o222, 0)
    }
}
