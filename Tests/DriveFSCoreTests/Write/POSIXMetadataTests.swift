import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import Glibc
import XCTest

/// What backups need of the mount (issue 17): `mknod` of regular files; under `--posix-metadata`
/// owners, FIFOs, sockets and device nodes kept in appProperties and shown after a remount; ctime
/// that moves on metadata changes; modes shown as they were stored, whatever `--umask` says. Each
/// with the Drive writes it costs (none of them adds a request of its own).
final class POSIXMetadataTests: XCTestCase {
    private var harness: CoreHarness!
    private var fake: FakeDriveBackend { harness.backend }
    private var fs: DriveFilesystem { harness.fs }

    override func tearDown() {
        harness?.remove()
        harness = nil
    }

    private func mount(posix: Bool, umask: UInt32 = 0o022, backend: FakeDriveBackend = FakeDriveBackend()) throws {
        harness = try CoreHarness(backend: backend) {
            $0.readOnly = false
            $0.posixMetadata = posix
            $0.umask = umask
        }
        try harness.mount()
        fake.resetCounters()
    }

    /// A new core over the same Drive, with a cache directory of its own (nothing remembered locally).
    private func remount() throws {
        let backend = fake
        let posix = harness.configuration.posixMetadata
        let umask = harness.configuration.umask
        harness.remove()
        try mount(posix: posix, umask: umask, backend: backend)
    }

    private func drain(file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(fs.drainUploads(timeout: 60), "uploads did not drain: \(fs.uploadStatus)", file: file, line: line)
    }

    /// Requests that change Drive (creates, updates, uploads, deletes), by method.
    private var writes: [String: Int] {
        fake.requests.filter { $0.key.hasPrefix("files.create") || $0.key.hasPrefix("files.update") || $0.key == "files.delete" }
    }

    private func driveChild(_ name: String) -> DriveFile? { fake.children(of: fake.rootID).first { $0.name == name } }

    private func makeNode(_ name: String, _ mode: UInt32, device: UInt64 = 0, caller: RequestCaller? = nil) throws -> FileAttributes {
        try BlockingCall.wait(caller: caller) { fs.makeNode(parent: .root, name: name, mode: mode, device: device, reply: $0) }
    }

    private func set(_ inode: Inode, _ changes: AttributeChanges, handle: UInt64? = nil) throws -> FileAttributes {
        try BlockingCall.wait { fs.setAttributes(inode, changes, handle: handle, reply: $0) }
    }

    private func nowMillis() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// A file on Drive, last changed long ago (its ctime shows that time until something changes it).
    private func oldFile(_ name: String, _ bytes: [UInt8] = Array("old".utf8)) -> String {
        let id = fake.addFile(name, content: bytes)
        fake.update(id) { $0.modifiedTime = 1_500_000_000_000 }
        return id
    }

    // MARK: mknod of regular files

    func testMknodOfARegularFileMakesOneLikeCreate() throws {
        try mount(posix: false)
        let typed = try makeNode("typed", 0o100640)
        let untyped = try makeNode("untyped", 0o600)
        XCTAssertEqual(typed.kind, .regular)
        XCTAssertEqual(typed.permissions, 0o640)
        XCTAssertEqual(untyped.kind, .regular)
        XCTAssertEqual(try harness.lookup(.root, "untyped").permissions, 0o600)
        drain()
        XCTAssertEqual(driveChild("typed").flatMap { fake.content(of: $0.id) }, [])
        XCTAssertEqual(driveChild("untyped").flatMap { fake.content(of: $0.id) }, [])
        XCTAssertEqual(driveChild("typed")?.appProperties?["drivefs.mode"], "640")
        XCTAssertEqual(writes.values.reduce(0, +), 2, "one create each: \(fake.requests)")
    }

    func testWithoutTheOptionFIFOsSocketsAndDevicesAnswerEPERMAndLeaveNothing() throws {
        try mount(posix: false)
        for (name, mode) in [("fifo", UInt32(0o010644)), ("socket", 0o140755), ("char", 0o020644), ("block", 0o060644)] {
            XCTAssertThrowsError(try makeNode(name, mode, device: 0x0103)) { error in
                XCTAssertEqual(error as? FilesystemError, .notPermitted, name)
            }
            XCTAssertThrowsError(try harness.lookup(.root, name), "\(name) was left behind")
        }
        drain()
        XCTAssertTrue(writes.isEmpty, "requests: \(fake.requests)")
    }

