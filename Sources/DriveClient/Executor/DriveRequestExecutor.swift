import DriveSupport
import Foundation

/// The one wrapper around every Drive request: pacer → token → transport → classify → retry/refresh.
///
/// Pacing: each request is charged by `RequestCharge.of(method:httpMethod:)` (its quota units and
/// whether it is a write) and waits in the pacer's lanes at its context's priority; a refusal slows
/// the lane `lane(slowedBy:charge:)` names.
///
/// Layering: it knows OAuth bearer tokens, HTTP statuses and Google's error envelope, but no Drive
/// semantics (those live in `DriveAPI`). Methods are named for the counters (`files.list`, ...).
///
/// Contracts:
/// - Blocking, on the caller's thread; safe to use from many threads at once.
/// - Every throw is a `DriveError`; no error ever contains a token.
/// - 401: the token is invalidated, refreshed once and the request replayed once; a second 401 is
///   `DriveError.unauthorized`. A dead grant (`invalid_grant`) is `unauthorized` with a message that
///   says to run `drivefs auth login` again.
/// - Transient failures (see `RetryPolicy`) are retried with backoff within the policy's budget; what
///   comes out after that is the last failure.
/// - Offline (`Reachability`, when given): a request is refused without being sent while Drive has
///   been unreachable for a while, except the one probe the reachability lets through now and then;
///   such a refusal, or any failure to connect once offline, is not retried.
/// - A request is rebuilt for every attempt (`makeRequest(attempt)`), so a caller can resume a
///   download from what it already holds instead of replaying it. Uploads do not use blind replays:
///   `DriveAPI` drives the resumable protocol inside `retrying`.
public final class DriveRequestExecutor: Sendable {
    public let transport: any HTTPTransport
    public let tokens: TokenManager?
    public let pacer: Pacer?
    public let retryPolicy: RetryPolicy
    public let time: any TimeSource
    public let stats: RequestStats
    public let reachability: Reachability?

    public init(transport: any HTTPTransport, tokens: TokenManager?, pacer: Pacer? = Pacer(),
                retryPolicy: RetryPolicy = RetryPolicy(), time: any TimeSource = SystemTimeSource(),
                stats: RequestStats = RequestStats(), reachability: Reachability? = nil) {
        self.reachability = reachability
        self.transport = transport
        self.tokens = tokens
        self.pacer = pacer
        self.retryPolicy = retryPolicy
        self.time = time
        self.stats = stats
    }

    /// Sends `request` with retries. Success is any 2xx status or one in `accept`.
    public func execute(_ method: String, _ request: TransportRequest, accept: Set<Int> = [],
                        retry: RetryPolicy? = nil) throws -> TransportResponse {
        try execute(method, accept: accept, retry: retry) { _ in request }
    }

    /// Sends the request `makeRequest` builds for each attempt (0-based), with retries.
    public func execute(_ method: String, accept: Set<Int> = [], retry: RetryPolicy? = nil,
                        _ makeRequest: (_ attempt: Int) throws -> TransportRequest) throws -> TransportResponse {
        try retrying(method, retry: retry) { attempt in
            try send(method, try makeRequest(attempt), accept: accept)
        }
    }

    /// Runs `body` (which throws `DriveError`s) until it succeeds, a non-retryable error comes, or
    /// the retry budget (count and total time) is spent. Counts retries and the final failure.
    ///
    /// Deadline (`RequestContext.deadline`): no attempt starts at or after it, no backoff is begun
    /// whose end would reach it (the call fails at once instead of sleeping towards it), and a
    /// request whose pacer slot would come at or after it is not sent. The call then throws the
    /// last failure, or `DriveError.cancelled` when no attempt failed yet.
    public func retrying<T>(_ method: String, retry: RetryPolicy? = nil, _ body: (_ attempt: Int) throws -> T) throws -> T {
        let policy = retry ?? retryPolicy
        let started = time.now()
        let cancellation = CancellationFlag.current
        let deadline = RequestContext.current?.deadline
        var attempt = 0
        var lastFailure: DriveError?
        func fail(_ error: any Error) -> any Error {
            stats.update(method) { $0.failures += 1 }
            return error
        }
        while true {
            do {
                if cancellation?.isCancelled == true { throw DriveError.cancelled }
                if let deadline, time.now() >= deadline { throw DeadlineReached() }
                return try body(attempt)
            } catch is DeadlineReached {
                throw fail(lastFailure ?? DriveError.cancelled)
            } catch let error as DriveError {
                attempt += 1
                if let reachability, reachability.isOffline, case .transport(.couldNotConnect) = error { throw fail(error) }
                guard policy.isRetryable(error), attempt < policy.maxAttempts else { throw fail(error) }
                let delay = policy.delay(forRetry: attempt - 1, retryAfter: error.info?.retryAfter)
                guard time.now() + delay - started <= policy.maxElapsed else { throw fail(error) }
                if let deadline, time.now() + delay >= deadline {
                    Log.shared.info("client", "\(method): attempt \(attempt) failed (\(error)); no retry: the call's deadline comes first")
                    throw fail(error)
                }
                lastFailure = error
                stats.update(method) { $0.retries += 1 }
                Log.shared.info("client", "\(method): retry \(attempt) in \(String(format: "%.2f", delay)) s after \(error)")
                // A cancel ends the backoff at once (its handler wakes the sleep), however long it is.
                if time.sleep(delay, unless: cancellation) { throw DriveError.cancelled }
            } catch {
                throw fail(error)
            }
        }
    }

