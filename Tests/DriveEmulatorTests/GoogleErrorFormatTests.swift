import Foundation
import XCTest
@testable import DriveEmulator

/// Google's error envelope as bytes: ESF member order and indentation, escaping, and `prettyPrint`.
final class GoogleErrorFormatTests: XCTestCase {
    var h: DriveHarness!
    override func setUpWithError() throws { h = try DriveHarness() }
    override func tearDown() { h.shutdown() }

    private func text(_ r: HTTPResponse) -> String { String(decoding: DriveHarness.bytes(r), as: UTF8.self) }

    private func assertInOrder(_ text: String, _ markers: [String], file: StaticString = #filePath, line: UInt = #line) {
        let positions = markers.map { text.range(of: $0)?.lowerBound }
        XCTAssertFalse(positions.contains(nil), "missing one of \(markers) in \(text)", file: file, line: line)
        let found = positions.compactMap { $0 }
        XCTAssertEqual(found, found.sorted(), "members out of order in \(text)", file: file, line: line)
    }

    func testAuthErrorMembersAreInESFOrderAndIndentedByTwoSpaces() throws {
        let r = try h.send("GET", "/drive/v3/files", auth: nil)
        XCTAssertEqual(r.status, 401)
        let body = text(r)
        XCTAssertTrue(body.hasPrefix("{\n  \"error\": {\n    \"code\": 401,\n    \"message\": \""), body)
        assertInOrder(body, ["\"code\"", "\"message\"", "\"errors\"", "\"status\"", "\"details\""])
        assertInOrder(body, ["\"message\": \"Login Required.\"", "\"domain\": \"global\"", "\"reason\": \"required\"",
                             "\"location\": \"Authorization\"", "\"locationType\": \"header\""])
        assertInOrder(body, ["\"@type\"", "\"reason\": \"CREDENTIALS_MISSING\"", "\"domain\": \"googleapis.com\"", "\"metadata\""])
        XCTAssertEqual(((DriveHarness.object(r)["error"] as? [String: Any])?["status"]) as? String, "UNAUTHENTICATED")
    }

    func testDriveErrorHasNoStatusAndKeepsOrder() throws {
        let r = try h.send("GET", "/drive/v3/files/nope?fields=id")
        XCTAssertEqual(r.status, 404)
        let body = text(r)
        assertInOrder(body, ["\"code\": 404", "\"message\": \"File not found: nope.\"", "\"errors\""])
        XCTAssertFalse(body.contains("\"status\""), body)
        XCTAssertEqual(r.headers["Content-Type"], "application/json; charset=UTF-8")
    }

    func testStringsAreEscapedAndParseBack() throws {
        let message = "quote \" backslash \\ newline \n tab \t bell \u{07} slash / é 😀"
        let r = GoogleError(400, reason: "invalid", message: message, location: "q", locationType: "parameter").response
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(DriveHarness.bytes(r))) as? [String: Any])
        let error = try XCTUnwrap(object["error"] as? [String: Any])
        XCTAssertEqual(error["message"] as? String, message)
        XCTAssertEqual(error["code"] as? Int, 400)
        XCTAssertEqual((error["errors"] as? [[String: Any]])?.first?["location"] as? String, "q")
        XCTAssertTrue(text(r).contains("\\u0007"))
        XCTAssertEqual(OrderedJSON.object([("a", .array([])), ("b", .bool(true))]).rendered(pretty: false), #"{"a":[],"b":true}"#)
    }

    func testPrettyPrintFalseIsCompactButErrorsStayIndented() throws {
        let pretty = try h.send("GET", "/drive/v3/about?fields=kind,user")
        XCTAssertTrue(text(pretty).contains("\n"))
        let compact = try h.send("GET", "/drive/v3/about?fields=kind,user&prettyPrint=false")
        XCTAssertEqual(compact.status, 200)
        XCTAssertFalse(text(compact).contains("\n"), text(compact))
        XCTAssertFalse(text(compact).contains(": "), text(compact))
        XCTAssertEqual(DriveHarness.object(compact)["kind"] as? String, "drive#about")
        let error = try h.send("GET", "/drive/v3/files/nope?prettyPrint=false")
        XCTAssertEqual(error.status, 404)
        XCTAssertTrue(text(error).hasPrefix("{\n  \"error\": {\n"), "errors are indented whatever prettyPrint says")
    }
}
