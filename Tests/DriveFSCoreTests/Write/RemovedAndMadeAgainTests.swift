import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// A file removed and made again under its name before its removal reached Drive (`rm f; create
/// f; write; close`, as some tools save) is a save: the new content becomes an update of the
/// removed file, which keeps its Drive ID, sharing and revision history, instead of a trash plus a
/// create. The removal waits `removalSettle` (the mount's upload delay) before it is sent; a crash
/// anywhere loses nothing a close returned for and leaves one file under the name.
final class RemovedAndMadeAgainTests: XCTestCase {
    private func harness(removalSettle: Double = 30, newFileSettle: Double = 30) throws -> CoreHarness {
        try CoreHarness {
            $0.readOnly = false
            $0.removalSettle = removalSettle
            $0.newFileSettle = newFileSettle
        }
    }

    private func writes(_ h: CoreHarness) -> [String: Int] {
        h.backend.requests.filter { ["files.create", "files.create.upload", "files.update", "files.update.upload", "files.delete"].contains($0.key) }
    }

    private func remove(_ h: CoreHarness, _ parent: Inode, _ name: String) throws {
        try BlockingCall.wait { h.fs.removeFile(parent: parent, name: name, reply: $0) }
    }

    private func names(_ h: CoreHarness, includingTrashed: Bool = false) -> [String] {
        h.backend.children(of: h.backend.rootID, includingTrashed: includingTrashed).map(\.name).sorted()
    }

    func testAFileRemovedAndMadeAgainUnderItsNameIsOneUpdateThatKeepsItsID() throws {
        let h = try harness()
        defer { h.remove() }
        let original = h.backend.addFile("report.txt", content: Array("version 1\n".utf8))
        try h.mount()
        _ = try h.lookup(.root, "report.txt")
        for save in 2...4 {
            let text = Array("version \(save)\n".utf8) + Array(repeating: UInt8(ascii: "a"), count: 500 * save)
            let before = writes(h)
            try remove(h, .root, "report.txt")
            XCTAssertThrowsError(try h.lookup(.root, "report.txt"), "save \(save): removed")
            XCTAssertFalse(try h.listPlus(.root).map(\.entry.name).contains("report.txt"), "save \(save): not listed once removed")
            let inode = try h.writeFile(.root, "report.txt", text)
            waitUntil("save \(save): the new file to take the removed one's place") { h.fs.table.node(inode)?.file.id == original }
            XCTAssertEqual(writes(h), before, "save \(save): nothing sent yet (the removal and the new content wait)")
            XCTAssertEqual(try h.read(try h.lookup(.root, "report.txt").inode), text, "save \(save) reads back at once")
            XCTAssertEqual(try h.listPlus(.root).map(\.entry.name).filter { $0 == "report.txt" }.count, 1)
            XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
            XCTAssertEqual(h.backend.content(of: original), text, "save \(save): the original file holds the new content")
            XCTAssertEqual(names(h, includingTrashed: true), ["report.txt"], "save \(save): nothing created, nothing trashed")
            XCTAssertEqual(writes(h), ["files.update.upload": save - 1], "save \(save): one content update a save")
        }
        XCTAssertEqual(h.backend.file(original)?.version, 4, "three new revisions of the original")
        XCTAssertEqual(h.backend.file(original)?.trashed, false)
        h.unmount()
        try h.mount()
        XCTAssertEqual(try h.read(try h.lookup(.root, "report.txt").inode), h.backend.content(of: original))
    }

    /// Saved this way three times before anything went up: the last content is one update of the
    /// original (each save's queued content is dropped with the next rm, whose removal waits too).
    func testSavesMadeThisWayInARowAreOneUpdate() throws {
        let h = try harness()
        defer { h.remove() }
        let original = h.backend.addFile("log.txt", content: Array("0\n".utf8))
        try h.mount()
        _ = try h.lookup(.root, "log.txt")
        var inode: Inode?
        for save in 1...3 {
            try remove(h, .root, "log.txt")
            let made = try h.writeFile(.root, "log.txt", Array("save \(save)\n".utf8))
            waitUntil("save \(save): the take-over") { h.fs.table.node(made)?.file.id == original }
            inode = made
        }
        XCTAssertEqual(writes(h), [:], "nothing sent yet")
        XCTAssertEqual(try h.read(try XCTUnwrap(inode)), Array("save 3\n".utf8))
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        XCTAssertEqual(h.backend.content(of: original), Array("save 3\n".utf8))
        XCTAssertEqual(writes(h), ["files.update.upload": 1], "one update with the last content")
        XCTAssertEqual(names(h, includingTrashed: true), ["log.txt"], "nothing created, nothing trashed")
    }

