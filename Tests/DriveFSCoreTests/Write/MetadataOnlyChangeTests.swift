import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import XCTest

/// Changes of a file's times and mode with no new content (`touch -d`, `chmod`, through a handle
/// that wrote nothing, or with no handle) reach Drive, and a file whose copy is let go shows
/// Drive's state again rather than a frozen local one.
final class MetadataOnlyChangeTests: XCTestCase {
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

    private func setAttributes(_ inode: Inode, _ changes: AttributeChanges, handle: UInt64? = nil) throws -> FileAttributes {
        try BlockingCall.wait { fs.setAttributes(inode, changes, handle: handle, reply: $0) }
    }

    private func drain(file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(fs.drainUploads(timeout: 60), "uploads did not drain: \(fs.uploadStatus)", file: file, line: line)
    }

    /// touch(1) of an existing file: open(O_WRONLY|O_CREAT), futimens on that descriptor, close.
    func testTouchThroughAHandleThatWroteNothingReachesDrive() throws {
        let id = fake.addFile("doc.txt", content: Array("base version\n".utf8))
        try harness.mount()
        let inode = try harness.lookup(.root, "doc.txt").inode
        let handle = try harness.open(inode, O_WRONLY | O_CREAT)
        let when: Int64 = 1_500_000_000_000
        let shown = try setAttributes(inode, AttributeChanges(modified: .millis(when)), handle: handle)
        XCTAssertEqual(shown.modifiedMillis, when)
        try harness.close(inode, handle)
        drain()
        XCTAssertEqual(fake.file(id)?.modifiedTime, when, "Drive's modifiedTime did not change")
        XCTAssertEqual(fake.content(of: id), Array("base version\n".utf8), "the content must not change")
        XCTAssertEqual(fake.requests.filter { $0.key.contains("upload") || $0.key.hasPrefix("files.create") }.count, 0,
                       "a time alone costs no upload: \(fake.requests)")
        // And after the feed and a remount.
        try fs.pollChanges()
        XCTAssertEqual(try harness.lookup(.root, "doc.txt").modifiedMillis, when)
        harness.unmount()
        try harness.mount()
        XCTAssertEqual(try harness.lookup(.root, "doc.txt").modifiedMillis, when)
    }

    func testChmodThroughAHandleThatWroteNothingReachesDrive() throws {
        let id = fake.addFile("script.sh", content: Array("echo hi\n".utf8))
        try harness.mount()
        let inode = try harness.lookup(.root, "script.sh").inode
        let handle = try harness.open(inode, O_RDWR)
        _ = try setAttributes(inode, AttributeChanges(permissions: 0o700), handle: handle)
        try harness.close(inode, handle)
        drain()
        XCTAssertEqual(fake.file(id)?.appProperties?[AppPropertyKeys.mode], "700", "Drive does not keep the mode")
        harness.unmount()
        try harness.mount()
        XCTAssertEqual(try harness.lookup(.root, "script.sh").permissions & 0o777, 0o700)
    }

    /// A file opened, truncated to the size it had and closed: nothing to upload, and its size
    /// and time follow Drive afterwards (a change made elsewhere shows).
    func testAFileClosedUnchangedFollowsDriveAgain() throws {
        let id = fake.addFile("notes.txt", content: Array("twelve bytes".utf8))
        try harness.mount()
        let inode = try harness.lookup(.root, "notes.txt").inode
        let handle = try harness.open(inode, O_RDWR)
        _ = try setAttributes(inode, AttributeChanges(size: 12), handle: handle)
        try harness.close(inode, handle)
        drain()
        fake.replaceContent(id, with: Array("a colleague's longer text\n".utf8))
        try fs.pollChanges()
        // drain waited for the close's commit step too: the copy is let go by now.
        XCTAssertEqual(try harness.lookup(.root, "notes.txt").size, 26, "the size stayed frozen at the local state's")
        XCTAssertEqual(try harness.read(inode), Array("a colleague's longer text\n".utf8))
    }
}
