import DriveSupport
import XCTest

final class DigestTests: XCTestCase {
    func testKnownVectors() {
        XCTAssertEqual(Digest.hex(.md5, of: [UInt8]()), "d41d8cd98f00b204e9800998ecf8427e")
        XCTAssertEqual(Digest.hex(.md5, of: Array("abc".utf8)), "900150983cd24fb0d6963f7d28e17f72")
        XCTAssertEqual(Digest.hex(.sha1, of: Array("abc".utf8)), "a9993e364706816aba3e25717850c26c9cd0d89d")
        XCTAssertEqual(Digest.hex(.sha256, of: Array("abc".utf8)),
                       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    func testStreamingEqualsOneShot() {
        var d = Digest(.sha256)
        d.update(Array("a".utf8))
        d.update(Array("bc".utf8))
        let streamed = d.hexDigest()
        XCTAssertEqual(streamed, Digest.hex(.sha256, of: Array("abc".utf8)))
    }

    func testBase64URL() {
        XCTAssertEqual(Base64URL.encode([0xfb, 0xff]), "-_8")
        XCTAssertEqual(Base64URL.decode("-_8").map { Array($0) }, [0xfb, 0xff])
        XCTAssertEqual(SecureRandom.token(length: 43).count, 43)
    }

    func testManualTimeSourceSleepsWithoutWaiting() {
        let clock = ManualTimeSource(now: 100)
        clock.sleep(2.5)
        XCTAssertEqual(clock.now(), 102.5)
        XCTAssertEqual(clock.sleeps, [2.5])
    }
}
