import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import XCTest

/// Found by the chaos run (docs/chaos-findings.md): a new file replaced by a rename (or removed)
/// just as its create lands. The rename looks the target up (a new file, its upload queued), the
/// upload lands and the mount applies it, then the rename removes the target as the new file it
/// was when looked up: nothing to trash, the queue has no job left to cancel. The file stayed on
/// Drive, beside the renamed one under the same name.
final class RemovedWhileLandingTests: XCTestCase {
    func testARenameOverANewFileWhoseUploadLandsMeanwhileTrashesIt() throws {
        let h = try CoreHarness { $0.readOnly = false }
        defer { h.remove() }
        let source = h.backend.addFile("draft.txt", content: Array("the draft\n".utf8))
        let held = Locked((open: false, sourceRenamed: false))
        let fs = Locked<DriveFilesystem?>(nil)
        h.backend.writeHook = { method, phase, id in
            if method == "files.create.upload", phase == .before {
                // The new file's upload waits until the rename has looked the target up.
                let end = Date(timeIntervalSinceNow: 30)
                while !held.withLock({ $0.open }) && Date() < end { usleep(500) }
            }
            if method == "files.update", phase == .before, id == source, !held.withLock({ $0.sourceRenamed }) {
                // The rename has looked up its target (the new file, queued): let the upload land
                // and the mount apply it before the rename goes on.
                held.withLock { $0 = (true, true) }
                let end = Date(timeIntervalSinceNow: 30)
                while !(fs.withLock { $0 }?.uploadStatus.isIdle ?? false) && Date() < end { usleep(1_000) }
            }
        }
        try h.mount()
        fs.withLock { $0 = h.fs }
        try h.writeFile(.root, "notes.txt", Array("written here\n".utf8))
        try h.rename(.root, "draft.txt", to: .root, "notes.txt")
        XCTAssertTrue(held.withLock { $0.sourceRenamed }, "the rename over the new file sent its request")
        let end = Date(timeIntervalSinceNow: 30)
        while !h.fs.uploadStatus.isIdle && Date() < end { usleep(1_000) }
        // The trash of a landed file removed here is sent on the commit queue: wait for it (bounded).
        var onDrive = h.backend.children(of: h.backend.rootID)
        let trashEnd = Date(timeIntervalSinceNow: 30)
        while onDrive.count > 1 && Date() < trashEnd {
            usleep(1_000)
            onDrive = h.backend.children(of: h.backend.rootID)
        }
        XCTAssertEqual(onDrive.map(\.name), ["notes.txt"], "one file under the name on Drive, not two")
        XCTAssertEqual(onDrive.first?.id, source, "the renamed file holds the name")
        XCTAssertEqual(onDrive.first.flatMap { h.backend.content(of: $0.id) }, Array("the draft\n".utf8))
        let replaced = h.backend.children(of: h.backend.rootID, includingTrashed: true).filter { $0.id != source }
        XCTAssertEqual(replaced.map(\.trashed), [true], "the replaced new file went to the trash")
    }
}
