import DriveClient
import XCTest

final class DriveErrorTests: XCTestCase {
    private func classify(_ status: Int, _ reason: String?, headers: [String: String] = [:]) -> DriveError {
        let body = reason.map {
            Array("""
            {"error":{"code":\(status),"message":"Top message","errors":[{"message":"m","domain":"global","reason":"\($0)"}]}}
            """.utf8)
        } ?? []
        return DriveError.classify(status: status, headers: headers, body: body, now: 0)
    }

    func testClassificationTable() {
        let rows: [(Int, String?, String)] = [
            (400, "invalid", "invalidArgument"),
            (401, "authError", "unauthorized"),
            (403, "userRateLimitExceeded", "rateLimited"),
            (403, "rateLimitExceeded", "rateLimited"),
            (403, "storageQuotaExceeded", "quotaExceeded"),
            (403, "insufficientFilePermissions", "permissionDenied"),
            (403, "fileNotDownloadable", "permissionDenied"),
            (404, "notFound", "notFound"),
            (409, "fileIdInUse", "conflict"),
            (412, "conditionNotMet", "preconditionFailed"),
            (416, "requestedRangeNotSatisfiable", "rangeNotSatisfiable"),
            (429, "rateLimitExceeded", "rateLimited"),
            (500, "backendError", "server"),
            (503, nil, "server"),
            (408, "requestTimeout", "server"),
            (405, nil, "unexpectedStatus"),
        ]
        for (status, reason, expected) in rows {
            let error = classify(status, reason)
            XCTAssertEqual(String(describing: error).hasPrefix(expectedPrefix(expected)), true, "\(status) \(reason ?? "-") → \(error)")
            XCTAssertEqual(error.status, status)
            XCTAssertEqual(error.reason, reason)
        }
    }

    private func expectedPrefix(_ name: String) -> String {
        switch name {
        case "invalidArgument": return "invalid argument"
        case "unauthorized": return "unauthorized"
        case "rateLimited": return "rate limited"
        case "quotaExceeded": return "quota exceeded"
        case "permissionDenied": return "permission denied"
        case "notFound": return "not found"
        case "conflict": return "conflict"
        case "preconditionFailed": return "precondition failed"
        case "rangeNotSatisfiable": return "range not satisfiable"
        case "server": return "Drive server error"
        default: return "unexpected answer"
        }
    }

    func testEnvelopeCarriesMessageAndRetryAfter() {
        let error = classify(429, "rateLimitExceeded", headers: ["retry-after": "3"])
        XCTAssertEqual(error.info?.message, "Top message")
        XCTAssertEqual(error.info?.retryAfter, 3)
    }

    func testOAuthStyleEnvelope() {
        let body = Array(#"{"error":"invalid_grant","error_description":"Token has been expired or revoked."}"#.utf8)
        let envelope = GoogleErrorEnvelope.parse(body)
        XCTAssertEqual(envelope?.reason, "invalid_grant")
        XCTAssertEqual(envelope?.message, "Token has been expired or revoked.")
    }

    func testGarbageBodyStillClassifies() {
        let error = DriveError.classify(status: 502, headers: [:], body: Array("<html>bad gateway".utf8), now: 0)
        XCTAssertEqual(error, .server(GoogleErrorInfo(status: 502, reason: nil, message: "Bad Gateway")))
    }

    /// The 2026 quota-system form (drive-behaviours §4): no `errors[]`, the reason in `details[]`.
    func testQuotaSystemFormIsRateLimited() {
        let withDetails = Array("""
        {"error":{"code":403,"message":"Quota exceeded for quota metric 'Queries' and limit 'Queries per minute' of service 'drive.googleapis.com' for consumer 'project_number:1'.","status":"PERMISSION_DENIED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"RATE_LIMIT_EXCEEDED","domain":"googleapis.com"}]}}
        """.utf8)
        let error = DriveError.classify(status: 403, headers: [:], body: withDetails, now: 0)
        guard case .rateLimited(let info) = error else { return XCTFail("\(error)") }
        XCTAssertEqual(info.reason, "RATE_LIMIT_EXCEEDED")
        XCTAssertTrue(RetryPolicy().isRetryable(error))
        let messageOnly = Array("""
        {"error":{"code":403,"message":"Quota exceeded for quota metric 'Queries' and limit 'Queries per minute' of service 'drive.googleapis.com'.","status":"PERMISSION_DENIED"}}
        """.utf8)
        guard case .rateLimited = DriveError.classify(status: 403, headers: [:], body: messageOnly, now: 0) else {
            return XCTFail("the message alone marks the quota-system rate limit")
        }
        let denied = Array(#"{"error":{"code":403,"message":"The caller does not have permission","status":"PERMISSION_DENIED"}}"#.utf8)
        guard case .permissionDenied = DriveError.classify(status: 403, headers: [:], body: denied, now: 0) else {
            return XCTFail("a plain PERMISSION_DENIED stays a permission error")
        }
    }
}
