@testable import DriveClient
@testable import DriveSupport
import Foundation
import Glibc
import XCTest

/// The ID pool with a reserve (issue 17): claims in blocks from its end; a crash after a claim
/// loses the block and never repeats an ID; a torn, garbled or foreign reserve is ignored and
/// replaced; refills are in the reserve before they are used; a full disk fails the claim; and,
/// as a property, no interleaving of takes, crashes and restarts hands an ID out twice.
final class FileIDReserveTests: XCTestCase {
    private var dir: URL!
    private var path: String { dir.appendingPathComponent(FileIDReserveFile.fileName).path }

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("id-reserve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: dir)
    }

    // MARK: Test doubles

    /// Drive's side: batch n answers "n-0", "n-1", ...; every ID it issued is kept.
    final class IDServer: @unchecked Sendable {  // @unchecked: its state is behind its Locked box.
        private let state = Locked((batches: 0, issued: Set<String>(), failNext: 0))
        var batches: Int { state.withLock { $0.batches } }
        var issued: Set<String> { state.withLock { $0.issued } }
        func failNext(_ count: Int) { state.withLock { $0.failNext += count } }

        func fetch(_ count: Int) throws -> [String] {
            try state.withLock { s in
                if s.failNext > 0 {
                    s.failNext -= 1
                    throw DriveError.transport(.couldNotConnect("drive.test"))
                }
                s.batches += 1
                let ids = (0..<count).map { "\(s.batches)-\($0)" }
                s.issued.formUnion(ids)
                return ids
            }
        }
    }

    /// A reserve in memory that records what each save kept, and can fail as a full disk does.
    final class MemoryReserve: FileIDReserve, @unchecked Sendable {  // @unchecked: state behind Locked.
        private let state = Locked((kept: [String](), saves: [[String]](), full: false))
        init(_ ids: [String] = []) { state.withLock { $0.kept = ids } }
        var location: String { "memory" }
        var kept: [String] { state.withLock { $0.kept } }
        var saves: [[String]] { state.withLock { $0.saves } }
        func setFull(_ full: Bool) { state.withLock { $0.full = full } }
        func load() -> [String] { kept }
        func save(_ ids: [String]) throws {
            try state.withLock { s in
                if s.full { throw AtomicFile.Failure(operation: "write", path: "memory", errno: ENOSPC) }
                s.kept = ids
                s.saves.append(ids)
            }
        }
    }

    struct Crashed: Error {}

    /// The process dies at its `dieAt`-th save: before the file is written, or just after (the
    /// save durable, the process gone before the pool could act on it). A dead reserve writes
    /// nothing more.
    final class CrashingReserve: FileIDReserve, @unchecked Sendable {  // @unchecked: state behind Locked.
        let file: any FileIDReserve
        private let state = Locked((saves: 0, dieAt: Int?.none, afterWrite: false, dead: false))
        init(_ file: any FileIDReserve) { self.file = file }
        var location: String { file.location }
        var dead: Bool { state.withLock { $0.dead } }
        func die(atSave n: Int, afterWrite: Bool) { state.withLock { $0.dieAt = n; $0.afterWrite = afterWrite } }
        func load() -> [String] { file.load() }
        func save(_ ids: [String]) throws {
            let (die, afterWrite) = try state.withLock { s -> (Bool, Bool) in
                if s.dead { throw Crashed() }
                s.saves += 1
                let die = s.dieAt == s.saves
                if die { s.dead = true }
                return (die, s.afterWrite)
            }
            if die && !afterWrite { throw Crashed() }
            try file.save(ids)
            if die { throw Crashed() }
        }
    }

    private func file(owner: String = "root-A") -> FileIDReserveFile { FileIDReserveFile(path: path, owner: owner) }

    private func pool(batch: Int = 10, claim: Int = 4, lowWater: Int = 0, _ reserve: any FileIDReserve) -> FileIDPool {
        let pool = FileIDPool(batchSize: batch, lowWater: lowWater, claimSize: claim)
        pool.attach(reserve)
        return pool
    }

    // MARK: Claims

