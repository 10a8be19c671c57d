import DriveSupport
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Group commit of the metadata journal: lines are appended (numbered 1, 2, …) under the metadata
/// lock, and made durable outside it by one `fdatasync` that covers every line appended so far, so
/// that concurrent requests share a sync instead of queueing for one each under the lock.
///
/// A waiter whose line is not yet durable either becomes the syncer (when no sync is running) or
/// waits for the running one and checks again. Contract: `waitUntilDurable(n)` returns only once a
/// sync that started after line n was written has succeeded; it throws when that sync failed, and
/// after any failure it throws for every line not already durable (Linux may drop the dirty pages
/// of a failed write-back and report success on the next fsync: what is on disk is unknown).
///
/// Lock order: the metadata lock may be taken by `capture` while no lock of this object is held;
/// never the other way round.
///
/// `@unchecked Sendable`: `syncing` and `failure` are only touched with `condition` locked.
final class JournalCommits: @unchecked Sendable {  // @unchecked: see above
    /// Lines durable so far (written with `condition` locked, read without it on the fast path).
    private let synced = Atomic<Int64>(0)
    private let condition = NSCondition()
    /// A sync is running (its syncer does not hold `condition`).
    private var syncing = false
    /// Set by the first failed sync, for good.
    private var failure: String?

    /// Test seam: called with each sync's target before its fdatasync; an errno answer fails it.
    let syncFault = Locked<(@Sendable (_ through: Int64) -> Int32?)?>(nil)
    /// Test seam: told of each sync that succeeded, with the last line it covers.
    let onSynced = Locked<(@Sendable (_ through: Int64) -> Void)?>(nil)

    var durableThrough: Int64 { synced.load(ordering: .acquiring) }

    /// Records that lines up to `line` are durable (a sync made under the metadata lock, at a journal rotation).
    func markDurable(through line: Int64) {
        condition.lock()
        synced.max(line)
        condition.broadcast()
        condition.unlock()
        onSynced.withLock { $0 }?(line)
    }

    /// Returns once lines up to `line` are on disk. `capture` answers, under the metadata lock, a
    /// descriptor of the current journal (a `dup`, closed here) and the last line written to it.
    func waitUntilDurable(_ line: Int64, capture: () -> (fd: Int32, through: Int64)) throws {
        if line <= synced.load(ordering: .acquiring) { return }
        condition.lock()
        defer { condition.unlock() }
        while line > synced.load(ordering: .acquiring) {
            if let failure { throw DriveStore.StoreError.journal(failure) }
            if syncing {
                condition.wait()
                continue
            }
            syncing = true
            condition.unlock()
            let (fd, through) = capture()
            var failed: Int32?
            if let injected = syncFault.withLock({ $0 })?(through) {
                failed = injected
            } else if fd < 0 {
                failed = EBADF
            } else {
                do throws(SystemCallError) { try SystemCall.retrying("fdatasync") { fdatasync(fd) } } catch { failed = error.errno }
            }
            if fd >= 0 { close(fd) }
            if failed == nil { onSynced.withLock { $0 }?(through) }
            condition.lock()
            syncing = false
            if let failed {
                failure = "cannot make the journal durable: fdatasync failed: \(String(cString: strerror(failed))) (errno \(failed))"
            } else {
                synced.max(through)
            }
            condition.broadcast()
        }
    }
}

private extension Atomic where Value == Int64 {
    /// Raises the value to `value` if it is lower.
    func max(_ value: Int64) {
        var current = load(ordering: .relaxed)
        while current < value {
            let (exchanged, original) = compareExchange(expected: current, desired: value, ordering: .acquiringAndReleasing)
            if exchanged { return }
            current = original
        }
    }
}
