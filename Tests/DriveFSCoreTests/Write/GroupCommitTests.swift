@testable import DriveFSCore
import DriveSupport
import Foundation
import Glibc
import TestSupport
import XCTest

/// Group commit (UploadQueue+GroupCommit.swift): closes that arrive together share one journal
/// fdatasync; each returns only after a flush that holds its record; a failed shared flush fails
/// every close it held and leaves the journal as if none had been made; a power cut at a group's
/// flush loses nothing a close returned for; one close alone costs what it always did.
///
/// The journal's seam (`UploadJournal.syncHook`, called under the queue's lock before each
/// fdatasync with the end of the bytes it makes durable) records, per flush, which commits were in
/// the file. Groups are made deterministic by holding the first flush until the other closers wait
/// in the intake (`pendingCommits`): they then form the second group, of all of them.
final class GroupCommitTests: XCTestCase {
    /// One journal flush as the seam saw it: the end of the bytes it covers and the content paths
    /// of the commits in the file up to there.
    struct Flush {
        let end: Int64
        let commits: Set<String>
    }

    /// The flushes the hook saw, in order.
    final class FlushLog: Sendable {
        let state = Locked<[Flush]>([])
        var flushes: [Flush] { state.withLock { $0 } }
    }

    /// The content paths of the commit records in the journal (up to `end`).
    private static func commitsInJournal(_ h: UploadQueueHarness, upTo end: Int64? = nil) -> [String] {
        let data = Array(FileManager.default.contents(atPath: h.uploads + "/journal") ?? Data())
        let bytes = end.map { Array(data.prefix(Int($0))) } ?? data
        var at = UploadJournal.header.count
        var paths: [String] = []
        while let (record, next) = UploadJournal.parse(bytes, at: at) {
            if case .commit(_, _, let path, _, _, _) = record { paths.append(path) }
            at = next
        }
        return paths
    }

    /// Installs the recording hook on `queue`. `gateFirst`: the first flush (the first closer's,
    /// alone: `commitConcurrently`) waits until the other `closers - 1` wait in the intake.
    /// `decide(n, end)`: an errno for flush `n` (from 1, covering the journal up to `end`), or nil.
    private func record(_ h: UploadQueueHarness, _ queue: UploadQueue, closers: Int, gateFirst: Bool = true,
                        decide: @escaping (Int, Int64) -> Int32? = { _, _ in nil }) -> FlushLog {
        let log = FlushLog()
        queue.setJournalSyncHook { end in
            let commits = Set(Self.commitsInJournal(h, upTo: end))
            let number = log.state.withLock { flushes -> Int in
                flushes.append(Flush(end: end, commits: commits))
                return flushes.count
            }
            if gateFirst && number == 1 {
                // Read under the queue's lock: the intake is a leaf, taken with nothing under it.
                waitUntil("the other closers to wait for a group") { queue.pendingCommits == closers - 1 }
            }
            return decide(number, end)
        }
        return log
    }

    /// Runs `body(i)` on `count` threads: thread 0 first, alone until its flush began (`log` saw
    /// one), then the others; returns once all returned.
    private func commitConcurrently(_ count: Int, _ log: FlushLog, _ body: @escaping @Sendable (Int) -> Void) {
        let group = DispatchGroup()
        let start = { (i: Int) in
            group.enter()
            Thread.detachNewThread {
                body(i)
                group.leave()
            }
        }
        start(0)
        waitUntil("the first closer's flush") { !log.flushes.isEmpty }
        for i in 1..<count { start(i) }
        XCTAssertEqual(group.wait(timeout: .now() + 120), .success, "every commit returned")
    }

