import Foundation

/// One thread of its own that runs a body every `interval` seconds and whenever woken, until
/// stopped: the shape of the core's background loops (the block cache's index writes, the change
/// poller, the pin sweeps).
///
/// Contracts:
/// - Started once (`start`, after daemonizing: threads started before a fork do not exist in the
///   child); a second `start`, or one after `stop`, does nothing.
/// - Runs of the body never overlap. The wait between two runs is `interval` seconds from the end of
///   the last one (nil: no timer, runs only when woken), cut short by `wake` or `stop`.
/// - `wake` never waits: it asks for one run as soon as the thread is free. Wakes coalesce: any
///   number of them while a run is in progress (or before `start`) make one more run after it.
/// - `stop` lets a run in progress end and starts none after it; it waits for the thread at most
///   `timeout` seconds. A wake after `stop` does nothing.
///
/// Lock order: `condition` is a leaf (the body runs without it).
final class BackgroundLoop: Sendable {
    let name: String
    let interval: Double?
    private let condition = NSCondition()
    private nonisolated(unsafe) var state = State()  // GUARDED_BY(condition)
    private let finished = DispatchGroup()

    private struct State {
        var started = false
        var stopping = false
        /// A run was asked for (`wake`) and has not begun.
        var woken = false
        var running = false
        var runs = 0
    }

    /// `name`: the thread's. `interval`: seconds between the end of one run and the start of the
    /// next (at least 0.1; nil: only when woken).
    init(name: String, interval: Double?) {
        self.name = name
        self.interval = interval.map { max(0.1, $0) }
    }

    /// Starts the thread, which runs `body` (see the contract). `runFirst`: run at once (else after
    /// the first interval, or the first wake).
    func start(runFirst: Bool = false, _ body: @escaping @Sendable () -> Void) {
        condition.lock()
        guard !state.started, !state.stopping else { condition.unlock(); return }
        state.started = true
        condition.unlock()
        finished.enter()
        let thread = Thread { [self] in
            defer { finished.leave() }
            var due = runFirst
            while true {
                condition.lock()
                if !due {
                    let deadline = interval.map { Date().addingTimeInterval($0) }
                    while !state.stopping && !state.woken {
                        if let deadline {
                            if Date() >= deadline { break }
                            _ = condition.wait(until: deadline)
                        } else {
                            condition.wait()
                        }
                    }
                }
                due = false
                guard !state.stopping else { condition.unlock(); return }
                state.woken = false
                state.running = true
                condition.unlock()
                body()
                condition.lock()
                state.running = false
                state.runs += 1
                condition.broadcast()
                condition.unlock()
            }
        }
        thread.name = name
        thread.start()
    }

    /// Asks for a run (see the contract); returns at once.
    func wake() {
        condition.lock()
        if !state.stopping {
            state.woken = true
            condition.broadcast()
        }
        condition.unlock()
    }

    /// Ends the loop: a run in progress ends first (bounded: at most `timeout` seconds waited).
    func stop(timeout: Double = 30) {
        condition.lock()
        let started = state.started
        state.stopping = true
        state.woken = false
        condition.broadcast()
        condition.unlock()
        if started { _ = finished.wait(timeout: .now() + timeout) }
    }

    /// Runs of the body finished since start.
    var runs: Int {
        condition.lock()
        defer { condition.unlock() }
        return state.runs
    }

    /// No run is in progress or asked for.
    var isIdle: Bool {
        condition.lock()
        defer { condition.unlock() }
        return !state.woken && !state.running
    }
}
