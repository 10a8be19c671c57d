import DriveClient
import XCTest

final class RetryPolicyTests: XCTestCase {
    func testBackoffDoublesUpToTheCap() {
        let policy = RetryPolicy(baseDelay: 1, maxDelay: 16, random: FixedRandom(value: 0.999999))
        let delays = (0..<8).map { policy.delay(forRetry: $0) }
        let expected: [Double] = [1, 2, 4, 8, 16, 16, 16, 16]
        for (d, e) in zip(delays, expected) { XCTAssertEqual(d, e, accuracy: 0.0001) }
        XCTAssertEqual(policy.ceiling(forRetry: 1000), 16)
    }

    func testFullJitterStaysWithinBounds() {
        let policy = RetryPolicy(baseDelay: 1, maxDelay: 32)
        for retry in 0..<10 {
            let ceiling = min(32, pow(2, Double(retry)))
            var seen: [Double] = []
            for _ in 0..<200 {
                let d = policy.delay(forRetry: retry)
                XCTAssertGreaterThanOrEqual(d, 0)
                XCTAssertLessThanOrEqual(d, ceiling)
                seen.append(d)
            }
            // Full jitter: values spread over the range, not pinned to the ceiling.
            XCTAssertLessThan(seen.min()!, ceiling * 0.5, "retry \(retry)")
        }
        XCTAssertEqual(RetryPolicy(random: FixedRandom(value: 0)).delay(forRetry: 3), 0)
    }

    func testRetryAfterWinsWhenLonger() {
        let policy = RetryPolicy(random: FixedRandom(value: 0.5))
        XCTAssertEqual(policy.delay(forRetry: 0, retryAfter: 7), 7)
        XCTAssertEqual(policy.delay(forRetry: 4, retryAfter: 1), 8)
    }

    func testRetryAfterParsesSecondsAndHTTPDates() {
        let now = 784111777.0 // Sun, 06 Nov 1994 08:49:37 GMT
        XCTAssertEqual(RetryAfter.seconds(from: "120", now: now), 120)
        XCTAssertEqual(RetryAfter.seconds(from: "Sun, 06 Nov 1994 08:49:47 GMT", now: now), 10)
        XCTAssertEqual(RetryAfter.seconds(from: "Sun, 06 Nov 1994 08:40:00 GMT", now: now), 0)
        XCTAssertNil(RetryAfter.seconds(from: "soon", now: now))
    }

    func testWhatIsRetryable() {
        let policy = RetryPolicy()
        func info(_ s: Int, _ r: String? = nil) -> GoogleErrorInfo { GoogleErrorInfo(status: s, reason: r, message: "") }
        XCTAssertTrue(policy.isRetryable(.rateLimited(info(403, "userRateLimitExceeded"))))
        XCTAssertTrue(policy.isRetryable(.rateLimited(info(429))))
        for s in [500, 502, 503, 504] { XCTAssertTrue(policy.isRetryable(.server(info(s))), "\(s)") }
        XCTAssertFalse(policy.isRetryable(.server(info(501))))
        XCTAssertTrue(policy.isRetryable(DriveError.classify(status: 408, headers: [:], body: [], now: 0)), "408 Request Timeout")
        XCTAssertTrue(policy.isRetryable(.transport(.connectionLost("x"))))
        XCTAssertTrue(policy.isRetryable(.transport(.couldNotConnect("x"))))
        XCTAssertTrue(policy.isRetryable(.transport(.timedOut("x"))))
        XCTAssertFalse(policy.isRetryable(.transport(.tls("x"))))
        XCTAssertFalse(policy.isRetryable(.invalidArgument(info(400))))
        XCTAssertFalse(policy.isRetryable(.permissionDenied(info(403, "insufficientFilePermissions"))))
        XCTAssertFalse(policy.isRetryable(.notFound(info(404))))
        XCTAssertFalse(policy.isRetryable(.conflict(info(409))))
        XCTAssertFalse(policy.isRetryable(.unauthorized(info(401))))
    }
}
