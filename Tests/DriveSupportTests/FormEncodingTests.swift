import DriveSupport
import XCTest

/// One form/percent encoding for every layer: fixed cases and random round trips.
final class FormEncodingTests: XCTestCase {
    func testOnlyUnreservedCharactersPassThrough() {
        XCTAssertEqual(FormEncoding.encodeComponent("aZ09-._~"), "aZ09-._~")
        XCTAssertEqual(FormEncoding.encodeComponent("a b+c/d?e=f&g#h%"), "a%20b%2Bc%2Fd%3Fe%3Df%26g%23h%25")
        XCTAssertEqual(FormEncoding.encodeComponent("é😀"), "%C3%A9%F0%9F%98%80")
        XCTAssertEqual(FormEncoding.encode([("q", "name = 'x'"), ("", "")]), "q=name%20%3D%20%27x%27&=")
    }

    func testDecodingReadsPlusAsSpaceKeepsOrderAndRepeats() {
        let pairs = FormEncoding.decode("a=1+2&&b=%41%zz&a=3&flag")
        XCTAssertEqual(pairs.map(\.name), ["a", "b", "a", "flag"])
        XCTAssertEqual(pairs.map(\.value), ["1 2", "%41%zz", "3", ""], "a malformed escape keeps the value as written")
        XCTAssertEqual(FormEncoding.decode("b=%41").first?.value, "A")
    }

    func testAQueryIsWhatFollowsTheQuestionMarkUpToTheFragment() {
        let pairs = FormEncoding.query(of: "http://127.0.0.1:1/cb?code=4%2F0A&state=x#frag")
        XCTAssertEqual(pairs.map(\.name), ["code", "state"])
        XCTAssertEqual(pairs.map(\.value), ["4/0A", "x"])
        XCTAssertTrue(FormEncoding.query(of: "/no/query").isEmpty)
    }

    func testRandomPairsRoundTrip() {
        var random = SplitMix64(seed: 20261207)
        let alphabet = Array("aZ09-._~ +/?=&#%é😀\u{0}\n'\"")
        for _ in 0..<2_000 {
            func text() -> String { String((0..<random.next(below: 12)).map { _ in alphabet[random.next(below: alphabet.count)] }) }
            let pairs = (0..<(1 + random.next(below: 4))).map { _ in (text(), text()) }
            let encoded = FormEncoding.encode(pairs)
            XCTAssertTrue(encoded.unicodeScalars.allSatisfy { $0.isASCII && !" +#?".unicodeScalars.contains($0) }, encoded)
            let decoded = FormEncoding.decode(encoded)
            // Pairs with an empty name and value encode to "=", which decodes as such: nothing is skipped.
            XCTAssertEqual(decoded.map(\.name), pairs.map(\.0), encoded)
            XCTAssertEqual(decoded.map(\.value), pairs.map(\.1), encoded)
        }
    }
}
