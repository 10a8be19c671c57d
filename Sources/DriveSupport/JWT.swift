import Foundation

/// Compact JWS tokens signed with RS256: what a service account sends to the token endpoint
/// (`grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`) and what the emulator checks.
///
/// Only RS256 is accepted on verification: a token whose header names another algorithm
/// (`none`, `HS256`, ...) is rejected, whatever its signature.
public enum JWT {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// Not three base64url parts, or a part that is not a JSON object. Never carries the token.
        case malformed
        case unsupportedAlgorithm(String)
        case badSignature

        public var description: String {
            switch self {
            case .malformed: return "malformed JWT"
            case .unsupportedAlgorithm(let alg): return "unsupported JWT algorithm \(alg)"
            case .badSignature: return "invalid JWT signature"
            }
        }
    }

    /// A decoded, verified token: its header and claims as JSON objects.
    /// @unchecked Sendable: immutable JSON objects ([String: Any]) read only after verification
    public struct Verified: @unchecked Sendable {
        public let header: [String: Any]
        public let claims: [String: Any]

        public func string(_ name: String) -> String? { claims[name] as? String }
        /// A numeric claim (`iat`, `exp`), as seconds since the epoch.
        public func number(_ name: String) -> Double? {
            guard let n = claims[name] as? NSNumber, !(claims[name] is Bool) else { return nil }
            return n.doubleValue
        }
    }

    /// `base64url(header).base64url(claims).base64url(signature)`; the header gets `alg: RS256`,
    /// `typ: JWT`, and `kid` when given.
    public static func signRS256(claims: [String: Any], key: RSAKey, keyID: String? = nil) throws -> String {
        var header: [String: Any] = ["alg": "RS256", "typ": "JWT"]
        if let keyID { header["kid"] = keyID }
        let signingInput = try encodePart(header) + "." + encodePart(claims)
        let signature = try key.signRS256(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// Checks the structure, the algorithm and the signature; the caller checks the claims.
    public static func verifyRS256(_ token: String, key: RSAKey) throws -> Verified {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw Failure.malformed }
        let header = try decodePart(parts[0])
        let claims = try decodePart(parts[1])
        guard let alg = header["alg"] as? String else { throw Failure.malformed }
        guard alg == "RS256" else { throw Failure.unsupportedAlgorithm(String(alg.prefix(16))) }
        guard let signature = Base64URL.decode(String(parts[2])) else { throw Failure.malformed }
        let signingInput = Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8)
        guard key.verifyRS256(signature: Array(signature), of: signingInput) else { throw Failure.badSignature }
        return Verified(header: header, claims: claims)
    }

    /// The claims without checking anything: for finding which key should verify a token (`iss`).
    public static func unverifiedClaims(_ token: String) throws -> [String: Any] {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw Failure.malformed }
        return try decodePart(parts[1])
    }

    private static func encodePart(_ object: [String: Any]) throws -> String {
        guard JSONSerialization.isValidJSONObject(object) else { throw Failure.malformed }
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        return Base64URL.encode(data)
    }

    private static func decodePart(_ part: Substring) throws -> [String: Any] {
        guard let data = Base64URL.decode(String(part)),
              let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else { throw Failure.malformed }
        return object
    }
}
