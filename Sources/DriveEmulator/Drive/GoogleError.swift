import Foundation

/// An error in Google's JSON format, in the modern ESF member order and 2-space indentation
/// (drive-behaviours §2.1): `{"error":{"code":N,"message":…,"errors":[{"message","domain","reason",
/// "location","locationType"}],"status":…,"details":[…]}}`. Auth failures add `"status"` (and
/// `details`). Errors are indented whatever `prettyPrint` says, as Google's are.
public struct GoogleError: Error {
    public var code: Int
    public var message: String
    public var reason: String
    public var domain: String = "global"
    public var location: String?
    public var locationType: String?
    public var status: String?
    public var itemMessage: String?
    /// `errors[0].extendedHelp`: a URL Google adds to some errors (quota errors name the quota page).
    public var extendedHelp: String?
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

    /// The envelope, members in ESF order.
    public var envelope: OrderedJSON {
        var item: [(String, OrderedJSON)] = [("message", .string(itemMessage ?? message)), ("domain", .string(domain)),
                                             ("reason", .string(reason))]
        if let location { item.append(("location", .string(location))) }
        if let locationType { item.append(("locationType", .string(locationType))) }
        if let extendedHelp { item.append(("extendedHelp", .string(extendedHelp))) }
        var error: [(String, OrderedJSON)] = [("code", .int(code)), ("message", .string(message)), ("errors", .array([.object(item)]))]
        if let status { error.append(("status", .string(status))) }
        if !details.isEmpty { error.append(("details", .array(details.map(\.ordered)))) }
        return .object([("error", .object(error))])
    }

    public var response: HTTPResponse {
        var headers = HTTPHeaders([("Content-Type", "application/json; charset=UTF-8")] + extraHeaders)
        headers.set("Cache-Control", "private, max-age=0")
        return HTTPResponse(status: code, headers: headers, body: .bytes(Array((envelope.rendered() + "\n").utf8)))
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
    var ordered: OrderedJSON {
        .object([("@type", .string("type.googleapis.com/google.rpc.ErrorInfo")), ("reason", .string(reason)),
                 ("domain", .string(domain)),
                 ("metadata", .object(metadata.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }))])
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
    /// Who a request with this `Authorization` is charged to under the per-user rate limit; nil when
    /// the token grants nothing (the request is answered 401 and charged to nobody).
    func quotaIdentity(authorization: String?) -> QuotaIdentity?
}

extension AccessTokenValidator {
    /// Validators that know no accounts charge each token on its own, to one project.
    public func quotaIdentity(authorization: String?) -> QuotaIdentity? {
        guard case .granted = check(authorization: authorization), let authorization else { return nil }
        return QuotaIdentity(subject: authorization, project: "0")
    }
}
