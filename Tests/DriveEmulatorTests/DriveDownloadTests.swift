import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

final class DriveDownloadTests: XCTestCase {
    var h: DriveHarness!
    override func setUpWithError() throws { h = try DriveHarness() }
    override func tearDown() { h.shutdown() }

    func testRangedDownloads() throws {
        let content = (0..<1000).map { UInt8($0 % 251) }
        let id = try h.upload("r.bin", content)
        let full = try h.send("GET", "/drive/v3/files/\(id)?alt=media")
        XCTAssertEqual(full.status, 200)
        XCTAssertEqual(DriveHarness.bytes(full), content)
        XCTAssertEqual(full.headers["Content-Type"], "application/octet-stream")
        let table: [(String, Int, String?, ArraySlice<UInt8>?)] = [
            ("bytes=0-99", 206, "bytes 0-99/1000", content[0..<100]),
            ("bytes=500-", 206, "bytes 500-999/1000", content[500...]),
            ("bytes=-10", 206, "bytes 990-999/1000", content[990...]),
            ("bytes=900-134217727", 206, "bytes 900-999/1000", content[900...]),
            ("bytes=-5000", 206, "bytes 0-999/1000", content[0...]),
            ("bytes=999-999", 206, "bytes 999-999/1000", content[999...]),
            ("bytes=1000-", 416, "bytes */1000", nil),
            ("bytes=5000-6000", 416, "bytes */1000", nil),
            ("bytes=-0", 416, "bytes */1000", nil),
            ("bytes=5-2", 200, nil, content[0...]),
            ("items=0-1", 200, nil, content[0...]),
        ]
        for (range, status, contentRange, expected) in table {
            for path in ["/drive/v3/files/\(id)?alt=media", "/download/drive/v3/files/\(id)?alt=media&acknowledgeAbuse=true"] {
                let r = try h.send("GET", path, headers: [("Range", range)])
                XCTAssertEqual(r.status, status, range)
                XCTAssertEqual(r.headers["Content-Range"], contentRange, range)
                if let expected { XCTAssertEqual(DriveHarness.bytes(r), Array(expected), range) }
                if status == 416 { XCTAssertEqual(DriveHarness.reason(DriveHarness.object(r)), "requestedRangeNotSatisfiable") }
            }
        }
    }

    func testEmptyFileRangesAre416() throws {
        let id = try h.create("empty.bin")
        let r = try h.send("GET", "/drive/v3/files/\(id)?alt=media", headers: [("Range", "bytes=0-262143")])
        XCTAssertEqual(r.status, 416)
        XCTAssertEqual(r.headers["Content-Range"], "bytes */0")
        let plain = try h.send("GET", "/drive/v3/files/\(id)?alt=media")
        XCTAssertEqual(plain.status, 200)
        XCTAssertTrue(DriveHarness.bytes(plain).isEmpty)
    }

    func testWorkspaceFilesAndFoldersAreNotDownloadable() throws {
        let doc = try h.create("Doc", mime: "application/vnd.google-apps.document")
        let folder = try h.create("F", mime: "application/vnd.google-apps.folder")
        for id in [doc, folder] {
            let r = try h.send("GET", "/drive/v3/files/\(id)?alt=media")
            XCTAssertEqual(r.status, 403)
            let body = DriveHarness.object(r)
            XCTAssertEqual(DriveHarness.reason(body), "fileNotDownloadable")
            XCTAssertEqual(DriveHarness.location(body), "alt")
        }
        XCTAssertEqual(try h.send("GET", "/drive/v3/files/1missing?alt=media").status, 404)
    }

    func testExport() throws {
        // A Doc whose text comes from an import (multipart with a Workspace target type).
        let text = Array("Hello from a Google Doc.\n".utf8)
        let body = Array("--b\r\nContent-Type: application/json\r\n\r\n{\"name\":\"Notes\",\"mimeType\":\"application/vnd.google-apps.document\"}\r\n--b\r\nContent-Type: text/plain\r\n\r\n".utf8)
            + text + Array("\r\n--b--\r\n".utf8)
        let created = try h.send("POST", "/upload/drive/v3/files?uploadType=multipart&fields=id,mimeType,exportLinks,size,md5Checksum",
                                 headers: [("Content-Type", "multipart/related; boundary=b")], bytes: body)
        XCTAssertEqual(created.status, 200)
        let f = DriveHarness.object(created)
        let id = f["id"] as! String
        XCTAssertEqual(f["mimeType"] as? String, "application/vnd.google-apps.document")
        XCTAssertNil(f["md5Checksum"])
        XCTAssertNil(f["size"])
        let links = try XCTUnwrap(f["exportLinks"] as? [String: String])
        XCTAssertEqual(links["text/plain"], "http://127.0.0.1:9999/drive/v3/files/\(id)/export?mimeType=text%2Fplain")

        let plain = try h.send("GET", "/drive/v3/files/\(id)/export?mimeType=text/plain")
        XCTAssertEqual(plain.status, 200)
        XCTAssertEqual(DriveHarness.bytes(plain), text)
        let pdf1 = DriveHarness.bytes(try h.send("GET", "/drive/v3/files/\(id)/export?mimeType=application/pdf"))
        let pdf2 = DriveHarness.bytes(try h.send("GET", "/drive/v3/files/\(id)/export?mimeType=application/pdf"))
        XCTAssertEqual(pdf1, pdf2)
        let source = ExportSource(fileId: id, name: "Notes", sourceMime: "application/vnd.google-apps.document", text: text)
        XCTAssertEqual(pdf1, ExportFormats.exportBytes(source, target: "application/pdf"))
        XCTAssertEqual(Array(pdf1.prefix(8)), Array("%PDF-1.4".utf8))

        let unsupported = try h.send("GET", "/drive/v3/files/\(id)/export?mimeType=image/png")
        XCTAssertEqual(unsupported.status, 400)
        XCTAssertEqual(try h.send("GET", "/drive/v3/files/\(id)/export").status, 400)
        let blob = try h.upload("b.txt", [1])
        let notExportable = try h.send("GET", "/drive/v3/files/\(blob)/export?mimeType=text/plain")
        XCTAssertEqual(notExportable.status, 403)
        XCTAssertEqual(DriveHarness.reason(DriveHarness.object(notExportable)), "fileNotExportable")

        // Above 10 MB: 403 exportSizeLimitExceeded.
        let big = [UInt8](repeating: 0x61, count: 10 * 1024 * 1024 + 1)
        let bigBody = Array("--b\r\nContent-Type: application/json\r\n\r\n{\"name\":\"Big\",\"mimeType\":\"application/vnd.google-apps.document\"}\r\n--b\r\nContent-Type: text/plain\r\n\r\n".utf8)
            + big + Array("\r\n--b--\r\n".utf8)
        let bigDoc = DriveHarness.object(try h.send("POST", "/upload/drive/v3/files?uploadType=multipart",
                                                    headers: [("Content-Type", "multipart/related; boundary=b")], bytes: bigBody))["id"] as! String
        let tooBig = try h.send("GET", "/drive/v3/files/\(bigDoc)/export?mimeType=text/plain")
        XCTAssertEqual(tooBig.status, 403)
        XCTAssertEqual(DriveHarness.reason(DriveHarness.object(tooBig)), "exportSizeLimitExceeded")
    }
}
