import DriveSupport
import Foundation

/// The access token every request carries.
///
/// Contracts:
/// - The cached token is used while it stays valid for at least `margin` seconds (60 s by default;
///   for tokens whose whole lifetime is shorter than twice the margin, half their lifetime), so a
///   request never leaves with a token about to expire.
/// - Otherwise the token is refreshed first, by exactly one call to the grant however many threads
///   are waiting (single flight): the others wait on the condition and share that flight's result,
///   success or error.
/// - `invalidate(token)` after a 401 drops the cached token only if it is still the one that
///   failed, so N requests failing together with the same token cause one refresh, not N.
/// - The grant runs without the lock held.
/// @unchecked Sendable: its state is touched only with `condition` held (see below)
public final class TokenManager: @unchecked Sendable {
    public let margin: Double
    private let grant: any TokenGrant
    private let time: any TimeSource

    private struct Cached {
        var token: AccessToken
        var obtainedAt: Double
    }

    // Guarded by `condition`. A condition variable, not `Locked` (STYLE #5), because waiters must
    // sleep until the single refresh in flight finishes and then share its result; `Locked` has no
    // wait. Hence `@unchecked Sendable`: every mutable field below is touched only with `condition`
    // held.
    private let condition = NSCondition()
    private var cached: Cached?
    private var refreshing = false
    private var flight: UInt64 = 0
    private var lastFlightResult: (flight: UInt64, result: Result<AccessToken, any Error>)?
    private var grantCalls = 0

    public init(grant: any TokenGrant, time: any TimeSource = SystemTimeSource(), margin: Double = 60) {
        self.grant = grant
        self.time = time
        self.margin = margin
    }

    /// How many times the grant has been asked for a token (for tests and counters).
    public var refreshCount: Int {
        condition.lock(); defer { condition.unlock() }
        return grantCalls
    }

    /// A token valid for at least the margin; refreshes (once, shared) when needed.
    /// Throws what the grant throws.
    public func accessToken() throws -> String {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let cached, isFresh(cached) { return cached.token.value }
            if refreshing {
                let awaited = flight
                while refreshing && flight == awaited { condition.wait() }
                if let last = lastFlightResult, last.flight == awaited {
                    return try last.result.get().value
                }
                continue
            }
            refreshing = true
            flight &+= 1
            let mine = flight
            grantCalls += 1
            let why = cached == nil ? "no usable token" : "the token expires within the margin"
            condition.unlock()
            Log.shared.info("client", "refreshing the access token (\(why))")
            let result = Result<AccessToken, any Error> { try grant.fetchToken() }
            let obtainedAt = time.now()
            switch result {
            case .success(let token):
                Log.shared.info("client", "access token refreshed, valid for \(Int(token.expiresAt - obtainedAt)) s")
            case .failure(let error):
                // Grant errors never carry a token or a secret (OAuthError's contract).
                Log.shared.warning("client", "token refresh failed: \(error)")
            }
            condition.lock()
            refreshing = false
            lastFlightResult = (mine, result)
            if case .success(let token) = result { cached = Cached(token: token, obtainedAt: obtainedAt) }
            condition.broadcast()
            return try result.get().value
        }
    }

    /// Forgets `token` if it is still the cached one (after the server refused it).
    public func invalidate(_ token: String) {
        condition.lock()
        defer { condition.unlock() }
        if cached?.token.value == token { cached = nil }
    }

    /// Seconds until the cached token expires (nil if none): for `auth status` and tests.
    public var secondsUntilExpiry: Double? {
        condition.lock(); defer { condition.unlock() }
        return cached.map { $0.token.expiresAt - time.now() }
    }

    private func isFresh(_ cached: Cached) -> Bool {
        let lifetime = cached.token.expiresAt - cached.obtainedAt
        let effectiveMargin = min(margin, max(0, lifetime / 2))
        return time.now() < cached.token.expiresAt - effectiveMargin
    }
}
