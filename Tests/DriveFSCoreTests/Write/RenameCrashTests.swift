import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// Renames through the core, and the uploads around them, with the process killed at each step:
/// every commit point of the upload queue and the moment before and after every write request
/// reaches Drive (a request never sent; a request that landed and whose answer was lost). Then a
/// restart (a new core and queue over the same cache directory and the same fake Drive), which
/// may die once more, and a last restart. Every file whose close was answered ends on Drive once,
/// under its final name and folder, with its final bytes; a replaced file is trashed (never
/// deleted), and only when its replacement took its name; nothing is made twice.
///
/// The operation the crash interrupted was never answered: the drive may show it done or not
/// done, never half done (a rename over an existing file with both files under the name, or the
/// old one gone while the new one is not in place).
final class RenameCrashTests: XCTestCase {
    /// The scenario, in order. The transfers start after `writeG` (`HeldUploadQueue`), and the
    /// renames of landed files wait until the uploads are done, so that the steps come in one order
    /// in every run. Renames of a file whose upload is running: the second test (the upload held
    /// at its create by a gate), and the queue's own crash tests.
    enum Op: String, CaseIterable {
        /// A new file written and closed, then renamed in its folder before its upload.
        case writeA, renameA
        /// A new file moved to another folder before its upload.
        case writeB, moveB
        /// A new file renamed over a file on Drive (the editor's save: write a temporary, rename it
        /// over): new content for that file, which keeps its ID.
        case writeC, replaceC
        /// A file on Drive moved to another folder and renamed (one request).
        case moveOld
        /// A folder renamed on Drive while the uploads of two new files inside it are queued.
        case writeD, renameFolder
        /// A new file renamed over another new file whose upload is queued.
        case writeE1, writeE2, replaceE
        /// New content for a file on Drive, queued, then the file moved to another folder.
        case updateF, moveF
        /// A new file to be renamed over another once both landed.
        case writeG
        // The uploads run here.
        /// A file written here, once it landed, moved to another folder (one request); then a
        /// landed file renamed over it (two: the rename, the trash).
        case moveA, replaceWithG

        /// The first operation made once the uploads of the ones before it landed.
        static let afterUploads = Op.moveA
    }

    /// One file on the fake Drive, as the verification compares them.
    struct Entry: Hashable, Comparable, CustomStringConvertible {
        var parent: String
        var name: String
        var content: String
        static func < (a: Entry, b: Entry) -> Bool { (a.parent, a.name, a.content) < (b.parent, b.name, b.content) }
        var description: String { "\(parent)/\(name)=\(content)" }
    }

    /// What Drive holds in one of the states the scenario may end in.
    struct DriveState: Equatable, CustomStringConvertible {
        var files: [Entry]
        var trashed: [Entry]
        var folderName: String
        /// Items the uploads made (the new files on Drive).
        var made: Int
        var description: String { "\(files.sorted()), trashed \(trashed.sorted()), folder \(folderName), made \(made)" }
    }

    private struct World {
        let h: CoreHarness
        let docs: String
        let archive: String
        let target: String
        let old: String
        let f: String
        var fake: FakeDriveBackend { h.backend }
    }

    private func makeWorld() throws -> World {
        let h = try CoreHarness { $0.readOnly = false; $0.transfers = 1 }
        let fake = h.backend
        let docs = fake.addFolder("docs")
        let archive = fake.addFolder("archive")
        let target = fake.addFile("target.txt", content: Array("old target".utf8))
        let old = fake.addFile("old.txt", content: Array("old".utf8))
        let f = fake.addFile("f.txt", content: Array("f1".utf8))
        return World(h: h, docs: docs, archive: archive, target: target, old: old, f: f)
    }

    private func run(_ op: Op, _ w: World) throws {
        let h = w.h
        func folder(_ name: String) throws -> Inode { try h.lookup(.root, name).inode }
        switch op {
        case .writeA: try h.writeFile(.root, "a.tmp", Array("A content".utf8))
        case .renameA: try h.rename(.root, "a.tmp", to: .root, "a.txt")
        case .writeB: try h.writeFile(.root, "b.txt", Array("B content".utf8))
        case .moveB: try h.rename(.root, "b.txt", to: try folder("docs"), "b.txt")
        case .writeC: try h.writeFile(.root, "c.tmp", Array("C content".utf8))
        case .replaceC: try h.rename(.root, "c.tmp", to: .root, "target.txt")
        case .moveOld: try h.rename(.root, "old.txt", to: try folder("archive"), "new.txt")
        case .writeD: try h.writeFile(try folder("docs"), "d.txt", Array("D content".utf8))
        case .renameFolder: try h.rename(.root, "docs", to: .root, "papers")
        case .writeE1: try h.writeFile(.root, "e.txt", Array("E1 content".utf8))
        case .writeE2: try h.writeFile(.root, "e.tmp", Array("E2 content".utf8))
        case .replaceE: try h.rename(.root, "e.tmp", to: .root, "e.txt")
        case .updateF: try h.rewrite(try h.lookup(.root, "f.txt").inode, Array("f2".utf8))
        case .moveF: try h.rename(.root, "f.txt", to: try folder("archive"), "f2.txt")
        case .writeG: try h.writeFile(.root, "g.tmp", Array("G content".utf8))
        case .moveA: try h.rename(.root, "a.txt", to: try folder("archive"), "a.txt")
        case .replaceWithG: try h.rename(.root, "g.tmp", to: try folder("archive"), "a.txt")
        }
    }