    /// One exchange (plus at most one replay after a 401 and a token refresh), no backoff retries.
    /// Success is any 2xx status or one in `accept`; everything else throws a classified `DriveError`.
    /// A request whose pacer slot comes at or after the call's deadline throws `DriveError.cancelled`
    /// without being sent.
    public func sendOnce(_ method: String, _ request: TransportRequest, accept: Set<Int> = []) throws -> TransportResponse {
        do {
            return try send(method, request, accept: accept)
        } catch is DeadlineReached {
            throw DriveError.cancelled
        }
    }

    /// `sendOnce`, but a pacer slot past the deadline throws `DeadlineReached`, which `retrying`
    /// turns into the call's last failure. Only for bodies run inside `retrying`.
    ///
    /// Order: pacer first, then the token, so a token never ages (or expires) while its request waits.
    func send(_ method: String, _ request: TransportRequest, accept: Set<Int> = []) throws -> TransportResponse {
        var refreshed = false
        let context = RequestContext.current
        let cancellation = CancellationFlag.current
        let charge = RequestCharge.of(method: method, httpMethod: request.method)
        while true {
            if cancellation?.isCancelled == true { throw DriveError.cancelled }
            let admission = reachability?.admit() ?? .send
            if admission == .refuse, let reachability { throw DriveError.transport(.couldNotConnect(reachability.refusal)) }
            // A probe that ends before the transport is reached lets the next request probe instead.
            var reached: Bool?
            defer { if admission == .probe && reached == nil { reachability?.abandon() } }
            if let pacer {
                switch pacer.acquire(priority: context?.priority ?? .interactive, charge: charge, deadline: context?.deadline,
                                     cancellation: cancellation) {
                case .granted: break
                case .cancelled: throw DriveError.cancelled
                case .pastDeadline: throw DeadlineReached()
                }
            }
            var sent = request
            if sent.cancellation == nil { sent.cancellation = cancellation }
            var token: String?
            if let tokens {
                let value: String
                do {
                    value = try Self.obtainToken(tokens)
                } catch DriveError.transport(.couldNotConnect(let message)) {
                    reached = false
                    reachability?.recordUnreachable(message)
                    throw DriveError.transport(.couldNotConnect(message))
                }
                token = value
                sent.headers.append(("Authorization", "Bearer \(value)"))
            }
            stats.update(method) { $0.requests += 1; $0.bytesOut += request.body.length }
            let response: TransportResponse
            // At debug level, every write request and how it ended: what a chaos run's log needs to
            // tell a lost answer from a request never sent. The path names the file; no query, no
            // header, no body is logged (a resumable session's URI is a credential: its query stays out).
            let traced = request.method != "GET" && Log.shared.isEnabled(.debug)
            do {
                response = try transport.perform(sent)
            } catch let error as TransportError {
                if traced { Log.shared.debug("client", "\(method) \(request.method) \(Self.tracePath(request.url)): \(error)") }
                switch error {
                case .couldNotConnect(let message):
                    reached = false
                    reachability?.recordUnreachable(message)
                case .connectionLost, .tls, .other:
                    reached = true
                    reachability?.recordReached()
                case .timedOut, .invalidURL, .aborted:
                    break  // no word on reachability (a probe that timed out lets the next one try)
                }
                throw error == .aborted ? DriveError.cancelled : DriveError.transport(error)
            } catch {
                throw DriveError.transport(.other(code: -1, message: String(describing: error)))
            }
            reached = true
            reachability?.recordReached()
            if traced { Log.shared.debug("client", "\(method) \(request.method) \(Self.tracePath(request.url)): HTTP \(response.status)") }
            stats.update(method) { $0.bytesIn += max(response.bodyBytes, Int64(response.body.count)) }
            if (200..<300).contains(response.status) || accept.contains(response.status) {
                pacer?.recordSuccess(charge)
                return response
            }
            let error = DriveError.classify(status: response.status, headers: response.headers,
                                            body: response.body, now: time.now())
            if let pacer, let lane = Self.lane(slowedBy: error, charge: charge) {
                pacer.recordRefusal(lane, retryAfter: error.info?.retryAfter,
                                    what: "\(method): \(error.info.map(String.init(describing:)) ?? "\(error)")")
            }
            if case .unauthorized = error, let tokens, let token, !refreshed {
                Log.shared.info("client", "\(method): HTTP 401, refreshing the access token and sending once more")
                tokens.invalidate(token)
                refreshed = true
                continue
            }
            throw error
        }
    }

