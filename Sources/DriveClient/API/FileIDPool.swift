import DriveSupport
import Foundation

/// IDs from files.generateIds, reserved in batches of up to 1,000 and handed out one per create.
///
/// Contracts:
/// - Never more than one refill in flight. A taker that finds the pool empty waits for the refill
///   in flight (at most `waitLimit` seconds) instead of calling generateIds itself; only when none is
///   in flight does one be started (by the background thread once `start()` ran, else by that taker,
///   on its own thread). So N concurrent creates cost ceil(N / batch) generateIds calls, not N.
/// - Background refill: after `start()`, one thread refills the pool when a take leaves fewer than
///   `lowWater` IDs, so creates rarely wait at all. No thread exists before `start()`: a daemon that
///   forks after mounting calls `start()` in the child (threads do not survive fork).
/// - A failed refill (after the executor's own retries) is reported: the takers waiting for it get
///   its error, and it is kept in `stats.lastFailure`; the next take that needs IDs tries again.
/// - Every ID is handed out at most once: IDs leave the pool under its lock, and an ID the pool has
///   seen before (a server repeating itself) is dropped. What was seen is kept as 64-bit hashes
///   (8 bytes an ID); a collision only drops a good ID, it never hands one out twice.
///
/// Lock order: the pool's condition is a leaf lock; it is never held across a request.
final class FileIDPool: @unchecked Sendable {  // @unchecked: all state is guarded by `condition`.
    let batchSize: Int
    let lowWater: Int
    /// How long a taker waits for the refill in flight before giving up (a bound, not a schedule).
    let waitLimit: Double

    private let condition = NSCondition()
    // GUARDED_BY(condition) from here on.
    private var ids: [String] = []
    private var seen: Set<Int> = []
    private var refilling = false
    /// A take asked the background thread for a refill.
    private var wanted = false
    /// Failures since the last success, visible to waiters: (generation, error).
    private var lastFailure: (generation: Int, error: any Error)?
    /// Counts finished refills (successful or not), so a waiter can tell that the refill it waited for ended.
    private var generation = 0
    private var refills = 0
    private var failedRefills = 0
    private var thread: Thread?
    private var stopping = false

    init(batchSize: Int, lowWater: Int? = nil, waitLimit: Double = 120) {
        self.batchSize = max(1, min(1000, batchSize))
        self.lowWater = max(0, min(self.batchSize - 1, lowWater ?? self.batchSize / 4))
        self.waitLimit = waitLimit
    }

    /// Starts the one background refill thread (idempotent). Call after any fork.
    func start(_ fetch: @escaping @Sendable (Int) throws -> [String]) {
        condition.lock()
        defer { condition.unlock() }
        guard thread == nil else { return }
        stopping = false
        let t = Thread { [self] in refillLoop(fetch) }
        t.name = "drivefs.id-pool"
        thread = t
        if ids.count < lowWater { wanted = true }
        t.start()
    }

    /// Ends the background thread after the refill in flight, if any (tests, shutdown).
    func stop() {
        condition.lock()
        stopping = true
        thread = nil
        condition.broadcast()
        condition.unlock()
    }

    /// The next unused ID. `fetch` is used on the caller's thread only when no background thread runs.
    func next(_ fetch: (Int) throws -> [String]) throws -> String {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date(timeIntervalSinceNow: waitLimit)
        var startedAt: Int?
        while true {
            if let id = ids.popLast() {
                if ids.count < lowWater, thread != nil, !refilling { wanted = true; condition.broadcast() }
                return id
            }
            // Empty. A refill that ended in failure since this take began is this take's answer.
            if let startedAt, let failure = lastFailure, failure.generation > startedAt { throw failure.error }
            if startedAt == nil { startedAt = generation }
            if refilling || thread != nil {
                if !refilling { wanted = true; condition.broadcast() }
                guard condition.wait(until: deadline) || !ids.isEmpty || generation > startedAt! else {
                    throw DriveError.transport(.timedOut("no file ID: the ID pool's refill did not finish within \(Int(waitLimit)) s"))
                }
                continue
            }
            // No thread and nothing in flight: this taker refills, the others wait for it.
            refilling = true
            condition.unlock()
            let result = Result { try fetch(batchSize) }
            condition.lock()
            finishRefill(result)
        }
    }

    private func refillLoop(_ fetch: @Sendable (Int) throws -> [String]) {
        condition.lock()
        defer { condition.unlock() }
        while true {
            while !stopping, !(wanted && !refilling) { condition.wait() }
            if stopping { return }
            wanted = false
            refilling = true
            condition.unlock()
            let result = Result { try fetch(batchSize) }
            condition.lock()
            finishRefill(result)
        }
    }

    /// Condition held.
    private func finishRefill(_ result: Result<[String], any Error>) {
        refilling = false
        generation += 1
        refills += 1
        switch result {
        case .success(let fresh):
            for id in fresh where seen.insert(id.hashValue).inserted { ids.append(id) }
            lastFailure = nil
        case .failure(let error):
            failedRefills += 1
            lastFailure = (generation, error)
        }
        condition.broadcast()
    }

    var available: Int {
        condition.lock()
        defer { condition.unlock() }
        return ids.count
    }

    var stats: FileIDPoolStats {
        condition.lock()
        defer { condition.unlock() }
        return FileIDPoolStats(available: ids.count, refills: refills, failedRefills: failedRefills,
                               lastFailure: lastFailure.map { "\($0.error)" }, backgroundRefill: thread != nil)
    }
}

/// What the ID pool has done (`DriveAPI.idPoolStats`).
public struct FileIDPoolStats: Sendable, Equatable {
    /// IDs reserved and not yet handed out.
    public var available: Int
    /// generateIds calls made for the pool, successful or not.
    public var refills: Int
    public var failedRefills: Int
    /// The last refill's error, until a refill succeeds.
    public var lastFailure: String?
    /// Whether the background refill thread runs (`startIDPool()`).
    public var backgroundRefill: Bool
}
