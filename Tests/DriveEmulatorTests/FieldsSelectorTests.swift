import Foundation
import XCTest
@testable import DriveEmulator

final class FieldsSelectorTests: XCTestCase {
    var h: DriveHarness!
    var fileId = ""

    override func setUpWithError() throws {
        h = try DriveHarness()
        fileId = try h.upload("data.json", Array("{\"a\":1}".utf8), mime: "application/json")
    }

    override func tearDown() { h.shutdown() }

    func testSelectionsShapeResponses() throws {
        let table: [(String, String, Set<String>)] = [
            ("/drive/v3/files/\(fileId)", "id", ["id"]),
            ("/drive/v3/files/\(fileId)", "id,name , size", ["id", "name", "size"]),
            ("/drive/v3/files/\(fileId)", "capabilities/canCopy,md5Checksum", ["capabilities", "md5Checksum"]),
            ("/drive/v3/files/\(fileId)", "owners(emailAddress)", ["owners"]),
            ("/drive/v3/files", "files(id,name),nextPageToken", ["files"]),
            ("/drive/v3/files", "kind,incompleteSearch,files/id", ["kind", "incompleteSearch", "files"]),
            ("/drive/v3/files", "files( id , capabilities( canEdit ) )", ["files"]),
        ]
        for (path, fields, keys) in table {
            let (status, body) = try h.call("GET", "\(path)?fields=\(DriveHarness.q(fields))")
            XCTAssertEqual(status, 200, "fields=\(fields): \(body)")
            XCTAssertEqual(Set(body.keys), keys, "fields=\(fields)")
        }
        let (_, nested) = try h.call("GET", "/drive/v3/files/\(fileId)?fields=capabilities/canCopy,owners(emailAddress)")
        XCTAssertEqual((nested["capabilities"] as? [String: Any]).map { Set($0.keys) }, ["canCopy"])
        XCTAssertEqual((nested["owners"] as? [[String: Any]])?.first.map { Set($0.keys) }, ["emailAddress"])
        let (_, list) = try h.call("GET", "/drive/v3/files?fields=files(id,capabilities(canEdit))")
        let first = (list["files"] as? [[String: Any]])?.first
        XCTAssertEqual(first.map { Set($0.keys) }, ["id", "capabilities"])
        XCTAssertEqual((first?["capabilities"] as? [String: Any]).map { Set($0.keys) }, ["canEdit"])
    }

    func testStarAndDefaults() throws {
        let (_, all) = try h.call("GET", "/drive/v3/files/\(fileId)?fields=*")
        for key in ["id", "name", "mimeType", "size", "md5Checksum", "sha1Checksum", "sha256Checksum", "version", "headRevisionId",
                    "parents", "capabilities", "createdTime", "modifiedTime", "webViewLink", "iconLink", "owners", "spaces", "ownedByMe"] {
            XCTAssertNotNil(all[key], key)
        }
        XCTAssertEqual(all["size"] as? String, "7")
        XCTAssertTrue((all["modifiedTime"] as? String)?.hasSuffix(".000Z") ?? false)
        let (_, plain) = try h.call("GET", "/drive/v3/files/\(fileId)")
        XCTAssertEqual(Set(plain.keys), ["kind", "id", "name", "mimeType"])
        let (_, list) = try h.call("GET", "/drive/v3/files")
        XCTAssertEqual(Set(list.keys), ["kind", "incompleteSearch", "files"])
        XCTAssertEqual((list["files"] as? [[String: Any]])?.first.map { Set($0.keys) }, ["kind", "id", "name", "mimeType"])
        // Folders have no content fields at all.
        let folder = try h.create("f", mime: "application/vnd.google-apps.folder")
        let (_, f) = try h.call("GET", "/drive/v3/files/\(folder)?fields=*")
        XCTAssertNil(f["size"])
        XCTAssertNil(f["md5Checksum"])
        XCTAssertEqual((f["capabilities"] as? [String: Any])?["canAddChildren"] as? Bool, true)
    }

    func testMalformedOrUnknownSelectionsAre400() throws {
        let bad = ["items", "capabilities,canAddChildren", "files(id", "id,,name", "files(id))", "name(first)", "(id)", "id/",
                   "files(bogus)", "*x", "id name"]
        for fields in bad {
            let (status, body) = try h.call("GET", "/drive/v3/files?fields=\(DriveHarness.q(fields))")
            XCTAssertEqual(status, 400, "fields=\(fields)")
            XCTAssertEqual(DriveHarness.reason(body), "invalidParameter", "fields=\(fields)")
            XCTAssertEqual(DriveHarness.location(body), "fields", "fields=\(fields)")
            XCTAssertTrue(DriveHarness.message(body)?.hasPrefix("Invalid field selection") ?? false, "fields=\(fields)")
        }
        let (_, body) = try h.call("GET", "/drive/v3/files?fields=items")
        XCTAssertEqual(DriveHarness.message(body), "Invalid field selection items")
    }

    func testParser() throws {
        let sel = try FieldSelection.parse("a, b/c ,d(e,f(g)),*")
        XCTAssertTrue(sel.all)
        XCTAssertEqual(Set(sel.members.keys), ["a", "b", "d"])
        let d = sel.members["d"]!!
        XCTAssertEqual(Set(d.members.keys), ["e", "f"])
        let shaped = try FieldSelection.parse("x(y)").apply(to: ["x": [["y": 1, "z": 2]], "w": 3]) as! [String: Any]
        XCTAssertEqual(Set(shaped.keys), ["x"])
        XCTAssertEqual((shaped["x"] as? [[String: Any]])?.first.map { Set($0.keys) }, ["y"])
    }

    /// Wire format: int64 as strings, booleans as JSON booleans, three-digit UTC timestamps, no nulls.
    func testWireEncoding() throws {
        let r = try h.send("GET", "/drive/v3/files/\(fileId)?fields=size,starred,trashed,version,createdTime,description")
        let text = String(decoding: DriveHarness.bytes(r), as: UTF8.self)
        XCTAssertTrue(text.contains("\"size\" : \"7\""), text)
        XCTAssertTrue(text.contains("\"starred\" : false"), text)
        XCTAssertTrue(text.contains("\"version\" : \"1\""), text)
        XCTAssertFalse(text.contains("null"), text)
        XCTAssertFalse(text.contains("description"), text)
        XCTAssertNotNil(text.range(of: "\"createdTime\" : \"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\\.[0-9]{3}Z\"", options: .regularExpression), text)
        XCTAssertEqual(r.headers["Content-Type"], "application/json; charset=UTF-8")
    }
}
