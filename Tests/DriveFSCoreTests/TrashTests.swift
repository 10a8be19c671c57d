import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import Glibc
import XCTest

/// The trash through the mount (`drivefs trash`): `user.drive.trash` lists what was trashed
/// itself, with where it was, in one files.list a page; `user.drivefs.untrash` brings an item back
/// and shows it at once; `user.drivefs.empty_trash` empties the trash in one write, only the count
/// the user agreed to. Over the fake backend, its request counters asserted.
final class TrashTests: XCTestCase {
    private var harness: CoreHarness!
    private var fake: FakeDriveBackend { harness.backend }
    private var fs: DriveFilesystem { harness.fs }

    override func setUpWithError() throws {
        harness = try CoreHarness { $0.readOnly = false }
    }

    override func tearDown() {
        harness?.remove()
        harness = nil
    }

    private func trash(_ inode: Inode = .root) throws -> [ExtendedAttributes.TrashLine] {
        let bytes = try BlockingCall.wait { fs.extendedAttribute(inode, named: ExtendedAttributes.trash, reply: $0) }
        let parsed = ExtendedAttributes.parseTrashLines(String(decoding: bytes, as: UTF8.self))
        XCTAssertEqual(parsed.omitted, 0)
        return parsed.items
    }

    private func set(_ name: String, _ value: String, on inode: Inode = .root) throws {
        try BlockingCall.wait { fs.setExtendedAttribute(inode, named: name, value: Array(value.utf8), flags: 0, reply: $0) }
    }

