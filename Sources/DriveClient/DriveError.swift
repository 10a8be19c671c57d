import DriveSupport
import Foundation

/// What Google said about a failed request: HTTP status, the first `errors[].reason`, the top-level
/// `message`. Never carries a token (request headers are not kept; URLs are not kept).
public struct GoogleErrorInfo: Sendable, Equatable, CustomStringConvertible {
    public var status: Int
    public var reason: String?
    public var message: String
    /// Seconds to wait, from a `Retry-After` header, when the server sent one.
    public var retryAfter: Double?

    public init(status: Int, reason: String? = nil, message: String, retryAfter: Double? = nil) {
        self.status = status
        self.reason = reason
        self.message = message
        self.retryAfter = retryAfter
    }

    public var description: String {
        "HTTP \(status)" + (reason.map { " \($0)" } ?? "") + (message.isEmpty ? "" : ": \(message)")
    }
}

/// Every failure the Drive client reports. Classified once, from HTTP status and Google's `reason`
/// (see docs/errors.md for the table and the errno each maps to in the filesystem).
///
/// Transient cases (`rateLimited`, `server`, retryable `transport`) reach the caller only after the
/// retry budget ran out.
public enum DriveError: Error, Sendable, Equatable, CustomStringConvertible {
    /// 404: no such file, or the caller cannot see it.
    case notFound(GoogleErrorInfo)
    /// 403 insufficientFilePermissions, fileNotDownloadable, cannotDownloadAbusiveFile,
    /// appNotAuthorizedToFile, insufficientPermissions (scope), fieldNotWritable, ... : retrying cannot help.
    case permissionDenied(GoogleErrorInfo)
    /// 403 storageQuotaExceeded, dailyLimitExceeded, downloadQuotaExceeded, exportSizeLimitExceeded, ... .
    case quotaExceeded(GoogleErrorInfo)
    /// 403 userRateLimitExceeded / rateLimitExceeded, 429.
    case rateLimited(GoogleErrorInfo)
    /// 400.
    case invalidArgument(GoogleErrorInfo)
    /// 409 (fileIdInUse).
    case conflict(GoogleErrorInfo)
    /// 401 after one refresh and one retry, or a dead grant (`invalid_grant`): log in again.
    case unauthorized(GoogleErrorInfo)
    /// 412.
    case preconditionFailed(GoogleErrorInfo)
    /// 416.
    case rangeNotSatisfiable(GoogleErrorInfo)
    /// 5xx; also 408 (Request Timeout: the server gave up waiting for the request, which another
    /// try may well deliver; transient like 504, not the caller's mistake like other 4xx).
    case server(GoogleErrorInfo)
    /// Any other HTTP status that was not expected (e.g. 405, 413).
    case unexpectedStatus(GoogleErrorInfo)
    /// No complete HTTP answer.
    case transport(TransportError)
    /// The md5 Drive reports for an upload differs from the md5 of the bytes sent. The file exists on
    /// Drive with the wrong content; the caller decides (retry the upload, or trash it).
    case checksumMismatch(expected: String, actual: String)
    /// A 2xx answer that could not be understood.
    case malformedResponse(String)
    /// The caller gave up (sink returned false, or a cancellation check said stop).
    case cancelled
    /// A local file an upload sends could not be opened, measured or read: the local disk's
    /// failure (the call and its errno), not a bad request. Another try reads the same file.
    case localFile(path: String, SystemCallError)

    public var info: GoogleErrorInfo? {
        switch self {
        case .notFound(let i), .permissionDenied(let i), .quotaExceeded(let i), .rateLimited(let i),
             .invalidArgument(let i), .conflict(let i), .unauthorized(let i), .preconditionFailed(let i),
             .rangeNotSatisfiable(let i), .server(let i), .unexpectedStatus(let i):
            return i
        case .transport, .checksumMismatch, .malformedResponse, .cancelled, .localFile:
            return nil
        }
    }

    public var status: Int? { info?.status }
    public var reason: String? { info?.reason }

    public var description: String {
        switch self {
        case .notFound(let i): return "not found (\(i))"
        case .permissionDenied(let i): return "permission denied (\(i))"
        case .quotaExceeded(let i): return "quota exceeded (\(i))"
        case .rateLimited(let i): return "rate limited, retries exhausted (\(i))"
        case .invalidArgument(let i): return "invalid argument (\(i))"
        case .conflict(let i): return "conflict (\(i))"
        case .unauthorized(let i): return "unauthorized (\(i))"
        case .preconditionFailed(let i): return "precondition failed (\(i))"
        case .rangeNotSatisfiable(let i): return "range not satisfiable (\(i))"
        case .server(let i): return "Drive server error, retries exhausted (\(i))"
        case .unexpectedStatus(let i): return "unexpected answer (\(i))"
        case .transport(let e): return "network failure: \(e)"
        case .checksumMismatch(let expected, let actual): return "checksum mismatch: sent md5 \(expected), Drive has \(actual)"
        case .malformedResponse(let what): return "malformed response: \(what)"
        case .cancelled: return "cancelled"
        case .localFile(let path, let error): return "cannot read \(path): \(error)"
        }
    }

    /// The message for a dead OAuth grant.
    public static let loginAgainMessage =
        "the saved authorization is no longer valid (revoked or expired): run `drivefs auth login` again"

    /// 403 reasons that are rate limits and worth retrying (`RATE_LIMIT_EXCEEDED`: the quota-system
    /// form, from `details[].reason`).
    public static let rateLimitReasons: Set<String> = ["userRateLimitExceeded", "rateLimitExceeded", "RATE_LIMIT_EXCEEDED"]
    /// The message of the quota-system form of a per-minute limit (drive-behaviours §4): "Quota
    /// exceeded for quota metric 'Queries' and limit 'Queries per minute' of service ...".
    public static let quotaMetricMessagePrefix = "Quota exceeded for quota metric"
    /// 403 reasons that are quotas: retrying soon cannot help.
    public static let quotaReasons: Set<String> = [
        "storageQuotaExceeded", "quotaExceeded", "dailyLimitExceeded", "downloadQuotaExceeded",
        "exportSizeLimitExceeded", "teamDriveFileLimitExceeded", "numChildrenInNonRootLimitExceeded",
        "activeItemCreationLimitExceeded", "sharingRateLimitExceeded", "uploadLimitExceeded",
    ]

    /// Classifies a non-2xx answer. `headers` are lowercased names.
    public static func classify(status: Int, headers: [String: String], body: [UInt8], now: Double) -> DriveError {
        let envelope = GoogleErrorEnvelope.parse(body)
        var info = GoogleErrorInfo(status: status, reason: envelope?.reason,
                                   message: envelope?.message ?? HTTPStatusText.text(for: status))
        info.retryAfter = headers["retry-after"].flatMap { RetryAfter.seconds(from: $0, now: now) }
        switch status {
        case 400: return .invalidArgument(info)
        case 401: return .unauthorized(info)
        case 403:
            if let reason = info.reason {
                if rateLimitReasons.contains(reason) { return .rateLimited(info) }
                if quotaReasons.contains(reason) { return .quotaExceeded(info) }
            }
            if info.message.hasPrefix(quotaMetricMessagePrefix) { return .rateLimited(info) }
            return .permissionDenied(info)
        case 404, 410: return .notFound(info)
        case 409: return .conflict(info)
        case 412: return .preconditionFailed(info)
        case 416: return .rangeNotSatisfiable(info)
        case 429: return .rateLimited(info)
        case 408, 500...599: return .server(info)
        default: return .unexpectedStatus(info)
        }
    }
}