    /// A request URL's path for a log line: no scheme, host or query.
    static func tracePath(_ url: String) -> String {
        var rest = Substring(url)
        if let scheme = rest.range(of: "://") { rest = rest[scheme.upperBound...] }
        if let slash = rest.firstIndex(of: "/") { rest = rest[slash...] } else { return "/" }
        if let query = rest.firstIndex(of: "?") { rest = rest[..<query] }
        return String(rest)
    }

    /// The pacer lane an answer slows, if any (the one place refusals are classified):
    /// - a quota answer (403 `userRateLimitExceeded`, the quota system's `RATE_LIMIT_EXCEEDED` or its
    ///   "Quota exceeded for quota metric" message) slows what spends quota, whatever the request;
    /// - any other rate limit (403 `rateLimitExceeded`, 429) or an answer with `Retry-After` slows the
    ///   write lane when it answered a write (Google's write limit), else what spends quota (a
    ///   project's quota answers `rateLimitExceeded` too).
    /// Other answers slow nothing.
    public static func lane(slowedBy error: DriveError, charge: RequestCharge) -> Pacer.Lane? {
        var rateLimited = false
        if case .rateLimited = error { rateLimited = true }
        guard rateLimited || error.info?.retryAfter != nil else { return nil }
        if let info = error.info, rateLimited, info.reason == "userRateLimitExceeded" || info.reason == "RATE_LIMIT_EXCEEDED"
            || info.message.hasPrefix(DriveError.quotaMetricMessagePrefix) {
            return .quota
        }
        return charge.isWrite ? .writes : .quota
    }

    /// The token, or the grant's failure as a `DriveError`.
    static func obtainToken(_ tokens: TokenManager) throws -> String {
        do {
            return try tokens.accessToken()
        } catch let error as DriveError {
            throw error
        } catch let error as TransportError {
            throw DriveError.transport(error)
        } catch OAuthError.transport(let error) {
            // The token endpoint could not be reached: a network failure (offline, perhaps), not a
            // failing grant and not a revoked one.
            throw DriveError.transport(error)
        } catch let error as any TokenGrantFailure {
            if error.requiresLogin {
                Log.shared.once(.error, "client", "the saved Google authorization is no longer valid (revoked or expired): "
                                + "every request fails until you run `drivefs auth login` again")
                throw DriveError.unauthorized(GoogleErrorInfo(status: 401, reason: "invalid_grant",
                                                              message: DriveError.loginAgainMessage))
            }
            if error.isTransient {
                throw DriveError.server(GoogleErrorInfo(status: 503, reason: "tokenEndpointUnavailable",
                                                        message: "the token endpoint failed: \(error)"))
            }
            throw DriveError.unauthorized(GoogleErrorInfo(status: 401, reason: "tokenRefreshFailed",
                                                          message: "could not obtain an access token: \(error)"))
        } catch {
            throw DriveError.unauthorized(GoogleErrorInfo(status: 401, reason: "tokenRefreshFailed",
                                                          message: "could not obtain an access token: \(error)"))
        }
    }
}

/// A pacer slot that comes at or after the call's deadline: the request was not sent. Lives only
/// between `send` and `retrying`, which turns it into the call's last failure.
struct DeadlineReached: Error {}

extension TransportRequest.Body {
    /// Bytes this body sends.
    public var length: Int64 {
        switch self {
        case .none: return 0
        case .bytes(let b): return Int64(b.count)
        case .file(_, _, let length): return length
        case .parts(let parts):
            return parts.reduce(0) { total, part in
                switch part {
                case .bytes(let b): return total + Int64(b.count)
                case .file(_, _, let length): return total + length
                }
            }
        }
    }
}
