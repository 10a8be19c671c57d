import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// The write counts issue 16 names for work done before uploads start (its "Numbers"), counted on
/// the fake's requests: every write request saved is a third of a second on real Drive (about 3
/// writes a second per account). The uploads are held (`HeldUploadQueue`) until the work is done,
/// as a backlog or the upload delay holds them.
final class FewerWritesTests: XCTestCase {
    private var harness: CoreHarness!
    private var fake: FakeDriveBackend { harness.backend }
    private var held: HeldUploadQueue!

    override func setUpWithError() throws {
        harness = try CoreHarness { $0.readOnly = false }
        let queue = try UploadQueue(directory: harness.uploadsDirectory, backend: fake, transfers: 4, initialBackoff: 0.01,
                                    maximumBackoff: 0.05)
        held = HeldUploadQueue(queue)
        try harness.mount(uploads: held)
        fake.resetCounters()
    }

    override func tearDown() {
        harness?.remove()
        harness = nil
    }

    /// Requests that change Drive (Google's "writes and inserts").
    private var writes: Int {
        fake.requests.filter { method, _ in
            method.hasPrefix("files.create") || method.hasPrefix("files.update") || method == "files.delete"
                || method == "files.copy" || method == "files.emptyTrash"
        }.values.reduce(0, +)
    }

    private func drain() {
        held.release()
        XCTAssertTrue(harness.fs.drainUploads(timeout: 120), "\(harness.fs.uploadStatus)")
    }

    func testAThousandFilesRenamedBeforeTheirUploadsAreCreatedOnceEachUnderTheirFinalNames() throws {
        let count = 1_000
        for i in 0..<count { try harness.writeFile(.root, "tmp-\(i).part", Array("file \(i)\n".utf8)) }
        for i in 0..<count { try harness.rename(.root, "tmp-\(i).part", to: .root, "file-\(i).txt") }
        drain()
        XCTAssertLessThanOrEqual(writes, count + 2, fake.requestSummary)
        let names = Set(fake.children(of: fake.rootID).filter { !$0.trashed }.map(\.name))
        XCTAssertEqual(names.count, count)
        XCTAssertTrue((0..<count).allSatisfy { names.contains("file-\($0).txt") }, "every file under its final name only")
        XCTAssertEqual(fake.content(of: try XCTUnwrap(fake.children(of: fake.rootID).first { $0.name == "file-7.txt" }).id),
                       Array("file 7\n".utf8))
    }

    func testAHundredFilesRemovedBeforeTheirUploadsCostNoWrite() throws {
        for i in 0..<100 { try harness.writeFile(.root, "scratch-\(i)", Array("scratch \(i)\n".utf8)) }
        for i in 0..<100 { try BlockingCall.wait { harness.fs.removeFile(parent: .root, name: "scratch-\(i)", reply: $0) } }
        drain()
        XCTAssertEqual(writes, 0, fake.requestSummary)
        XCTAssertTrue(fake.children(of: fake.rootID).isEmpty)
    }

    /// A hundred saves the way editors make them (a temporary file written, renamed over the
    /// original), drained to Drive after every tenth: at most a hundred writes, all of them
    /// content updates of the original (a save made before the last one went up supersedes it);
    /// its Drive ID kept, nothing created or trashed, and Drive's revision list grown by exactly
    /// the versions sent, the last save's bytes the head. (EditorSaveTests drains after each save.)
    func testAHundredEditorSavesAreAtMostAHundredUpdatesOfTheOriginal() throws {
        // The temporary file's upload waits far longer than a save takes (no race with the
        // rename); a drain sends what waits at once.
        let h = try CoreHarness {
            $0.readOnly = false
            $0.newFileSettle = 600
        }
        defer { h.remove() }
        let original = h.backend.addFile("notes.txt", content: Array("draft\n".utf8))
        try h.mount()
        let revisionsBefore = try h.backend.listRevisions(original).count
        _ = try h.lookup(.root, "notes.txt")
        h.backend.resetCounters()
        var last: [UInt8] = []
        for save in 1...100 {
            last = Array("save \(save)\n".utf8)
            _ = try h.writeFile(.root, ".notes.txt.swp", last)
            try h.rename(.root, ".notes.txt.swp", to: .root, "notes.txt")
            if save % 10 == 0 {
                XCTAssertTrue(h.fs.drainUploads(timeout: 60), "save \(save): \(h.fs.uploadStatus)")
                XCTAssertEqual(h.backend.content(of: original), last, "save \(save) is the original's content")
            }
        }
        let counts = h.backend.requests
        let updates = counts["files.update.upload", default: 0]
        XCTAssertGreaterThanOrEqual(updates, 10, "one at least for each drain: \(h.backend.requestSummary)")
        XCTAssertLessThanOrEqual(updates, 100, h.backend.requestSummary)
        let others = counts.filter { ($0.key.hasPrefix("files.create") || $0.key.hasPrefix("files.update") || $0.key == "files.delete")
            && $0.key != "files.update.upload" }
        XCTAssertTrue(others.isEmpty, "no other write: \(h.backend.requestSummary)")
        XCTAssertEqual(h.backend.children(of: h.backend.rootID, includingTrashed: true).map(\.id), [original], "the ID kept, nothing trashed")
        XCTAssertEqual(try h.backend.listRevisions(original).count, revisionsBefore + updates, "a revision a version sent")
    }
}
