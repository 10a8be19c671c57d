import Foundation

/// One scripted fault: what happens to requests whose route method name matches, and how often.
///
/// JSON (see docs/emulator.md): `{"method":"files.list","status":403,"reason":"userRateLimitExceeded",
/// "times":2}`, `{"method":"files.get.media","resetAfterBytes":1000,"fraction":0.5}`,
/// `{"method":"token","stallSeconds":3}`. Exactly one of `status`, `resetAfterBytes`, `stallSeconds`.
public struct FaultRule: Sendable, Equatable {
    public enum Action: Sendable, Equatable {
        /// Answer this status with a Google error body instead of calling the handler.
        case status(code: Int, reason: String, message: String, retryAfterSeconds: Int?)
        /// Reset the connection after this many body bytes. `.request`: read that much of the
        /// request body, then reset without calling the handler. `.response`: the handler runs, then
        /// the head and that much of the response body are sent, then reset. `.auto`: `.request`
        /// for requests with a body, `.response` for the others. A hit whose body is not longer than
        /// `afterBytes` does not apply and leaves the rule armed.
        case reset(afterBytes: Int, phase: ResetPhase = .auto)
        /// Answer nothing for this long, then close.
        case stall(seconds: Double)
    }

    public enum ResetPhase: String, Sendable, Equatable {
        case auto, request, response
    }

    /// A route method name (`files.list`), or `*` for every counted request.
    public var method: String
    public var action: Action
    /// How many matching requests the fault hits before it is used up; nil = no limit.
    public var times: Int?
    /// The share of matching requests hit (drawn from the plan's seeded generator); nil = all.
    public var fraction: Double?

    public init(method: String, action: Action, times: Int? = 1, fraction: Double? = nil) {
        self.method = method
        self.action = action
        self.times = times
        self.fraction = fraction
    }

    /// A status fault with Google's usual reason and message for that code.
    public static func status(_ code: Int, method: String, reason: String? = nil, retryAfterSeconds: Int? = nil,
                              times: Int? = 1, fraction: Double? = nil) -> FaultRule {
        let defaults = defaultReason(for: code)
        return FaultRule(method: method,
                         action: .status(code: code, reason: reason ?? defaults.reason, message: defaults.message,
                                         retryAfterSeconds: retryAfterSeconds),
                         times: times, fraction: fraction)
    }

    static func defaultReason(for code: Int) -> (reason: String, message: String) {
        switch code {
        case 400: return ("badRequest", "Bad Request")
        case 401: return ("authError", "Invalid Credentials")
        // Google's current wording (2021-); rclone's --drive-stop-on-upload-limit matches it exactly.
        case 403: return ("userRateLimitExceeded", "User rate limit exceeded.")
        case 404: return ("notFound", "Not Found")
        case 429: return ("rateLimitExceeded", "Rate Limit Exceeded")
        case 500: return ("backendError", "Backend Error")
        case 502: return ("backendError", "Bad Gateway")
        case 503: return ("backendError", "Service Unavailable")
        case 504: return ("backendError", "Gateway Timeout")
        default: return ("unknownError", "Error \(code)")
        }
    }

    static func defaultMessage(for reason: String, code: Int) -> String {
        switch reason {
        case "userRateLimitExceeded": return "User rate limit exceeded."
        case "rateLimitExceeded": return "Rate Limit Exceeded"
        case "dailyLimitExceeded": return "Daily Limit Exceeded"
        case "authError": return "Invalid Credentials"
        case "backendError": return "Backend Error"
        case "internalError": return "Internal Error"
        default: return defaultReason(for: code).message
        }
    }

    /// The Google error a status fault answers with.
    func googleError() -> GoogleError? {
        guard case .status(let code, let reason, let message, let retryAfter) = action else { return nil }
        let domain = ["userRateLimitExceeded", "rateLimitExceeded", "dailyLimitExceeded", "quotaExceeded"].contains(reason)
            ? "usageLimits" : "global"
        var error = GoogleError(code, reason: reason, message: message, domain: domain)
        switch code {
        case 401:
            error.location = "Authorization"
            error.locationType = "header"
            error.status = "UNAUTHENTICATED"
            error.extraHeaders.append(("WWW-Authenticate", "Bearer realm=\"https://accounts.google.com/\", error=\"invalid_token\""))
        case 403: error.status = "PERMISSION_DENIED"
        case 429: error.status = "RESOURCE_EXHAUSTED"
        case 500: error.status = "INTERNAL"
        case 503: error.status = "UNAVAILABLE"
        default: break
        }
        if let retryAfter { error.extraHeaders.append(("Retry-After", String(retryAfter))) }
        return error
    }

    // MARK: - JSON

    public struct FormatError: Error, CustomStringConvertible, Equatable {
        public var description: String
    }