    /// A refill goes into the reserve whole, then blocks of `claimSize` leave it from its end (the
    /// pool is a stack, as before the reserve), one rewrite per block; a clean stop writes the
    /// unused claimed IDs back.
    func testClaimOrder() throws {
        let server = IDServer()
        let reserve = MemoryReserve()
        let pool = pool(batch: 10, claim: 4, reserve)
        var taken: [String] = []
        for _ in 0..<5 { taken.append(try pool.next(server.fetch)) }
        XCTAssertEqual(taken, ["1-9", "1-8", "1-7", "1-6", "1-5"])
        let batch = (0..<10).map { "1-\($0)" }
        XCTAssertEqual(reserve.saves, [batch, Array(batch[0..<6]), Array(batch[0..<2])],
                       "the refill appended, then one rewrite per claimed block of 4")
        XCTAssertEqual(pool.stats.inReserve, 2)
        XCTAssertEqual(pool.available, 5)
        pool.stop()
        XCTAssertEqual(reserve.kept, Array(batch[0..<5]), "the claimed IDs not handed out went back, in order")
        XCTAssertEqual(server.batches, 1)
        // The next process goes on where this one stopped.
        let next = self.pool(batch: 10, claim: 4, MemoryReserve(reserve.kept))
        XCTAssertEqual(try next.next(server.fetch), "1-4")
        XCTAssertEqual(server.batches, 1)
    }

    /// kill -9 after a claim was made durable, before any of its block was handed out, and after
    /// part of a block was: the next process loses those blocks' unused IDs and repeats none.
    func testACrashAfterAClaimLosesTheBlockAndNeverRepeatsAnID() throws {
        let server = IDServer()
        // Process 1: the refill (save 1), the first claim (save 2), two IDs handed out; then killed.
        let first = pool(batch: 12, claim: 4, file())
        XCTAssertEqual(try first.next(server.fetch), "1-11")
        XCTAssertEqual(try first.next(server.fetch), "1-10")
        XCTAssertEqual(file().load(), (0..<8).map { "1-\($0)" }, "the claimed block is out of the reserve")

        // Process 2: its first claim is durable, and it dies before handing out any of it.
        let dying = CrashingReserve(file())
        dying.die(atSave: 1, afterWrite: true)
        let second = pool(batch: 12, claim: 4, dying)
        XCTAssertThrowsError(try second.next(server.fetch)) { XCTAssertTrue($0 is Crashed, "\($0)") }
        XCTAssertTrue(dying.dead)

        // Process 3: starts after both blocks.
        let third = pool(batch: 12, claim: 4, file())
        XCTAssertEqual(try third.next(server.fetch), "1-3")
        XCTAssertEqual(server.batches, 1, "no generateIds: the reserve still had IDs")
    }

    /// A process that dies while a claim is being written (before the rename) loses nothing: the
    /// reserve is as it was, and the next process hands out the same block, which nobody had.
    func testACrashBeforeTheClaimIsWrittenLosesNothing() throws {
        let server = IDServer()
        let first = pool(batch: 8, claim: 4, file())
        for _ in 0..<4 { _ = try first.next(server.fetch) }
        let dying = CrashingReserve(file())
        dying.die(atSave: 1, afterWrite: false)
        let second = pool(batch: 8, claim: 4, dying)
        XCTAssertThrowsError(try second.next(server.fetch))
        let third = pool(batch: 8, claim: 4, file())
        XCTAssertEqual(try third.next(server.fetch), "1-3")
    }

    // MARK: Damage

    /// Torn, garbled, foreign (another root or space) and unreadable reserves are ignored: their
    /// IDs are never handed out, the take costs one generateIds, and the reserve is replaced by a
    /// good one of this drive.
    func testATornGarbledOrForeignReserveIsIgnoredAndReplaced() throws {
        let good = FileIDReserveFile.encode(["kept-1", "kept-2", "kept-3"], owner: "root-A")
        var cases: [(String, [UInt8])] = [
            ("torn", Array(good[0..<(good.count / 2)])),
            ("garbled", { var b = good; b[good.count / 3] ^= 0x20; return b }()),
            ("another drive", FileIDReserveFile.encode(["kept-1"], owner: "root-B")),
            ("empty", []),
            ("not one", Array("hello\n".utf8)),
        ]
        // Well signed, but wrong inside.
        func signed(_ text: String) -> [UInt8] {
            let body = Array(text.utf8)
            return body + Array("sha256 \(Digest.hex(.sha256, of: body))\n".utf8)
        }
        cases.append(("another space", signed("drivefs file IDs 1\nowner root-A\nspace appDataFolder\ncount 1\nkept-1\n")))
        cases.append(("wrong count", signed("drivefs file IDs 1\nowner root-A\nspace drive\ncount 5\nkept-1\n")))
        cases.append(("not an ID", signed("drivefs file IDs 1\nowner root-A\nspace drive\ncount 1\nkept 1\n")))
        cases.append(("another format", signed("drivefs file IDs 2\nowner root-A\nspace drive\ncount 1\nkept-1\n")))
        XCTAssertEqual(try FileIDReserveFile.decode(good, owner: "root-A").get(), ["kept-1", "kept-2", "kept-3"])
        XCTAssertEqual(try FileIDReserveFile.decode(signed("drivefs file IDs 1\nowner root-A\nspace drive\ncount 1\nkept-1\n"),
                                                    owner: "root-A").get(), ["kept-1"], "the signing helper makes good files")
        for (what, bytes) in cases {
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            XCTAssertEqual(file().load(), [], what)
            let server = IDServer()
            let pool = pool(batch: 5, claim: 2, file())
            XCTAssertEqual(try pool.next(server.fetch), "1-4", what)
            XCTAssertEqual(server.batches, 1, what)
            XCTAssertEqual(file().load(), ["1-0", "1-1", "1-2"], "\(what): replaced by this drive's reserve")
        }
        // Unreadable (a directory where the file should be): ignored, and the claim cannot write
        // it either, so the take fails clearly rather than handing out an ID it cannot account for.
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        XCTAssertEqual(file().load(), [])
        let server = IDServer()
        let pool = pool(batch: 5, claim: 2, file())
        XCTAssertEqual(try pool.next(server.fetch), "1-4", "the refill it cannot append is held in memory only")
        XCTAssertEqual(pool.stats.inReserve, 0)
    }

