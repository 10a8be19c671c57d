import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

final class QueryParserTests: XCTestCase {
    var h: DriveHarness!
    var ids: [String: String] = [:]

    override func setUpWithError() throws {
        h = try DriveHarness()
        // 2023-11-14T22:13:20Z is the harness clock.
        ids["docs"] = try h.create("Docs", mime: "application/vnd.google-apps.folder")
        ids["hello"] = try h.create("HelloWorld.txt", parent: ids["docs"], extra: ["description": "first greeting",
                                                                                  "modifiedTime": "2020-01-02T03:04:05.000Z"])
        ids["quote"] = try h.create("it's a \\ test", parent: ids["docs"], extra: ["starred": true])
        ids["photo"] = try h.create("Photo 2024.png", extra: ["modifiedTime": "2024-06-01T00:00:00Z"])
        ids["report"] = try h.create("Annual report", mime: "application/vnd.google-apps.document",
                                     extra: ["modifiedTime": "2022-05-05T12:00:00.123456789Z"])
        ids["gone"] = try h.create("old stuff.txt", extra: ["trashed": true, "properties": ["mass": "1.3kg"],
                                                            "appProperties": ["app": "yes"]])
    }

    override func tearDown() { h.shutdown() }

    func names(_ q: String) throws -> Set<String> {
        let (status, body) = try h.call("GET", "/drive/v3/files?q=\(DriveHarness.q(q))&fields=files(id,name)")
        XCTAssertEqual(status, 200, "q=\(q): \(body)")
        return Set((body["files"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String })
    }

    func testValidQueriesSelectTheExpectedFiles() throws {
        let table: [(String, Set<String>)] = [
            ("'\(ids["docs"]!)' in parents", ["HelloWorld.txt", "it's a \\ test"]),
            ("'root' in parents and trashed = false", ["Docs", "Photo 2024.png", "Annual report"]),
            ("'root' in parents and trashed = true", ["old stuff.txt"]),
            ("name = 'helloworld.TXT'", ["HelloWorld.txt"]),
            ("name = 'it\\'s a \\\\ test'", ["it's a \\ test"]),
            ("name contains 'Hello'", ["HelloWorld.txt"]),
            ("name contains 'World'", []),
            ("name contains '2024'", ["Photo 2024.png"]),
            ("name != 'Docs' and 'root' in parents and not trashed = true", ["Photo 2024.png", "Annual report"]),
            ("mimeType = 'application/vnd.google-apps.folder'", ["Docs"]),
            ("mimeType contains 'image/'", ["Photo 2024.png"]),
            ("mimeType != 'application/vnd.google-apps.folder' and starred = true", ["it's a \\ test"]),
            ("modifiedTime < '2021-01-01T00:00:00'", ["HelloWorld.txt"]),
            ("modifiedTime > '2022-05-05T12:00:00.123Z' and modifiedTime <= '2024-06-01T00:00:00Z'",
             ["Photo 2024.png", "it's a \\ test", "old stuff.txt", "Docs"]),
            ("modifiedTime = '2022-05-05T12:00:00.123Z'", ["Annual report"]),
            ("modifiedTime >= '2022-05-05T14:00:00.123+02:00' and modifiedTime != '2024-06-01T00:00:00Z' and trashed = false and mimeType != 'application/vnd.google-apps.folder' and createdTime < '2100-01-01'",
             ["Annual report", "it's a \\ test"]),
            ("fullText contains 'greeting'", ["HelloWorld.txt"]),
            ("fullText contains 'greet'", []),
            ("fullText contains '\"first greeting\"'", ["HelloWorld.txt"]),
            ("(name = 'Docs' or name = 'Annual report') and not mimeType = 'application/vnd.google-apps.folder'", ["Annual report"]),
            ("name = 'Docs' or name = 'Annual report' and starred = true", ["Docs"]),
            ("not (trashed = false)", ["old stuff.txt"]),
            ("'me' in owners and name contains 'old'", ["old stuff.txt"]),
            ("sharedWithMe = true", []),
            ("sharedWithMe and trashed = false", []),
            ("not sharedWithMe and name = 'Docs'", ["Docs"]),
            ("trashed != true and starred != false", ["it's a \\ test"]),
            ("properties has { key='mass' and value='1.3kg' }", ["old stuff.txt"]),
            ("properties has {key='mass' and value='2kg'}", []),
            ("appProperties has { key='app' and value='yes' } and trashed = true", ["old stuff.txt"]),
            ("appProperties has { key='mass' and value='1.3kg' }", []),
        ]
        for (q, expected) in table {
            XCTAssertEqual(try names(q), expected, "q=\(q)")
        }
    }

    func testMalformedQueriesAre400InvalidValueOnQ() throws {
        let bad = [
            "name = 'unterminated", "name = ", "name == 'x'", "title = 'x'", "id = 'abc'", "trashed = 'true'",
            "modifiedTime > 'yesterday'", "(name = 'x'", "name = 'x')", "name = 'x' and", "and name = 'x'",
            "'x' in parent", "fullText = 'x'", "name < 'x'", "trashed", "'x' in parents or", "name contains x",
            "starred = maybe", "not", "name = 'a' 'b'", "mimeType > 'a'", "parents = 'x'", "name ! 'x'",
            "properties has { key='a' }", "properties = 'x'", "appProperties has { value='v' and key='k' }", "{", "name = 'x' }",
            "sharedWithMe = false", "trashed = false and sharedWithMe = false",
        ]
        for q in bad {
            let (status, body) = try h.call("GET", "/drive/v3/files?q=\(DriveHarness.q(q))")
            XCTAssertEqual(status, 400, "q=\(q)")
            XCTAssertEqual(DriveHarness.reason(body), "invalid", "q=\(q)")
            XCTAssertEqual(DriveHarness.location(body), "q", "q=\(q)")
            XCTAssertEqual(DriveHarness.message(body), "Invalid Value", "q=\(q)")
        }
    }

    func testParserBuildsTheExpectedTree() throws {
        XCTAssertEqual(try DriveQuery.parse("not trashed = true and 'a' in parents or name = 'x'"),
                       .or(.and(.not(.compare(field: .trashed, op: .eq, value: .bool(true))),
                                .inCollection(value: "a", collection: .parents)),
                           .compare(field: .name, op: .eq, value: .string("x"))))
        XCTAssertEqual(try DriveQuery.parse("name='a\\'b\\\\c'"), .compare(field: .name, op: .eq, value: .string("a'b\\c")))
    }

    func testTokenPrefixAndFullTextMatching() {
        XCTAssertTrue(DriveQuery.tokenPrefixMatch("hello", in: "HelloWorld"))
        XCTAssertFalse(DriveQuery.tokenPrefixMatch("world", in: "HelloWorld"))
        XCTAssertTrue(DriveQuery.tokenPrefixMatch("wor", in: "hello world"))
        XCTAssertTrue(DriveQuery.tokenPrefixMatch("report.p", in: "my report.pdf"))
        XCTAssertTrue(DriveQuery.fullTextMatch("budget", in: "the_budget plan"))
        XCTAssertFalse(DriveQuery.fullTextMatch("budg", in: "the budget plan"))
    }
}
