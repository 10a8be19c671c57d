import Foundation
import DriveSupport

/// Counters per route method name: requests, outcomes (HTTP status codes, or `reset` / `stall`
/// for connection faults, `aborted` when the client went away), request and response body bytes.
public struct MethodStats: Sendable, Equatable {
    public var requests = 0
    /// Keyed by status code as text (`"200"`), or `"reset"`, `"stall"`, `"aborted"`.
    public var statuses: [String: Int] = [:]
    public var bytesIn: Int64 = 0
    public var bytesOut: Int64 = 0
    /// Requests refused by the per-user rate limit (403 `userRateLimitExceeded`; also counted in
    /// `requests` and `statuses["403"]`). Scripted 403 faults are not counted here.
    public var rateLimited = 0

    public init() {}

    mutating func add(_ exchange: HTTPExchange) {
        requests += 1
        statuses[Self.outcomeKey(exchange.outcome), default: 0] += 1
        bytesIn += exchange.bytesIn
        bytesOut += exchange.bytesOut
    }

    /// Replaces what `add(recorded)` counted by `final`'s outcome and bytes; the request stays counted.
    mutating func amend(_ recorded: HTTPExchange, to final: HTTPExchange) {
        let was = Self.outcomeKey(recorded.outcome), now = Self.outcomeKey(final.outcome)
        if was != now, let count = statuses[was], count > 0 {
            statuses[was] = count == 1 ? nil : count - 1
            statuses[now, default: 0] += 1
        }
        bytesIn += final.bytesIn - recorded.bytesIn
        bytesOut += final.bytesOut - recorded.bytesOut
    }

    static func outcomeKey(_ outcome: HTTPExchange.Outcome) -> String {
        switch outcome {
        case .status(let s): return String(s)
        case .reset: return "reset"
        case .stalled: return "stall"
        case .aborted: return "aborted"
        }
    }

    var json: [String: Any] {
        ["requests": requests, "statuses": statuses, "bytesIn": bytesIn, "bytesOut": bytesOut, "rateLimited": rateLimited]
    }
}

/// A snapshot of the emulator's counters.
public struct EmulatorStatsSnapshot: Sendable, Equatable {
    public var methods: [String: MethodStats]
    public var totals: MethodStats
    /// Per user (the account a token acts for), what Google's Drive limits counted; nil when no
    /// limit meters requests (`EmulatorConfig.driveLimits`).
    public var users: [String: UserLimitStats]? = nil

    /// `{"methods":{"files.list":{...}},"totals":{...}}`, and `"users":{...}` under Drive limits.
    public var json: [String: Any] {
        var out: [String: Any] = ["methods": methods.mapValues(\.json), "totals": totals.json]
        if let users { out["users"] = users.mapValues(\.json) }
        return out
    }
}

/// Thread-safe counters fed by the server: a request is counted (with its planned outcome) before
/// its response is sent, and amended with the bytes and final outcome once the exchange is over.
/// Requests without a stats key (the control API, unparseable requests) are not counted. After a
/// `reset()`, an amendment for a request counted before it is dropped unless its method was counted
/// again since (then it is applied to the fresh counters, which never go negative).
final class EmulatorStats: Sendable {
    private let state = Locked([String: MethodStats]())
    /// Whose per-user counters the snapshot carries, at the clock's now.
    private let limiter: DriveLimiter?
    private let clock: any TimeSource

    init(limiter: DriveLimiter? = nil, clock: any TimeSource = SystemTimeSource()) {
        self.limiter = limiter
        self.clock = clock
    }

    func record(_ exchange: HTTPExchange) {
        guard let key = exchange.statsKey else { return }
        state.withLock { $0[key, default: MethodStats()].add(exchange) }
    }

    func amend(_ recorded: HTTPExchange, to final: HTTPExchange) {
        guard let key = recorded.statsKey, recorded.outcome != final.outcome || recorded.bytesIn != final.bytesIn
                || recorded.bytesOut != final.bytesOut else { return }
        state.withLock { methods in
            guard methods[key] != nil else { return }
            methods[key]?.amend(recorded, to: final)
        }
    }

    /// Counts a request of `key` refused by the per-user rate limit (before `record` counts the request).
    func countRateLimited(_ key: String) {
        state.withLock { $0[key, default: MethodStats()].rateLimited += 1 }
    }

    /// Zeroes the counters (the limits' budgets are not counters: they stay).
    func reset() {
        state.withLock { $0 = [:] }
        limiter?.resetStats()
    }

    func snapshot() -> EmulatorStatsSnapshot {
        let methods = state.withLock { $0 }
        var totals = MethodStats()
        for m in methods.values {
            totals.requests += m.requests
            totals.bytesIn += m.bytesIn
            totals.bytesOut += m.bytesOut
            totals.rateLimited += m.rateLimited
            for (k, v) in m.statuses { totals.statuses[k, default: 0] += v }
        }
        var snapshot = EmulatorStatsSnapshot(methods: methods, totals: totals)
        snapshot.users = limiter?.userStats(now: UserRateLimiter.nanos(clock))
        return snapshot
    }
}
