import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import Glibc
import TestSupport
import XCTest

/// The account layout (`AccountFilesystem`) over fakes, without a kernel: `My Drive/` and
/// `Shared drives/<name>/` over one `DriveFilesystem` member each (a fake backend each, its own
/// cache directory), shared drives opened only when used, the inode numbers and lookup counts of
/// the members kept apart, moves between members refused with EXDEV, a lost drive going away.
final class AccountLayoutTests: XCTestCase {
    private var directory: URL!
    private let myDriveFake = FakeDriveBackend()
    private var driveFakes: [String: FakeDriveBackend] = [:]
    private let listed = Locked<[SharedDrive]>([])
    private let listCalls = Locked(0)
    private let openCalls = Locked<[String]>([])
    private let notifier = RecordingNotifier()
    private var members: [DriveFilesystem] = []
    private var account: AccountFilesystem!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("drivefs-account-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        account?.forgetAll()
        account?.stop()
        account = nil
        try? FileManager.default.removeItem(at: directory)
    }

    private func configuration(_ name: String) -> DriveFSConfiguration {
        var c = DriveFSConfiguration(userID: 1000, groupID: 1000, cacheDirectory: directory.appendingPathComponent(name), pollInterval: 3600)
        c.readOnly = false
        c.newFileSettle = 0
        c.indexWholeDrive = false
        return c
    }

    private static func member(_ fake: FakeDriveBackend, _ configuration: DriveFSConfiguration) throws -> DriveFilesystem {
        try DriveFilesystem(backend: fake, root: try fake.getFile("root"), startPageToken: try fake.changesStartPageToken(),
                            configuration: configuration)
    }

    /// Two shared drives, Team A and Team B; the account mounted and started.
    private func mount() throws {
        for name in ["Team A", "Team B"] {
            let fake = FakeDriveBackend()
            fake.addFile("\(name).txt", content: Array("in \(name)\n".utf8))
            driveFakes["drive-" + name.replacingOccurrences(of: " ", with: "")] = fake
        }
        listed.withLock { $0 = [SharedDrive(id: "drive-TeamA", name: "Team A"), SharedDrive(id: "drive-TeamB", name: "Team B")] }
        myDriveFake.addFile("mine.txt", content: Array("mine\n".utf8))
        let myDrive = try Self.member(myDriveFake, configuration("my"))
        let fakes = driveFakes
        let base = configuration("shared")
        let catalog = SharedDriveCatalog(
            list: { [listed, listCalls] in
                listCalls.withLock { $0 += 1 }
                return listed.withLock { $0 }
            },
            open: { [openCalls] drive in
                openCalls.withLock { $0.append(drive.id) }
                var c = base
                c.cacheDirectory = base.cacheDirectory.appendingPathExtension(drive.id)
                return try Self.member(fakes[drive.id]!, c)
            })
        account = AccountFilesystem(myDrive: myDrive, sharedDrives: catalog)
        let pools = [account.notifications, myDrive.notifications]
        notifier.settle = { for pool in pools { _ = pool.waitUntilIdle(timeout: 60) } }
        account.start(notifier: notifier)
    }

    private func lookup(_ parent: Inode, _ name: String) throws -> FileAttributes {
        try BlockingCall.wait { account.lookup(parent: parent, name: name, reply: $0) }
    }

    private func resolve(_ path: String) throws -> FileAttributes {
        var a = try BlockingCall.wait { account.attributes(of: .root, reply: $0) }
        for component in path.split(separator: "/") { a = try lookup(a.inode, String(component)) }
        return a
    }

    private func list(_ inode: Inode) throws -> [DirectoryEntryPlus] {
        let handle = try BlockingCall.wait { account.openDirectory(inode, reply: $0) }
        defer { account.releaseDirectory(inode, handle: handle) }
        return try account.listPlus(inode, handle: handle)
    }

