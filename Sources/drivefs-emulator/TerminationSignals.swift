import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// SIGINT and SIGTERM without C handlers: they are blocked in every thread (call `block()` before
/// any thread starts, so threads inherit the mask) and taken synchronously with `sigwait`.
enum TerminationSignals {
    private static func set() -> sigset_t {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        return signals
    }

    static func block() {
        var signals = set()
        _ = pthread_sigmask(SIG_BLOCK, &signals, nil)
    }

    /// Returns the signal number once SIGINT or SIGTERM arrives.
    static func wait() -> Int32 {
        var signals = set()
        var received: Int32 = 0
        while sigwait(&signals, &received) != 0 {}
        return received
    }
}
