import Foundation
import XCTest
@testable import DriveEmulator

/// The hand-written JSON writer must produce what JSONSerialization parses back to the same tree,
/// with the layout the emulator has always had (`"key" : value`, 2-space indent), and `compact`
/// must drop only whitespace outside strings.
final class JSONTextTests: XCTestCase {
    func testRoundTripsThroughJSONSerialization() throws {
        let tree: [String: Any] = [
            "s": "quote \" backslash \\ slash / newline \n tab \t bell \u{07} é 日本", "t": true, "f": false, "i": 42,
            "big": Int64(1) << 40, "neg": -7, "arr": [1, "two", ["x": [String: Any]()], [Any]()], "empty": [String: Any](),
            "nested": ["b": ["c": "d"], "a": [true, false]], "bools": ["canEdit": true], "null": NSNull(),
        ]
        let text = JSONText.encode(tree)
        let parsed = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text)) as? NSDictionary)
        XCTAssertEqual(parsed, tree as NSDictionary)
        let compact = JSONText.compact(text)
        XCTAssertEqual(try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(compact)) as? NSDictionary), tree as NSDictionary)
        let compactText = String(decoding: compact, as: UTF8.self)
        XCTAssertFalse(compactText.contains("\n"))
        XCTAssertTrue(compactText.contains(#""s":"quote \" backslash \\ slash / newline \n tab \t bell \u0007 é 日本""#), compactText)
    }

    func testLayoutAndKeyOrder() {
        let text = String(decoding: JSONText.encode(["b": 1, "a": ["x": "y z"], "c": [String]()]), as: UTF8.self)
        XCTAssertEqual(text, "{\n  \"a\" : {\n    \"x\" : \"y z\"\n  },\n  \"b\" : 1,\n  \"c\" : []\n}")
        XCTAssertEqual(String(decoding: JSONText.compact(Array(text.utf8)), as: UTF8.self), #"{"a":{"x":"y z"},"b":1,"c":[]}"#)
    }
}