    // MARK: Refills

    /// A refill is in the reserve before any of it is handed out: with takers refilling, and with
    /// the background thread refilling below the low-water mark (the reserve then holds the rest
    /// of the old IDs and the new batch).
    func testARefillIsAppendedBeforeUse() throws {
        let server = IDServer()
        let reserve = MemoryReserve(["old-0", "old-1", "old-2"])
        let pool = pool(batch: 4, claim: 2, reserve)
        XCTAssertEqual(try (0..<3).map { _ in try pool.next(server.fetch) }, ["old-2", "old-1", "old-0"])
        XCTAssertEqual(server.batches, 0)
        XCTAssertEqual(try pool.next(server.fetch), "1-3")
        XCTAssertEqual(reserve.saves.first { $0.contains("1-3") }, ["1-0", "1-1", "1-2", "1-3"],
                       "the batch was saved whole before its first ID was claimed")

        let background = MemoryReserve(["b-0", "b-1", "b-2", "b-3", "b-4", "b-5"])
        let refilled = self.pool(batch: 8, claim: 2, lowWater: 5, background)
        XCTAssertEqual(try refilled.next(server.fetch), "b-5", "at 6 IDs, no refill yet")
        refilled.start { try server.fetch($0) }
        defer { refilled.stop() }
        XCTAssertEqual(try refilled.next(server.fetch), "b-4", "4 left: below the mark, the thread refills")
        let deadline = Date().addingTimeInterval(30)
        while refilled.stats.refills == 0 && Date() < deadline { usleep(1_000) }
        XCTAssertEqual(refilled.stats.refills, 1)
        XCTAssertEqual(background.kept, ["b-0", "b-1", "b-2", "b-3"] + (0..<8).map { "2-\($0)" },
                       "the rest of the reserve, then the new batch")
        XCTAssertEqual(try (0..<4).map { _ in try refilled.next(server.fetch) }, ["2-7", "2-6", "2-5", "2-4"])
    }

    /// A full disk: the claim fails with ENOSPC and hands out nothing, the reserve keeps every ID,
    /// and once there is room the takes go on with them. A refill that cannot be
    /// appended is held in memory only: used, and never seen by the next process.
    func testAFullDiskFailsTheClaimClearly() throws {
        let server = IDServer()
        let reserve = MemoryReserve(["r-0", "r-1", "r-2"])
        let pool = pool(batch: 4, claim: 2, reserve)
        reserve.setFull(true)
        XCTAssertThrowsError(try pool.next(server.fetch)) { error in
            XCTAssertEqual((error as? AtomicFile.Failure)?.errno, ENOSPC, "\(error)")
        }
        XCTAssertEqual(reserve.kept, ["r-0", "r-1", "r-2"])
        XCTAssertEqual(server.batches, 0, "no generateIds behind the failed claim")
        reserve.setFull(false)
        XCTAssertEqual(try pool.next(server.fetch), "r-2")
        XCTAssertEqual(try pool.next(server.fetch), "r-1")
        XCTAssertEqual(try pool.next(server.fetch), "r-0")
        reserve.setFull(true)
        XCTAssertEqual(try pool.next(server.fetch), "1-3", "a refill it cannot append is used from memory")
        XCTAssertEqual(reserve.kept, [], "and never written")
        XCTAssertEqual(self.pool(batch: 4, claim: 2, MemoryReserve(reserve.kept)).available, 0)
    }

