@testable import DriveClient
import DriveSupport
import XCTest

/// The metadata a create or update sends: only the fields set, keys sorted, read back from a
/// persisted session (also one written by the untyped writer of earlier versions).
final class FileMetadataBodyTests: XCTestCase {
    func testOnlyTheFieldsSetAreSentInSortedOrder() {
        let body = FileMetadataBody(id: "abc", name: "a/b \"c\"", parents: ["p1"], mimeType: "application/pdf",
                                    modifiedTime: 1_700_000_000_123, appProperties: ["k": "v"])
        XCTAssertEqual(String(decoding: body.json, as: UTF8.self),
                       #"{"appProperties":{"k":"v"},"id":"abc","mimeType":"application/pdf","modifiedTime":"2023-11-14T22:13:20.123Z","name":"a/b \"c\"","parents":["p1"]}"#)
        XCTAssertEqual(String(decoding: FileMetadataBody(trashed: false).json, as: UTF8.self), #"{"trashed":false}"#)
        XCTAssertEqual(String(decoding: FileMetadataBody().json, as: UTF8.self), "{}")
    }

    func testAnEmptyAppPropertiesMapIsLeftOut() {
        XCTAssertEqual(String(decoding: FileMetadataBody(name: "n", appProperties: [:]).json, as: UTF8.self), #"{"name":"n"}"#)
    }

    func testASessionsMetadataReadsBackAsWritten() throws {
        let body = FileMetadataBody(id: "x", name: "ünïcode.txt", parents: ["root"], mimeType: "text/plain", modifiedTime: 5)
        XCTAssertEqual(FileMetadataBody(json: String(decoding: body.json, as: UTF8.self)), body)
        // What earlier versions persisted (JSONSerialization: slashes escaped).
        let old = try XCTUnwrap(FileMetadataBody(json: #"{"mimeType":"application\/pdf","name":"r.pdf","parents":["f1"]}"#))
        XCTAssertEqual(old.mimeType, "application/pdf")
        XCTAssertEqual(old.parents, ["f1"])
        XCTAssertNil(FileMetadataBody(json: "not json"))
        XCTAssertNil(FileMetadataBody(json: #"{"name":3}"#))
    }
}