    private func assertErrno(_ expected: Int32, _ body: () throws -> Void, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try body(), file: file, line: line) {
            XCTAssertEqual(($0 as? FilesystemError)?.errno, expected, "\($0)", file: file, line: line)
        }
    }

    /// A folder's names, as `ls` shows them.
    private func names(_ folder: Inode) throws -> [String] {
        try harness.listPlus(folder).filter { $0.attributes != nil }.map(\.entry.name)
    }

    /// Lets the listings a lookup started in the background end, so that counters count only the test's.
    private func quiet() {
        XCTAssertTrue(fs.backgroundListing.waitUntilIdle(timeout: 60))
        fake.resetCounters()
    }

    /// Projects/ on the mount; Projects/Old/ trashed with a.txt in it (trashed through it) and b.txt
    /// (trashed itself before); notes.txt, Projects/plan.txt and the Doc Plan trashed.
    private func makeTrash() -> (projects: String, old: String, a: String, b: String, notes: String, plan: String, doc: String) {
        let projects = fake.addFolder("Projects")
        let old = fake.addFolder("Old", in: projects)
        let a = fake.addFile("a.txt", in: old, content: [1, 2, 3])
        let b = fake.addFile("b.txt", in: old, content: [4, 5])
        let notes = fake.addFile("notes.txt", content: Array("notes\n".utf8))
        let plan = fake.addFile("plan.txt", in: projects, content: [6])
        let doc = fake.addDocument("Plan", text: "plan")
        fake.addFile("kept.txt", content: [7])
        for id in [b, old, notes, plan, doc] { fake.trashItem(id) }
        return (projects, old, a, b, notes, plan, doc)
    }

    func testTheTrashListsWhatWasTrashedItselfWithWhereItWasInOneRequestAPage() throws {
        let t = makeTrash()
        try harness.mount()
        XCTAssertFalse(try BlockingCall.wait { fs.extendedAttributeNames(.root, reply: $0) }.contains(ExtendedAttributes.trash),
                       "never listed: getfattr -d must not ask Drive")
        quiet()

        // Projects is not listed yet (no index in these tests): Drive is asked for it once.
        let all = try trash()
        XCTAssertEqual(fake.requests, ["files.list": 1, "files.get": 1], "one files.list for a trash of one page: \(fake.requestSummary)")
        XCTAssertEqual(all.map { $0.path.joined(separator: "/") }, ["Plan.docx", "Projects/Old", "Projects/Old/b.txt", "Projects/plan.txt", "notes.txt"],
                       "what was trashed itself, not a.txt (trashed through its folder), by path; names as the mount shows them")
        let byID = Dictionary(uniqueKeysWithValues: all.map { ($0.id, $0) })
        XCTAssertEqual(byID[t.notes]?.folder, .present)
        XCTAssertEqual(byID[t.notes]?.size, 6)
        XCTAssertEqual(byID[t.notes]?.mimeType, "application/octet-stream")
        XCTAssertEqual(byID[t.notes]?.trashedTime, fake.trashedTime(of: t.notes))
        XCTAssertEqual(byID[t.old]?.folder, .present, "Old was in Projects, which is on the mount")
        XCTAssertNil(byID[t.old]?.size, "a folder has no size")
        XCTAssertEqual(byID[t.b]?.folder, .trashed, "b.txt's folder is in the trash too")
        XCTAssertNil(byID[t.a])

        // Only what was in a folder, or below it; a file has no trash.
        fake.resetCounters()
        let projects = try harness.lookup(.root, "Projects").inode
        quiet()
        XCTAssertEqual(try trash(projects).map(\.id), [t.old, t.b, t.plan])
        XCTAssertEqual(fake.requests, ["files.list": 1], "Projects is known now")
        assertErrno(ENODATA) { _ = try trash(try harness.lookup(.root, "kept.txt").inode) }

        // Paging: every page read, one request each (6 trashed items with a.txt, 2 a page).
        fake.trashPageSize = 2
        fake.resetCounters()
        XCTAssertEqual(try trash().count, 5)
        XCTAssertEqual(fake.requests, ["files.list": 3])
    }

    func testARestoredItemShowsInItsFolderAtOnceWithOneRequest() throws {
        let t = makeTrash()
        try harness.mount()
        let projects = try harness.lookup(.root, "Projects").inode
        _ = try harness.listPlus(.root)
        _ = try harness.listPlus(projects)
        assertErrno(ENOENT) { _ = try harness.lookup(projects, "plan.txt") }
        quiet()

        try set(ExtendedAttributes.untrash, t.plan)
        XCTAssertEqual(fake.requests, ["files.update": 1], "one files.update trashed=false: \(fake.requestSummary)")
        XCTAssertFalse(fake.file(t.plan)!.trashed)
        XCTAssertTrue(harness.notifier.entryList.contains { $0.parent == projects && $0.name == "plan.txt" },
                      "the kernel forgets that the name was missing")
        XCTAssertEqual(try harness.lookup(projects, "plan.txt").size, 1, "shown before any poll")
        XCTAssertEqual(try harness.read(try harness.lookup(projects, "plan.txt").inode), [6])
        XCTAssertEqual(fake.requests["files.list"], nil, "no listing needed")
        XCTAssertFalse(try trash().contains { $0.id == t.plan })

        // A folder comes back with what was trashed through it.
        try set(ExtendedAttributes.untrash, t.old)
        let old = try harness.lookup(projects, "Old").inode
        XCTAssertEqual(Set(try names(old)), ["a.txt"], "b.txt was trashed itself: it stays in the trash")

        // An item whose folder is in the trash leaves the trash itself and shows with its folder.
        let second = fake.addFolder("Second")
        let inside = fake.addFile("inside.txt", in: second, content: [8])
        fake.trashItem(inside)
        fake.trashItem(second)
        XCTAssertEqual(try trash().first { $0.id == inside }?.folder, .trashed)
        try set(ExtendedAttributes.untrash, inside)
        XCTAssertTrue(fake.file(inside)!.trashed, "still in the trash, through its folder")
        XCTAssertFalse(try trash().contains { $0.id == inside }, "no longer trashed itself")
        try set(ExtendedAttributes.untrash, second)
        XCTAssertEqual(try harness.lookup(try harness.lookup(.root, "Second").inode, "inside.txt").size, 1)
    }

    /// A new file removed while its create was on its way is hidden until its removal is seen in
    /// the feed; restored from the trash before that, it shows.
    func testARestoredFileRemovedBeforeItsCreateLandedShows() throws {
        let id = fake.addFile("draft.txt", content: [1])
        fake.trashItem(id)
        try harness.mount()
        _ = try harness.listPlus(.root)
        fs.table.noteRemovedBeforeLanding(id)
        try set(ExtendedAttributes.untrash, id)
        XCTAssertEqual(try harness.lookup(.root, "draft.txt").size, 1)
    }

    func testARestoredItemWhoseNameIsTakenFollowsTheRuleForDuplicates() throws {
        let older = fake.addFile("report.txt", content: Array("old\n".utf8))
        fake.trashItem(older)
        let newer = fake.addFile("report.txt", content: Array("newer\n".utf8))
        try harness.mount()
        let shown = try harness.lookup(.root, "report.txt")
        XCTAssertEqual(shown.size, 6)
        _ = try harness.listPlus(.root)
        quiet()

        try set(ExtendedAttributes.untrash, older)
        XCTAssertEqual(fake.requests, ["files.update": 1])
        let names = Dictionary(uniqueKeysWithValues: try harness.listPlus(.root).compactMap { e in e.attributes.map { (e.entry.name, $0.inode) } })
        // docs/semantics.md, "Names", rule 5: the one created first keeps the name.
        let suffixed = "report (\(newer.prefix(8))).txt"
        XCTAssertEqual(Set(names.keys), ["report.txt", suffixed])
        XCTAssertEqual(try harness.read(try XCTUnwrap(names["report.txt"])), Array("old\n".utf8))
        XCTAssertEqual(names[suffixed], shown.inode, "the newer file keeps its inode under its new name")
        XCTAssertTrue(harness.notifier.entryList.contains { $0.parent == .root && $0.name == "report.txt" })
    }

    /// An `rm` waits the upload delay before it reaches Drive's trash (a file made again under the
    /// name meanwhile is a save); a trash command right after it sends it first: the list shows
    /// the file, and a restore right after an rm finds it. Before, the list was empty for that long.
    func testATrashCommandRightAfterAnRmSeesTheFile() throws {
        harness.remove()
        harness = try CoreHarness {
            $0.readOnly = false
            $0.removalSettle = 600
        }
        let id = fake.addFile("draft.txt", content: Array("draft\n".utf8))
        try harness.mount()
        _ = try harness.lookup(.root, "draft.txt")
        try BlockingCall.wait { fs.removeFile(parent: .root, name: "draft.txt", reply: $0) }
        XCTAssertEqual(fake.file(id)?.trashed, false, "the removal waits its window")
        XCTAssertEqual(try trash().map(\.id), [id], "listed at once")
        XCTAssertEqual(fake.file(id)?.trashed, true)
        let restored = try XCTUnwrap(fs.untrash(id) as DriveFile?)
        XCTAssertFalse(restored.trashed)
        XCTAssertEqual(try harness.read(try harness.lookup(.root, "draft.txt").inode), Array("draft\n".utf8))
    }

    func testEmptyingTheTrashIsOneWriteOfWhatTheUserAgreedTo() throws {
        let t = makeTrash()
        try harness.mount()
        quiet()

        // The trash holds 5 items trashed themselves: a count of 4 was agreed to something else.
        assertErrno(EAGAIN) { try set(ExtendedAttributes.emptyTrash, "4") }
        XCTAssertEqual(fake.requests, ["files.list": 1], "read again, and nothing deleted")
        XCTAssertNotNil(fake.file(t.notes))
        assertErrno(EINVAL) { try set(ExtendedAttributes.emptyTrash, "yes") }
        assertErrno(EINVAL) { try set(ExtendedAttributes.emptyTrash, "5", on: try harness.lookup(.root, "kept.txt").inode) }

        fake.resetCounters()
        try set(ExtendedAttributes.emptyTrash, "5")
        XCTAssertEqual(fake.requests, ["files.list": 1, "files.emptyTrash": 1])
        for id in [t.old, t.a, t.b, t.notes, t.plan, t.doc] { XCTAssertNil(fake.file(id), id) }
        XCTAssertNotNil(fake.file(t.projects))
        XCTAssertEqual(try trash(), [])

        // `all`: no question asked, so nothing to check: one request.
        let more = fake.addFile("more.txt", content: [9])
        fake.trashItem(more)
        fake.resetCounters()
        try set(ExtendedAttributes.emptyTrash, "all")
        XCTAssertEqual(fake.requests, ["files.emptyTrash": 1])
        XCTAssertNil(fake.file(more))
    }

    func testFailuresSayWhyAndChangeNothing() throws {
        let t = makeTrash()
        try harness.mount()
        quiet()

        assertErrno(ENOENT) { try set(ExtendedAttributes.untrash, "no-such-id") }
        assertErrno(EINVAL) { try set(ExtendedAttributes.untrash, "\(t.notes) \(t.plan)") }
        assertErrno(EINVAL) { try set(ExtendedAttributes.untrash, t.notes, on: try harness.lookup(.root, "Projects").inode) }
        fake.failNext(method: "files.update", error: .permissionDenied(GoogleErrorInfo(
            status: 403, reason: "insufficientFilePermissions", message: "The user does not have sufficient permissions for this file.")))
        assertErrno(EACCES) { try set(ExtendedAttributes.untrash, t.notes) }
        XCTAssertTrue(fake.file(t.notes)!.trashed)
        fake.failNext(method: "files.emptyTrash", error: .permissionDenied(GoogleErrorInfo(
            status: 403, reason: "insufficientFilePermissions", message: "The user does not have sufficient permissions for this file.")))
        assertErrno(EACCES) { try set(ExtendedAttributes.emptyTrash, "all") }
        XCTAssertNotNil(fake.file(t.notes))

        // Offline: Drive is not asked.
        fake.unreachable = FakeDriveBackend.cannotConnect
        fake.reachability?.markOffline("test")
        fake.resetCounters()
        assertErrno(ENETUNREACH) { _ = try trash() }
        assertErrno(ENETUNREACH) { try set(ExtendedAttributes.untrash, t.notes) }
        assertErrno(ENETUNREACH) { try set(ExtendedAttributes.emptyTrash, "all") }
        XCTAssertEqual(fake.totalRequests, 0, fake.requestSummary)
        fake.unreachable = nil
        XCTAssertTrue(fake.file(t.notes)!.trashed)
    }

    func testAReadOnlyMountRestoresAndEmptiesNothing() throws {
        harness.remove()
        harness = try CoreHarness { $0.readOnly = true }
        let t = makeTrash()
        try harness.mount()
        quiet()
        XCTAssertEqual(try trash().count, 5, "listing reads only")
        fake.resetCounters()
        assertErrno(EROFS) { try set(ExtendedAttributes.untrash, t.notes) }
        assertErrno(EROFS) { try set(ExtendedAttributes.emptyTrash, "all") }
        XCTAssertEqual(fake.totalRequests, 0)
    }
}
