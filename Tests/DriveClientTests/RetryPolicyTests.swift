import DriveClient
import DriveSupport
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

    /// Each failure's answer for each layer (DriveError+Retry.swift): T transient (the executor tries
    /// again), C may have been carried out (a create or the namespace asks Drive), R a refusal (the
    /// upload queue ends the job).
    func testEachLayerReadsOneClassification() {
        func info(_ s: Int, _ r: String? = nil) -> GoogleErrorInfo { GoogleErrorInfo(status: s, reason: r, message: "") }
        let table: [(DriveError, String)] = [
            (.rateLimited(info(403, "rateLimitExceeded")), "TC"),
            (.rateLimited(info(429)), "TC"),
            (.server(info(503)), "TC"),
            (.server(info(408)), "TC"),
            (.server(info(501)), "C"),
            (.transport(.couldNotConnect("x")), "TC"),
            (.transport(.connectionLost("x")), "TC"),
            (.transport(.timedOut("x")), "TC"),
            (.transport(.tls("x")), "C"),
            (.transport(.other(code: 1, message: "x")), "C"),
            (.malformedResponse("x"), "C"),
            (.cancelled, "C"),
            (.unexpectedStatus(info(502)), "C"),
            (.unexpectedStatus(info(413)), "CR"),
            (.unexpectedStatus(info(408)), "C"),
            (.notFound(info(404)), "R"),
            (.permissionDenied(info(403, "insufficientFilePermissions")), "R"),
            (.conflict(info(409, "fileIdInUse")), "R"),
            (.invalidArgument(info(400, "badRequest")), "R"),
            (.invalidArgument(info(0, "uploadSourceChanged")), ""),
            (.invalidArgument(info(0, "uploadSession")), ""),
            (.quotaExceeded(info(403, "storageQuotaExceeded")), ""),
            (.unauthorized(info(401, "invalid_grant")), ""),
            (.preconditionFailed(info(412)), ""),
            (.rangeNotSatisfiable(info(416)), ""),
            (.checksumMismatch(expected: "a", actual: "b"), ""),
            (.localFile(path: "/x", SystemCallError("open", errno: 5)), ""),
        ]
        for (error, expected) in table {
            let got = (error.isTransient ? "T" : "") + (error.mayHaveBeenCarriedOut ? "C" : "") + (error.isRefusal ? "R" : "")
            XCTAssertEqual(got, expected, "\(error)")
            XCTAssertEqual(RetryPolicy().isRetryable(error), error.isTransient, "the executor retries what is transient: \(error)")
        }
    }
}
