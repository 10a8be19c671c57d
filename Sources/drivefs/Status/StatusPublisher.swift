import DriveFSCore
import DriveSupport
import Foundation
import Glibc

/// The daemon's side of `drivefs status`: a thread (`drivefs-status`) that replaces this mount's
/// file in the runtime directory about once a second, and at once when `drivefs status` asks with
/// SIGUSR1; `stop` ends it and removes the file (a clean exit leaves nothing behind).
///
/// SIGUSR1 is blocked in every thread of the daemon (`prepareSignal`, called before any of them
/// starts: they inherit the mask) and taken with `sigtimedwait` by the publisher alone. A thread
/// that existed before and has it unblocked runs a handler that does nothing, so the signal can
/// never end the daemon (its default action would).
final class StatusPublisher: Sendable {
    static let interval: Double = 1
    static let requestSignal = SIGUSR1

    let directory: StatusDirectory
    private let pid: Int32
    private let snapshot: @Sendable () -> MountStatus
    private let state = Locked(State())
    private let finished = DispatchSemaphore(value: 0)

    /// Publishing and removing happen under this lock (a small write to the runtime directory:
    /// a leaf lock, nothing else is taken under it), so no file is written after `stop` removed it.
    private struct State {
        var started = false
        var stopping = false
    }

    /// - Parameter snapshot: the status now; called on the publisher's thread.
    init(directory: StatusDirectory, pid: Int32 = getpid(), snapshot: @escaping @Sendable () -> MountStatus) {
        self.directory = directory
        self.pid = pid
        self.snapshot = snapshot
    }

    /// Installs the no-op handler and blocks the signal in the calling thread. Call on the thread
    /// that will start every other (the serving thread, before the request loop).
    static func prepareSignal() {
        signal(requestSignal, ignoreStatusRequest)
        var set = requestSet()
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    private static func requestSet() -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, requestSignal)
        return set
    }

    /// Publishes once (a failure to do so is thrown: the runtime directory is unusable), then
    /// starts the thread.
    func start() throws {
        try directory.prepare()
        try directory.publish(snapshot())
        state.withLock { $0.started = true }
        let thread = Thread { [self] in
            defer { finished.signal() }
            var set = Self.requestSet()
            let wait = timespec(tv_sec: Int(Self.interval), tv_nsec: Int((Self.interval - Self.interval.rounded(.down)) * 1e9))
            while true {
                var remaining = wait
                _ = sigtimedwait(&set, nil, &remaining)
                let status = snapshot()
                let outcome = state.withLock { s -> Result<Bool, Error> in
                    guard !s.stopping else { return .success(true) }
                    return Result { try directory.publish(status); return false }
                }
                switch outcome {
                case .success(true): return
                case .success(false): continue
                case .failure(let error): Log.shared.once(.warning, "status", "cannot publish the mount's status: \(error)")
                }
            }
        }
        thread.name = "drivefs-status"
        thread.start()
    }

    /// Ends the thread (bounded) and removes the file; idempotent.
    func stop() {
        let started = state.withLock { s -> Bool in
            guard !s.stopping else { return false }
            s.stopping = true
            directory.remove(pid: pid)
            return s.started
        }
        guard started else { return }
        // To the process, not the thread (which may have ended already): the publisher is the one
        // thread that takes it; a thread with it unblocked would leave the publisher to its
        // timeout, a second at most.
        kill(getpid(), Self.requestSignal)
        _ = finished.wait(timeout: .now() + 3)
    }
}

/// SIGUSR1 on a thread that does not block it: nothing to do (the publisher takes its own with
/// sigtimedwait). Async-signal-safe by doing nothing.
private func ignoreStatusRequest(_ signal: Int32) {}