    private func names(_ inode: Inode) throws -> [String] { try list(inode).filter { $0.attributes != nil }.map(\.entry.name) }

    private func read(_ inode: Inode) throws -> String {
        let opened = try BlockingCall.wait { account.open(inode, flags: O_RDONLY, reply: $0) }
        defer { account.release(inode, handle: opened.handle) }
        let data = try BlockingCall.wait { account.read(inode, handle: opened.handle, offset: 0, size: 1 << 20, reply: $0) }
        return String(decoding: DriveFilesystem.bytes(data), as: UTF8.self)
    }

    private func assertErrno(_ expected: Int32, _ body: () throws -> Void, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try body(), file: file, line: line) {
            XCTAssertEqual(($0 as? FilesystemError)?.errno, expected, "\($0)", file: file, line: line)
        }
    }

    func testTheLayoutShowsMyDriveAndEachSharedDriveOpeningADriveOnlyWhenUsed() throws {
        try mount()
        XCTAssertEqual(try names(.root), ["My Drive", "Shared drives", "Trash"])
        XCTAssertEqual(try names(try resolve("My Drive").inode), ["mine.txt"])
        XCTAssertEqual(listCalls.withLock { $0 }, 0, "the top and My Drive do not list the shared drives")

        let shared = try resolve("Shared drives")
        let drives = try list(shared.inode)
        XCTAssertEqual(drives.filter { $0.attributes != nil }.map(\.entry.name), ["Team A", "Team B"])
        XCTAssertEqual(drives.first { $0.entry.name == ".." }?.entry.inode, .root)
        XCTAssertTrue(drives.allSatisfy { $0.attributes == nil || $0.attributes?.kind == .directory })
        _ = try resolve("Shared drives/Team B")
        XCTAssertEqual(listCalls.withLock { $0 }, 1, "one read of the drives for a cold listing and the lookups after it")
        XCTAssertEqual(openCalls.withLock { $0 }, [], "listing and looking up a drive opens no member")

        let teamA = try resolve("Shared drives/Team A")
        XCTAssertEqual(try names(teamA.inode), ["Team A.txt"])
        XCTAssertEqual(openCalls.withLock { $0 }, ["drive-TeamA"], "only the drive used is opened")
        let aListing = try list(teamA.inode)
        XCTAssertEqual(aListing.first { $0.entry.name == ".." }?.entry.inode, shared.inode, "`..` of a drive is Shared drives")
        XCTAssertEqual(try read(try resolve("Shared drives/Team A/Team A.txt").inode), "in Team A\n")
        XCTAssertEqual(try read(try resolve("My Drive/mine.txt").inode), "mine\n")
        XCTAssertEqual(try lookup(teamA.inode, "..").inode, shared.inode)
        XCTAssertEqual(try lookup(try resolve("My Drive").inode, "..").inode, .root)
        assertErrno(ENOENT) { _ = try resolve("Shared drives/Team C") }
        assertErrno(ENOENT) { _ = try resolve("Trashcan") }
    }

    func testInodesOfMembersStayApartAndLookupsAreForgottenInTheirMember() throws {
        try mount()
        // Both members number their first file alike; the account's numbers differ.
        let mine = try resolve("My Drive/mine.txt")
        let theirs = try resolve("Shared drives/Team A/Team A.txt")
        let (m1, l1) = AccountInodes.split(mine.inode)
        let (m2, l2) = AccountInodes.split(theirs.inode)
        XCTAssertEqual(m1, AccountInodes.myDrive)
        XCTAssertNotEqual(m2, m1)
        XCTAssertEqual(l1, l2, "the two members' own numbers coincide: the account keeps them apart")
        XCTAssertNotEqual(mine.inode, theirs.inode)

        let teamA = try XCTUnwrap(account.sharedDriveMembers.first { $0.drive.name == "Team A" }?.member)
        XCTAssertEqual(account.myDrive.lookupCount(of: l1), 1)
        XCTAssertEqual(teamA.lookupCount(of: l2), 1)
        _ = try resolve("Shared drives/Team A/Team A.txt")
        XCTAssertEqual(teamA.lookupCount(of: l2), 2)
        account.forget(theirs.inode, count: 2)
        XCTAssertEqual(teamA.lookupCount(of: l2), 0, "the forget reached Team A's member, in its own number")
        XCTAssertEqual(account.myDrive.lookupCount(of: l1), 1, "and not My Drive's")
        // The top folders and the roots are not counted: forgetting them is harmless.
        account.forget(.root, count: 1)
        account.forget(try resolve("Shared drives").inode, count: 5)
        account.forget(try resolve("Shared drives/Team A").inode, count: 5)
        XCTAssertEqual(try names(try resolve("Shared drives/Team A").inode), ["Team A.txt"])
    }

    func testWritesGoToTheirDriveAndMovesBetweenDrivesAreCrossDevice() throws {
        try mount()
        let teamA = try resolve("Shared drives/Team A")
        let myDrive = try resolve("My Drive")
        let created = try BlockingCall.wait { account.create(parent: teamA.inode, name: "new.txt", mode: 0o644, flags: O_WRONLY | O_CREAT,
                                                              reply: $0) }
        XCTAssertEqual(AccountInodes.split(created.attributes.inode).member, AccountInodes.split(teamA.inode).member)
        _ = try BlockingCall.wait { account.write(created.attributes.inode, handle: created.opened.handle, offset: 0,
                                                  data: Array("team\n".utf8), reply: $0) }
        try BlockingCall.wait { account.flush(created.attributes.inode, handle: created.opened.handle, reply: $0) }
        account.release(created.attributes.inode, handle: created.opened.handle)
        let member = try XCTUnwrap(account.sharedDriveMembers.first { $0.drive.name == "Team A" }?.member)
        XCTAssertTrue(member.drainUploads(timeout: 60))
        let fake = try XCTUnwrap(driveFakes["drive-TeamA"])
        let landed = try XCTUnwrap(fake.children(of: fake.rootID).first { $0.name == "new.txt" })
        XCTAssertEqual(fake.content(of: landed.id), Array("team\n".utf8))
        XCTAssertFalse(myDriveFake.children(of: myDriveFake.rootID).contains { $0.name == "new.txt" })

        assertErrno(EXDEV) {
            try BlockingCall.wait { account.rename(parent: myDrive.inode, name: "mine.txt", newParent: teamA.inode, newName: "mine.txt",
                                                   flags: 0, reply: $0) }
        }
        assertErrno(EXDEV) {
            _ = try BlockingCall.wait { account.link(created.attributes.inode, newParent: myDrive.inode, newName: "x", reply: $0) }
        }
        // Renames within a drive go through.
        try BlockingCall.wait { account.rename(parent: myDrive.inode, name: "mine.txt", newParent: myDrive.inode, newName: "ours.txt",
                                               flags: 0, reply: $0) }
        XCTAssertEqual(try names(myDrive.inode), ["ours.txt"])
        // The synthetic folders take nothing.
        assertErrno(EACCES) {
            _ = try BlockingCall.wait { account.makeDirectory(parent: .root, name: "Mine", mode: 0o755, reply: $0) }
        }
        let shared = try resolve("Shared drives").inode
        assertErrno(EACCES) {
            _ = try BlockingCall.wait { account.create(parent: shared, name: "x", mode: 0o644,
                                                       flags: O_WRONLY | O_CREAT, reply: $0) }
        }
        assertErrno(EACCES) {
            try BlockingCall.wait { account.rename(parent: myDrive.inode, name: "ours.txt", newParent: .root, newName: "ours.txt",
                                                   flags: 0, reply: $0) }
        }
        assertErrno(EACCES) { try BlockingCall.wait { account.removeDirectory(parent: .root, name: "My Drive", reply: $0) } }
    }

    func testADriveTheUserLosesGoesAndItsInodesAreStale() throws {
        try mount()
        let shared = try resolve("Shared drives")
        let teamB = try resolve("Shared drives/Team B")
        let file = try resolve("Shared drives/Team B/Team B.txt")
        XCTAssertEqual(try names(shared.inode), ["Team A", "Team B"])

        listed.withLock { $0.removeAll { $0.name == "Team B" } }
        XCTAssertEqual(try names(shared.inode), ["Team A", "Team B"], "within the TTL, the list as read")
        account.sharedDrivesChanged()
        XCTAssertEqual(try names(shared.inode), ["Team A"], "a drive change: read again")
        XCTAssertEqual(listCalls.withLock { $0 }, 2)
        XCTAssertTrue(notifier.entryList.contains { $0.parent == shared.inode && $0.name == "Team B" }, "\(notifier.entryList)")
        assertErrno(ESTALE) { _ = try BlockingCall.wait { account.attributes(of: file.inode, reply: $0) } }
        assertErrno(ESTALE) { _ = try BlockingCall.wait { account.openDirectory(teamB.inode, reply: $0) } }
        assertErrno(ENOENT) { _ = try lookup(shared.inode, "Team B") }
        account.forget(file.inode, count: 1)

        // Back again: a new number, so the kernel's old inodes stay stale.
        listed.withLock { $0.append(SharedDrive(id: "drive-TeamB", name: "Team B")) }
        account.sharedDrivesChanged()
        let again = try lookup(shared.inode, "Team B")
        XCTAssertNotEqual(again.inode, teamB.inode)
        XCTAssertEqual(try names(again.inode), ["Team B.txt"])
    }

    func testAMemberNotificationReachesTheKernelInTheAccountsNumbers() throws {
        try mount()
        let teamA = try resolve("Shared drives/Team A")
        let file = try resolve("Shared drives/Team A/Team A.txt")
        let member = try XCTUnwrap(account.sharedDriveMembers.first { $0.drive.name == "Team A" }?.member)
        let fake = try XCTUnwrap(driveFakes["drive-TeamA"])
        fake.replaceContent(fake.children(of: fake.rootID).first { $0.name == "Team A.txt" }!.id, with: Array("changed\n".utf8))
        try member.pollChanges()
        _ = member.notifications.waitUntilIdle(timeout: 60)
        XCTAssertTrue(notifier.inodeList.contains(file.inode), "\(notifier.inodeList) should hold \(file.inode)")
        XCTAssertTrue(notifier.inodeList.allSatisfy { AccountInodes.split($0).member == AccountInodes.split(teamA.inode).member })
        XCTAssertEqual(try read(file.inode), "changed\n")
    }

    /// `Trash/`: My Drive's trash as Drive's web view lists it (items trashed themselves), read
    /// again on each listing; `mv` out restores (and moves when the place differs), `rm` deletes for
    /// good; nothing else is allowed there.
    func testTrashListsRestoresAndDeletesForGood() throws {
        let projects = myDriveFake.addFolder("Projects")
        let old = myDriveFake.addFile("old.txt", in: projects, content: Array("old\n".utf8))
        let gone = myDriveFake.addFile("gone.txt", content: Array("gone\n".utf8))
        let folder = myDriveFake.addFolder("Archive")
        myDriveFake.addFile("inside.txt", in: folder, content: [1])
        for id in [old, gone, folder] { myDriveFake.trashItem(id) }
        try mount()
        let trash = try resolve("Trash")
        XCTAssertEqual(try names(trash.inode), ["Archive", "gone.txt", "old.txt"], "inside.txt is in the trash through its folder")
        let listed = try list(trash.inode)
        XCTAssertEqual(listed.first { $0.entry.name == "old.txt" }?.attributes?.size, 4)
        XCTAssertEqual(listed.first { $0.entry.name == "Archive" }?.attributes?.kind, .directory)
        XCTAssertEqual(try names(try lookup(trash.inode, "Archive").inode), [], "a trashed folder shows empty")
        let oldItem = try lookup(trash.inode, "old.txt")
        assertErrno(EACCES) { _ = try BlockingCall.wait { account.open(oldItem.inode, flags: O_RDONLY, reply: $0) } }

        // A file trashed on Drive shows at the next listing.
        let later = myDriveFake.addFile("later.txt", content: [2])
        myDriveFake.trashItem(later)
        XCTAssertEqual(try names(trash.inode), ["Archive", "gone.txt", "later.txt", "old.txt"])
        XCTAssertEqual(try lookup(trash.inode, "old.txt").inode, oldItem.inode, "an item keeps its inode")

        // mv out: restored where it was, or moved where asked.
        let myDrive = try resolve("My Drive")
        let projectsFolder = try resolve("My Drive/Projects")
        try BlockingCall.wait { account.rename(parent: trash.inode, name: "old.txt", newParent: projectsFolder.inode, newName: "old.txt",
                                               flags: 0, reply: $0) }
        XCTAssertFalse(myDriveFake.file(old)!.trashed)
        XCTAssertEqual(myDriveFake.file(old)!.parents, [projects])
        XCTAssertEqual(try read(try resolve("My Drive/Projects/old.txt").inode), "old\n", "shown at once")
        try BlockingCall.wait { account.rename(parent: trash.inode, name: "later.txt", newParent: projectsFolder.inode, newName: "back.txt",
                                               flags: 0, reply: $0) }
        XCTAssertFalse(myDriveFake.file(later)!.trashed)
        XCTAssertEqual(myDriveFake.file(later)!.parents, [projects])
        XCTAssertEqual(myDriveFake.file(later)!.name, "back.txt")
        XCTAssertEqual(try names(projectsFolder.inode), ["back.txt", "old.txt"])
        // Over a name taken: refused, nothing restored.
        assertErrno(EEXIST) {
            try BlockingCall.wait { account.rename(parent: trash.inode, name: "gone.txt", newParent: projectsFolder.inode, newName: "old.txt",
                                                   flags: 0, reply: $0) }
        }
        XCTAssertTrue(myDriveFake.file(gone)!.trashed)
        // Into a shared drive: another drive (mv copies, which a trashed file's content refuses).
        let teamA = try resolve("Shared drives/Team A")
        assertErrno(EXDEV) {
            try BlockingCall.wait { account.rename(parent: trash.inode, name: "gone.txt", newParent: teamA.inode, newName: "gone.txt",
                                                   flags: 0, reply: $0) }
        }

        // rm: deleted for good.
        myDriveFake.resetCounters()
        try BlockingCall.wait { account.removeFile(parent: trash.inode, name: "gone.txt", reply: $0) }
        XCTAssertNil(myDriveFake.file(gone), "deleted, not only trashed")
        XCTAssertEqual(myDriveFake.requests["files.delete"], 1, myDriveFake.requestSummary)
        assertErrno(EISDIR) { try BlockingCall.wait { account.removeFile(parent: trash.inode, name: "Archive", reply: $0) } }
        try BlockingCall.wait { account.removeDirectory(parent: trash.inode, name: "Archive", reply: $0) }
        XCTAssertNil(myDriveFake.file(folder))
        XCTAssertEqual(try names(trash.inode), [])
        // Nothing is made there.
        assertErrno(EACCES) {
            _ = try BlockingCall.wait { account.create(parent: trash.inode, name: "x", mode: 0o644, flags: O_WRONLY | O_CREAT, reply: $0) }
        }
        assertErrno(EACCES) {
            try BlockingCall.wait { account.rename(parent: myDrive.inode, name: "Projects", newParent: trash.inode, newName: "Projects",
                                                   flags: 0, reply: $0) }
        }
    }
}
