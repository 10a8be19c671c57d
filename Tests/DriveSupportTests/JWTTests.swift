import DriveSupport
import Foundation
import XCTest

final class JWTTests: XCTestCase {
    static let key: RSAKey = try! RSAKey.generate()

    private let claims = JWT.ServiceAccountClaims(iss: "sa@project.iam.gserviceaccount.com", scope: "https://www.googleapis.com/auth/drive",
                                                  aud: "https://oauth2.googleapis.com/token", iat: 1_700_000_000, exp: 1_700_003_600)

    func testSignVerifyRoundTrip() throws {
        let token = try JWT.signRS256(claims: claims, key: Self.key, keyID: "kid-1")
        XCTAssertEqual(token.split(separator: ".").count, 3)
        XCTAssertFalse(token.contains("="), "base64url without padding")
        let v = try JWT.verifyRS256(token, key: Self.key)
        XCTAssertEqual(v.header, JWT.Header(alg: "RS256", kid: "kid-1", typ: "JWT"))
        XCTAssertEqual(try v.claims(as: JWT.ServiceAccountClaims.self), claims)
    }

    /// Random claims (strings with quotes, backslashes, slashes, control characters and
    /// non-ASCII; any `sub` or none) come back as they were signed, and the signed bytes are
    /// exactly what the untyped dictionaries gave before the claims were typed
    /// (`JSONSerialization`, sorted keys, slashes unescaped), header included: the same
    /// assertion, the same signature.
    func testRandomClaimsRoundTripAndAreWrittenAsTheUntypedDictionariesWereByteForByte() throws {
        var random = SplitMix64(seed: 19)
        let alphabet = Array("abcXYZ09 _-.:/@\\\"'{}[],\u{0}\u{1}\u{8}\t\n\r\u{1f}\u{7f}é€😀\u{2028}")
        func text() -> String { String((0..<random.next(below: 24)).map { _ in alphabet[random.next(below: alphabet.count)] }) }
        func dictionaryEncoding(_ object: [String: Any]) throws -> String {
            Base64URL.encode(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
        }
        for round in 0..<300 {
            let iat = Int(random.next() % 4_000_000_000)
            let claims = JWT.ServiceAccountClaims(iss: text(), scope: text(), aud: text(), iat: iat, exp: iat + random.next(below: 7200),
                                                  sub: random.next(below: 2) == 0 ? nil : text())
            let keyID: String? = random.next(below: 2) == 0 ? nil : text()
            let token = try JWT.signRS256(claims: claims, key: Self.key, keyID: keyID)
            let verified = try JWT.verifyRS256(token, key: Self.key)
            XCTAssertEqual(try verified.claims(as: JWT.ServiceAccountClaims.self), claims, "round \(round)")
            XCTAssertEqual(verified.header.kid, keyID, "round \(round)")

            var object: [String: Any] = ["iss": claims.iss, "scope": claims.scope, "aud": claims.aud, "iat": claims.iat, "exp": claims.exp]
            if let sub = claims.sub { object["sub"] = sub }
            var header: [String: Any] = ["alg": "RS256", "typ": "JWT"]
            if let keyID { header["kid"] = keyID }
            let parts = token.split(separator: ".").map(String.init)
            XCTAssertEqual(parts[0], try dictionaryEncoding(header), "round \(round): the header's bytes")
            XCTAssertEqual(parts[1], try dictionaryEncoding(object), "round \(round): the claims' bytes")
        }
    }

    /// Each claim missing, or of another JSON type, is named in the failure.
    func testAMissingOrIllTypedClaimIsNamed() throws {
        let complete: [String: Any] = ["iss": "a", "scope": "s", "aud": "u", "iat": 1, "exp": 2, "sub": "x"]
        for name in complete.keys.sorted() {
            var missing = complete
            missing[name] = nil
            var illTyped = complete
            illTyped[name] = complete[name] is String ? 7 as Any : "7" as Any
            let sub = name == "sub"
            for (object, expected) in [(missing, sub ? nil : JWT.ClaimFailure.missing(name)), (illTyped, .illTyped(name))] {
                let verified = try JWT.verifyRS256(try signedToken(object), key: Self.key)
                if let expected {
                    XCTAssertThrowsError(try verified.claims(as: JWT.ServiceAccountClaims.self), name) {
                        XCTAssertEqual($0 as? JWT.ClaimFailure, expected)
                    }
                } else {
                    XCTAssertNil(try verified.claims(as: JWT.ServiceAccountClaims.self).sub, "sub may be left out")
                }
            }
        }
        var fractional = complete
        fractional["iat"] = 1.5
        XCTAssertThrowsError(try JWT.verifyRS256(try signedToken(fractional), key: Self.key).claims(as: JWT.ServiceAccountClaims.self)) {
            XCTAssertEqual($0 as? JWT.ClaimFailure, .illTyped("iat"), "whole seconds")
        }
        XCTAssertThrowsError(try JWT.unverifiedClaims(try signedToken(missingIssuer()), as: JWT.ServiceAccountClaims.self)) {
            XCTAssertEqual($0 as? JWT.ClaimFailure, .missing("iss"))
        }
    }

    private func missingIssuer() -> [String: Any] { ["scope": "s", "aud": "u", "iat": 1, "exp": 2] }

    /// A token over any JSON object, signed with the test key.
    private func signedToken(_ object: [String: Any]) throws -> String {
        let header = Base64URL.encode(Array(#"{"alg":"RS256","typ":"JWT"}"#.utf8))
        let body = Base64URL.encode(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
        let input = header + "." + body
        return input + "." + Base64URL.encode(try Self.key.signRS256(Array(input.utf8)))
    }

    func testVerifiesWithThePublicKeyAlone() throws {
        let token = try JWT.signRS256(claims: claims, key: Self.key)
        let pub = try RSAKey(publicKeyPEM: try Self.key.publicKeyPEM())
        XCTAssertNoThrow(try JWT.verifyRS256(token, key: pub))
    }

    func testTamperedPayloadIsRejected() throws {
        let token = try JWT.signRS256(claims: claims, key: Self.key)
        var parts = token.split(separator: ".").map(String.init)
        var forged = claims
        forged.iss = "attacker@example.com"
        parts[1] = Base64URL.encode(try JSONEncoder().encode(forged))
        XCTAssertThrowsError(try JWT.verifyRS256(parts.joined(separator: "."), key: Self.key)) {
            XCTAssertEqual($0 as? JWT.Failure, .badSignature)
        }
    }

    func testTamperedSignatureIsRejected() throws {
        let token = try JWT.signRS256(claims: claims, key: Self.key)
        var parts = token.split(separator: ".").map(String.init)
        var sig = [UInt8](Base64URL.decode(parts[2])!)
        sig[0] ^= 0x80
        parts[2] = Base64URL.encode(sig)
        XCTAssertThrowsError(try JWT.verifyRS256(parts.joined(separator: "."), key: Self.key)) {
            XCTAssertEqual($0 as? JWT.Failure, .badSignature)
        }
    }

    func testWrongKeyIsRejected() throws {
        let token = try JWT.signRS256(claims: claims, key: try RSAKey.generate())
        XCTAssertThrowsError(try JWT.verifyRS256(token, key: Self.key)) { XCTAssertEqual($0 as? JWT.Failure, .badSignature) }
    }

    func testAlgNoneAndMalformedTokensAreRejected() throws {
        let header = Base64URL.encode(Array(#"{"alg":"none","typ":"JWT"}"#.utf8))
        let body = Base64URL.encode(try JSONEncoder().encode(claims))
        XCTAssertThrowsError(try JWT.verifyRS256("\(header).\(body).", key: Self.key)) {
            XCTAssertEqual($0 as? JWT.Failure, .unsupportedAlgorithm("none"))
        }
        for bad in ["", "a.b", "a.b.c.d", "!!!.???.***", "\(body).\(body)"] {
            XCTAssertThrowsError(try JWT.verifyRS256(bad, key: Self.key), bad) { XCTAssertEqual($0 as? JWT.Failure, .malformed) }
        }
        XCTAssertEqual(try JWT.unverifiedClaims("\(header).\(body).x", as: JWT.ServiceAccountClaims.self).iss,
                       "sa@project.iam.gserviceaccount.com")
    }
}
