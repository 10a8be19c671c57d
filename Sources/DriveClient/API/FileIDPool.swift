import DriveSupport
import Foundation

/// IDs from files.generateIds, reserved in batches of up to 1,000 and handed out one per create;
/// with a `FileIDReserve` attached, the IDs not handed out are kept there across restarts, so a
/// create needs no request while the reserve lasts, also with Drive unreachable.
///
/// Contracts:
/// - Never more than one refill in flight. A taker that finds the pool empty waits for the refill
///   in flight (at most `waitLimit` seconds) instead of calling generateIds itself; only when none is
///   in flight does one be started (by the background thread once `start()` ran, else by that taker,
///   on its own thread). So N concurrent creates cost ceil(N / batch) generateIds calls, not N.
/// - Background refill: after `start()`, one thread refills the pool when a take leaves fewer than
///   `lowWater` IDs (in memory and in the reserve together), so creates rarely wait at all. No
///   thread exists before `start()`: a daemon that forks after mounting calls `start()` in the
///   child (threads do not survive fork).
/// - A failed refill (after the executor's own retries) is reported: the takers waiting for it get
///   its error, and it is kept in `stats.lastFailure`; the next take that needs IDs tries again.
/// - Every ID is handed out at most once, also across crashes and `kill -9`: IDs leave the pool
///   under its lock, an ID the pool has seen before (a server repeating itself, a reserve naming
///   one twice) is dropped, and the reserve is kept by the crash order below. What was seen is kept
///   as 64-bit hashes (8 bytes an ID); a collision only drops a good ID, it never hands one out twice.
/// - Hand-out order: a stack, as before the reserve: the last ID of the newest batch goes first,
///   and the reserve is claimed from its end.
///
/// Crash order, with a reserve (each step is one `FileIDReserve.save`, durable when it returns:
/// with the file, a temporary file fsynced, renamed over the reserve, the directory fsynced):
/// 1. Refill: generateIds answers; the reserve is rewritten as what it held plus the new IDs;
///    only then are they in `stored` (claimable). A crash before the rewrite loses the answer
///    (Drive made IDs nobody knows: no harm), never an ID handed out.
/// 2. Claim: when no claimed ID is left, the last `claimSize` (32) of `stored` are taken out of
///    the reserve by rewriting it without them, and only after that rewrite returned are they in
///    `ready` and handed out. A crash after the claim loses at most one block of unused IDs; one
///    before it leaves the reserve as it was, with none of the block handed out. An ID handed out
///    is never in the reserve again, so no restart hands it out a second time.
/// 3. Clean stop (`stop()`): the claimed IDs not handed out are written back to the end of the
///    reserve (taken out of `ready` first, so no take can hand one out while it is written).
/// Failures: a claim whose rewrite fails (a full disk: ENOSPC, EDQUOT, EIO) fails the take with
/// the `AtomicFile.Failure` (the core answers the create ENOSPC / EDQUOT, else EIO), and the
/// reserve is as it was. No fallback to a fresh generateIds there: the create needs the same disk
/// for its local copy, and a clear ENOSPC beats a create that works for folders only. A refill
/// whose append fails keeps its IDs in memory only (`ready`, logged): they were never on disk, so
/// a crash loses them and no restart can repeat them.
///
/// INVARIANT (checked in debug builds at every claim and refill): `stored` is exactly what the
/// reserve holds since its last successful save; `ready` and `stored` share no ID; no ID handed
/// out is in either.
///
/// Lock order: `persisting` (held across a reserve's save, which serialises them) → `condition`
/// (a leaf, never held across a request or a save; `stored` changes only with both held).
/// @unchecked Sendable: all state is guarded by `condition` (and `persisting`, where said).
final class FileIDPool: @unchecked Sendable {
    let batchSize: Int
    let lowWater: Int
    /// IDs moved out of the reserve by one claim (one rewrite): what a crash may lose at most.
    let claimSize: Int
    /// How long a taker waits for the refill in flight before giving up (a bound, not a schedule).
    let waitLimit: Double

    private let condition = NSCondition()
    private let persisting = NSLock()
    // GUARDED_BY(condition) from here on.
    /// IDs that may be handed out: claimed from the reserve, or never in it. The next is the last.
    private var ready: [String] = []
    /// What the reserve holds, in its order: the last is claimed first (empty without one).
    /// Changed with `persisting` held too.
    private var stored: [String] = []
    private var reserve: (any FileIDReserve)?
    /// A taker is claiming a block: others wait for it rather than claim one more.
    private var claiming = false
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