    /// Drive once the operations in `done` were made (and their uploads landed).
    private func expected(_ w: World, _ done: Set<Op>) -> DriveState {
        let root = w.fake.rootID
        var files: [Entry] = []
        var trashed: [Entry] = []
        var made = 0
        func new(_ parent: String, _ name: String, _ content: String) {
            files.append(Entry(parent: parent, name: name, content: content))
            made += 1
        }
        if done.contains(.writeA) {
            if done.contains(.replaceWithG) {
                trashed.append(Entry(parent: w.archive, name: "a.txt", content: "A content"))
                made += 1
            } else if done.contains(.moveA) {
                new(w.archive, "a.txt", "A content")
            } else {
                new(root, done.contains(.renameA) ? "a.txt" : "a.tmp", "A content")
            }
        }
        if done.contains(.writeB) { new(done.contains(.moveB) ? w.docs : root, "b.txt", "B content") }
        // The editor's save: the new file's content goes to the file it replaced, as new content
        // (the same Drive file, one update): nothing made, nothing trashed.
        if done.contains(.writeC) && !done.contains(.replaceC) { new(root, "c.tmp", "C content") }
        files.append(Entry(parent: root, name: "target.txt", content: done.contains(.replaceC) ? "C content" : "old target"))
        files.append(done.contains(.moveOld) ? Entry(parent: w.archive, name: "new.txt", content: "old")
                                              : Entry(parent: root, name: "old.txt", content: "old"))
        if done.contains(.writeD) { new(w.docs, "d.txt", "D content") }
        if done.contains(.writeE1) && !done.contains(.replaceE) { new(root, "e.txt", "E1 content") }
        if done.contains(.writeE2) { new(root, done.contains(.replaceE) ? "e.txt" : "e.tmp", "E2 content") }
        files.append(Entry(parent: done.contains(.moveF) ? w.archive : root, name: done.contains(.moveF) ? "f2.txt" : "f.txt",
                           content: done.contains(.updateF) ? "f2" : "f1"))
        if done.contains(.writeG) {
            new(done.contains(.replaceWithG) ? w.archive : root, done.contains(.replaceWithG) ? "a.txt" : "g.tmp", "G content")
        }
        return DriveState(files: files.sorted(), trashed: trashed.sorted(), folderName: done.contains(.renameFolder) ? "papers" : "docs",
                          made: made)
    }

    /// The states Drive may end in: `done` made, and `interrupted` (never answered) made or not.
    /// Never half made: a rename over a file that a crash cut between its two Drive steps (the
    /// new file in place, the old one not yet gone) is finished by the next start (the journal's
    /// replacement record), so no name is left on Drive twice.
    private func allowed(_ w: World, done: Set<Op>, interrupted: Op?) -> [DriveState] {
        var states = [expected(w, done)]
        guard let interrupted else { return states }
        states.append(expected(w, done.union([interrupted])))
        return states
    }

    private func actual(_ w: World, filesBefore: Int) -> DriveState {
        let fake = w.fake
        func entries(trashed: Bool) -> [Entry] {
            fake.allFiles.filter { !$0.isFolder && $0.trashed == trashed }.map {
                Entry(parent: $0.parents.first ?? "?", name: $0.name, content: String(decoding: fake.content(of: $0.id) ?? [], as: UTF8.self))
            }.sorted()
        }
        return DriveState(files: entries(trashed: false), trashed: entries(trashed: true), folderName: fake.file(w.docs)?.name ?? "(gone)",
                          made: fake.filesCreated - filesBefore)
    }

