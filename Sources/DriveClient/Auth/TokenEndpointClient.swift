import DriveSupport
import Foundation

/// What the token endpoint answered on success.
public struct TokenResponse: Sendable, Equatable {
    public var accessToken: String
    public var expiresIn: Double
    /// Absent on service-account answers.
    public var scope: String?
    /// Present on a code exchange with offline access.
    public var refreshToken: String?
}

/// Posts forms to the token (or revoke) endpoint and turns Google's answers into `TokenResponse`
/// or a typed `OAuthError`. One exchange, no retries (the request wrapper above retries).
struct TokenEndpointClient: Sendable {
    let url: String
    let transport: any HTTPTransport

    /// POSTs the form. `secrets` are the sensitive values in it; they are scrubbed from anything
    /// that could end up in an error (server descriptions, transport messages).
    func post(_ form: [(String, String)], secrets: [String]) throws -> (status: Int, json: [String: Any]?) {
        let body = Array(Self.formEncode(form).utf8)
        let request = TransportRequest(method: "POST", url: url, headers: [
            ("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json"),
        ], body: .bytes(body))
        let response: TransportResponse
        do {
            response = try transport.perform(request)
        } catch let e as TransportError {
            throw OAuthError.transport(Self.scrub(e, secrets))
        }
        let json = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]
        return (response.status, json)
    }

    /// A token exchange: the JSON on 200, a typed error otherwise.
    func requestToken(_ form: [(String, String)], secrets: [String]) throws -> TokenResponse {
        let (status, json) = try post(form, secrets: secrets)
        guard status == 200 else { throw Self.error(status: status, json: json, secrets: secrets) }
        guard let json else { throw OAuthError.malformedResponse("the body is not a JSON object") }
        guard let access = json["access_token"] as? String, !access.isEmpty else {
            throw OAuthError.malformedResponse("no access_token")
        }
        if let type = json["token_type"] as? String, type.lowercased() != "bearer" {
            throw OAuthError.malformedResponse("token_type \(String(type.prefix(40))) is not Bearer")
        }
        // Google sends a number; some servers send a string. Absent: assume Google's hour.
        var expiresIn = 3600.0
        if let n = json["expires_in"] as? NSNumber { expiresIn = n.doubleValue }
        else if let s = json["expires_in"] as? String, let n = Double(s) { expiresIn = n }
        else if json["expires_in"] != nil { throw OAuthError.malformedResponse("expires_in is not a number") }
        return TokenResponse(accessToken: access, expiresIn: expiresIn, scope: json["scope"] as? String,
                             refreshToken: (json["refresh_token"] as? String).flatMap { $0.isEmpty ? nil : $0 })
    }

    static func error(status: Int, json: [String: Any]?, secrets: [String]) -> OAuthError {
        let code = json?["error"] as? String
        let rawDescription = json?["error_description"] as? String ?? code ?? "HTTP \(status)"
        let description = scrub(String(rawDescription.prefix(300)), secrets)
        switch code {
        case "invalid_grant": return .invalidGrant(description: description)
        case "invalid_client", "unauthorized_client": return .invalidClient(description: description)
        case "invalid_request", "unsupported_grant_type": return .invalidRequest(description: description)
        case "invalid_scope": return .invalidScope(description: description)
        default: return .server(status: status, error: code.map { scrub(String($0.prefix(60)), secrets) }, description: json == nil ? nil : description)
        }
    }

    static func scrub(_ text: String, _ secrets: [String]) -> String {
        var out = text
        for s in secrets where s.count >= 4 { out = out.replacingOccurrences(of: s, with: "[redacted]") }
        return out
    }

    static func scrub(_ e: TransportError, _ secrets: [String]) -> TransportError {
        switch e {
        case .couldNotConnect(let m): return .couldNotConnect(scrub(m, secrets))
        case .timedOut(let m): return .timedOut(scrub(m, secrets))
        case .connectionLost(let m): return .connectionLost(scrub(m, secrets))
        case .tls(let m): return .tls(scrub(m, secrets))
        case .invalidURL(let m): return .invalidURL(scrub(m, secrets))
        case .aborted: return .aborted
        case .other(let code, let m): return .other(code: code, message: scrub(m, secrets))
        }
    }

    static func formEncode(_ form: [(String, String)]) -> String { FormEncoding.encode(form) }
}
