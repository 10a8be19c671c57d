import Foundation

/// When and how long to wait before trying a request again.
///
/// Truncated exponential backoff with full jitter: before retry n (0-based) wait a uniform random
/// time in [0, min(maxDelay, baseDelay · 2ⁿ)], or the server's `Retry-After` when that is longer.
/// Bounded twice: at most `maxAttempts` tries in all, and no retry whose wait would end more than
/// `maxElapsed` seconds after the first try began.
///
/// Retried: 403 userRateLimitExceeded / rateLimitExceeded and 429 (`DriveError.rateLimited`),
/// 408/500/502/503/504, and connection failures (could not connect, timed out, connection lost).
/// Never retried: 400, 403 for other reasons, 404, 409, 412, 416, other 5xx, TLS and URL errors.
/// (401 is handled before this policy: one token refresh, one retry.)
public struct RetryPolicy: Sendable {
    public var maxAttempts: Int
    public var maxElapsed: Double
    public var baseDelay: Double
    public var maxDelay: Double
    public var random: any RandomSource

    public init(maxAttempts: Int = 8, maxElapsed: Double = 300, baseDelay: Double = 1, maxDelay: Double = 32,
                random: any RandomSource = SystemRandomSource()) {
        self.maxAttempts = maxAttempts
        self.maxElapsed = maxElapsed
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.random = random
    }

    /// The upper bound of the jittered wait before retry `retry` (0-based).
    public func ceiling(forRetry retry: Int) -> Double {
        let exponent = Double(min(retry, 62))
        return min(maxDelay, baseDelay * pow(2, exponent))
    }

    /// The wait before retry `retry` (0-based).
    public func delay(forRetry retry: Int, retryAfter: Double? = nil) -> Double {
        let jittered = ceiling(forRetry: retry) * min(max(random.nextUnit(), 0), 1)
        if let retryAfter { return max(retryAfter, jittered) }
        return jittered
    }

    /// Whether the executor tries `error`'s request again (`DriveError.isTransient`: who tries
    /// what again is decided there, for every layer).
    public func isRetryable(_ error: DriveError) -> Bool { error.isTransient }

    /// No retries at all (for calls whose caller handles failure itself).
    public static let none = RetryPolicy(maxAttempts: 1, maxElapsed: 0)
}
