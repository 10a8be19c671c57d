import DriveClient
import DriveSupport
import Foundation

/// An `HTTPTransport` that answers from a script and records every request it saw.
/// Each step sees the request; 2xx bodies are delivered to the request's sink like the real transport.
final class ScriptedTransport: HTTPTransport, @unchecked Sendable {
    typealias Step = @Sendable (TransportRequest) throws -> TransportResponse

    private let state = Locked<(steps: [Step], seen: [TransportRequest])>(([], []))
    /// Answers when the script is empty (default: fail loudly).
    let fallback: Step?

    init(fallback: Step? = nil) { self.fallback = fallback }

    func push(_ step: @escaping Step) { state.withLock { $0.steps.append(step) } }

    func push(status: Int, headers: [String: String] = [:], json: String = "") {
        push { _ in ScriptedTransport.response(status, headers: headers, body: Array(json.utf8)) }
    }

    func push(error: TransportError) { push { _ in throw error } }

    func pushGoogleError(_ status: Int, reason: String, message: String = "scripted", headers: [String: String] = [:]) {
        push(status: status, headers: headers, json: """
        {"error":{"code":\(status),"message":"\(message)","errors":[{"message":"\(message)","domain":"global","reason":"\(reason)"}]}}
        """)
    }

    var requests: [TransportRequest] { state.withLock { $0.seen } }
    var remainingSteps: Int { state.withLock { $0.steps.count } }

    func perform(_ request: TransportRequest) throws -> TransportResponse {
        let step: Step? = state.withLock { s in
            s.seen.append(request)
            return s.steps.isEmpty ? nil : s.steps.removeFirst()
        }
        guard let step = step ?? fallback else {
            throw TransportError.other(code: -99, message: "script exhausted at \(request.method) \(request.url)")
        }
        let response = try step(request)
        if (200..<300).contains(response.status) { request.onResponseHead?(response.status, response.headers) }
        return try ScriptedTransport.deliver(response, to: request.sink)
    }

    static func response(_ status: Int, headers: [String: String] = [:], body: [UInt8] = []) -> TransportResponse {
        TransportResponse(status: status, headers: headers, body: body, bodyBytes: Int64(body.count))
    }

    /// Routes a 2xx body to the sink, as `CurlTransport` does (a callback that says stop aborts).
    static func deliver(_ response: TransportResponse, to sink: ResponseSink) throws -> TransportResponse {
        guard (200..<300).contains(response.status) else { return response }
        switch sink {
        case .memory:
            return response
        case .fileDescriptor(let fd, let offset):
            response.body.withUnsafeBytes { raw in _ = pwrite(fd, raw.baseAddress, raw.count, off_t(offset)) }
        case .callback(let deliver):
            guard response.body.isEmpty || response.body.withUnsafeBytes({ deliver($0) }) else { throw TransportError.aborted }
        }
        var out = response
        out.body = []
        return out
    }
}

/// A grant that counts calls and hands out numbered tokens valid for `lifetime` seconds.
final class CountingGrant: TokenGrant, @unchecked Sendable {
    let time: any TimeSource
    let lifetime: Double
    let delay: Double
    private let state = Locked<(calls: Int, failures: [any Error])>((0, []))

    init(time: any TimeSource, lifetime: Double = 3600, delay: Double = 0) {
        self.time = time
        self.lifetime = lifetime
        self.delay = delay
    }

    var calls: Int { state.withLock { $0.calls } }
    func failNext(with error: any Error) { state.withLock { $0.failures.append(error) } }

    func fetchToken() throws -> AccessToken {
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        let (n, failure): (Int, (any Error)?) = state.withLock { s in
            s.calls += 1
            return (s.calls, s.failures.isEmpty ? nil : s.failures.removeFirst())
        }
        if let failure { throw failure }
        return AccessToken(value: "token-\(n)", expiresAt: time.now() + lifetime)
    }
}

/// A dead grant, as `OAuthError.invalidGrant` reports it.
struct DeadGrantError: TokenGrantFailure {
    var requiresLogin: Bool { true }
    var isTransient: Bool { false }
}

/// Jitter pinned to a fixed fraction of the ceiling.
struct FixedRandom: RandomSource {
    let value: Double
    func nextUnit() -> Double { value }
}

extension TransportRequest {
    func header(_ name: String) -> String? {
        headers.last(where: { $0.0.lowercased() == name.lowercased() })?.1
    }
}
