import DriveSupport
import Foundation
import XCTest

final class JWTTests: XCTestCase {
    static let key: RSAKey = try! RSAKey.generate()

    private let claims: [String: Any] = [
        "iss": "sa@project.iam.gserviceaccount.com", "scope": "https://www.googleapis.com/auth/drive",
        "aud": "https://oauth2.googleapis.com/token", "iat": 1_700_000_000, "exp": 1_700_003_600,
    ]

    func testSignVerifyRoundTrip() throws {
        let token = try JWT.signRS256(claims: claims, key: Self.key, keyID: "kid-1")
        XCTAssertEqual(token.split(separator: ".").count, 3)
        XCTAssertFalse(token.contains("="), "base64url without padding")
        let v = try JWT.verifyRS256(token, key: Self.key)
        XCTAssertEqual(v.header["alg"] as? String, "RS256")
        XCTAssertEqual(v.header["typ"] as? String, "JWT")
        XCTAssertEqual(v.header["kid"] as? String, "kid-1")
        XCTAssertEqual(v.string("iss"), "sa@project.iam.gserviceaccount.com")
        XCTAssertEqual(v.string("aud"), "https://oauth2.googleapis.com/token")
        XCTAssertEqual(v.number("exp"), 1_700_003_600)
        XCTAssertNil(v.number("iss"))
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
        forged["iss"] = "attacker@example.com"
        parts[1] = Base64URL.encode(try JSONSerialization.data(withJSONObject: forged, options: [.sortedKeys]))
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
        let body = Base64URL.encode(try JSONSerialization.data(withJSONObject: claims))
        XCTAssertThrowsError(try JWT.verifyRS256("\(header).\(body).", key: Self.key)) {
            XCTAssertEqual($0 as? JWT.Failure, .unsupportedAlgorithm("none"))
        }
        for bad in ["", "a.b", "a.b.c.d", "!!!.???.***", "\(body).\(body)"] {
            XCTAssertThrowsError(try JWT.verifyRS256(bad, key: Self.key), bad) { XCTAssertEqual($0 as? JWT.Failure, .malformed) }
        }
        XCTAssertEqual(try JWT.unverifiedClaims("\(header).\(body).x")["iss"] as? String, "sa@project.iam.gserviceaccount.com")
    }
}
