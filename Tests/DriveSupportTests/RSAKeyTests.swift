import DriveSupport
import XCTest

final class RSAKeyTests: XCTestCase {
    static let key: RSAKey = try! RSAKey.generate()

    func testGeneratedKeyExportsPKCS8AndRoundTrips() throws {
        let pem = try Self.key.privateKeyPEM()
        XCTAssertTrue(pem.hasPrefix("-----BEGIN PRIVATE KEY-----\n"), "PKCS#8, as in Google's JSON keys")
        XCTAssertTrue(pem.hasSuffix("-----END PRIVATE KEY-----\n"))
        let reread = try RSAKey(privateKeyPEM: pem)
        XCTAssertEqual(try reread.privateKeyPEM(), pem)
        XCTAssertEqual(try reread.publicKeyPEM(), try Self.key.publicKeyPEM())
        let sig = try reread.signRS256(Array("hello".utf8))
        XCTAssertEqual(sig.count, 256, "2048-bit key")
        XCTAssertTrue(Self.key.verifyRS256(signature: sig, of: Array("hello".utf8)))
    }

    func testPublicKeyVerifiesButCannotSign() throws {
        let pub = try RSAKey(publicKeyPEM: try Self.key.publicKeyPEM())
        XCTAssertFalse(pub.hasPrivateKey)
        XCTAssertThrowsError(try pub.signRS256([1, 2, 3])) { XCTAssertEqual($0 as? RSAKey.Failure, .noPrivateKey) }
        XCTAssertThrowsError(try pub.privateKeyPEM())
        let sig = try Self.key.signRS256([1, 2, 3])
        XCTAssertTrue(pub.verifyRS256(signature: sig, of: [1, 2, 3] as [UInt8]))
    }

    func testTamperedDataOrSignatureIsRejected() throws {
        let data = Array("payload".utf8)
        var sig = try Self.key.signRS256(data)
        XCTAssertFalse(Self.key.verifyRS256(signature: sig, of: Array("payloae".utf8)))
        sig[10] ^= 0x01
        XCTAssertFalse(Self.key.verifyRS256(signature: sig, of: data))
        XCTAssertFalse(Self.key.verifyRS256(signature: [], of: data))
        XCTAssertFalse(Self.key.verifyRS256(signature: Array(sig.prefix(100)), of: data))
    }

    func testAnotherKeyDoesNotVerify() throws {
        let other = try RSAKey.generate()
        let sig = try other.signRS256([9, 9])
        XCTAssertFalse(Self.key.verifyRS256(signature: sig, of: [9, 9] as [UInt8]))
    }

    func testGarbagePEMIsAnErrorNotACrash() {
        XCTAssertThrowsError(try RSAKey(privateKeyPEM: "")) { XCTAssertEqual($0 as? RSAKey.Failure, .invalidPEM) }
        XCTAssertThrowsError(try RSAKey(privateKeyPEM: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"))
        XCTAssertThrowsError(try RSAKey(publicKeyPEM: "not a key"))
        // A private-key PEM is not a public-key PEM.
        XCTAssertThrowsError(try RSAKey(publicKeyPEM: try Self.key.privateKeyPEM()))
    }
}
