import DriveSupport
import Foundation

/// Routes each request: control API first, then the providers in order (OAuth, Drive), else
/// Google's 404. Counted requests get the configured latency, then the per-user rate limit (a
/// request past its user's budget is refused with Google's 403 and reaches neither the faults nor
/// the handler), then Google's Drive limits (`DriveLimiter`: quota units, writes, daily uploads;
/// a refusal likewise, except that a write may land anyway under the quirk), then the scripted faults.
final class RequestDispatcher: HTTPResponder {
    /// Stats key for requests no provider claims.
    static let unknownRouteKey = "unknown"

    let control: ControlAPI
    let providers: [any RouteProvider]
    let stats: EmulatorStats
    let faults: FaultPlan
    let latencyMs: Int
    let log: EmulatorLog
    let rateLimiter: UserRateLimiter?
    let driveLimiter: DriveLimiter?
    /// The rate limiters' time.
    let clock: any TimeSource

    init(control: ControlAPI, providers: [any RouteProvider], stats: EmulatorStats, faults: FaultPlan, latencyMs: Int,
         log: EmulatorLog, rateLimiter: UserRateLimiter? = nil, driveLimiter: DriveLimiter? = nil,
         clock: any TimeSource = SystemTimeSource()) {
        self.driveLimiter = driveLimiter
        self.control = control
        self.providers = providers
        self.stats = stats
        self.faults = faults
        self.latencyMs = latencyMs
        self.log = log
        self.rateLimiter = rateLimiter
        self.clock = clock
    }

    func answer(_ request: HTTPRequest) -> HTTPAnswer {
        if control.handles(request) {
            return HTTPAnswer(response: control.respond(to: request), statsKey: nil)
        }
        guard let route = providers.lazy.compactMap({ $0.route(for: request) }).first else {
            return HTTPAnswer(response: GoogleError.unknownPath(request.path).response, statsKey: Self.unknownRouteKey)
        }
        if latencyMs > 0 { Thread.sleep(forTimeInterval: Double(latencyMs) / 1000) }
        if let rateLimiter, let identity = route.quotaIdentity?(),
           !rateLimiter.admit(identity, now: UserRateLimiter.nanos(clock)) {
            stats.countRateLimited(route.method)
            return HTTPAnswer(response: GoogleError.userRateLimitExceeded(project: identity.project).response,
                              statsKey: route.method)
        }
        if let driveLimiter, let identity = route.quotaIdentity?() {
            let bytes = driveLimiter.limits.dailyUploadBytes != nil && DriveLimits.uploadMethods.contains(route.method)
                ? route.uploadBytes?() : nil
            let verdict = driveLimiter.admit(identity, method: route.method, uploadBytes: bytes,
                                             now: UserRateLimiter.nanos(clock))
            if let refusal = verdict.error(project: identity.project) {
                if verdict == .writeLimited(lands: true) {
                    // Google's quirk: the refused write is carried out all the same; the client
                    // still hears the refusal.
                    _ = Self.run(route, request, log: log)
                }
                try? request.body.drain()
                return HTTPAnswer(response: refusal.response, statsKey: route.method)
            }
        }
        guard let hit = faults.next(for: route.method) else {
            return HTTPAnswer(response: Self.run(route, request, log: log), statsKey: route.method)
        }
        switch hit.action {
        case .status(let code, let reason, let message, let retryAfter):
            // The request is read whole first, as a server that took it and then failed: a client
            // still sending its body when the answer came (and the connection closed behind it)
            // could see a reset instead of the error, by a race of its own writes.
            try? request.body.drain()
            let rule = FaultRule(method: route.method, action: .status(code: code, reason: reason, message: message,
                                                                        retryAfterSeconds: retryAfter))
            let response = rule.googleError()?.response ?? GoogleError(code, reason: reason, message: message).response
            return HTTPAnswer(response: response, statsKey: route.method)
        case .stall(let seconds):
            return HTTPAnswer(response: HTTPResponse(status: 0, fault: .stall(seconds: seconds)), statsKey: route.method)
        case .reset(let bytes, let phase):
            let declared = request.body.declaredLength
            let cutsRequest = phase == .request || (phase == .auto && declared != 0)
            if cutsRequest {
                // Only a body longer than the budget can be cut (chunked: length unknown, so try).
                if let declared, declared <= Int64(bytes) {
                    faults.refund(hit)
                    return HTTPAnswer(response: Self.run(route, request, log: log), statsKey: route.method)
                }
                return HTTPAnswer(response: HTTPResponse(status: 0, fault: .resetAfterRequestBodyBytes(bytes)),
                                  statsKey: route.method)
            }
            var response = Self.run(route, request, log: log)
            if let length = Self.bodyLength(response, isHead: request.method == "HEAD"), length <= Int64(bytes) {
                faults.refund(hit)
            } else {
                response.fault = .resetAfterBodyBytes(bytes)
            }
            return HTTPAnswer(response: response, statsKey: route.method)
        }
    }

    /// The response body length when known before sending (nil for streams).
    static func bodyLength(_ response: HTTPResponse, isHead: Bool) -> Int64? {
        if isHead || HTTPResponseWriter.forbidsBody(response.status) { return 0 }
        switch response.body {
        case .empty: return 0
        case .bytes(let b): return Int64(b.count)
        case .file(_, _, let length): return length
        case .stream: return response.headers["Content-Length"].flatMap(HTTPRequestHeadParser.parseDecimal)
        }
    }

    /// Calls the handler; a thrown error becomes Google's error response.
    static func run(_ route: Route, _ request: HTTPRequest, log: EmulatorLog) -> HTTPResponse {
        do {
            return try route.handle(request)
        } catch let error as GoogleError {
            return error.response
        } catch let error as HTTPBodyError {
            switch error {
            case .tooLarge(let limit):
                return GoogleError(413, reason: "requestTooLarge", message: "The request body is larger than \(limit) bytes.").response
            case .truncated:
                return GoogleError.badRequest("The request body ended before its declared length.").response
            case .malformedChunk:
                return GoogleError.badRequest("Malformed chunked request body.").response
            }
        } catch {
            log.info("\(route.method): internal error: \(error)")
            return GoogleError(500, reason: "backendError", message: "Backend Error").response
        }
    }

    func record(_ exchange: HTTPExchange) {
        stats.record(exchange)
    }

    func recordCompletion(_ exchange: HTTPExchange, recorded: HTTPExchange) {
        stats.amend(recorded, to: exchange)
        log.debug(Self.logLine(exchange))
    }

    /// `GET /drive/v3/files 200 files.list in=0 out=1234 5ms` (no query, no headers).
    static func logLine(_ e: HTTPExchange) -> String {
        let outcome: String
        switch e.outcome {
        case .status(let s): outcome = String(s)
        case .reset: outcome = "reset"
        case .stalled: outcome = "stall"
        case .aborted(let s): outcome = "\(s)-aborted"
        }
        let path = e.path.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : String($0) }.joined()
        return "\(e.httpMethod) \(path) \(outcome) \(e.statsKey ?? "-") in=\(e.bytesIn) out=\(e.bytesOut) \(Int(e.seconds * 1000))ms"
    }
}