    /// Nobody makes the file again: its removal goes once the window has passed (one trash); a
    /// file made under the name after that is a new file.
    func testARemovalGoesAfterItsWindowAndAFileMadeLaterIsNew() throws {
        let h = try harness(removalSettle: 0.3, newFileSettle: 0.3)
        defer { h.remove() }
        let original = h.backend.addFile("gone.txt", content: Array("old\n".utf8))
        try h.mount()
        _ = try h.lookup(.root, "gone.txt")
        try remove(h, .root, "gone.txt")
        waitUntil("the removal to reach Drive after its window") { h.backend.file(original)?.trashed == true }
        XCTAssertEqual(writes(h), ["files.update": 1], "one trash")
        let inode = try h.writeFile(.root, "gone.txt", Array("new\n".utf8))
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        let id = try XCTUnwrap(h.fs.table.node(inode)?.file.id)
        XCTAssertNotEqual(id, original, "made after the removal went: a file of its own")
        XCTAssertEqual(h.backend.content(of: id), Array("new\n".utf8))
        XCTAssertEqual(h.backend.file(original)?.trashed, true)
        XCTAssertEqual(h.backend.requests["files.create.upload"], 1)
    }

    /// The mount's default keeps removals at once (`removalSettle` 0): an rm trashes before it answers.
    func testWithoutAWindowAnRmTrashesBeforeItAnswers() throws {
        let h = try harness(removalSettle: 0)
        defer { h.remove() }
        let original = h.backend.addFile("now.txt", content: Array("x".utf8))
        try h.mount()
        _ = try h.lookup(.root, "now.txt")
        try remove(h, .root, "now.txt")
        XCTAssertEqual(h.backend.file(original)?.trashed, true)
    }

    /// The new content is still open, or a file of another kind took the name: no take-over.
    func testAFileMadeAgainInAnotherFolderIsNew() throws {
        let h = try harness()
        defer { h.remove() }
        let original = h.backend.addFile("f.txt", content: Array("old\n".utf8))
        h.backend.addFolder("other")
        try h.mount()
        _ = try h.lookup(.root, "f.txt")
        let other = try h.lookup(.root, "other").inode
        try remove(h, .root, "f.txt")
        let inode = try h.writeFile(other, "f.txt", Array("elsewhere\n".utf8))
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        XCTAssertNotEqual(h.fs.table.node(inode)?.file.id, original)
        XCTAssertEqual(h.backend.file(original)?.trashed, true, "the removal went as asked")
    }

    // MARK: - Crashes

