import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// A file renamed here while its upload is on its way: Drive may show the name the upload started
/// with (a change read while the create is in flight, or a listing), but the mount shows the name
/// given here, which the queue brings to Drive once the upload landed. An editor's save (write a
/// temporary file, rename it over the original) must never show the temporary name again, nor the
/// original's name with a duplicate's suffix.
final class PendingNameTests: XCTestCase {
    /// Holds one write method after it landed on the fake, before its answer goes back.
    private final class AfterGate: @unchecked Sendable {
        // @unchecked: all state is behind `state`.
        private let state = Locked((open: false, waiting: 0))
        let method: String
        init(method: String) { self.method = method }
        var hook: FakeDriveBackend.WriteHook {
            { [self] method, phase, _ in
                guard method == self.method, phase == .after else { return }
                state.withLock { $0.waiting += 1 }
                while !state.withLock({ $0.open }) { usleep(500) }
                state.withLock { $0.waiting -= 1 }
            }
        }
        var waiting: Int { state.withLock { $0.waiting } }
        func open() { state.withLock { $0.open = true } }
    }

    private func shown(_ h: CoreHarness) throws -> [String] {
        try h.listPlus(.root).map(\.entry.name).filter { $0 != "." && $0 != ".." }.sorted()
    }

    /// The editor's save: the temporary file's create is on Drive (under the temporary name) but
    /// not answered yet when the rename over the original comes; then the change feed is read.
    func testAChangeReadWhileTheUploadIsInFlightKeepsTheNameGivenHere() throws {
        let h = try CoreHarness { $0.readOnly = false }
        defer { h.remove() }
        let original = h.backend.addFile("notes.txt", content: Array("first draft\n".utf8))
        let gate = AfterGate(method: "files.create.upload")
        h.backend.writeHook = gate.hook
        try h.mount()
        XCTAssertEqual(try shown(h), ["notes.txt"])
        let saved = Array(String(repeating: "the second draft\n", count: 100).utf8)
        try h.writeFile(.root, ".notes.txt.swx", saved)
        waitUntil("the temporary file's create landed on Drive, its answer held") { gate.waiting == 1 }
        try h.rename(.root, ".notes.txt.swx", to: .root, "notes.txt")
        XCTAssertEqual(try shown(h), ["notes.txt"], "right after the rename")

        // Drive shows the temporary name now (the create was sent with it): the feed must not bring it back.
        XCTAssertEqual(h.backend.children(of: h.backend.rootID).map(\.name), [".notes.txt.swx"])
        try h.fs.pollChanges()
        XCTAssertEqual(try shown(h), ["notes.txt"], "after a change read while the upload was in flight")
        XCTAssertEqual(try h.read(try h.lookup(.root, "notes.txt").inode), saved)

        gate.open()
        waitUntil("the upload landed and its name reached Drive") { h.fs.uploadStatus.isIdle }
        try h.fs.pollChanges()
        XCTAssertEqual(try shown(h), ["notes.txt"], "once the upload landed")
        let onDrive = h.backend.children(of: h.backend.rootID)
        XCTAssertEqual(onDrive.map(\.name), ["notes.txt"], "Drive holds the saved file under the original's name")
        XCTAssertEqual(onDrive.first.flatMap { h.backend.content(of: $0.id) }, saved)
        XCTAssertEqual(h.backend.file(original)?.trashed, true, "the original is in the trash")
    }