    func testConcurrentClosesShareOneJournalFlushAndEachReturnsAfterAFlushHoldingItsRecord() throws {
        let h = try UploadQueueHarness()
        let queue = try h.makeQueue()
        let closers = 8
        let requests = try (0..<closers).map { try h.newFile("file\($0).txt") }
        let paths = (0..<closers).map { h.content("content \($0)") }
        let log = record(h, queue, closers: closers)
        // Per commit: whether it returned, and whether a flush seen by then held its record.
        let returned = Locked<[Int: Bool]>([:])
        commitConcurrently(closers, log) { i in
            do {
                try queue.commit(requests[i], contentPath: paths[i], ready: true)
                let covered = log.flushes.contains { $0.commits.contains(paths[i]) }
                returned.withLock { $0[i] = covered }
            } catch {
                XCTFail("commit \(i): \(error)")
            }
        }
        XCTAssertEqual(returned.withLock { $0 }, Dictionary(uniqueKeysWithValues: (0..<closers).map { ($0, true) }),
                       "each commit returned after a flush that held its record")
        let flushes = queue.commitFlushes
        XCTAssertEqual(flushes.journal, 2, "the first close's flush, then one for the other seven")
        XCTAssertLessThan(flushes.journal, closers)
        XCTAssertEqual(flushes.directories, 2, "one staging directory fsync a group")
        XCTAssertEqual(flushes.contents, closers, "each content file its own fdatasync")
        XCTAssertEqual(log.flushes.map(\.commits.count), [1, closers])
        XCTAssertEqual(Set(Self.commitsInJournal(h)), Set(paths))
        XCTAssertEqual(Set(queue.journalState.jobs.values.map(\.contentPath)), Set(paths))
    }

    func testAFailedSharedFlushFailsEveryCloseItHeldAndLeavesTheJournalAsIfNoneWasMade() throws {
        let h = try UploadQueueHarness()
        let queue = try h.makeQueue()
        let closers = 6
        let requests = try (0..<closers).map { try h.newFile("file\($0).txt") }
        let paths = (0..<closers).map { h.content("content \($0)") }
        let log = record(h, queue, closers: closers) { n, _ in n == 2 ? EIO : nil }
        let results = Locked<[Int: Int32]>([:])  // 0: success, else the errno
        commitConcurrently(closers, log) { i in
            do throws(FilesystemError) {
                try queue.commit(requests[i], contentPath: paths[i], ready: true)
                results.withLock { $0[i] = 0 }
            } catch {
                results.withLock { $0[i] = error.errno }
            }
        }
        let first = log.flushes[0]
        XCTAssertEqual(first.commits, [paths[0]])
        XCTAssertEqual(results.withLock { $0 }, Dictionary(uniqueKeysWithValues: (0..<closers).map { ($0, $0 == 0 ? 0 : EIO) }),
                       "the second flush held five closes, and each of them failed with its errno")
        XCTAssertEqual(queue.commitFlushes.journal, 2)
        // Cut back to the first flush's end; nothing of the failed group applied or kept.
        let size = try FileManager.default.attributesOfItem(atPath: h.uploads + "/journal")[.size] as? Int
        XCTAssertEqual(size.map(Int64.init), first.end)
        XCTAssertEqual(Self.commitsInJournal(h), [paths[0]])
        XCTAssertEqual(queue.journalState.jobs.values.map(\.contentPath), [paths[0]])
        for i in 1..<closers { XCTAssertEqual(queue.phase(of: requests[i].fileID), .none) }
        // A later commit (one of those that failed, again) is made, after what was kept.
        try queue.commit(requests[3], contentPath: paths[3], ready: true)
        XCTAssertEqual(Self.commitsInJournal(h), [paths[0], paths[3]])
        queue.setJournalSyncHook(nil)
        let again = try h.makeQueue()
        XCTAssertEqual(again.recovered.map(\.contentPath), [paths[0], paths[3]])
    }