    // MARK: Special files (--posix-metadata)

    func testFIFOsSocketsAndDeviceNodesAreKeptAndShownAfterARemount() throws {
        try mount(posix: true)
        let charDevice: UInt64 = 0x0103 // makedev(1, 3): /dev/null
        let blockDevice: UInt64 = 0x0801 // makedev(8, 1)
        let made = [
            ("fifo", try makeNode("fifo", 0o010640)),
            ("socket", try makeNode("socket", 0o140755)),
            ("char", try makeNode("char", 0o020666, device: charDevice)),
            ("block", try makeNode("block", 0o060660, device: blockDevice)),
        ]
        let expected: [String: (FileKind, UInt32, UInt64, String)] = [
            "fifo": (.fifo, 0o640, 0, "fifo"), "socket": (.socket, 0o755, 0, "socket"),
            "char": (.characterDevice, 0o666, charDevice, "char"), "block": (.blockDevice, 0o660, blockDevice, "block"),
        ]
        for (name, attributes) in made {
            let (kind, permissions, device, _) = expected[name]!
            XCTAssertEqual(attributes.kind, kind, name)
            XCTAssertEqual(attributes.permissions, permissions, name)
            XCTAssertEqual(attributes.deviceNumber, device, name)
            XCTAssertEqual(attributes.size, 0, name)
        }
        drain()
        XCTAssertEqual(writes, ["files.create.upload": 4], "one create each, nothing more: \(fake.requests)")
        for (name, (_, permissions, device, type)) in expected {
            let file = try XCTUnwrap(driveChild(name), name)
            XCTAssertEqual(fake.content(of: file.id), [], "\(name) is an empty file on Drive")
            XCTAssertEqual(file.appProperties?["drivefs.type"], type, name)
            XCTAssertEqual(file.appProperties?["drivefs.mode"], String(permissions, radix: 8), name)
            XCTAssertEqual(file.appProperties?["drivefs.rdev"], device == 0 ? nil : String(device), name)
        }

        try remount()
        for (name, (kind, permissions, device, _)) in expected {
            let attributes = try harness.lookup(.root, name)
            XCTAssertEqual(attributes.kind, kind, "after a remount: \(name)")
            XCTAssertEqual(attributes.mode, kind.modeTypeBits | permissions, "after a remount: \(name)")
            XCTAssertEqual(attributes.deviceNumber, device, "after a remount: \(name)")
        }
        let listed = Dictionary(uniqueKeysWithValues: try harness.listPlus(.root).map { ($0.entry.name, $0.entry.kind) })
        XCTAssertEqual(listed["fifo"], .fifo)
        XCTAssertEqual(listed["block"], .blockDevice)
    }

    // MARK: Ownership

    func testWithoutTheOptionChownToTheMountingUserIsAcceptedAndToOthersEPERM() throws {
        try mount(posix: false)
        _ = oldFile("mine.txt")
        let inode = try harness.lookup(.root, "mine.txt").inode
        let same = try set(inode, AttributeChanges(userID: 1000, groupID: 1000))
        XCTAssertEqual(same.userID, 1000)
        XCTAssertThrowsError(try set(inode, AttributeChanges(userID: 4242))) { error in
            XCTAssertEqual(error as? FilesystemError, .notPermitted)
        }
        XCTAssertThrowsError(try set(inode, AttributeChanges(groupID: 4343))) { error in
            XCTAssertEqual(error as? FilesystemError, .notPermitted)
        }
        XCTAssertTrue(writes.isEmpty, "requests: \(fake.requests)")
    }

    func testChownUnderTheOptionIsKeptOnDriveInTheSameUpdateAndShownAfterARemount() throws {
        try mount(posix: true)
        let id = oldFile("owned.txt")
        let inode = try harness.lookup(.root, "owned.txt").inode
        let changed = try set(inode, AttributeChanges(userID: 4242, groupID: 4343))
        XCTAssertEqual(changed.userID, 4242)
        XCTAssertEqual(changed.groupID, 4343)
        XCTAssertEqual(writes, ["files.update": 1], "chown is one metadata update: \(fake.requests)")
        XCTAssertEqual(fake.file(id)?.appProperties?["drivefs.uid"], "4242")
        XCTAssertEqual(fake.file(id)?.appProperties?["drivefs.gid"], "4343")
        // The group alone (uid -1) keeps the owner.
        _ = try set(inode, AttributeChanges(userID: UInt32.max, groupID: 77))
        XCTAssertEqual(try harness.lookup(.root, "owned.txt").userID, 4242)
        _ = oldFile("theirs.txt")

        try remount()
        let shown = try harness.lookup(.root, "owned.txt")
        XCTAssertEqual(shown.userID, 4242, "after a remount")
        XCTAssertEqual(shown.groupID, 77, "after a remount")
        // A file from another client has no owner of its own: the mount's.
        XCTAssertEqual(try harness.lookup(.root, "theirs.txt").userID, 1000)
    }