    /// A file moved here to another folder while its upload is in flight stays in that folder when
    /// the feed shows it in the old one, and the old folder does not show it.
    func testAChangeReadWhileTheUploadIsInFlightKeepsTheFolderGivenHere() throws {
        let h = try CoreHarness { $0.readOnly = false }
        defer { h.remove() }
        _ = h.backend.addFolder("archive")
        let gate = AfterGate(method: "files.create.upload")
        h.backend.writeHook = gate.hook
        try h.mount()
        let archive = try h.lookup(.root, "archive").inode
        XCTAssertEqual(try h.listPlus(archive).map(\.entry.name).filter { $0 != "." && $0 != ".." }, [])
        try h.writeFile(.root, "report.txt", Array("report\n".utf8))
        waitUntil("the create landed on Drive, its answer held") { gate.waiting == 1 }
        try h.rename(.root, "report.txt", to: archive, "report.txt")
        try h.fs.pollChanges()
        XCTAssertEqual(try shown(h), ["archive"], "the root does not show the moved file again")
        XCTAssertEqual(try h.listPlus(archive).map(\.entry.name).filter { $0 != "." && $0 != ".." }, ["report.txt"])
        gate.open()
        waitUntil("the upload landed and its folder reached Drive") { h.fs.uploadStatus.isIdle }
        try h.fs.pollChanges()
        XCTAssertEqual(try shown(h), ["archive"])
        XCTAssertEqual(try h.listPlus(archive).map(\.entry.name).filter { $0 != "." && $0 != ".." }, ["report.txt"])
    }
}

/// A rename sends its requests to Drive, then moves the node in the table: a page of changes read
/// and applied in between would see the renamed file beside the one it replaces, both under one
/// name. Pages wait for the rename to end.
final class RenameWhilePollingTests: XCTestCase {
    func testAPageOfChangesReadDuringARenameOverAFileDoesNotShowItHalfDone() throws {
        let h = try CoreHarness { $0.readOnly = false }
        defer { h.remove() }
        let original = h.backend.addFile("notes.txt", content: Array("first draft\n".utf8))
        let saved = h.backend.addFile(".notes.txt.swp", content: Array("second draft\n".utf8))
        try h.mount()
        XCTAssertEqual(try h.listPlus(.root).map(\.entry.name).filter { $0 != "." && $0 != ".." }.sorted(),
                       [".notes.txt.swp", "notes.txt"])
        // Once the rename of the saved file reached Drive (before the original is trashed): a poll
        // on another thread, which either applies its page or waits for the rename to end.
        let polled = Locked((started: false, done: false, appliedDuringRename: false, error: String?.none))
        let fs = h.fs!
        h.backend.writeHook = { method, phase, id in
            guard method == "files.update", phase == .after, id == saved,
                  !polled.withLock({ $0.started }) else { return }
            polled.withLock { $0.started = true }
            Thread.detachNewThread {
                do { try fs.pollChanges() } catch { polled.withLock { $0.error = "\(error)" } }
                polled.withLock { $0.done = true }
            }
            let end = Date(timeIntervalSinceNow: 60)
            while !polled.withLock({ $0.done }) && fs.table.changesHere.waitingToApply == 0 && Date() < end { usleep(500) }
            polled.withLock { $0.appliedDuringRename = $0.done }
        }
        try h.rename(.root, ".notes.txt.swp", to: .root, "notes.txt")
        let end = Date(timeIntervalSinceNow: 60)
        while !polled.withLock({ $0.done }) && Date() < end { usleep(1_000) }
        XCTAssertTrue(polled.withLock { $0.started && $0.done }, "the poll ran during the rename and ended")
        XCTAssertNil(polled.withLock { $0.error })
        XCTAssertFalse(polled.withLock { $0.appliedDuringRename }, "the page waited for the rename to end")
        XCTAssertEqual(try h.listPlus(.root).map(\.entry.name).filter { $0 != "." && $0 != ".." }, ["notes.txt"])
        XCTAssertEqual(try h.read(try h.lookup(.root, "notes.txt").inode), Array("second draft\n".utf8))
        XCTAssertEqual(h.backend.file(original)?.trashed, true)
        try h.fs.pollChanges()
        XCTAssertEqual(try h.listPlus(.root).map(\.entry.name).filter { $0 != "." && $0 != ".." }, ["notes.txt"])
    }
}