    /// A power cut at each flush of a run of groups: what the disk holds then is the journal up to
    /// the last flush that completed (the bytes written since may be gone); the process is gone too
    /// (that flush and every later one never happen). A new queue over that journal recovers every
    /// commit that returned success.
    func testAPowerCutAtAGroupsFlushLosesNothingACloseReturnedFor() throws {
        let closers = 5
        let rounds = 2
        // Each round: the first closer's flush, then one for the others.
        for cut in 1...(2 * rounds) {
            let h = try UploadQueueHarness()
            let queue = try h.makeQueue()
            let durable = Locked<(end: Int64, image: [UInt8]?)>((Int64(UploadJournal.header.count), nil))
            let succeeded = Locked<Set<String>>([])
            let attempted = Locked<Set<String>>([])
            var flushesBefore = 0
            for round in 0..<rounds {
                let requests = try (0..<closers).map { try h.newFile("round\(round)-file\($0).txt") }
                let paths = (0..<closers).map { h.content("round \(round) content \($0)") }
                let base = flushesBefore
                let log = record(h, queue, closers: closers) { n, end in
                    durable.withLock { d -> Int32? in
                        if d.image != nil { return EIO }  // after the cut: the process is gone
                        guard base + n == cut else {
                            // Flushes run one at a time: this one completes before the next begins.
                            d.end = end
                            return nil
                        }
                        // The cut: the disk holds the journal up to the last completed flush.
                        let data = Array(FileManager.default.contents(atPath: h.uploads + "/journal") ?? Data())
                        d.image = Array(data.prefix(Int(d.end)))
                        return EIO
                    }
                }
                commitConcurrently(closers, log) { i in
                    attempted.withLock { _ = $0.insert(paths[i]) }
                    do {
                        try queue.commit(requests[i], contentPath: paths[i], ready: true)
                        succeeded.withLock { _ = $0.insert(paths[i]) }
                    } catch {}
                }
                flushesBefore += log.flushes.count
                queue.setJournalSyncHook(nil)
            }
            let image = try XCTUnwrap(durable.withLock { $0.image }, "flush \(cut) happened")
            queue.crashNow()
            // The disk after the power cut, restarted.
            let restarted = h.root + "/restarted"
            try FileManager.default.createDirectory(atPath: restarted, withIntermediateDirectories: true)
            XCTAssertTrue(FileManager.default.createFile(atPath: restarted + "/journal", contents: Data(image)))
            let recovered = try UploadQueue(directory: restarted, backend: h.fake, time: h.time, log: h.log).recovered
            let kept = Set(recovered.map(\.contentPath))
            let returned = succeeded.withLock { $0 }
            XCTAssertTrue(returned.isSubset(of: kept), "cut at flush \(cut): closes that returned but were lost: \(returned.subtracting(kept))")
            XCTAssertTrue(kept.isSubset(of: attempted.withLock { $0 }))
            XCTAssertFalse(returned.isEmpty && cut > 1, "cut at flush \(cut): some closes returned before it")
        }
    }

    /// One closer alone: its commit leads a group of one and flushes at once (no timer, no wait
    /// for company): one content fdatasync, one directory fsync and one journal fdatasync a close,
    /// as before group commit, and the flush holding its record ran before it returned.
    func testOneCloseAloneCostsWhatItAlwaysCost() throws {
        let h = try UploadQueueHarness()
        let queue = try h.makeQueue()
        let log = record(h, queue, closers: 1, gateFirst: false)
        for i in 0..<5 {
            let request = try h.newFile("alone\(i).txt")
            let path = h.content("alone \(i)")
            let before = queue.commitFlushes
            let done = Locked(false)
            Thread.detachNewThread {
                do { try queue.commit(request, contentPath: path, ready: true) } catch { XCTFail("commit \(i): \(error)") }
                done.withLock { $0 = true }
            }
            waitUntil("commit \(i) to return alone") { done.withLock { $0 } }
            let after = queue.commitFlushes
            XCTAssertEqual([after.contents - before.contents, after.directories - before.directories, after.journal - before.journal],
                           [1, 1, 1], "commit \(i)")
            XCTAssertEqual(log.flushes.last?.commits.contains(path), true)
            XCTAssertEqual(log.flushes.count, i + 1)
        }
    }
}