    private func verify(_ w: World, done: Set<Op>, interrupted: Op?, filesBefore: Int, context: String) {
        let fake = w.fake
        let now = actual(w, filesBefore: filesBefore)
        let states = allowed(w, done: done, interrupted: interrupted)
        XCTAssertTrue(states.contains(now), "\(context): Drive holds \(now); allowed: \(states.map(\.description).joined(separator: " | "))")
        XCTAssertNotNil(fake.file(w.target), "\(context): the replaced file is trashed, never deleted")
        XCTAssertEqual(fake.file(w.docs)?.trashed, false, context)
        XCTAssertEqual(fake.file(w.archive)?.trashed, false, context)
    }

    private func makeQueue(_ h: CoreHarness, _ process: CrashSwitch) throws -> UploadQueue {
        let queue = try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 1, initialBackoff: 0.01,
                                    maximumBackoff: 0.01)
        queue.setCrashHook(process.queueHook)
        h.backend.writeHook = process.writeHook(queue)
        return queue
    }

    /// After the first process died: a restart that dies at a step of its own (the `1 + k % 5`-th),
    /// then a last one that finishes the uploads; the mount must then show what Drive holds, and
    /// the journal be empty. Returns what the second crash was, for messages.
    private func restartTwice(_ w: World, k: Int, filesBefore: Int, context: String) throws -> String {
        let h = w.h
        let second = CrashSwitch(crashAt: 1 + k % 5)
        try h.mount(uploads: try makeQueue(h, second))
        waitUntil("\(context): a second crash or the end") { second.dead || h.fs.uploadStatus.isIdle }
        if second.dead { h.crash() } else { h.unmount() }
        h.backend.writeHook = nil
        try h.mount()
        XCTAssertTrue(h.fs.drainUploads(timeout: 60), "\(context): \(h.fs.uploadStatus)")
        // The mount shows what Drive holds: each live file once, with its bytes.
        let shown = try h.walk().filter { $0.value.kind == .regular }
            .map { String(decoding: try h.read($0.value.inode), as: UTF8.self) }.sorted()
        XCTAssertEqual(shown, actual(w, filesBefore: filesBefore).files.map(\.content).sorted(), "\(context): the mount shows")
        h.unmount()
        XCTAssertEqual(try UploadQueue(directory: h.uploadsDirectory, backend: h.backend).recovered.count, 0, "\(context): journal")
        return second.dead ? ", then at \(second.lastPoint)" : ""
    }

    /// Crash at the k-th step of the scenario, for every k; then a restart that crashes at a step
    /// of its own; then a last restart that finishes.
    func testACrashAtEveryStepOfRenamesAndUploadsLosesNothingAndDuplicatesNothing() throws {
        var k = 1
        var total: Int?
        while total == nil || k <= total! {
            let w = try makeWorld()
            let h = w.h
            defer { h.remove() }
            let filesBefore = w.fake.filesCreated
            // The first process: the scenario, then its uploads.
            let first = CrashSwitch(crashAt: k)
            let held = HeldUploadQueue(try makeQueue(h, first))
            try h.mount(uploads: held)
            var done = Set<Op>()
            var interrupted: Op?
            for op in Op.allCases {
                if op == Op.afterUploads {
                    held.release()
                    waitUntil("a crash or the uploads done") { first.dead || h.fs.uploadStatus.isIdle }
                    if first.dead { break }
                }
                let failure: Error?
                do { try run(op, w); failure = nil } catch { failure = error }
                if first.dead {
                    interrupted = op
                    break
                }
                XCTAssertNil(failure, "\(op) failed with no crash")
                done.insert(op)
            }
            if !first.dead {
                total = k - 1
                h.backend.writeHook = nil
                h.unmount()
                verify(w, done: done, interrupted: nil, filesBefore: filesBefore, context: "no crash")
                break
            }
            let context = "crash at \(k) (\(first.lastPoint)) during \(interrupted.map(\.rawValue) ?? "the uploads")"
            h.crash()
            let recovery = try restartTwice(w, k: k, filesBefore: filesBefore, context: context)
            verify(w, done: done, interrupted: interrupted, filesBefore: filesBefore, context: context + recovery)
            k += 1
        }
        // 63 today: 22 in the operations, 35 in the uploads, 6 in the renames after them.
        XCTAssertGreaterThan(total ?? 0, 55, "the scenario has many steps")
    }

    /// A new file renamed twice while its upload runs (held at its create): in its folder, then
    /// over a file on Drive. The queue sends the name after the create (a files.update); the
    /// replaced file is trashed at the rename. A crash at each step, then the same restarts.
    func testACrashAtEveryStepOfRenamesOfARunningUploadLosesNothingAndDuplicatesNothing() throws {
        enum Step: String { case writeX, renameX, replaceX }
        func state(_ w: World, _ done: Set<Step>) -> DriveState {
            var s = expected(w, [])
            let target = Entry(parent: w.fake.rootID, name: "target.txt", content: "old target")
            if done.contains(.replaceX) {
                s.files.removeAll { $0 == target }
                s.trashed = [target]
            }
            if done.contains(.writeX) {
                let name = done.contains(.replaceX) ? "target.txt" : done.contains(.renameX) ? "x.txt" : "x.tmp"
                s.files.append(Entry(parent: w.fake.rootID, name: name, content: "X content"))
                s.made += 1
            }
            s.files.sort()
            return s
        }
        var k = 1
        var total: Int?
        while total == nil || k <= total! {
            let w = try makeWorld()
            let h = w.h
            defer { h.remove() }
            let filesBefore = w.fake.filesCreated
            let first = CrashSwitch(crashAt: k)
            let held = HeldUploadQueue(try makeQueue(h, first))
            let gate = WriteGate(method: "files.create.upload")
            let crashOrPass = h.backend.writeHook!
            h.backend.writeHook = { method, phase, id in
                try gate.hook(method, phase, id)
                try crashOrPass(method, phase, id)
            }
            try h.mount(uploads: held)
            var done = Set<Step>()
            var interrupted: Step?
            func attempt(_ step: Step, _ body: () throws -> Void) {
                guard !first.dead, interrupted == nil else { return }
                let failure: Error?
                do { try body(); failure = nil } catch { failure = error }
                if first.dead { interrupted = step; return }
                XCTAssertNil(failure, "\(step) failed with no crash")
                done.insert(step)
            }
            attempt(.writeX) { try h.writeFile(.root, "x.tmp", Array("X content".utf8)) }
            if !first.dead {
                held.release()
                waitUntil("the upload held at its create, or a crash") { gate.waiting == 1 || first.dead }
            }
            attempt(.renameX) { try h.rename(.root, "x.tmp", to: .root, "x.txt") }
            attempt(.replaceX) { try h.rename(.root, "x.txt", to: .root, "target.txt") }
            // Let the held create go on (a dead process's request then fails in the crash hook).
            gate.open()
            if !first.dead { waitUntil("a crash or the end") { first.dead || h.fs.uploadStatus.isIdle } }
            var allowed = [state(w, done)]
            if let interrupted { allowed.append(state(w, done.union([interrupted]))) }
            var context = "no crash"
            if first.dead {
                context = "crash at \(k) (\(first.lastPoint)) during \(interrupted.map(\.rawValue) ?? "the upload")"
                h.crash()
                context += try restartTwice(w, k: k, filesBefore: filesBefore, context: context)
            } else {
                total = k - 1
                h.backend.writeHook = nil
                h.unmount()
            }
            let now = actual(w, filesBefore: filesBefore)
            XCTAssertTrue(allowed.contains(now), "\(context): Drive holds \(now); allowed: \(allowed.map(\.description).joined(separator: " | "))")
            k += 1
        }
        // 12 today: the commit, the start, the two renames' records, the trash sent and landed, the
        // create sent and landed, its landing, the name sent and landed after it, the end.
        XCTAssertGreaterThan(total ?? 0, 8, "the scenario has many steps")
    }
}