    func testANewFileBelongsToItsCallerAndItsChownRidesAlongWithItsUpload() throws {
        try mount(posix: true)
        let caller = RequestCaller(userID: 65534, groupID: 65533)
        let created = try BlockingCall.wait(caller: caller) {
            fs.create(parent: .root, name: "made.txt", mode: 0o644, flags: O_WRONLY | O_CREAT, reply: $0)
        }
        XCTAssertEqual(created.attributes.userID, 65534)
        XCTAssertEqual(created.attributes.groupID, 65533)
        let inode = created.attributes.inode
        try harness.write(inode, created.opened.handle, Array("payload".utf8), at: 0)
        // tar's order: fchown, fchmod, futimens through the handle, then close.
        _ = try set(inode, AttributeChanges(userID: 4242, groupID: 4343), handle: created.opened.handle)
        _ = try set(inode, AttributeChanges(permissions: 0o640), handle: created.opened.handle)
        try harness.close(inode, created.opened.handle)
        let folder = try BlockingCall.wait(caller: caller) { fs.makeDirectory(parent: .root, name: "box", mode: 0o750, reply: $0) }
        XCTAssertEqual(folder.userID, 65534)
        drain()
        XCTAssertEqual(writes, ["files.create.upload": 1, "files.create": 1], "one create each, nothing more: \(fake.requests)")
        let file = try XCTUnwrap(driveChild("made.txt"))
        XCTAssertEqual(file.appProperties?["drivefs.uid"], "4242")
        XCTAssertEqual(file.appProperties?["drivefs.gid"], "4343")
        XCTAssertEqual(file.appProperties?["drivefs.mode"], "640")
        XCTAssertEqual(driveChild("box")?.appProperties?["drivefs.uid"], "65534")
        XCTAssertEqual(driveChild("box")?.appProperties?["drivefs.gid"], "65533")
        try remount()
        XCTAssertEqual(try harness.lookup(.root, "made.txt").userID, 4242)
        XCTAssertEqual(try harness.lookup(.root, "box").groupID, 65533)
    }

    // MARK: ctime

    func testCtimeMovesOnChmodChownRenameUtimensAndTruncate() throws {
        try mount(posix: false)
        _ = oldFile("a.txt")
        var inode = try harness.lookup(.root, "a.txt").inode
        XCTAssertEqual(try harness.lookup(.root, "a.txt").changedMillis, 1_500_000_000_000)

        var before = nowMillis()
        XCTAssertGreaterThanOrEqual(try set(inode, AttributeChanges(permissions: 0o600)).changedMillis, before, "chmod")
        before = nowMillis()
        XCTAssertGreaterThanOrEqual(try set(inode, AttributeChanges(userID: 1000)).changedMillis, before, "chown")
        before = nowMillis()
        try harness.rename(.root, "a.txt", to: .root, "b.txt")
        let renamed = try harness.lookup(.root, "b.txt")
        XCTAssertGreaterThanOrEqual(renamed.changedMillis, before, "rename")
        inode = renamed.inode
        before = nowMillis()
        let touched = try set(inode, AttributeChanges(accessed: .millis(1_000_000_000_000), modified: .millis(1_000_000_000_000)))
        XCTAssertEqual(touched.modifiedMillis, 1_000_000_000_000)
        XCTAssertGreaterThanOrEqual(touched.changedMillis, before, "utimens sets ctime to now, not to the time given")
        before = nowMillis()
        XCTAssertGreaterThanOrEqual(try set(inode, AttributeChanges(size: 1)).changedMillis, before, "truncate")
        drain()

        // A write moves it too; a folder's ctime moves when an entry is added or removed here.
        let folder = try harness.makeDirectory(.root, "dir")
        fake.update(try XCTUnwrap(driveChild("dir")).id) { $0.modifiedTime = 1_500_000_000_000 }
        before = nowMillis()
        try harness.writeFile(folder.inode, "inside.txt", Array("x".utf8))
        XCTAssertGreaterThanOrEqual(try harness.lookup(.root, "dir").changedMillis, before, "an entry added")
        XCTAssertGreaterThanOrEqual(try harness.lookup(.root, "dir").modifiedMillis, before, "an entry added")
    }

