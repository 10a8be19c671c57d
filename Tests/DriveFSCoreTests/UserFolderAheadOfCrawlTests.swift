import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// A folder the user waits on is listed at once, never behind a group of the whole-drive crawl (up
/// to `listingGroupSize` folders in one query) that holds it and is slow: waiting on the crawl's
/// share of Google's quota, or many pages long. (Prefetch groups, one level ahead of the user, are
/// waited for: `DriveMountBudgetTests` counts their requests.)
final class UserFolderAheadOfCrawlTests: XCTestCase {
    func testAFolderInACrawlGroupThatIsHeldIsListedForTheUserAtOnce() throws {
        let backend = FakeDriveBackend()
        let top = backend.addFolder("top")
        var subs: [String: String] = [:]
        for n in 0..<60 {
            let id = backend.addFolder("sub\(n)", in: top)
            subs[id] = "sub\(n)"
            backend.addFile("file\(n).txt", in: id, content: Array("\(n)\n".utf8))
        }
        // Crawl groups (more than one folder in a query) are held; the user's own listings pass.
        let held = Locked((open: false, waiting: [[String]]()))
        backend.listHook = { parents in
            guard parents.count > 1 else { return }
            held.withLock { $0.waiting.append(parents) }
            let end = Date(timeIntervalSinceNow: 120)
            while !held.withLock({ $0.open }) && Date() < end { usleep(1_000) }
        }
        defer { held.withLock { $0.open = true } }
        let harness = try CoreHarness(backend: backend) { $0.indexWholeDrive = true }
        defer { harness.remove() }
        // The crawl starts at mount: the root, then `top`, then its 60 subfolders in groups.
        try harness.mount()
        let topInode = try harness.lookup(.root, "top").inode
        let end = Date(timeIntervalSinceNow: 60)
        while held.withLock({ $0.waiting.isEmpty }) && Date() < end { usleep(1_000) }
        let group = try XCTUnwrap(held.withLock { $0.waiting.first }, "a crawl group was listed")
        let name = try XCTUnwrap(subs[group[0]])

        // The user opens a folder of the held group: answered without the group.
        let answered = Locked<Result<[String], Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) let user = harness  // used by the one thread below while this one waits
        Thread {
            let result = Result { () throws -> [String] in
                let inode = try user.lookup(topInode, name).inode
                return try user.listPlus(inode).map(\.entry.name).filter { $0 != "." && $0 != ".." }
            }
            answered.withLock { $0 = result }
            done.signal()
        }.start()
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success, "the user's folder waited for the held crawl group")
        let n = name.dropFirst(3)
        XCTAssertEqual(try answered.withLock { $0 }?.get(), ["file\(n).txt"])
        held.withLock { $0.open = true }
    }

    /// A folder the crawl has queued but not sent yet is listed for the user alone, at once: not in
    /// a query with the crawl's next 49 folders (many pages long, each empty member listed again
    /// before the user is answered). Here every crawl group is held in flight (the four crawl
    /// threads' groups of 50), so a user's query that carried queued neighbours would be held too.
    func testAFolderQueuedForTheCrawlIsListedForTheUserAloneAtOnce() throws {
        let backend = FakeDriveBackend()
        let top = backend.addFolder("top")
        var subs: [String: String] = [:]
        for n in 0..<300 {
            let id = backend.addFolder("sub\(n)", in: top)
            subs[id] = "sub\(n)"
            backend.addFile("file\(n).txt", in: id, content: Array("\(n)\n".utf8))
        }
        let held = Locked((open: false, waiting: [[String]](), alone: [[String]]()))
        backend.listHook = { parents in
            guard parents.count > 1 else { return held.withLock { $0.alone.append(parents) } }
            held.withLock { $0.waiting.append(parents) }
            let end = Date(timeIntervalSinceNow: 120)
            while !held.withLock({ $0.open }) && Date() < end { usleep(1_000) }
        }
        defer { held.withLock { $0.open = true } }
        let harness = try CoreHarness(backend: backend) {
            $0.indexWholeDrive = true
            $0.backgroundListingThreads = 4
        }
        defer { harness.remove() }
        try harness.mount()
        let topInode = try harness.lookup(.root, "top").inode
        waitUntil("the four crawl threads hold a group each") { held.withLock { $0.waiting.count } == 4 }
        let inFlight = Set(held.withLock { $0.waiting }.joined())
        let queued = try XCTUnwrap(subs.keys.sorted().first { !inFlight.contains($0) }, "a folder still queued")
        let name = try XCTUnwrap(subs[queued])

        let answered = Locked<Result<[String], Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) let user = harness  // used by the one thread below while this one waits
        Thread {
            let result = Result { () throws -> [String] in
                let inode = try user.lookup(topInode, name).inode
                return try user.listPlus(inode).map(\.entry.name).filter { $0 != "." && $0 != ".." }
            }
            answered.withLock { $0 = result }
            done.signal()
        }.start()
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success, "the user's folder waited in a query with the crawl's queue")
        let n = name.dropFirst(3)
        XCTAssertEqual(try answered.withLock { $0 }?.get(), ["file\(n).txt"])
        XCTAssertTrue(held.withLock { $0.alone }.contains([queued]), "the user's folder was listed in a query of its own")
        held.withLock { $0.open = true }
    }
}