    init(batchSize: Int, lowWater: Int? = nil, claimSize: Int = 32, waitLimit: Double = 120) {
        self.batchSize = max(1, min(1000, batchSize))
        self.lowWater = max(0, min(self.batchSize - 1, lowWater ?? self.batchSize / 4))
        self.claimSize = max(1, claimSize)
        self.waitLimit = waitLimit
    }

    /// Keeps the pool's IDs in `reserve` from now on, starting with the IDs it holds (loaded now,
    /// on the caller's thread). Once per pool, before the first take (the core calls it when it is
    /// made); a second call is ignored (logged). IDs the pool holds in memory already stay there.
    func attach(_ reserve: any FileIDReserve) {
        persisting.lock()
        defer { persisting.unlock() }
        if condition.withLock({ self.reserve != nil }) {
            Log.shared.warning("ids", "the ID pool keeps its IDs in \(condition.withLock { self.reserve?.location ?? "" }) already; "
                               + "not also in \(reserve.location)")
            return
        }
        let loaded = reserve.load()
        let fresh = condition.withLock { () -> [String] in loaded.filter { seen.insert($0.hashValue).inserted } }
        if fresh.count != loaded.count {
            // An ID named twice, or one this process has seen: the reserve must not keep it.
            do { try reserve.save(fresh) } catch {
                Log.shared.warning("ids", "not using the file ID reserve \(reserve.location): it names \(loaded.count - fresh.count) "
                                   + "ID(s) twice and cannot be rewritten (\(error))")
                return
            }
        }
        condition.withLock {
            self.reserve = reserve
            stored = fresh
            if thread != nil, ready.count + stored.count < lowWater, !refilling { wanted = true; condition.broadcast() }
        }
        if !fresh.isEmpty { Log.shared.info("ids", "\(fresh.count) file IDs in the reserve \(reserve.location)") }
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
        if ready.count + stored.count < lowWater { wanted = true }
        t.start()
    }

    /// Ends the background thread after the refill in flight, if any (tests, shutdown), and
    /// writes the claimed IDs not handed out back to the reserve (crash order, step 3).
    func stop() {
        condition.lock()
        stopping = true
        thread = nil
        condition.broadcast()
        condition.unlock()
        writeBack()
    }

    /// The next unused ID. `fetch` is used on the caller's thread only when no background thread runs.
    func next(_ fetch: (Int) throws -> [String]) throws -> String {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date(timeIntervalSinceNow: waitLimit)
        var startedAt: Int?
        while true {
            if let id = ready.popLast() {
                if ready.count + stored.count < lowWater, thread != nil, !refilling { wanted = true; condition.broadcast() }
                return id
            }
            // None claimed: claim a block from the reserve (one taker at a time; the others wait for it).
            if !stored.isEmpty {
                if claiming {
                    guard condition.wait(until: deadline) || !ready.isEmpty || !claiming else {
                        throw DriveError.transport(.timedOut("no file ID: claiming IDs from the reserve did not finish within \(Int(waitLimit)) s"))
                    }
                    continue
                }
                claiming = true
                condition.unlock()
                let claimed = Result { try claim() }
                condition.lock()
                claiming = false
                condition.broadcast()
                try claimed.get()
                continue
            }
            // Empty. A refill that ended in failure since this take began is this take's answer.
            if let startedAt, let failure = lastFailure, failure.generation > startedAt { throw failure.error }
            if startedAt == nil { startedAt = generation }
            if refilling || thread != nil {
                if !refilling { wanted = true; condition.broadcast() }
                guard condition.wait(until: deadline) || !ready.isEmpty || !stored.isEmpty || generation > startedAt! else {
                    throw DriveError.transport(.timedOut("no file ID: the ID pool's refill did not finish within \(Int(waitLimit)) s"))
                }
                continue
            }
            // No thread and nothing in flight: this taker refills, the others wait for it.
            refill(fetch)
        }
    }

    private func refillLoop(_ fetch: @Sendable (Int) throws -> [String]) {
        condition.lock()
        defer { condition.unlock() }
        while true {
            while !stopping, !(wanted && !refilling) { condition.wait() }
            if stopping { return }
            wanted = false
            refill(fetch)
        }
    }