    // MARK: Property

    /// Random interleavings of takes, failed refills, kill -9 (at any moment, or inside a save,
    /// before or after its write), clean stops and restarts, over one reserve (in memory: the file's
    /// own atomicity is `AtomicFile`'s, and thousands of fsyncs would only make this slow): no ID is ever
    /// handed out twice, every ID handed out came from Drive, and a crash loses at most one claimed
    /// block and one refill's batch.
    func testNoInterleavingOfTakesCrashesAndRestartsHandsAnIDOutTwice() throws {
        var rng = SplitMix64(seed: 0x17_1D5)
        for round in 0..<60 {
            let disk = MemoryReserve()
            let batch = [1, 3, 7, 16, 50][rng.next(below: 5)]
            let claim = [1, 2, 5, 32][rng.next(below: 4)]
            let server = IDServer()
            var handed: [String] = []
            var crashes = 0
            var restarts = 0
            var reserve = CrashingReserve(disk)
            var pool = self.pool(batch: batch, claim: claim, lowWater: rng.next(below: batch), reserve)
            for _ in 0..<300 {
                switch rng.next(below: 100) {
                case 0..<70:
                    // A take whose process died inside it (in a save) answered nobody.
                    if let id = try? pool.next(server.fetch), !reserve.dead { handed.append(id) }
                case 70..<76:
                    server.failNext(1 + rng.next(below: 2))
                case 76..<86:
                    reserve.die(atSave: 1 + rng.next(below: 3), afterWrite: rng.next(below: 2) == 0)
                case 86..<89:
                    // stopIDPool with the process going on: the write-back, then more takes.
                    pool.stop()
                case 89..<94:
                    crashes += 1
                    reserve = CrashingReserve(disk)
                    pool = self.pool(batch: batch, claim: claim, lowWater: rng.next(below: batch), reserve)
                default:
                    if !reserve.dead { pool.stop() }
                    restarts += 1
                    reserve = CrashingReserve(disk)
                    pool = self.pool(batch: batch, claim: claim, lowWater: rng.next(below: batch), reserve)
                }
                if reserve.dead {
                    // The process died inside a save: the next one starts over the file.
                    crashes += 1
                    reserve = CrashingReserve(disk)
                    pool = self.pool(batch: batch, claim: claim, lowWater: rng.next(below: batch), reserve)
                }
            }
            let what = "round \(round): batch \(batch), claim \(claim), \(crashes) crashes, \(restarts) restarts"
            XCTAssertEqual(Set(handed).count, handed.count, "an ID handed out twice: \(what)")
            let issued = server.issued
            XCTAssertTrue(handed.allSatisfy(issued.contains), what)
            let left = Set(disk.load())
            XCTAssertTrue(left.isDisjoint(with: handed), "the reserve names an ID handed out: \(what)")
            let lost = issued.count - handed.count - left.count
            XCTAssertGreaterThanOrEqual(lost, 0, what)
            XCTAssertLessThanOrEqual(lost, (crashes + 1) * (claim + batch), what)
            XCTAssertGreaterThan(handed.count, 0, what)
        }
    }

    /// Many takers at once over a reserve file, with the background thread refilling: every ID
    /// once, claims one block at a time, and after the stop the reserve names none handed out.
    func testConcurrentTakersOverAReserveNeverShareAnID() throws {
        let server = IDServer()
        let pool = pool(batch: 50, claim: 10, lowWater: 20, file())
        pool.start { try server.fetch($0) }
        let taken = Locked<[String]>([])
        let group = DispatchGroup()
        for _ in 0..<8 {
            group.enter()
            Thread {
                for _ in 0..<150 {
                    do {
                        let id = try pool.next(server.fetch)
                        taken.withLock { $0.append(id) }
                    } catch { XCTFail("take: \(error)") }
                }
                group.leave()
            }.start()
        }
        XCTAssertEqual(group.wait(timeout: .now() + 120), .success, "the takers did not finish")
        pool.stop()
        let ids = taken.withLock { $0 }
        XCTAssertEqual(ids.count, 1200)
        XCTAssertEqual(Set(ids).count, ids.count, "an ID handed out twice")
        XCTAssertTrue(Set(file().load()).isDisjoint(with: ids), "the reserve names an ID handed out")
        // A refill in flight at the stop may land after it (in the reserve, or not yet): no more is lost.
        let lost = server.issued.count - ids.count - file().load().count
        XCTAssertTrue((0...50).contains(lost), "\(lost) IDs lost by a clean stop")
    }
}