    /// `rm f; create f; write; close` with the process killed after each journal record in turn
    /// (the removal's, the close's commit, the take-over's), then a restart: Drive ends with one
    /// file under the name holding the new content when the close returned (the removed file's
    /// ID when the take-over was recorded), and never the removed file's content once the rm
    /// returned; nothing else is made.
    func testACrashAtAnyStepLeavesOneFileWithWhatTheCloseReturnedFor() throws {
        let new = Array("the new content\n".utf8)
        var point = 1
        while true {
            let h = try harness()
            defer { h.remove() }
            let original = h.backend.addFile("f.txt", content: Array("old\n".utf8))
            let queue = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1, newFileSettle: 30)
            let seen = Locked(0)
            let target = point
            queue.setCrashHook { _ in seen.withLock { $0 += 1; return $0 == target } }
            try h.mount(uploads: queue)
            _ = try h.lookup(.root, "f.txt")
            var removed = false
            var closed = false
            var inode: Inode?
            do {
                try remove(h, .root, "f.txt")
                removed = true
                let created = try h.create(.root, "f.txt")
                inode = created.attributes.inode
                try h.write(created.attributes.inode, created.opened.handle, new, at: 0)
                try h.close(created.attributes.inode, created.opened.handle)
                closed = true
                // The take-over comes from the release, on the commit threads.
                waitUntil("the take-over, or the crash") {
                    queue.hasCrashed || h.fs.table.node(created.attributes.inode)?.file.id == original
                }
            } catch {
                // The crash answered the call in flight.
            }
            let tookOver = inode.flatMap { h.fs.table.node($0)?.file.id } == original
            let crashed = queue.hasCrashed
            if !crashed { queue.crashNow() }
            h.crash()
            XCTAssertEqual(writes(h), [:], "point \(point): no write reached Drive before the crash")

            // The restart sends what the journal holds.
            try h.mount()
            XCTAssertTrue(h.fs.drainUploads(timeout: 60), "point \(point): \(h.fs.uploadStatus)")
            let live = h.backend.children(of: h.backend.rootID).filter { $0.name == "f.txt" }
            let label = "point \(point) (removed \(removed), closed \(closed), took over \(tookOver)): \(live.map(\.id))"
            XCTAssertLessThanOrEqual(live.count, 1, label)
            if closed {
                XCTAssertEqual(live.count, 1, label)
                XCTAssertEqual(live.first.flatMap { h.backend.content(of: $0.id) }, new, label)
            }
            if tookOver {
                XCTAssertEqual(live.first?.id, original, "\(label): the take-over was journaled: the ID is kept")
                XCTAssertEqual(h.backend.filesCreated, 0, label)
            }
            if removed, let file = live.first {
                XCTAssertNotEqual(h.backend.content(of: file.id), Array("old\n".utf8), "\(label): the removed content came back")
            }
            XCTAssertEqual(try h.listPlus(.root).map(\.entry.name).filter { $0 == "f.txt" }.count, live.count, label)
            print("removed and made again: \(label)")
            h.unmount()
            if !crashed { break }
            point += 1
        }
        XCTAssertGreaterThanOrEqual(point, 4, "the removal, the commit and the take-over were each crashed after")
    }

    /// After a crash that came once the take-over was journaled, before anything was sent: the
    /// restart shows the file under its name with the new content from the first answer (the
    /// journal's update of the removed file, not a removal), and once the queue runs Drive holds
    /// one file, the original, with it: one update, nothing trashed, nothing created.
    func testTheRecoveredTakeOverShowsTheNewContentAndLandsAsOneUpdate() throws {
        let h = try harness()
        defer { h.remove() }
        let original = h.backend.addFile("f.txt", content: Array("old\n".utf8))
        let queue = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1, newFileSettle: 30)
        try h.mount(uploads: queue)
        _ = try h.lookup(.root, "f.txt")
        try remove(h, .root, "f.txt")
        let new = Array("written, closed, then killed\n".utf8)
        let inode = try h.writeFile(.root, "f.txt", new)
        waitUntil("the take-over") { h.fs.table.node(inode)?.file.id == original }
        queue.crashNow()
        h.crash()

        let again = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1)
        let held = HeldUploadQueue(again)
        try h.mount(uploads: held)
        let shown = try h.lookup(.root, "f.txt")
        XCTAssertEqual(try h.read(shown.inode), new, "the recovered update is shown")
        XCTAssertEqual(h.fs.table.node(shown.inode)?.file.id, original)
        XCTAssertEqual(try h.listPlus(.root).map(\.entry.name).filter { $0 == "f.txt" }.count, 1)
        XCTAssertEqual(writes(h), [:], "nothing sent while the queue is held")
        held.release()
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        XCTAssertEqual(h.backend.content(of: original), new)
        XCTAssertEqual(writes(h), ["files.update.upload": 1], "one content update")
        XCTAssertEqual(names(h, includingTrashed: true), ["f.txt"], "nothing created, nothing trashed")
    }

    // MARK: - Restarts within the window

    /// `rm f`, a restart (kill -9) within the window, then `f` made again: the removal kept
    /// waiting across the restart (its wait is journaled), so the new file still takes the removed
    /// one's place: one update of the original, nothing trashed, nothing created.
    func testARestartWithinTheWindowKeepsTheRemovalWaitingAndTheSaveIsOneUpdate() throws {
        let h = try harness()
        defer { h.remove() }
        let original = h.backend.addFile("f.txt", content: Array("old\n".utf8))
        let queue = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1, newFileSettle: 30)
        try h.mount(uploads: queue)
        _ = try h.lookup(.root, "f.txt")
        try remove(h, .root, "f.txt")
        queue.crashNow()
        h.crash()

        try h.mount()
        XCTAssertThrowsError(try h.lookup(.root, "f.txt"), "still removed after the restart")
        let new = Array("made again after the restart\n".utf8)
        let inode = try h.writeFile(.root, "f.txt", new)
        waitUntil("the new file to take the removed one's place") { h.fs.table.node(inode)?.file.id == original }
        XCTAssertEqual(writes(h), [:], "nothing sent yet (the removal kept waiting)")
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        XCTAssertEqual(h.backend.content(of: original), new)
        XCTAssertEqual(writes(h), ["files.update.upload": 1], "one content update")
        XCTAssertEqual(names(h, includingTrashed: true), ["f.txt"], "nothing created, nothing trashed")
    }

    /// The queue's side, on its own clock: a removal recovered within its window waits what was
    /// left of it (not more, whatever the clock did meanwhile); one whose window ended during the
    /// downtime goes at once.
    func testARecoveredRemovalWaitsWhatWasLeftOfItsWindow() throws {
        let h = try harness()
        defer { h.remove() }
        let first = h.backend.addFile("a.txt", content: Array("a".utf8))
        let clock = ManualTimeSource()
        let queue = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1, time: clock)
        try queue.queueRemoval(UploadRequest(fileID: first, isNew: false, parentID: h.backend.rootID, name: "a.txt", displayPath: "a.txt"), settling: 30)
        XCTAssertTrue(queue.isSettling(first))
        queue.crashNow()

        clock.advance(10)
        let again = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1, time: clock)
        XCTAssertEqual(again.recoveredRemovals, [first])
        XCTAssertTrue(again.isSettling(first), "20 s of the window are left")
        let left = try XCTUnwrap(again.settlingLeft(first))
        XCTAssertGreaterThan(left, 15)
        XCTAssertLessThanOrEqual(left, 20)
        again.crashNow()

        clock.advance(-1000)  // a clock set back: never more than the window itself
        let back = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1, time: clock)
        XCTAssertLessThanOrEqual(try XCTUnwrap(back.settlingLeft(first)), 30)
        back.crashNow()

        clock.advance(1000 + 21)
        let late = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1, time: clock)
        XCTAssertFalse(late.isSettling(first), "its window ended while the mount was down")
        late.start { _ in }
        waitUntil("the removal to go at once") { h.backend.file(first)?.trashed == true }
        late.stop()
    }
}
