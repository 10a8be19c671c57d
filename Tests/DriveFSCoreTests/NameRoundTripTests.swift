import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import XCTest

/// Names made or renamed through the mount go to Drive in Drive's form: a `∕` (U+2215, how the
/// mount shows a Drive `/`) is written as `/` (docs/semantics.md, "Names", rule 1), and the item
/// keeps showing under the name it was given.
final class NameRoundTripTests: XCTestCase {
    private var harness: CoreHarness!
    private var fake: FakeDriveBackend { harness.backend }
    private var fs: DriveFilesystem { harness.fs }

    override func setUpWithError() throws {
        harness = try CoreHarness { $0.readOnly = false }
        try harness.mount()
    }

    override func tearDown() {
        harness?.remove()
        harness = nil
    }

    private func drain(file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(fs.drainUploads(timeout: 60), "uploads did not drain: \(fs.uploadStatus)", file: file, line: line)
    }

    private var driveNames: [String] { fake.children(of: fake.rootID).map(\.name).sorted() }

    func testARenameOfAFileOnDriveWritesASlash() throws {
        let id = fake.addFile("a/b.txt", content: Array("x".utf8))
        let shown = try harness.lookup(.root, "a\u{2215}b.txt")
        try harness.rename(.root, "a\u{2215}b.txt", to: .root, "c\u{2215}d.txt")
        XCTAssertEqual(fake.file(id)?.name, "c/d.txt", "Drive holds: \(driveNames)")
        XCTAssertEqual(try harness.lookup(.root, "c\u{2215}d.txt").inode, shown.inode)
        // A later listing (a remount) shows it under the same name.
        harness.unmount()
        try harness.mount()
        XCTAssertEqual(try harness.lookup(.root, "c\u{2215}d.txt").size, 1)
    }

    func testANewFileAndAFolderAreMadeWithASlash() throws {
        try harness.writeFile(.root, "1\u{2215}2.txt", Array("new".utf8))
        _ = try harness.makeDirectory(.root, "in\u{2215}out")
        // A new file renamed before its upload: the name travels in the upload.
        try harness.writeFile(.root, "draft", Array("d".utf8))
        try harness.rename(.root, "draft", to: .root, "final\u{2215}v2")
        drain()
        XCTAssertEqual(driveNames, ["1/2.txt", "final/v2", "in/out"])
        XCTAssertEqual(try harness.lookup(.root, "1\u{2215}2.txt").size, 3)
        XCTAssertEqual(try harness.lookup(.root, "final\u{2215}v2").size, 1)
        harness.unmount()
        try harness.mount()
        XCTAssertEqual(try harness.lookup(.root, "in\u{2215}out").kind, .directory)
        XCTAssertEqual(try harness.lookup(.root, "1\u{2215}2.txt").size, 3)
    }
}