    /// Parses a fault document: `{"seed":N,"faults":[rule,...]}`, a bare array of rules, or one rule.
    public static func parseDocument(_ data: Data) throws -> (rules: [FaultRule], seed: UInt64?) {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            throw FormatError(description: "fault document is not valid JSON")
        }
        var seed: UInt64?
        let items: [Any]
        if let array = object as? [Any] {
            items = array
        } else if let dict = object as? [String: Any] {
            if let faults = dict["faults"] {
                guard let array = faults as? [Any] else { throw FormatError(description: "\"faults\" must be an array") }
                items = array
                if let s = dict["seed"] {
                    guard let n = s as? NSNumber, let v = UInt64(exactly: n.doubleValue) else {
                        throw FormatError(description: "\"seed\" must be a non-negative integer")
                    }
                    seed = v
                }
                let unknown = Set(dict.keys).subtracting(["faults", "seed"])
                if let key = unknown.sorted().first { throw FormatError(description: "unknown key \"\(key)\"") }
            } else {
                items = [dict]
            }
        } else {
            throw FormatError(description: "a fault document is an object or an array")
        }
        let rules = try items.enumerated().map { index, item -> FaultRule in
            guard let dict = item as? [String: Any] else { throw FormatError(description: "fault \(index): not an object") }
            do { return try parseRule(dict) } catch let e as FormatError {
                throw FormatError(description: "fault \(index): \(e.description)")
            }
        }
        return (rules, seed)
    }

    static func parseRule(_ d: [String: Any]) throws -> FaultRule {
        let known: Set<String> = ["method", "status", "reason", "message", "retryAfter", "resetAfterBytes", "phase",
                                  "stallSeconds", "times", "fraction"]
        if let key = Set(d.keys).subtracting(known).sorted().first { throw FormatError(description: "unknown key \"\(key)\"") }
        guard let method = d["method"] as? String, !method.isEmpty else {
            throw FormatError(description: "\"method\" (a route method name such as files.list, or *) is required")
        }
        // On Linux an NSNumber 1 also casts to Bool, so booleans are told apart by their type.
        func isBoolean(_ value: Any) -> Bool {
            type(of: value) == Bool.self || (value as? NSNumber).map { String(cString: $0.objCType) == "c" } == true
        }
        func integer(_ key: String, _ range: ClosedRange<Int>) throws -> Int? {
            guard let value = d[key] else { return nil }
            guard let n = value as? NSNumber, !isBoolean(value), let i = Int(exactly: n.doubleValue), range.contains(i) else {
                throw FormatError(description: "\"\(key)\" must be an integer in \(range.lowerBound)...\(range.upperBound)")
            }
            return i
        }
        func number(_ key: String, _ range: ClosedRange<Double>) throws -> Double? {
            guard let value = d[key] else { return nil }
            guard let n = value as? NSNumber, !isBoolean(value), range.contains(n.doubleValue) else {
                throw FormatError(description: "\"\(key)\" must be a number in \(range.lowerBound)...\(range.upperBound)")
            }
            return n.doubleValue
        }
        let status = try integer("status", 400...599)
        let reset = try integer("resetAfterBytes", 0...Int(Int32.max))
        let stall = try number("stallSeconds", 0...3600)
        let chosen = [status != nil, reset != nil, stall != nil].filter { $0 }.count
        guard chosen == 1 else {
            throw FormatError(description: "exactly one of \"status\", \"resetAfterBytes\", \"stallSeconds\" is required")
        }
        if reset == nil, d["phase"] != nil { throw FormatError(description: "\"phase\" applies only to reset faults") }
        let action: Action
        if let status {
            let reason = (d["reason"] as? String) ?? defaultReason(for: status).reason
            let message = (d["message"] as? String) ?? defaultMessage(for: reason, code: status)
            action = .status(code: status, reason: reason, message: message, retryAfterSeconds: try integer("retryAfter", 0...86_400))
        } else {
            for key in ["reason", "message", "retryAfter"] where d[key] != nil {
                throw FormatError(description: "\"\(key)\" applies only to status faults")
            }
            var phase = ResetPhase.auto
            if let value = d["phase"] {
                guard reset != nil, let text = value as? String, let parsed = ResetPhase(rawValue: text) else {
                    throw FormatError(description: "\"phase\" is \"auto\", \"request\" or \"response\", for reset faults only")
                }
                phase = parsed
            }
            action = reset.map { .reset(afterBytes: $0, phase: phase) } ?? .stall(seconds: stall ?? 0)
        }
        let times = try integer("times", 1...Int(Int32.max))
        let fraction = try number("fraction", 0...1)
        return FaultRule(method: method, action: action, times: times ?? (fraction == nil ? 1 : nil), fraction: fraction)
    }

    var json: [String: Any] {
        var d: [String: Any] = ["method": method]
        switch action {
        case .status(let code, let reason, let message, let retryAfter):
            d["status"] = code
            d["reason"] = reason
            d["message"] = message
            if let retryAfter { d["retryAfter"] = retryAfter }
        case .reset(let n, let phase):
            d["resetAfterBytes"] = n
            if phase != .auto { d["phase"] = phase.rawValue }
        case .stall(let s): d["stallSeconds"] = s
        }
        if let times { d["times"] = times }
        if let fraction { d["fraction"] = fraction }
        return d
    }
}
