import Foundation

/// Google's revoke endpoint (`POST https://oauth2.googleapis.com/revoke`, form `token=…`; the
/// token travels in the body, never in the URL, so it stays out of server and proxy logs).
/// Revoking a refresh token also kills the access tokens minted from it.
public enum TokenRevocation {
    public enum Outcome: Sendable, Equatable {
        case revoked
        /// The server no longer knew the token (already revoked or expired): nothing left to revoke.
        case alreadyInvalid
    }

    public static func revoke(token: String, revokeURL: String, transport: any HTTPTransport) throws -> Outcome {
        let (status, json) = try TokenEndpointClient(url: revokeURL, transport: transport).post([("token", token)], secrets: [token])
        if status == 200 { return .revoked }
        if status == 400, let error = json?["error"] as? String, error == "invalid_token" || error == "invalid_grant" {
            return .alreadyInvalid
        }
        throw TokenEndpointClient.error(status: status, json: json, secrets: [token])
    }
}