    func testCtimeIsKeptOnDriveUnderTheOptionWithoutARequestOfItsOwn() throws {
        try mount(posix: true)
        let id = oldFile("kept.txt")
        let inode = try harness.lookup(.root, "kept.txt").inode
        let before = nowMillis()
        let changed = try set(inode, AttributeChanges(permissions: 0o700))
        XCTAssertGreaterThanOrEqual(changed.changedMillis, before)
        XCTAssertEqual(writes, ["files.update": 1], "chmod stays one update: \(fake.requests)")
        XCTAssertEqual(fake.file(id)?.appProperties?["drivefs.ctime"], String(changed.changedMillis))
        // A rename carries it in its own request.
        fake.resetCounters()
        try harness.rename(.root, "kept.txt", to: .root, "moved.txt")
        XCTAssertEqual(writes, ["files.update": 1], "a rename stays one update: \(fake.requests)")
        let renamed = try harness.lookup(.root, "moved.txt").changedMillis
        XCTAssertEqual(fake.file(id)?.appProperties?["drivefs.ctime"], String(renamed))

        try remount()
        XCTAssertEqual(try harness.lookup(.root, "moved.txt").changedMillis, renamed, "after a remount")
    }

    // MARK: Modes and the umask

    func testAModeSetHereIsShownAsItWasSetWhateverTheUmask() throws {
        try mount(posix: false, umask: 0o077)
        _ = oldFile("theirs.txt")
        _ = oldFile("tool.sh")
        XCTAssertEqual(try harness.lookup(.root, "theirs.txt").permissions, 0o600, "no mode of its own: masked")
        let toolInode = try harness.lookup(.root, "tool.sh").inode
        XCTAssertEqual(try set(toolInode, AttributeChanges(permissions: 0o755)).permissions, 0o755, "chmod as given")
        let created = try harness.create(.root, "made.txt", mode: 0o644)
        XCTAssertEqual(created.attributes.permissions, 0o644, "create as given")
        try harness.close(created.attributes.inode, created.opened.handle)
        let folder = try BlockingCall.wait { fs.makeDirectory(parent: .root, name: "box", mode: 0o755, reply: $0) }
        XCTAssertEqual(folder.permissions, 0o755, "mkdir as given")
        drain()
        XCTAssertEqual(driveChild("made.txt")?.appProperties?["drivefs.mode"], "644")
        XCTAssertEqual(driveChild("box")?.appProperties?["drivefs.mode"], "755")
        XCTAssertEqual(writes, ["files.update": 1, "files.create.upload": 1, "files.create": 1], "\(fake.requests)")
        try remount()
        XCTAssertEqual(try harness.lookup(.root, "made.txt").permissions, 0o644, "after a remount")
        XCTAssertEqual(try harness.lookup(.root, "tool.sh").permissions, 0o755, "after a remount")
        XCTAssertEqual(try harness.lookup(.root, "box").permissions, 0o755, "after a remount")
    }

    func testAnOpenFileShowsNoLinkOnceItWasRemoved() throws {
        try mount(posix: false)
        let created = try harness.create(.root, "open.txt")
        let inode = created.attributes.inode
        XCTAssertEqual(created.attributes.linkCount, 1)
        try BlockingCall.wait { fs.removeFile(parent: .root, name: "open.txt", reply: $0) }
        let shown = try BlockingCall.wait { fs.attributes(of: inode, reply: $0) }
        XCTAssertEqual(shown.linkCount, 0, "fstat of an open file after its unlink")
        try harness.close(inode, created.opened.handle)
        drain()
        XCTAssertTrue(writes.isEmpty, "made and removed before its upload: \(fake.requests)")
    }

    // MARK: Hard links

    func testHardLinksStayEPERMUnderTheOption() throws {
        try mount(posix: true)
        _ = oldFile("one.txt")
        let inode = try harness.lookup(.root, "one.txt").inode
        XCTAssertThrowsError(try BlockingCall.wait { fs.link(inode, newParent: .root, newName: "two.txt", reply: $0) }) { error in
            XCTAssertEqual(error as? FilesystemError, .notPermitted)
        }
        XCTAssertTrue(writes.isEmpty, "requests: \(fake.requests)")
    }
}
