import DriveClient
import DriveEmulator
import DriveSupport
import Foundation
import XCTest

/// The ID pool: batches, one refill in flight, a background refill thread after `startIDPool()`,
/// failures reported and retried, and no ID ever handed out twice.
final class FileIDPoolTests: XCTestCase {
    var harness: EmulatorHarness?
    var apis: [DriveAPI] = []
    override func tearDown() {
        apis.forEach { $0.stopIDPool() }
        harness?.stop()
    }

    /// Runs `body(i)` on `count` threads at once and waits (bounded) for all of them.
    private func concurrently(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let group = DispatchGroup()
        for i in 0..<count {
            group.enter()
            Thread { body(i); group.leave() }.start()
        }
        XCTAssertEqual(group.wait(timeout: .now() + 120), .success, "the threads did not finish")
    }

    /// A transport whose generateIds answers are unique IDs (batch n: "n-0", "n-1", ...), counted;
    /// `failFirst` answers fail with a 500 first.
    private func idServer(failFirst: Int = 0, repeatEvery: Int = 0) -> (ScriptedTransport, Locked<Int>) {
        let calls = Locked(0)
        let transport = ScriptedTransport(fallback: { request in
            guard request.url.contains("files/generateIds") else {
                throw TransportError.other(code: -1, message: "unexpected \(request.url)")
            }
            let n = calls.withLock { c -> Int in c += 1; return c }
            if n <= failFirst {
                return ScriptedTransport.response(500, body: Array(#"{"error":{"code":500,"message":"Backend Error","errors":[{"reason":"backendError","message":"Backend Error"}]}}"#.utf8))
            }
            let count = Int(URLComponents(string: request.url)?.queryItems?.first { $0.name == "count" }?.value ?? "") ?? 0
            // A server repeating itself: every `repeatEvery`-th batch starts with the previous batch's IDs.
            var ids = (0..<count).map { "\(n)-\($0)" }
            if repeatEvery > 0, n % repeatEvery == 0, n > 1 { ids.replaceSubrange(0..<min(count, 3), with: (0..<min(count, 3)).map { "\(n - 1)-\($0)" }) }
            return ScriptedTransport.response(200, body: Array(#"{"kind":"drive#generatedIds","ids":[\#(ids.map { "\"\($0)\"" }.joined(separator: ","))]}"#.utf8))
        })
        return (transport, calls)
    }

    private func api(_ transport: ScriptedTransport, batch: Int, lowWater: Int? = nil, retry: RetryPolicy = .none) -> DriveAPI {
        let executor = DriveRequestExecutor(transport: transport, tokens: nil, pacer: nil, retryPolicy: retry)
        let api = DriveAPI(executor: executor, endpoints: .singleHost("http://drive.test/"), idBatchSize: batch, idLowWater: lowWater)
        apis.append(api)
        return api
    }

    /// 100 concurrent creates against the emulator cost ceil(100 / batch) generateIds calls, whether the
    /// takers refill (no thread yet) or the background thread does.
    func testConcurrentCreatesShareRefills() throws {
        let harness = try EmulatorHarness()
        self.harness = harness
        let root = try harness.api.getFile("root").id
        for background in [false, true] {
            let api = DriveAPI(executor: harness.executor, endpoints: harness.endpoints, idBatchSize: 30)
            apis.append(api)
            if background { api.startIDPool() }
            let before = harness.executor.stats.counters(for: "files.generateIds").requests
            let made = Locked<[String]>([])
            concurrently(100) { i in
                do {
                    let f = try api.createFolder(name: "d\(background)-\(i)", parent: root)
                    made.withLock { $0.append(f.id) }
                } catch { XCTFail("create \(i): \(error)") }
            }
            let ids = made.withLock { $0 }
            XCTAssertEqual(ids.count, 100)
            XCTAssertEqual(Set(ids).count, 100, "every create its own ID")
            let calls = harness.executor.stats.counters(for: "files.generateIds").requests - before
            if background {
                // The background thread also refills ahead of need (below the low-water mark): at most one batch more.
                XCTAssertTrue((4...5).contains(calls), "\(calls) generateIds calls")
                XCTAssertTrue(api.idPoolStats.backgroundRefill)
            } else {
                XCTAssertEqual(calls, 4, "ceil(100 / 30)")
            }
            XCTAssertEqual(api.idPoolStats.failedRefills, 0)
        }
        XCTAssertEqual(try harness.api.listChildren(of: root).count, 200)
    }

    /// A failed refill reaches the takers that waited for it, is kept in the stats, and is tried
    /// again by the next take; with and without the background thread.
    func testRefillFailureIsReportedAndRetried() throws {
        for background in [false, true] {
            let (transport, calls) = idServer(failFirst: 1)
            let api = api(transport, batch: 5, lowWater: 0)
            if background { api.startIDPool() }
            XCTAssertThrowsError(try api.reserveFileID()) { error in
                guard case .server = error as? DriveError else { return XCTFail("\(error)") }
            }
            var stats = api.idPoolStats
            XCTAssertEqual(stats.failedRefills, 1)
            XCTAssertNotNil(stats.lastFailure)
            XCTAssertEqual(try api.reserveFileID(), "2-4", "tried again on the next take")
            stats = api.idPoolStats
            XCTAssertNil(stats.lastFailure, "cleared by a successful refill")
            XCTAssertEqual(stats.refills, 2)
            XCTAssertEqual(stats.available, 4)
            XCTAssertEqual(calls.withLock { $0 }, 2)
        }
    }

    /// Concurrent takers failing together: each waiter of a failed refill gets an error, none hangs,
    /// and only one generateIds call was in flight for them.
    func testWaitersOfAFailedRefillAllGetTheError() throws {
        let (transport, calls) = idServer(failFirst: 1)
        let api = api(transport, batch: 1000)
        let outcomes = Locked<[Bool]>([])
        concurrently(8) { _ in
            let ok = (try? api.reserveFileID()) != nil
            outcomes.withLock { $0.append(ok) }
        }
        let results = outcomes.withLock { $0 }
        XCTAssertEqual(results.count, 8)
        // Takers that arrived after the failure start the next refill, which succeeds.
        XCTAssertLessThanOrEqual(calls.withLock { $0 }, 2, "one refill in flight at a time, the failed one and one more")
        XCTAssertTrue(results.contains(false), "the first taker's refill failed")
    }

    /// Property: however many takers race, and whether or not the background thread runs, no ID is
    /// handed out twice, even when the server repeats IDs it gave before; all IDs handed out came
    /// from the server.
    func testNoIDIsHandedOutTwice() throws {
        var rng = SplitMix64(seed: 0x1D_9001)
        for round in 0..<12 {
            let batch = [1, 2, 3, 7, 50, 1000][rng.next(below: 6)]
            let threads = 2 + rng.next(below: 15)
            let perThread = 1 + rng.next(below: 60)
            let background = rng.next(below: 2) == 0
            let (transport, calls) = idServer(repeatEvery: 1 + rng.next(below: 4))
            let api = api(transport, batch: batch, lowWater: rng.next(below: batch))
            if background { api.startIDPool() }
            let taken = Locked<[String]>([])
            concurrently(threads) { _ in
                for _ in 0..<perThread {
                    do {
                        let id = try api.reserveFileID()
                        taken.withLock { $0.append(id) }
                    } catch { XCTFail("take: \(error)") }
                }
            }
            let ids = taken.withLock { $0 }
            let what = "round \(round): batch \(batch), \(threads)×\(perThread), background \(background)"
            XCTAssertEqual(ids.count, threads * perThread, what)
            XCTAssertEqual(Set(ids).count, ids.count, "an ID handed out twice: \(what)")
            let served = calls.withLock { $0 }
            XCTAssertTrue(ids.allSatisfy { Int($0.split(separator: "-")[0]).map { $0 >= 1 && $0 <= served } ?? false }, what)
            api.stopIDPool()
        }
    }
}