/// One run of the daemon, as a test kills it: it counts its steps (the upload queue's commit
/// points, and each write request to the fake Drive before it is sent and after it landed) and
/// dies at the `crashAt`-th (0: never). Dead, it makes no more records (its queue crashed) and
/// sends no more writes (each throws before it reaches the drive), as a dead process would not.
final class CrashSwitch: @unchecked Sendable {
    // @unchecked: the state is in its Locked box.
    private let state = Locked((count: 0, dead: false, last: ""))
    let crashAt: Int

    init(crashAt: Int) { self.crashAt = crashAt }

    var dead: Bool { state.withLock { $0.dead } }
    var lastPoint: String { state.withLock { $0.last } }

    /// True when the process is dead at this step (it died here, or before).
    private func step(_ point: String) -> Bool {
        state.withLock { s in
            if s.dead { return true }
            s.count += 1
            s.last = point
            if s.count == crashAt { s.dead = true }
            return s.dead
        }
    }

    var queueHook: @Sendable (UploadQueue.CommitPoint) -> Bool { { [self] point in step(point.description) } }

    func writeHook(_ queue: UploadQueue) -> FakeDriveBackend.WriteHook {
        { [self] method, phase, id in
            guard step("\(method) \(phase == .before ? "before sent" : "landed") \(id ?? "")") else { return }
            queue.crashNow()
            // What the dead process's caller sees does not matter (it is gone): a call cut short.
            throw DriveError.cancelled
        }
    }
}
