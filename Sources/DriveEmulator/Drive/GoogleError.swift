import Foundation

/// An error in Google's JSON format (the modern ESF member order does not matter to clients;
/// the content does): `{"error":{"code":N,"message":…,"errors":[{"message","domain","reason",
/// "location","locationType"}]}}`. Auth failures add `"status"`.
public struct GoogleError: Error {
    public var code: Int
    public var message: String
    public var reason: String
    public var domain: String = "global"
    public var location: String?
    public var locationType: String?
    public var status: String?
    public var itemMessage: String?
    public var extraHeaders: [(String, String)] = []
    /// `google.rpc.ErrorInfo` entries of `details` (ESF auth errors carry one).
    public var details: [GoogleErrorInfo] = []

    public init(_ code: Int, reason: String, message: String, domain: String = "global", location: String? = nil,
                locationType: String? = nil, status: String? = nil, itemMessage: String? = nil) {
        self.code = code
        self.reason = reason
        self.message = message
        self.domain = domain
        self.location = location
        self.locationType = locationType
        self.status = status
        self.itemMessage = itemMessage
    }

    public var response: HTTPResponse {
        var item: [String: Any] = ["message": itemMessage ?? message, "domain": domain, "reason": reason]
        if let location { item["location"] = location }
        if let locationType { item["locationType"] = locationType }
        var error: [String: Any] = ["code": code, "message": message, "errors": [item]]
        if let status { error["status"] = status }
        if !details.isEmpty { error["details"] = details.map(\.json) }
        var r = HTTPResponse.json(code, ["error": error], extraHeaders: extraHeaders)
        r.headers.set("Cache-Control", "private, max-age=0")
        return r
    }

    // The common ones, with Google's wording.
    public static func notFound(_ fileId: String) -> GoogleError {
        GoogleError(404, reason: "notFound", message: "File not found: \(fileId).", location: "fileId", locationType: "parameter")
    }
    public static func invalidParameter(_ name: String, _ message: String) -> GoogleError {
        GoogleError(400, reason: "invalidParameter", message: message, location: name, locationType: "parameter")
    }
    public static func badRequest(_ message: String) -> GoogleError {
        GoogleError(400, reason: "badRequest", message: message)
    }
    public static func unknownPath(_ path: String) -> GoogleError {
        GoogleError(404, reason: "notFound", message: "Not Found: \(path)")
    }
}

/// A `type.googleapis.com/google.rpc.ErrorInfo` detail.
public struct GoogleErrorInfo: Sendable {
    public var reason: String
    public var domain: String
    public var metadata: [String: String]
    public init(reason: String, domain: String = "googleapis.com", metadata: [String: String] = [:]) {
        self.reason = reason
        self.domain = domain
        self.metadata = metadata
    }
    var json: [String: Any] {
        ["@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": domain, "metadata": metadata]
    }
}

/// What the bearer token of a request proves.
public enum AccessCheck: Sendable, Equatable {
    case granted(scopes: Set<String>)
    /// No `Authorization` header.
    case missing
    /// Unknown, malformed, expired or revoked.
    case invalid
}

/// Validates access tokens; the OAuth part of the emulator implements it, the Drive part asks it.
public protocol AccessTokenValidator: AnyObject, Sendable {
    func check(authorization: String?) -> AccessCheck
}
