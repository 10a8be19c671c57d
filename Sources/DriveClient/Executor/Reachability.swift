import DriveSupport
import Foundation

/// Whether Drive can be reached at all, as the executor sees it: the mount's one answer to "are
/// we offline?" (docs/semantics.md, "Offline").
///
/// Contracts:
/// - Only a failure to connect (`TransportError.couldNotConnect`: refused, no route, a name that
///   does not resolve) counts as unreachable; any answer from a server, even an error, counts as
///   reached. A slow or failing Drive is not offline: the pacer and the retry policy handle it.
/// - Unreachable for `offlineAfter` seconds in a row (or told so at start, `markOffline`) makes the
///   mount offline: from then on a request is not sent but refused at once (`admit` answers
///   `.refuse`, the executor throws `couldNotConnect` with a message that says so, and does not
///   retry it), so a read of what is not local fails now instead of after a minute of backoff.
/// - While offline one request at a time is let through as a probe, the first one after
///   `nextProbe`; probes back off from `firstProbe` doubling to `maximumProbe` seconds. There is no
///   thread of its own: the change poller's regular read (and any user's request) is the probe, so
///   an idle offline mount sends one request per poll at most.
/// - A probe (or any request) that reaches a server makes the mount online again at once.
/// - Every change of state is logged once, with how long it lasted.
public final class Reachability: Sendable {
    public enum Admission: Equatable, Sendable { case send, probe, refuse }

    struct State {
        var unreachableSince: Double?
        var offlineSince: Double?
        var nextProbe: Double = 0
        var backoff: Double
        var probing = false
        var lastFailure = ""
        var comebacks = 0
    }

    public let offlineAfter: Double
    public let firstProbe: Double
    public let maximumProbe: Double
    private let time: any TimeSource
    private let state: Locked<State>

    public init(time: any TimeSource = SystemTimeSource(), offlineAfter: Double = 10, firstProbe: Double = 1,
                maximumProbe: Double = 60) {
        self.time = time
        self.offlineAfter = offlineAfter
        self.firstProbe = firstProbe
        self.maximumProbe = maximumProbe
        state = Locked(State(backoff: firstProbe))
    }

    /// Since when the mount is offline (the table clock), or nil while online.
    public var offlineSince: Double? { state.withLock { $0.offlineSince } }
    public var isOffline: Bool { offlineSince != nil }
    /// How many times the mount came back online: a wait that began offline (a backoff of the
    /// upload queue) ends early when this moved, so queued uploads go as soon as Drive answers.
    public var comebacks: Int { state.withLock { $0.comebacks } }
    /// Run each time the mount comes back online (after `comebacks` moved), on the thread whose
    /// request reached Drive: what waits for Drive's return adds a handler that wakes it.
    public let comeback = WakeHandlers()

    /// Offline from now on (a mount that found Drive unreachable at start): the next request after
    /// `firstProbe` seconds is the first probe.
    public func markOffline(_ why: String) {
        let now = time.now()
        state.withLock { s in
            guard s.offlineSince == nil else { return }
            s.unreachableSince = s.unreachableSince ?? now
            s.offlineSince = now
            s.backoff = firstProbe
            s.nextProbe = now + firstProbe
            s.lastFailure = why
        }
        Log.shared.warning("client", "offline: Google Drive cannot be reached (\(why)); what is not local fails at once, "
                           + "and Drive is tried again now and then")
    }

    /// Whether a request may go: `.send` online, `.probe` for the one request let through while
    /// offline (its outcome must be recorded, or `abandon`ed), `.refuse` otherwise.
    public func admit() -> Admission {
        let now = time.now()
        return state.withLock { s in
            guard s.offlineSince != nil else { return .send }
            guard !s.probing, now >= s.nextProbe else { return .refuse }
            s.probing = true
            return .probe
        }
    }

    /// The refusal's words: how long offline, when the next try is.
    public var refusal: String {
        let now = time.now()
        return state.withLock { s in
            let since = s.offlineSince.map { Int(now - $0) } ?? 0
            let next = max(0, Int((s.nextProbe - now).rounded(.up)))
            return "offline for \(since) s (\(s.lastFailure)); not sent, Drive is tried again in \(next) s"
        }
    }

    /// A request reached a server (whatever it answered).
    public func recordReached() {
        let now = time.now()
        let back: Double? = state.withLock { s in
            s.unreachableSince = nil
            s.probing = false
            s.backoff = firstProbe
            guard let since = s.offlineSince else { return nil }
            s.offlineSince = nil
            s.comebacks += 1
            return now - since
        }
        if let back {
            Log.shared.info("client", "online: Google Drive answers again, after \(Int(back)) s offline")
            comeback.notify()
        }
    }

    /// A request could not connect.
    public func recordUnreachable(_ failure: String) {
        let now = time.now()
        let wentOffline: Bool = state.withLock { s in
            s.lastFailure = failure
            if s.offlineSince != nil {
                if s.probing {
                    s.probing = false
                    s.backoff = min(maximumProbe, s.backoff * 2)
                }
                s.nextProbe = now + s.backoff
                return false
            }
            let since = s.unreachableSince ?? now
            s.unreachableSince = since
            guard now - since >= offlineAfter else { return false }
            s.offlineSince = now
            s.backoff = firstProbe
            s.nextProbe = now + firstProbe
            return true
        }
        if wentOffline {
            Log.shared.warning("client", "offline: Google Drive cannot be reached for \(Int(offlineAfter)) s (\(failure)); "
                               + "what is not local fails at once, and Drive is tried again now and then")
        }
    }

    /// A probe that ended without reaching the transport (cancelled, past its deadline): the next
    /// request may probe instead.
    public func abandon() {
        state.withLock { $0.probing = false }
    }
}
