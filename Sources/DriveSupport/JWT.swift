import Foundation

/// Compact JWS tokens signed with RS256: what a service account sends to the token endpoint
/// (`grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`) and what the emulator checks.
///
/// Contracts:
/// - Only RS256 is accepted on verification: a token whose header names another algorithm
///   (`none`, `HS256`, ...) is rejected, whatever its signature.
/// - Header and claims are `Codable` types, written as compact JSON with the keys in sorted
///   order and `/` unescaped: the bytes `JSONSerialization` wrote for the same values with
///   `.sortedKeys, .withoutEscapingSlashes` before the claims were typed (`JWTTests` compares
///   them), so a signature over them is the same too.
/// - Decoding is strict: a claim missing or of the wrong JSON type is a `ClaimFailure` naming
///   it, which the emulator turns into Google's answer for that claim.
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

    /// A claim the claims type needs that the token lacks, or holds as another JSON type.
    public enum ClaimFailure: Error, Equatable, CustomStringConvertible {
        case missing(String)
        case illTyped(String)
        /// The claims are no JSON object (or no JSON at all).
        case notAnObject

        /// The claim it is about (nil for `notAnObject`).
        public var claim: String? {
            switch self {
            case .missing(let name), .illTyped(let name): return name
            case .notAnObject: return nil
            }
        }

        public var description: String {
            switch self {
            case .missing(let name): return "the JWT has no `\(name)` claim"
            case .illTyped(let name): return "the JWT's `\(name)` claim has the wrong type"
            case .notAnObject: return "the JWT's claims are not a JSON object"
            }
        }
    }

    /// The JOSE header drivefs writes and reads: the algorithm, the type, the signing key's ID.
    public struct Header: Codable, Equatable, Sendable {
        public var alg: String
        public var kid: String?
        public var typ: String?

        public init(alg: String = "RS256", kid: String? = nil, typ: String? = "JWT") {
            self.alg = alg
            self.kid = kid
            self.typ = typ
        }
    }

    /// The claims of Google's service-account flow: who signs (`iss`, the account's email), the
    /// scopes asked for (`scope`, space-separated), the token URL it is posted to (`aud`), when it
    /// was made and when it ends (`iat`, `exp`: whole seconds since the epoch, `exp` at most an
    /// hour after `iat`), and the user to act as (`sub`, only with domain-wide delegation).
    public struct ServiceAccountClaims: Codable, Equatable, Sendable {
        public var iss: String
        public var scope: String
        public var aud: String
        public var iat: Int
        public var exp: Int
        public var sub: String?

        public init(iss: String, scope: String, aud: String, iat: Int, exp: Int, sub: String? = nil) {
            self.iss = iss
            self.scope = scope
            self.aud = aud
            self.iat = iat
            self.exp = exp
            self.sub = sub
        }

        private enum CodingKeys: String, CodingKey {
            case iss, scope, aud, iat, exp, sub
        }

        /// Strict: every claim but `sub` present, each of its JSON type; `iat` and `exp` whole
        /// numbers (a fraction is `illTyped`, whichever way the decoder reports it).
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            iss = try c.decode(String.self, forKey: .iss)
            scope = try c.decode(String.self, forKey: .scope)
            aud = try c.decode(String.self, forKey: .aud)
            iat = try Self.seconds(c, .iat)
            exp = try Self.seconds(c, .exp)
            sub = try c.decodeIfPresent(String.self, forKey: .sub)
        }

        private static func seconds(_ c: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) throws -> Int {
            let value = try c.decode(Double.self, forKey: key)
            guard let whole = Int(exactly: value) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "not whole seconds")
            }
            return whole
        }
    }

    /// A token whose structure, algorithm and signature were checked; its claims are decoded on
    /// demand, into the type the caller expects.
    public struct Verified: Sendable {
        public let header: Header
        /// The claims part, decoded from base64url: a JSON object.
        public let payload: Data

        public func claims<Claims: Decodable>(as type: Claims.Type = Claims.self) throws(ClaimFailure) -> Claims {
            try JWT.decodeClaims(type, from: payload)
        }
    }

    /// `base64url(header).base64url(claims).base64url(signature)`; the header gets `alg: RS256`,
    /// `typ: JWT`, and `kid` when given.
    public static func signRS256(claims: some Encodable, key: RSAKey, keyID: String? = nil) throws -> String {
        let signingInput = try encodePart(Header(kid: keyID)) + "." + encodePart(claims)
        let signature = try key.signRS256(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// Checks the structure, the algorithm and the signature; the caller checks the claims.
    public static func verifyRS256(_ token: String, key: RSAKey) throws -> Verified {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw Failure.malformed }
        let headerData = try decodePart(parts[0])
        let payload = try decodePart(parts[1])
        guard let object = try? JSONSerialization.jsonObject(with: payload), object is [String: Any] else { throw Failure.malformed }
        let alg: String
        do {
            alg = try JSONDecoder().decode(AlgorithmOnly.self, from: headerData).alg
        } catch {
            throw Failure.malformed
        }
        guard alg == "RS256" else { throw Failure.unsupportedAlgorithm(String(alg.prefix(16))) }
        guard let header = try? JSONDecoder().decode(Header.self, from: headerData) else { throw Failure.malformed }
        guard let signature = Base64URL.decode(String(parts[2])) else { throw Failure.malformed }
        let signingInput = Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8)
        guard key.verifyRS256(signature: Array(signature), of: signingInput) else { throw Failure.badSignature }
        return Verified(header: header, payload: payload)
    }

    /// The claims without checking anything: for finding which key should verify a token (`iss`).
    /// `Failure.malformed` when the token is no JWT; a `ClaimFailure` when its claims do not fit.
    public static func unverifiedClaims<Claims: Decodable>(_ token: String, as type: Claims.Type = Claims.self) throws -> Claims {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw Failure.malformed }
        return try decodeClaims(type, from: try decodePart(parts[1]))
    }

    /// Only the header's algorithm, so that a header with an unknown `alg` but otherwise odd
    /// members is refused for its algorithm.
    private struct AlgorithmOnly: Decodable {
        let alg: String
    }

    static func encodePart(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Base64URL.encode(try encoder.encode(value))
    }

    private static func decodePart(_ part: Substring) throws -> Data {
        guard let data = Base64URL.decode(String(part)) else { throw Failure.malformed }
        return data
    }

    static func decodeClaims<Claims: Decodable>(_ type: Claims.Type, from data: Data) throws(ClaimFailure) -> Claims {
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch DecodingError.keyNotFound(let key, _) {
            throw .missing(key.stringValue)
        } catch DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context) {
            // A claim of the wrong type, or `null`; at the top level, claims that are no object.
            guard let key = context.codingPath.first else { throw .notAnObject }
            throw .illTyped(key.stringValue)
        } catch DecodingError.dataCorrupted(let context) {
            guard let key = context.codingPath.first else { throw .notAnObject }
            throw .illTyped(key.stringValue)
        } catch {
            throw .notAnObject
        }
    }
}
