import Foundation

/// Google's error body, parsed once: `{"error":{"code":N,"message":"...","errors":[{"reason":...}]}}`
/// for Drive, `{"error":"invalid_grant","error_description":"..."}` for OAuth endpoints.
public struct GoogleErrorEnvelope: Sendable, Equatable {
    public var code: Int?
    public var message: String?
    public var reason: String?

    public static func parse(_ body: [UInt8]) -> GoogleErrorEnvelope? {
        guard !body.isEmpty,
              let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else { return nil }
        if let error = object["error"] as? [String: Any] {
            var envelope = GoogleErrorEnvelope()
            envelope.code = error["code"] as? Int
            envelope.message = error["message"] as? String
            if let errors = error["errors"] as? [[String: Any]], let first = errors.first {
                envelope.reason = first["reason"] as? String
                if envelope.message == nil { envelope.message = first["message"] as? String }
            }
            // The newer quota-system form has no `errors[]`: its reason is in `details[]` (an ErrorInfo,
            // e.g. `RATE_LIMIT_EXCEEDED`), before the gRPC-style `status` (e.g. `PERMISSION_DENIED`).
            if envelope.reason == nil, let details = error["details"] as? [[String: Any]] {
                envelope.reason = details.lazy.compactMap { $0["reason"] as? String }.first
            }
            if envelope.reason == nil, let status = error["status"] as? String { envelope.reason = status }
            return envelope
        }
        if let error = object["error"] as? String {
            return GoogleErrorEnvelope(code: nil, message: object["error_description"] as? String ?? error, reason: error)
        }
        return nil
    }
}

enum HTTPStatusText {
    static func text(for status: Int) -> String {
        switch status {
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 409: return "Conflict"
        case 412: return "Precondition Failed"
        case 416: return "Requested Range Not Satisfiable"
        case 429: return "Too Many Requests"
        case 500: return "Internal Server Error"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        default: return "HTTP status \(status)"
        }
    }
}
