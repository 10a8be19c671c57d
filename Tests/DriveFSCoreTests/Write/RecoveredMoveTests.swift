import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import XCTest

/// A file on Drive whose queued upload also moves it (a rename made while its new content was
/// queued, given to the upload first and cut by a `kill -9` before Drive heard of it) is shown after
/// the restart where that upload will put it, from the first answer on, in every folder's listing:
/// under the new name (a lookup finds it, so a program that writes the name again writes this file
/// rather than making a second one beside it) and not under the old one. Chaos finding 21: the file
/// was in no folder of the mount after the restart, the program made it again, and once the
/// recovered upload landed Drive held two files under the name.
final class RecoveredMoveTests: XCTestCase {
    private struct World {
        let h: CoreHarness
        let work: String
        let sub: String
        let file: String
    }

    /// `work/f.txt` on Drive; a run queues new content for it (its upload held), then renames it to
    /// `work/sub/<newName>`, and dies as the rename's request is about to reach Drive.
    private func crashWhileMoving(to newName: String, replacing: Bool, holds: inout [HeldUploadQueue]) throws -> World {
        let h = try CoreHarness { $0.readOnly = false }
        let work = h.backend.addFolder("work")
        let sub = h.backend.addFolder("sub", in: work)
        let file = h.backend.addFile("f.txt", in: work, content: Array("on Drive\n".utf8))
        if replacing { h.backend.addFile(newName, in: sub, content: Array("replaced\n".utf8)) }
        let queue = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1)
        holds.append(HeldUploadQueue(queue))
        try h.mount(uploads: holds.last!)
        let folder = try h.resolve("work").inode
        let destination = try h.resolve("work/sub").inode
        _ = try? h.lookup(destination, newName)  // listed, as a shell's rename would have it
        try h.rewrite(try h.lookup(folder, "f.txt").inode, Array("written before the crash\n".utf8))
        h.backend.writeHook = { method, phase, id in
            guard method == "files.update", phase == .before, id == file else { return }
            queue.crashNow()
            throw DriveError.cancelled
        }
        XCTAssertThrowsError(try h.rename(folder, "f.txt", to: destination, newName), "the process died during the rename")
        h.backend.writeHook = nil
        h.crash()
        XCTAssertEqual(h.backend.file(file)?.name, "f.txt", "the rename never reached Drive")
        XCTAssertEqual(h.backend.file(file)?.parents, [work])
        return World(h: h, work: work, sub: sub, file: file)
    }

    /// The restart (its uploads held): the file is where its queued upload puts it, and only there;
    /// written again under that name, it is the same file; once the uploads land Drive holds it
    /// there once, with the last bytes, and nothing else was made.
    private func checkRestart(_ w: World, newName: String, replacing: Bool, holds: inout [HeldUploadQueue]) throws {
        let h = w.h
        let created = h.backend.filesCreated
        let again = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1)
        let held = HeldUploadQueue(again)
        holds.append(held)
        try h.mount(uploads: held)
        let folder = try h.resolve("work").inode
        let destination = try h.resolve("work/sub").inode
        XCTAssertEqual(h.fs.table.entries(of: folder)?.map(\.name), ["sub"], "not shown under its old name")
        XCTAssertThrowsError(try h.lookup(folder, "f.txt"))
        let found = try h.lookup(destination, newName)
        XCTAssertEqual(h.fs.table.node(found.inode)?.file.id, w.file, "the renamed file, not the replaced one")
        XCTAssertEqual(try h.read(found.inode), Array("written before the crash\n".utf8))
        XCTAssertEqual(h.fs.table.entries(of: destination)?.map(\.name), [newName])
        try h.rewrite(found.inode, Array("written again\n".utf8))
        held.release()
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        XCTAssertEqual(h.backend.children(of: w.work).map(\.name), ["sub"])
        XCTAssertEqual(h.backend.children(of: w.sub).map(\.id), [w.file], "one \(newName) on Drive: the renamed file")
        XCTAssertEqual(h.backend.file(w.file)?.name, newName)
        XCTAssertEqual(h.backend.content(of: w.file), Array("written again\n".utf8))
        XCTAssertEqual(h.backend.filesCreated, created, "nothing made")
        if replacing {
            XCTAssertEqual(h.backend.allFiles.filter { $0.trashed }.map(\.name), [newName], "the replaced file is trashed")
        }
        // And the mount shows what Drive holds.
        XCTAssertEqual(h.fs.table.entries(of: destination)?.map(\.name), [newName])
        XCTAssertEqual(try h.read(try h.lookup(destination, newName).inode), Array("written again\n".utf8))
    }

    func testAFileMovedWhileItsNewContentWasQueuedIsShownWhereItWasMovedAfterACrash() throws {
        var holds: [HeldUploadQueue] = []
        let w = try crashWhileMoving(to: "g.txt", replacing: false, holds: &holds)
        defer {
            holds.forEach { $0.release() }
            w.h.remove()
        }
        try checkRestart(w, newName: "g.txt", replacing: false, holds: &holds)
    }

    /// The second replay of finding 21: the rename went over a file (journaled as begun, so the
    /// restart finishes it: the replaced file goes once the renamed one holds the name).
    func testAFileRenamedOverAnotherWhileItsNewContentWasQueuedIsShownInItsPlaceAfterACrash() throws {
        var holds: [HeldUploadQueue] = []
        let w = try crashWhileMoving(to: "t.txt", replacing: true, holds: &holds)
        defer {
            holds.forEach { $0.release() }
            w.h.remove()
        }
        try checkRestart(w, newName: "t.txt", replacing: true, holds: &holds)
    }

    /// Chaos finding 30 (`report-0-480`): after the restart, the folder the queued upload moves the
    /// file into is listed on Drive again before the upload lands. Drive lists the file where it
    /// was, not there; the mount keeps it where it was moved.
    func testARelistingOfTheFolderARecoveredMovePutTheFileInKeepsIt() throws {
        var holds: [HeldUploadQueue] = []
        let w = try crashWhileMoving(to: "g.txt", replacing: false, holds: &holds)
        let h = w.h
        defer {
            holds.forEach { $0.release() }
            h.remove()
        }
        let held = HeldUploadQueue(try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1))
        holds.append(held)
        try h.mount(uploads: held)
        let destination = try h.resolve("work/sub").inode
        XCTAssertEqual(h.fs.table.node(try h.lookup(destination, "g.txt").inode)?.file.id, w.file)
        try relist(h, destination)
        XCTAssertEqual(h.fs.table.entries(of: destination)?.map(\.name), ["g.txt"], "still where its upload moves it")
        XCTAssertEqual(h.fs.table.node(try h.lookup(destination, "g.txt").inode)?.file.id, w.file)
    }

    /// The same without a crash: moved while Drive was away (the queued upload carries the move),
    /// then its new folder listed on Drive again before the upload lands.
    func testARelistingOfTheFolderAQueuedMovePutTheFileInKeepsIt() throws {
        let h = try CoreHarness { $0.readOnly = false }
        let queue = HeldUploadQueue(try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1))
        defer {
            queue.release()
            h.remove()
        }
        let work = h.backend.addFolder("work")
        let sub = h.backend.addFolder("sub")
        let file = h.backend.addFile("f.txt", in: work, content: Array("on Drive\n".utf8))
        try h.mount(uploads: queue)
        let folder = try h.lookup(.root, "work").inode
        let destination = try h.lookup(.root, "sub").inode
        try h.rewrite(try h.lookup(folder, "f.txt").inode, Array("written\n".utf8))
        _ = try? h.lookup(destination, "g.txt")  // listed, as a shell's rename would have it
        h.backend.unreachable = FakeDriveBackend.cannotConnect
        h.backend.reachability!.markOffline("test: connection refused")
        try h.rename(folder, "f.txt", to: destination, "g.txt")
        h.backend.unreachable = nil
        h.backend.reachability!.recordReached()
        XCTAssertEqual(h.backend.file(file)?.parents, [work], "the move waits for the upload")
        XCTAssertEqual(h.backend.children(of: sub).map(\.name), [])
        try relist(h, destination)
        XCTAssertEqual(h.fs.table.entries(of: destination)?.map(\.name), ["g.txt"], "still where its upload moves it")
        queue.release()
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        XCTAssertEqual(h.backend.file(file)?.parents, [sub])
        XCTAssertEqual(h.backend.content(of: file), Array("written\n".utf8))
    }

    /// Lists `folder` on Drive again (its listing made stale, as its TTL or a change would).
    private func relist(_ h: CoreHarness, _ folder: Inode) throws {
        h.fs.table.withState { s in s.nodes[folder]!.listing!.trusted = false }
        try h.fs.lister.ensureListed(folder, cancellation: nil)
    }

    /// No crash: a file with new content queued is moved to another folder while Drive is away
    /// (the upload carries the move); Drive answers again, the kernel forgets the old folder (so
    /// its listing is packed), and a listing of it arrives (the crawl's) before the upload lands:
    /// Drive still lists the file there, but the mount keeps it where it was moved (a packed
    /// listing took it out of its new folder before: ENOENT under the new name).
    func testAPackedListingOfTheFolderAQueuedMoveLeftDoesNotTakeTheFileBack() throws {
        let h = try CoreHarness { $0.readOnly = false }
        let queue = HeldUploadQueue(try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1))
        defer {
            queue.release()
            h.remove()
        }
        let work = h.backend.addFolder("work")
        let sub = h.backend.addFolder("sub")
        let file = h.backend.addFile("f.txt", in: work, content: Array("on Drive\n".utf8))
        try h.mount(uploads: queue)
        let folder = try h.lookup(.root, "work").inode
        let destination = try h.lookup(.root, "sub").inode
        try h.rewrite(try h.lookup(folder, "f.txt").inode, Array("written\n".utf8))
        _ = try? h.lookup(destination, "g.txt")  // listed, as a shell's rename would have it
        h.backend.unreachable = FakeDriveBackend.cannotConnect
        h.backend.reachability!.markOffline("test: connection refused")
        try h.rename(folder, "f.txt", to: destination, "g.txt")
        h.backend.unreachable = nil
        h.backend.reachability!.recordReached()
        XCTAssertEqual(h.backend.file(file)?.parents, [work], "the move waits for the upload")
        for inode in [try h.lookup(destination, "g.txt").inode, destination, folder] {
            h.fs.forget(inode, count: h.fs.lookupCount(of: inode))
        }
        h.fs.table.withState { s in NodeTable.noteUnneeded(folder, &s) }
        h.fs.table.packUnneededFolders()
        XCTAssertFalse(h.fs.table.withState { s in s.byID[work].flatMap { s.nodes[$0]?.listing } != nil },
                       "the old folder's listing is packed")
        h.fs.invalidator.apply(h.fs.table.applyListing(work, files: h.backend.children(of: work), startedAt: h.fs.table.generation))
        let moved = try h.lookup(try h.lookup(.root, "sub").inode, "g.txt")
        XCTAssertEqual(h.fs.table.node(moved.inode)?.file.id, file)
        XCTAssertThrowsError(try h.lookup(try h.lookup(.root, "work").inode, "f.txt"))
        queue.release()
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        XCTAssertEqual(h.backend.file(file)?.parents, [sub])
        XCTAssertEqual(h.backend.file(file)?.name, "g.txt")
        XCTAssertEqual(h.backend.content(of: file), Array("written\n".utf8))
    }

    /// Chaos finding 22: a rename of a file on Drive over another (two steps on Drive: the rename,
    /// then the trash of the replaced file) cut by a `kill -9` between the two. The restart decides
    /// it before it serves (the renamed file holds the name on Drive, so the replaced one goes): the
    /// name is the renamed file from the first answer on, and an edit of it is an edit of that file.
    /// Before, the decision came after the mount had served both under the name, the edit went to
    /// the file that then went, and it was uploaded beside as a conflicted copy.
    func testARenameOverAFileCutBetweenItsTwoStepsIsDecidedBeforeTheRestartServes() throws {
        let h = try CoreHarness { $0.readOnly = false }
        defer { h.remove() }
        let work = h.backend.addFolder("work")
        let replaced = h.backend.addFile("t.txt", in: work, content: Array("replaced\n".utf8))
        let renamed = h.backend.addFile("s.txt", in: work, content: Array("saved\n".utf8))
        let queue = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1)
        try h.mount(uploads: queue)
        let folder = try h.resolve("work").inode
        _ = try h.lookup(folder, "t.txt")
        _ = try h.lookup(folder, "s.txt")
        // Dead from the trash's request on: nothing more reaches Drive (not the rename's undo either).
        let dead = Locked(false)
        h.backend.writeHook = { _, phase, id in
            guard dead.withLock({ $0 }) || phase == .before && id == replaced else { return }
            dead.withLock { $0 = true }
            queue.crashNow()
            throw DriveError.cancelled
        }
        XCTAssertThrowsError(try h.rename(folder, "s.txt", to: folder, "t.txt"), "the process died during the rename")
        h.backend.writeHook = nil
        h.crash()
        XCTAssertEqual(h.backend.file(renamed)?.name, "t.txt", "the rename's first step reached Drive")
        XCTAssertEqual(h.backend.file(replaced)?.trashed, false, "its second did not")

        let again = HeldUploadQueue(try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1))
        defer { again.release() }
        try h.mount(uploads: again)
        let folderAgain = try h.resolve("work").inode
        let found = try h.lookup(folderAgain, "t.txt")
        XCTAssertEqual(h.fs.table.entries(of: folderAgain)?.map(\.name), ["t.txt"], "one file under the name")
        XCTAssertEqual(h.fs.table.node(found.inode)?.file.id, renamed)
        try h.rewrite(found.inode, Array("edited after the restart\n".utf8))
        again.release()
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(h.fs.uploadStatus)")
        XCTAssertEqual(h.backend.children(of: work).map(\.id), [renamed], "no conflicted copy: \(h.backend.children(of: work).map(\.name))")
        XCTAssertEqual(h.backend.content(of: renamed), Array("edited after the restart\n".utf8))
        XCTAssertEqual(h.backend.file(replaced)?.trashed, true)
    }
}
