import DriveSupport
import Foundation

/// The core's ranked locks, in the order a thread may take them (Mount/DriveFilesystem.swift's
/// header writes the whole order): a thread holding one takes only locks of a higher rank, except
/// that an editor's save holds two `LocalContent` locks (the new file's first).
enum LockRank: Int, Sendable {
    /// `ChangesInFlight`'s condition: held while a page of changes or a listing is applied.
    case changesInFlight = 10
    case localContent = 20
    case uploadQueue = 30
    /// `HandleTable`'s state.
    case handles = 40
    /// `LocalCopies.locals`.
    case locals = 45
    /// `NodeTable`'s state: the last of the order, a leaf (no other leaf taken under it).
    case nodeTable = 90
    /// Another leaf: taken with no other leaf held (the table's state among them), and nothing
    /// ranked taken under it (the block cache's condition, the lister's state, the invalidator's,
    /// `ContentReader`'s streams).
    case leaf = 91

    /// Leaves are taken alone: none while another is held.
    var isLeaf: Bool { rawValue >= LockRank.nodeTable.rawValue }
}

/// Debug builds check the lock order: each thread keeps the ranks of the ranked locks it holds,
/// and taking one out of order, or calling Drive with one held where the contract says none is,
/// stops the process at the bug. Release builds check nothing and pay nothing.
enum LockOrder {
    #if DEBUG
    private static let key = "drivefs.heldLockRanks"

    private static var held: [Int] {
        get { Thread.current.threadDictionary[key] as? [Int] ?? [] }
        set { Thread.current.threadDictionary[key] = newValue }
    }
    #endif

    /// Whether this thread may take a lock of `rank` now (always true in release builds).
    static func mayLock(_ rank: LockRank) -> Bool {
        #if DEBUG
        let held = self.held
        let same = held.filter { $0 == rank.rawValue }.count
        if rank.isLeaf && held.contains(where: { $0 >= LockRank.nodeTable.rawValue }) { return false }
        return held.allSatisfy { $0 <= rank.rawValue } && (same == 0 || rank == .localContent && same == 1)
        #else
        return true
        #endif
    }

    static func willLock(_ rank: LockRank) {
        #if DEBUG
        assert(mayLock(rank), "lock order: taking \(rank) while holding ranks \(held)")
        #endif
    }

    static func didLock(_ rank: LockRank) {
        #if DEBUG
        held.append(rank.rawValue)
        #endif
    }

    static func didUnlock(_ rank: LockRank) {
        #if DEBUG
        var held = self.held
        if let at = held.lastIndex(of: rank.rawValue) { held.remove(at: at) }
        self.held = held
        #endif
    }

    /// Asserts (debug builds) that this thread holds none of the ranked locks: before a request
    /// to Drive that the contract says runs with no lock held.
    static func assertNoneHeld(_ what: @autoclosure () -> String) {
        #if DEBUG
        assert(held.isEmpty, "\(what()) with ranked locks held: \(held)")
        #endif
    }
}

/// An `NSCondition` with a place in the lock order (`LockOrder`), checked in debug builds. A
/// wrapper (Foundation's `NSCondition` cannot be subclassed here): the lock, and the condition
/// waited on and broadcast. A wait lets the lock go and takes it back: the thread holds its rank
/// throughout, as it holds the lock again before anything else runs on it.
final class RankedCondition: WakeableCondition {
    private let condition = NSCondition()
    let rank: LockRank

    init(_ rank: LockRank) { self.rank = rank }

    func lock() {
        LockOrder.willLock(rank)
        condition.lock()
        LockOrder.didLock(rank)
    }

    func unlock() {
        LockOrder.didUnlock(rank)
        condition.unlock()
    }

    func wait() { condition.wait() }
    @discardableResult func wait(until limit: Date) -> Bool { condition.wait(until: limit) }
    func signal() { condition.signal() }
    func broadcast() { condition.broadcast() }
}

/// A `Locked` box with a place in the lock order (`LockOrder`), checked in debug builds.
final class RankedLocked<State> {
    private let lock = NSLock()
    private var state: State
    let rank: LockRank

    init(_ rank: LockRank, _ state: State) {
        self.rank = rank
        self.state = state
    }

    @discardableResult
    func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        LockOrder.willLock(rank)
        lock.lock()
        LockOrder.didLock(rank)
        defer {
            LockOrder.didUnlock(rank)
            lock.unlock()
        }
        return try body(&state)
    }
}

/// Sendable when what it guards is: every access to `state` holds `lock`.
extension RankedLocked: @unchecked Sendable where State: Sendable {}
