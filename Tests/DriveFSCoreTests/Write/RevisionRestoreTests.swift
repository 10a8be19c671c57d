import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import Glibc
import XCTest

/// `user.drivefs.restore`: a revision of a file brought back as its content (or as another file's),
/// as a whole write would: read back at once, one upload, Drive's revision list grown by one.
final class RevisionRestoreTests: XCTestCase {
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

    private func restore(_ inode: Inode, _ value: String) throws {
        try BlockingCall.wait { fs.setExtendedAttribute(inode, named: ExtendedAttributes.restore, value: Array(value.utf8), flags: 0, reply: $0) }
    }

    private func assertErrno(_ expected: Int32, _ body: () throws -> Void, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try body(), file: file, line: line) {
            XCTAssertEqual(($0 as? FilesystemError)?.errno, expected, "\($0)", file: file, line: line)
        }
    }

    private func drain() {
        XCTAssertTrue(fs.drainUploads(timeout: 60), "uploads did not drain: \(fs.uploadStatus)")
    }

    func testARevisionComesBackAsTheFilesContentOrAsAnotherFile() throws {
        let first = CoreHarness.pattern(300_000, seed: 1), second = Array("the second version\n".utf8)
        let id = fake.addFile("report.bin", content: first)
        fake.replaceContent(id, with: second)
        try harness.mount()
        let inode = try harness.lookup(.root, "report.bin").inode
        let old = try XCTUnwrap(try fake.listRevisions(id).first?.id)

        try restore(inode, old)
        XCTAssertEqual(try harness.read(inode), first, "read back at once, before its upload")
        drain()
        XCTAssertEqual(fake.content(of: id), first, "the file on Drive holds the old revision's bytes")
        XCTAssertEqual(try fake.listRevisions(id).map(\.size), [300_000, 19, 300_000], "one new revision, the old ones left")

        // Into another file: the source named by its ID; the source itself unchanged.
        let copy = try harness.writeFile(.root, "report (restored).bin", [])
        drain()
        try restore(copy, "\(id) \(try XCTUnwrap(try fake.listRevisions(id)[1].id))")
        drain()
        let copyID = try XCTUnwrap(fake.children(of: fake.rootID).first { $0.name == "report (restored).bin" }?.id)
        XCTAssertEqual(fake.content(of: copyID), second)
        XCTAssertEqual(fake.content(of: id), first)
        XCTAssertEqual(try harness.read(copy), second)
    }

    func testWhatCannotBeRestored() throws {
        let id = fake.addFile("a.txt", content: Array("one\n".utf8))
        fake.replaceContent(id, with: Array("two\n".utf8))
        _ = fake.addFolder("folder")
        _ = fake.addDocument("Plan", text: "plan")
        try harness.mount()
        let inode = try harness.lookup(.root, "a.txt").inode
        let old = try XCTUnwrap(try fake.listRevisions(id).first?.id)
        assertErrno(EINVAL) { try restore(inode, "") }
        assertErrno(EINVAL) { try restore(inode, "a b c") }
        assertErrno(ENOENT) { try restore(inode, "no-such-revision") }
        assertErrno(EISDIR) { try restore(try harness.lookup(.root, "folder").inode, old) }
        assertErrno(EOPNOTSUPP) { try restore(try harness.lookup(.root, "Plan.docx").inode, "r1") }
        // Open for writing: refused, nothing changed.
        let handle = try harness.open(inode, O_WRONLY)
        assertErrno(EBUSY) { try restore(inode, old) }
        try harness.close(inode, handle)
        drain()
        XCTAssertEqual(fake.content(of: id), Array("two\n".utf8))
        XCTAssertEqual(try harness.read(inode), Array("two\n".utf8))
    }

    /// A Google Doc's revision comes back as a new regular file: exported as it was at that revision
    /// (the revision's export link, not files.export of the head, not alt=media), in the format the
    /// mount shows the Doc in. The Doc itself cannot take an old revision: EOPNOTSUPP, nothing sent.
    func testADocsRevisionComesBackExportedIntoANewFileButNotIntoTheDoc() throws {
        let id = fake.addDocument("Plan", text: "first draft")
        fake.editDocument(id, text: "second draft")
        try harness.mount()
        let doc = try harness.lookup(.root, "Plan.docx").inode
        let lines = try BlockingCall.wait { fs.extendedAttribute(doc, named: ExtendedAttributes.revisions, reply: $0) }
        XCTAssertEqual(String(decoding: lines, as: UTF8.self).split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
                        .map { [$0[0], $0[2], $0[3], $0[4]] },
                       [["1", "-", "-", "-"], ["2", "-", "-", "-"]], "a Doc's revisions: no size, no md5, no keep-forever choice")

        let copy = try harness.writeFile(.root, "Plan (first draft).docx", [])
        drain()
        fake.resetCounters()
        try restore(copy, "\(id) 1")
        let docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
        let expected = Array("export as \(docx)\nfirst draft".utf8)
        XCTAssertEqual(try harness.read(copy), expected, "the first draft, exported as the mount shows the Doc")
        XCTAssertEqual(fake.requests["revisions.export"], 1)
        XCTAssertNil(fake.requests["revisions.get.media"], "a Doc's revision has no bytes of its own")
        XCTAssertNil(fake.requests["files.export"], "not the head's export")
        drain()
        let copyID = try XCTUnwrap(fake.children(of: fake.rootID).first { $0.name == "Plan (first draft).docx" }?.id)
        XCTAssertEqual(fake.content(of: copyID), expected, "on Drive as a regular file")
        XCTAssertEqual(fake.file(id)?.mimeType, "application/vnd.google-apps.document")

        fake.resetCounters()
        assertErrno(EOPNOTSUPP) { try restore(doc, "1") }
        assertErrno(EOPNOTSUPP) { try restore(doc, "\(id) 1") }
        XCTAssertNil(fake.requests["revisions.export"], "refused before asking Drive")
        assertErrno(ENOENT) { try restore(copy, "\(id) 7") }
    }

    func testARestoreOnAReadOnlyMountIsRefused() throws {
        harness.remove()
        harness = try CoreHarness()
        let id = fake.addFile("a.txt", content: Array("one\n".utf8))
        try harness.mount()
        let inode = try harness.lookup(.root, "a.txt").inode
        assertErrno(EROFS) { try restore(inode, try XCTUnwrap(try fake.listRevisions(id).first?.id)) }
    }
}