    /// Crash order, step 1: new IDs go into the reserve before they can be claimed; without one,
    /// or when it cannot be written, they are held in memory only. Neither lock held on entry.
    private func keep(_ fresh: [String]) {
        persisting.lock()
        defer { persisting.unlock() }
        condition.lock()
        let new = fresh.filter { seen.insert($0.hashValue).inserted }
        guard let reserve, !new.isEmpty else {
            ready.append(contentsOf: new)
            condition.unlock()
            return
        }
        let all = stored + new
        condition.unlock()
        do {
            try reserve.save(all)
            condition.withLock { stored = all; checkInvariants() }
        } catch {
            Log.shared.warning("ids", "cannot add \(new.count) file IDs to the reserve \(reserve.location) (\(error)): "
                               + "they are held in memory only, and a crash loses them")
            condition.withLock { ready.append(contentsOf: new) }
        }
    }

    /// Crash order, step 2: a block leaves the reserve (durably) before any of it is handed out.
    /// Neither lock held on entry.
    private func claim() throws {
        persisting.lock()
        defer { persisting.unlock() }
        condition.lock()
        guard let reserve, !stored.isEmpty else { condition.unlock(); return }
        let block = stored.suffix(claimSize)
        let rest = Array(stored.dropLast(block.count))
        condition.unlock()
        do {
            try reserve.save(rest)
        } catch {
            Log.shared.warning("ids", "cannot claim file IDs from the reserve \(reserve.location): \(error); the create fails")
            throw error
        }
        condition.withLock {
            stored = rest
            ready.append(contentsOf: block)
            checkInvariants()
        }
    }

    /// Crash order, step 3 (a clean stop): the claimed IDs not handed out go back to the reserve.
    private func writeBack() {
        persisting.lock()
        defer { persisting.unlock() }
        condition.lock()
        guard let reserve, !ready.isEmpty else { condition.unlock(); return }
        let returning = ready
        ready = []
        let all = stored + returning
        condition.unlock()
        do {
            try reserve.save(all)
            condition.withLock { stored = all }
        } catch {
            Log.shared.warning("ids", "cannot write \(returning.count) unused file IDs back to the reserve \(reserve.location) (\(error)); "
                               + "they stay in memory")
            condition.withLock { ready = returning + ready }
        }
    }

    /// Condition held. Debug builds only: O(n) in the IDs held.
    private func checkInvariants() {
        #if DEBUG
        precondition(Set(ready).isDisjoint(with: stored), "INVARIANT: an ID both claimed and in the reserve")
        precondition(Set(stored).count == stored.count, "INVARIANT: an ID twice in the reserve")
        #endif
    }

    /// One refill by this thread (condition held; released while `fetch` runs).
    private func refill(_ fetch: (Int) throws -> [String]) {
        refilling = true
        condition.unlock()
        let result = Result { try fetch(batchSize) }
        if case .success(let fresh) = result { keep(fresh) }
        condition.lock()
        finishRefill(result)
    }

    /// Condition held.
    private func finishRefill(_ result: Result<[String], any Error>) {
        refilling = false
        generation += 1
        refills += 1
        switch result {
        case .success:
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
        return ready.count + stored.count
    }

    var stats: FileIDPoolStats {
        condition.lock()
        defer { condition.unlock() }
        return FileIDPoolStats(available: ready.count + stored.count, refills: refills, failedRefills: failedRefills,
                               lastFailure: lastFailure.map { "\($0.error)" }, backgroundRefill: thread != nil,
                               inReserve: stored.count)
    }
}

/// What the ID pool has done (`DriveAPI.idPoolStats`).
public struct FileIDPoolStats: Sendable, Equatable {
    /// IDs reserved and not yet handed out (in memory and in the reserve).
    public var available: Int
    /// generateIds calls made for the pool, successful or not.
    public var refills: Int
    public var failedRefills: Int
    /// The last refill's error, until a refill succeeds.
    public var lastFailure: String?
    /// Whether the background refill thread runs (`startIDPool()`).
    public var backgroundRefill: Bool
    /// Of `available`, those kept in the reserve (`FileIDReserve`), not claimed.
    public var inReserve: Int = 0
}
