import DriveClient
import DriveFSCore
import DriveSupport
import Glibc
import XCTest

/// The read-only `user.drive.*` attributes: which names each kind of item has, their values from
/// the table (no Drive requests), ENODATA for other names, EPERM for writes, and the kernel's size
/// protocol the bridge follows.
final class ExtendedAttributeTests: XCTestCase {
    private var harness: CoreHarness!

    override func tearDown() {
        harness?.remove()
        super.tearDown()
    }

    private func names(_ inode: Inode) throws -> [String] {
        try BlockingCall.wait { harness.fs.extendedAttributeNames(inode, reply: $0) }
    }

    private func value(_ inode: Inode, _ name: String) throws -> String {
        String(decoding: try BlockingCall.wait { harness.fs.extendedAttribute(inode, named: name, reply: $0) }, as: UTF8.self)
    }

    private func assertErrno(_ expected: Int32, _ body: () throws -> Void, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try body(), file: file, line: line) {
            XCTAssertEqual(($0 as? FilesystemError)?.errno, expected, "\($0)", file: file, line: line)
        }
    }

    func testEachKindOfItemListsTheAttributesItHas() throws {
        harness = try CoreHarness()
        let backend = harness.backend
        let content = Array("hello\n".utf8)
        let fileID = backend.addFile("a.txt", content: content, mimeType: "text/plain")
        backend.update(fileID) {
            $0.webViewLink = "https://drive.google.com/file/d/\(fileID)/view?usp=drivesdk"
            $0.lastModifyingUser = DriveFile.User(displayName: "Ada Lovelace", emailAddress: "ada@example.com")
        }
        let folderID = backend.addFolder("Projects")
        backend.update(folderID) { $0.lastModifyingUser = DriveFile.User(displayName: "Ada Lovelace", emailAddress: nil) }
        let docID = backend.addDocument("Plan", text: "plan")
        let shortcutID = backend.addShortcut("link", to: fileID)
        try harness.mount()

        let file = try harness.lookup(.root, "a.txt").inode
        XCTAssertEqual(try names(file), [ExtendedAttributes.id, ExtendedAttributes.md5, ExtendedAttributes.mimeType,
                                         ExtendedAttributes.webViewLink, ExtendedAttributes.modifiedBy, ExtendedAttributes.state])
        XCTAssertEqual(try value(file, "user.drive.id"), fileID)
        XCTAssertEqual(try value(file, "user.drive.md5"), Digest.hex(.md5, of: content))
        XCTAssertEqual(try value(file, "user.drive.mime_type"), "text/plain")
        XCTAssertEqual(try value(file, "user.drive.web_view_link"), "https://drive.google.com/file/d/\(fileID)/view?usp=drivesdk")
        XCTAssertEqual(try value(file, "user.drive.modified_by"), "ada@example.com", "the address when Drive has one")

        let folder = try harness.lookup(.root, "Projects").inode
        XCTAssertEqual(try names(folder), ["user.drive.id", "user.drive.mime_type", "user.drive.modified_by", "user.drivefs.state"])
        XCTAssertEqual(try value(folder, "user.drive.mime_type"), DriveFile.folderMimeType)
        XCTAssertEqual(try value(folder, "user.drive.modified_by"), "Ada Lovelace", "the name when there is no address")
        assertErrno(ENODATA) { _ = try value(folder, "user.drive.md5") }

        let doc = try harness.lookup(.root, "Plan.docx").inode
        XCTAssertEqual(try value(doc, "user.drive.id"), docID)
        XCTAssertFalse(try names(doc).contains("user.drive.md5"), "a Workspace document has no bytes, so no checksum")

        let shortcut = try harness.lookup(.root, "link").inode
        XCTAssertEqual(try names(shortcut), ["user.drive.id", "user.drive.mime_type", "user.drive.shortcut_target_id",
                                             "user.drivefs.state"])
        XCTAssertEqual(try value(shortcut, "user.drive.id"), shortcutID)
        XCTAssertEqual(try value(shortcut, "user.drive.shortcut_target_id"), fileID)

        XCTAssertEqual(try value(.root, "user.drive.id"), backend.rootID)
    }

    func testAttributesComeFromTheTableAndFollowTheChangeFeed() throws {
        harness = try CoreHarness()
        let id = harness.backend.addFile("a.txt", content: [1, 2, 3])
        try harness.mount()
        let inode = try harness.lookup(.root, "a.txt").inode
        harness.backend.resetCounters()
        for name in try names(inode) { _ = try value(inode, name) }
        XCTAssertEqual(harness.backend.totalRequests, 0, "attributes never ask Drive")

        harness.backend.replaceContent(id, with: [4, 5, 6, 7])
        harness.backend.update(id) { $0.lastModifyingUser = DriveFile.User(displayName: "Bob", emailAddress: "bob@example.com") }
        try harness.fs.pollChanges()
        XCTAssertEqual(try value(inode, "user.drive.md5"), Digest.hex(.md5, of: [4, 5, 6, 7]))
        XCTAssertEqual(try value(inode, "user.drive.modified_by"), "bob@example.com")
    }

    func testUnknownNamesAnswerENODATAAndWritesEPERM() throws {
        harness = try CoreHarness()
        harness.backend.addFile("a.txt", content: [1])
        try harness.mount()
        let inode = try harness.lookup(.root, "a.txt").inode
        for name in ["user.drive.nope", "user.other", "user.drive.id.x"] {
            assertErrno(ENODATA) { _ = try value(inode, name) }
        }
        // Namespaces drivefs has no attributes in: not supported (so `ls -l` stops asking for ACLs and labels).
        for name in ["security.selinux", "system.posix_acl_access", "system.posix_acl_default", "trusted.x", ""] {
            assertErrno(EOPNOTSUPP) { _ = try value(inode, name) }
        }
        assertErrno(EPERM) {
            try BlockingCall.wait { harness.fs.setExtendedAttribute(inode, named: "user.drive.id", value: [1], flags: 0, reply: $0) }
        }
        assertErrno(EPERM) {
            try BlockingCall.wait { harness.fs.setExtendedAttribute(inode, named: "user.mine", value: [], flags: 0, reply: $0) }
        }
        assertErrno(EPERM) { try BlockingCall.wait { harness.fs.removeExtendedAttribute(inode, named: "user.drive.id", reply: $0) } }
        assertErrno(ESTALE) { _ = try value(Inode(999_999), "user.drive.id") }
    }

    /// `user.drive.revisions`: asked by name, one revisions.list, a line per revision oldest first;
    /// not listed (so `getfattr -d` asks Drive nothing); none for a folder or a file not on Drive.
    func testRevisionsAreReadFromDriveWhenAskedByName() throws {
        harness = try CoreHarness { $0.readOnly = false }
        let backend = harness.backend
        let first = Array("first\n".utf8), second = Array("second version\n".utf8)
        let fileID = backend.addFile("a.txt", content: first)
        backend.replaceContent(fileID, with: second)
        _ = backend.addFolder("Projects")
        try harness.mount()
        let file = try harness.lookup(.root, "a.txt").inode
        XCTAssertFalse(try names(file).contains(ExtendedAttributes.revisions), "not listed: getfattr -d must not ask Drive")
        backend.resetCounters()
        let lines = try value(file, ExtendedAttributes.revisions).split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
        XCTAssertEqual(backend.requests["revisions.list"], 1)
        XCTAssertEqual(lines.count, 2)
        XCTAssertEqual(lines.map { $0.count }, [6, 6], "six fields a line")
        XCTAssertEqual(lines.map { $0[2] }, ["\(first.count)", "\(second.count)"], "oldest first, with their sizes")
        XCTAssertEqual(lines.map { $0[3] }, [Digest.hex(.md5, of: first), Digest.hex(.md5, of: second)])
        XCTAssertEqual(lines.map { $0[4] }, ["auto", "auto"])
        XCTAssertEqual(lines.last?[0], backend.file(fileID)?.headRevisionId, "the last is the head")

        assertErrno(ENODATA) { _ = try value(try harness.lookup(.root, "Projects").inode, ExtendedAttributes.revisions) }
        let made = try harness.writeFile(.root, "new.txt", Array("not uploaded".utf8))
        backend.resetCounters()
        assertErrno(ENODATA) { _ = try value(made, ExtendedAttributes.revisions) }
        XCTAssertNil(backend.requests["revisions.list"], "a file not on Drive asks nothing")
        backend.failNext(method: "revisions.list", error: .notFound(GoogleErrorInfo(status: 404, message: "gone")))
        assertErrno(ENOENT) { _ = try value(file, ExtendedAttributes.revisions) }
    }

    /// The lines' format: tabs and newlines in a field become spaces, missing fields `-`, and the
    /// oldest lines go first when the whole passes what Linux passes.
    func testRevisionLinesFitWhatLinuxPasses() {
        let who = DriveFile.User(displayName: "A\tB", emailAddress: nil)
        let one = DriveRevision(id: "r1", modifiedTime: 0, size: nil, md5Checksum: nil, keepForever: true, lastModifyingUser: who)
        XCTAssertEqual(ExtendedAttributes.revisionLines([one]), "r1\t1970-01-01T00:00:00.000Z\t-\t-\tforever\tA B\n")
        let many = (0..<2_000).map { DriveRevision(id: "revision-\($0)", modifiedTime: Int64($0) * 1000, size: 1, md5Checksum: String(repeating: "0", count: 32)) }
        let text = ExtendedAttributes.revisionLines(many)
        XCTAssertLessThanOrEqual(text.utf8.count, ExtendedAttributes.maximumValueBytes)
        XCTAssertTrue(text.hasSuffix("\n") && text.contains("revision-1999\t"), "the newest kept")
        XCTAssertFalse(text.contains("revision-0\t"), "the oldest left out")
    }

    /// getxattr/listxattr: size 0 asks for the length, a small buffer is ERANGE, an exact fit is the bytes.
    func testTheKernelSizeProtocol() {
        let value = Array("abc".utf8)
        XCTAssertEqual(ExtendedAttributeReply(value, bufferSize: 0), .length(3))
        XCTAssertEqual(ExtendedAttributeReply(value, bufferSize: 2), .failure(FilesystemError(errno: ERANGE)))
        XCTAssertEqual(ExtendedAttributeReply(value, bufferSize: 3), .bytes(value))
        XCTAssertEqual(ExtendedAttributeReply(value, bufferSize: 4096), .bytes(value))
        XCTAssertEqual(ExtendedAttributeReply([], bufferSize: 0), .length(0))
        XCTAssertEqual(ExtendedAttributeReply.encodeNames(["user.a", "user.bc"]), Array("user.a\0user.bc\0".utf8))
        XCTAssertEqual(ExtendedAttributeReply.encodeNames([]), [])
    }

    /// A filesystem that does not implement them (the smoke tree) has none, and refuses writes.
    func testDefaultsForOtherFilesystems() throws {
        let tree = SmokeTree.make(userID: 1000, groupID: 1000)
        XCTAssertEqual(try BlockingCall.wait { tree.extendedAttributeNames(.root, reply: $0) }, [])
        assertErrno(ENODATA) { _ = try BlockingCall.wait { tree.extendedAttribute(.root, named: "user.x", reply: $0) } }
        assertErrno(EPERM) { try BlockingCall.wait { tree.removeExtendedAttribute(.root, named: "user.x", reply: $0) } }
    }
}
