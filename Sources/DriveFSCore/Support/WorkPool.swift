import DriveSupport
import Foundation

/// A fixed set of threads that run submitted work in arrival order: where the filesystem does what
/// may block on the network, so that the kernel's worker threads never do.
///
/// Each pool bounds its own concurrency (interactive requests, read-ahead and background listing
/// have a pool each, so background work can never take a thread a user is waiting for).
/// Threads start on `start()` (after daemonizing: threads started before a fork do not exist in
/// the child) and end on `stop()`, which lets queued work run first. Work submitted before `start`
/// waits for it; work submitted after `stop` runs on the caller's thread (nothing is dropped).
public final class WorkPool: Sendable {
    public let name: String
    public let threadCount: Int
    private let condition = NSCondition()
    // GUARDED_BY(condition)
    private nonisolated(unsafe) var queue: [@Sendable () -> Void] = []
    private nonisolated(unsafe) var head = 0
    private nonisolated(unsafe) var state: State = .idle
    private nonisolated(unsafe) var running = 0
    private let finished = DispatchGroup()

    private enum State { case idle, started, stopped }

    public init(name: String, threads: Int) {
        self.name = name
        self.threadCount = max(1, threads)
    }

    public func start() {
        condition.lock()
        defer { condition.unlock() }
        guard state == .idle else { return }
        state = .started
        for index in 0..<threadCount {
            finished.enter()
            let thread = Thread { [self] in
                self.loop()
                self.finished.leave()
            }
            thread.name = "\(name)-\(index)"
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    public func submit(_ work: @escaping @Sendable () -> Void) {
        condition.lock()
        if state == .stopped {
            condition.unlock()
            work()
            return
        }
        queue.append(work)
        condition.signal()
        condition.unlock()
    }

    /// Waiting work items (not counting those running).
    public var pending: Int {
        condition.lock()
        defer { condition.unlock() }
        return queue.count - head
    }

    /// Whether nothing is queued or running now.
    public var isIdle: Bool {
        condition.lock()
        defer { condition.unlock() }
        return head == queue.count && running == 0
    }

    /// Waits until nothing is queued or running (bounded: false after `timeout` seconds).
    public func waitUntilIdle(timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while head < queue.count || running > 0 {
            if state != .started { return head == queue.count }
            if !condition.wait(until: min(deadline, Date().addingTimeInterval(0.1))) && Date() >= deadline { return false }
        }
        return true
    }

    /// Lets queued work finish, then ends the threads (bounded: at most `timeout` seconds).
    public func stop(timeout: Double = 30) {
        condition.lock()
        let wasStarted = state == .started
        state = .stopped
        condition.broadcast()
        condition.unlock()
        if wasStarted { _ = finished.wait(timeout: .now() + timeout) }
    }

    private func loop() {
        while true {
            condition.lock()
            while head == queue.count && state == .started { condition.wait() }
            if head == queue.count {
                condition.unlock()
                return
            }
            let work = queue[head]
            // Drop the queue's reference now: a closure kept after it ran would keep what it
            // captured alive.
            queue[head] = {}
            head += 1
            if head > 1024 && head * 2 > queue.count {
                queue.removeFirst(head)
                head = 0
            }
            running += 1
            condition.unlock()
            work()
            condition.lock()
            running -= 1
            condition.broadcast()
            condition.unlock()
        }
    }
}
