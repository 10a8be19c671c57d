import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

/// revisions.list / revisions.get / revisions.get?alt=media.
final class DriveRevisionsTests: XCTestCase {
    /// New content by uploadType=media; returns the new headRevisionId.
    @discardableResult
    static func replaceContent(_ h: DriveHarness, _ id: String, _ text: String) throws -> String {
        let r = try h.send("PATCH", "/upload/drive/v3/files/\(id)?uploadType=media&fields=headRevisionId",
                           headers: [("Content-Type", "text/plain")], bytes: Array(text.utf8))
        XCTAssertEqual(r.status, 200)
        return try XCTUnwrap(DriveHarness.object(r)["headRevisionId"] as? String)
    }

    static func headRevision(_ h: DriveHarness, _ id: String) throws -> String {
        try XCTUnwrap(try h.call("GET", "/drive/v3/files/\(id)?fields=headRevisionId").1["headRevisionId"] as? String)
    }

    static func revisionIds(_ h: DriveHarness, _ id: String) throws -> [String] {
        let (status, body) = try h.call("GET", "/drive/v3/files/\(id)/revisions?fields=revisions(id)")
        XCTAssertEqual(status, 200, "\(body)")
        return (body["revisions"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
    }

    func testEachContentChangeIsARevisionListedOldestFirst() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        let id = try h.upload("notes.txt", Array("one".utf8), mime: "text/plain")
        let first = try Self.headRevision(h, id)
        let second = try Self.replaceContent(h, id, "second")
        // A metadata-only update is not a revision.
        XCTAssertEqual(try h.call("PATCH", "/drive/v3/files/\(id)", json: ["name": "renamed.txt"]).0, 200)
        let third = try Self.replaceContent(h, id, "the third")
        XCTAssertEqual(Set([first, second, third]).count, 3)
        XCTAssertEqual(try Self.headRevision(h, id), third)

        // Default fields: kind, id, mimeType, modifiedTime.
        let (status, list) = try h.call("GET", "/drive/v3/files/\(id)/revisions")
        XCTAssertEqual(status, 200)
        XCTAssertEqual(list["kind"] as? String, "drive#revisionList")
        XCTAssertNil(list["nextPageToken"])
        let revisions = try XCTUnwrap(list["revisions"] as? [[String: Any]])
        XCTAssertEqual(revisions.compactMap { $0["id"] as? String }, [first, second, third])
        XCTAssertEqual(Set(revisions[0].keys), ["kind", "id", "mimeType", "modifiedTime"])
        XCTAssertEqual(revisions[0]["kind"] as? String, "drive#revision")

        let (_, sized) = try h.call("GET", "/drive/v3/files/\(id)/revisions?fields=revisions(id,size,md5Checksum,keepForever,originalFilename)")
        let rows = try XCTUnwrap(sized["revisions"] as? [[String: Any]])
        XCTAssertEqual(rows.compactMap { $0["size"] as? String }, ["3", "6", "9"])
        XCTAssertEqual(rows[1]["md5Checksum"] as? String, Digest.hex(.md5, of: Array("second".utf8)))
        XCTAssertEqual(rows[0]["keepForever"] as? Bool, false)
        XCTAssertEqual(rows[0]["originalFilename"] as? String, "notes.txt")

        // revisions.get: metadata by id, `fields` validated.
        let (s2, got) = try h.call("GET", "/drive/v3/files/\(id)/revisions/\(second)?fields=*")
        XCTAssertEqual(s2, 200)
        XCTAssertEqual(got["id"] as? String, second)
        XCTAssertEqual(got["size"] as? String, "6")
        XCTAssertEqual(got["mimeType"] as? String, "text/plain")
        XCTAssertEqual((got["lastModifyingUser"] as? [String: Any])?["me"] as? Bool, true)
        XCTAssertEqual(Set(try h.call("GET", "/drive/v3/files/\(id)/revisions/\(second)").1.keys), ["kind", "id", "mimeType", "modifiedTime"])
        let (s3, bad) = try h.call("GET", "/drive/v3/files/\(id)/revisions/\(second)?fields=nope")
        XCTAssertEqual(s3, 400)
        XCTAssertEqual(DriveHarness.location(bad), "fields")
    }

    func testUnknownRevisionsAndFilesAre404() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        let id = try h.upload("a.bin", [1, 2, 3])
        for target in ["/drive/v3/files/\(id)/revisions/0Bnope", "/drive/v3/files/\(id)/revisions/0Bnope?alt=media"] {
            let (status, body) = try h.call("GET", target)
            XCTAssertEqual(status, 404, target)
            XCTAssertEqual(DriveHarness.message(body), "Revision not found: 0Bnope.")
            XCTAssertEqual(DriveHarness.reason(body), "notFound")
            XCTAssertEqual(DriveHarness.location(body), "revisionId")
        }
        let missing = DriveIDs.newFileID()
        for target in ["/drive/v3/files/\(missing)/revisions", "/drive/v3/files/\(missing)/revisions/x"] {
            let (status, body) = try h.call("GET", target)
            XCTAssertEqual(status, 404)
            XCTAssertEqual(DriveHarness.message(body), "File not found: \(missing).")
        }
        XCTAssertEqual(try h.send("DELETE", "/drive/v3/files/\(id)").status, 204)
        XCTAssertEqual(try h.call("GET", "/drive/v3/files/\(id)/revisions").0, 404)
    }

    func testRevisionMediaServesRangesLikeFilesGet() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        let content = Array("0123456789".utf8)
        let id = try h.upload("digits.bin", content)
        let old = try Self.headRevision(h, id)
        let new = try Self.replaceContent(h, id, "abc")

        let whole = try h.send("GET", "/drive/v3/files/\(id)/revisions/\(old)?alt=media")
        XCTAssertEqual(whole.status, 200)
        XCTAssertEqual(DriveHarness.bytes(whole), content)
        XCTAssertEqual(DriveHarness.bytes(try h.send("GET", "/download/drive/v3/files/\(id)/revisions/\(old)?alt=media")), content)
        XCTAssertEqual(DriveHarness.bytes(try h.send("GET", "/drive/v3/files/\(id)/revisions/\(new)?alt=media")), Array("abc".utf8))
        XCTAssertEqual(DriveHarness.bytes(try h.send("GET", "/drive/v3/files/\(id)?alt=media")), Array("abc".utf8))

        // Each range answered exactly as files.get?alt=media answers it for the same bytes.
        let fileNow = try h.upload("same.bin", content)
        for (range, status, expected, contentRange) in [
            ("bytes=2-4", 206, "234", "bytes 2-4/10"), ("bytes=7-", 206, "789", "bytes 7-9/10"), ("bytes=-3", 206, "789", "bytes 7-9/10"),
            ("bytes=8-100", 206, "89", "bytes 8-9/10"), ("bytes=10-", 416, "", "bytes */10"), ("bytes=1-2,4-5", 200, "0123456789", nil),
        ] as [(String, Int, String, String?)] {
            let r = try h.send("GET", "/drive/v3/files/\(id)/revisions/\(old)?alt=media", headers: [("Range", range)])
            XCTAssertEqual(r.status, status, range)
            XCTAssertEqual(r.headers["Content-Range"], contentRange, range)
            if status != 416 { XCTAssertEqual(DriveHarness.bytes(r), Array(expected.utf8), range) }
            let f = try h.send("GET", "/drive/v3/files/\(fileNow)?alt=media", headers: [("Range", range)])
            XCTAssertEqual(f.status, r.status, range)
            XCTAssertEqual(f.headers["Content-Range"], r.headers["Content-Range"], range)
            if status != 416 { XCTAssertEqual(DriveHarness.bytes(f), DriveHarness.bytes(r), range) }
            else { XCTAssertEqual(DriveHarness.reason(DriveHarness.object(r)), "requestedRangeNotSatisfiable") }
        }
        // Empty content: any range is a 416.
        let empty = try Self.replaceContent(h, id, "")
        let r = try h.send("GET", "/drive/v3/files/\(id)/revisions/\(empty)?alt=media", headers: [("Range", "bytes=0-")])
        XCTAssertEqual(r.status, 416)
        XCTAssertEqual(r.headers["Content-Range"], "bytes */0")
    }

    func testOldRevisionsBeyondTheKeptNumberArePurged() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        let id = try h.upload("log.txt", Array("v0".utf8))
        var ids = [try Self.headRevision(h, id)]
        for i in 1...12 { ids.append(try Self.replaceContent(h, id, "v\(i)")) }
        let kept = Array(ids.suffix(DriveItem.keptRevisions))
        XCTAssertEqual(try Self.revisionIds(h, id), kept)
        for purged in ids.prefix(ids.count - DriveItem.keptRevisions) {
            XCTAssertEqual(try h.call("GET", "/drive/v3/files/\(id)/revisions/\(purged)").0, 404)
            XCTAssertEqual(try h.send("GET", "/drive/v3/files/\(id)/revisions/\(purged)?alt=media").status, 404)
        }
        // The oldest kept revision still has its bytes.
        XCTAssertEqual(DriveHarness.bytes(try h.send("GET", "/drive/v3/files/\(id)/revisions/\(kept[0])?alt=media")), Array("v3".utf8))

        // Paging: every kept revision once.
        var seen: [String] = []
        var token: String?
        var pages: [Int] = []
        repeat {
            let (status, body) = try h.call("GET", "/drive/v3/files/\(id)/revisions?pageSize=3&fields=nextPageToken,revisions(id)"
                                            + (token.map { "&pageToken=\(DriveHarness.q($0))" } ?? ""))
            XCTAssertEqual(status, 200)
            let page = (body["revisions"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            seen += page
            pages.append(page.count)
            token = body["nextPageToken"] as? String
        } while token != nil && pages.count < 20
        XCTAssertEqual(seen, kept)
        XCTAssertEqual(pages, [3, 3, 3, 1])
        XCTAssertEqual(try h.call("GET", "/drive/v3/files/\(id)/revisions?pageSize=0").0, 400)
        XCTAssertEqual(try h.call("GET", "/drive/v3/files/\(id)/revisions?pageToken=garbage").0, 400)
    }

    func testWorkspaceFilesListRevisionsButAreNotDownloadableAndFoldersHaveNone() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        let doc = try h.create("Doc", mime: DriveMime.document)
        let (status, list) = try h.call("GET", "/drive/v3/files/\(doc)/revisions?fields=revisions(id,mimeType,published,exportLinks)")
        XCTAssertEqual(status, 200)
        let revisions = try XCTUnwrap(list["revisions"] as? [[String: Any]])
        XCTAssertEqual(revisions.count, 1)
        XCTAssertEqual(revisions[0]["id"] as? String, "1")
        XCTAssertEqual(revisions[0]["mimeType"] as? String, DriveMime.document)
        XCTAssertEqual(revisions[0]["published"] as? Bool, false)
        XCTAssertNotNil(revisions[0]["exportLinks"] as? [String: Any])
        XCTAssertEqual(try h.call("GET", "/drive/v3/files/\(doc)/revisions/1").0, 200)
        let (mediaStatus, media) = try h.call("GET", "/drive/v3/files/\(doc)/revisions/1?alt=media")
        XCTAssertEqual(mediaStatus, 403)
        XCTAssertEqual(DriveHarness.reason(media), "fileNotDownloadable")

        let folder = try h.create("dir", mime: DriveMime.folder)
        let (folderStatus, folderBody) = try h.call("GET", "/drive/v3/files/\(folder)/revisions")
        XCTAssertEqual(folderStatus, 403)
        XCTAssertEqual(DriveHarness.reason(folderBody), "revisionsNotSupported")
    }

    /// A Docs Editors file's revisions keep the text each had, and their `exportLinks` (asked for by
    /// `fields`) export it: the document as it was at that revision, not the head. `alt=media` on
    /// such a revision is refused exactly as on the file.
    func testADocsRevisionIsExportedAsItWasThroughItsExportLinks() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        let doc = try h.create("Plan", mime: DriveMime.document)
        for text in ["first draft", "second draft"] {
            let r = try h.send("PATCH", "/upload/drive/v3/files/\(doc)?uploadType=media", headers: [("Content-Type", "text/plain")],
                               bytes: Array(text.utf8))
            XCTAssertEqual(r.status, 200)
        }
        let (status, list) = try h.call("GET", "/drive/v3/files/\(doc)/revisions?fields=revisions(id,exportLinks)")
        XCTAssertEqual(status, 200, "\(list)")
        let revisions = try XCTUnwrap(list["revisions"] as? [[String: Any]])
        XCTAssertEqual(revisions.compactMap { $0["id"] as? String }, ["1", "2", "3"], "the empty document, then each text")
        XCTAssertNil(try h.call("GET", "/drive/v3/files/\(doc)/revisions").1["revisions"].flatMap { ($0 as? [[String: Any]])?.first?["exportLinks"] },
                     "not without fields asking")
        func link(_ index: Int, _ mime: String) throws -> String {
            let links = try XCTUnwrap(revisions[index]["exportLinks"] as? [String: String])
            XCTAssertEqual(Set(links.keys), Set(ExportFormats.targets[DriveMime.document] ?? []), "every export format")
            let url = try XCTUnwrap(links[mime])
            let base = "http://127.0.0.1:9999"
            XCTAssertTrue(url.hasPrefix(base + DriveService.revisionExportPath + "?"), url)
            return String(url.dropFirst(base.count))
        }
        func follow(_ target: String) throws -> (Int, String) {
            let r = try h.send("GET", target)
            return (r.status, String(decoding: DriveHarness.bytes(r), as: UTF8.self))
        }
        let first = try follow(try link(1, "text/plain"))
        XCTAssertEqual(first.0, 200)
        XCTAssertTrue(first.1.contains("first draft") && !first.1.contains("second"), first.1)
        let second = try follow(try link(2, "text/plain"))
        XCTAssertTrue(second.1.contains("second draft"), second.1)
        XCTAssertEqual(try follow(try link(0, "text/plain")).0, 200, "the empty first revision exports too")
        let docx = try h.send("GET", try link(1, "application/vnd.openxmlformats-officedocument.wordprocessingml.document"))
        XCTAssertEqual(docx.status, 200)
        XCTAssertEqual(Array(DriveHarness.bytes(docx).prefix(2)), Array("PK".utf8), "a docx (a zip)")
        // revisions.get gives the same link; the head's export is files.export's.
        let (_, got) = try h.call("GET", "/drive/v3/files/\(doc)/revisions/2?fields=exportLinks")
        XCTAssertEqual((got["exportLinks"] as? [String: String])?["text/plain"], "http://127.0.0.1:9999" + (try link(1, "text/plain")))
        XCTAssertTrue(String(decoding: DriveHarness.bytes(try h.send("GET", "/drive/v3/files/\(doc)/export?mimeType=text/plain")), as: UTF8.self)
            .contains("second draft"))

        // alt=media: Google's refusal, word for word.
        let (mediaStatus, media) = try h.call("GET", "/drive/v3/files/\(doc)/revisions/2?alt=media")
        XCTAssertEqual(mediaStatus, 403)
        XCTAssertEqual(DriveHarness.reason(media), "fileNotDownloadable")
        XCTAssertEqual(DriveHarness.message(media), "Only files with binary content can be downloaded. Use Export with Docs Editors files.")
        XCTAssertEqual(DriveHarness.location(media), "alt")

        // What a link cannot serve.
        let q = DriveHarness.q
        XCTAssertEqual(try follow("\(DriveService.revisionExportPath)?id=\(doc)&revision=9&mimeType=text%2Fplain").0, 404)
        XCTAssertEqual(try follow("\(DriveService.revisionExportPath)?id=\(doc)&revision=2&mimeType=\(q("image/png"))").0, 400)
        XCTAssertEqual(try follow("\(DriveService.revisionExportPath)?id=\(doc)&mimeType=text%2Fplain").0, 400)
        let blob = try h.upload("a.txt", Array("bytes".utf8), mime: "text/plain")
        let blobRevision = try Self.headRevision(h, blob)
        let (blobStatus, blobBody) = try h.call("GET", "\(DriveService.revisionExportPath)?id=\(blob)&revision=\(blobRevision)&mimeType=text%2Fplain")
        XCTAssertEqual(blobStatus, 403)
        XCTAssertEqual(DriveHarness.reason(blobBody), "fileNotExportable")
        XCTAssertEqual(try h.call("GET", "\(DriveService.revisionExportPath)?id=\(doc)&revision=2&mimeType=text%2Fplain", auth: nil).0, 401)

        // The texts are kept with the revisions, across a restart.
        try h.restart()
        XCTAssertTrue(try follow(try link(1, "text/plain")).1.contains("first draft"))
    }

    func testRevisionsSurviveARestart() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        let id = try h.upload("keep.txt", Array("before".utf8))
        let old = try Self.headRevision(h, id)
        let new = try Self.replaceContent(h, id, "after")
        try h.restart()
        XCTAssertEqual(try Self.revisionIds(h, id), [old, new])
        XCTAssertEqual(DriveHarness.bytes(try h.send("GET", "/drive/v3/files/\(id)/revisions/\(old)?alt=media")), Array("before".utf8))
        XCTAssertEqual(DriveHarness.bytes(try h.send("GET", "/drive/v3/files/\(id)/revisions/\(new)?alt=media")), Array("after".utf8))
    }

    func testRouteNames() {
        func name(_ method: String, _ target: String) -> String? {
            DriveService.match(HTTPRequest(method: method, target: target))?.0
        }
        XCTAssertEqual(name("GET", "/drive/v3/files/F/revisions"), "revisions.list")
        XCTAssertEqual(name("GET", "/drive/v3/files/F/revisions/R"), "revisions.get")
        XCTAssertEqual(name("GET", "/drive/v3/files/F/revisions/R?alt=media"), "revisions.get.media")
        XCTAssertEqual(name("GET", "/download/drive/v3/files/F/revisions/R?alt=media"), "revisions.get.media")
        XCTAssertEqual(name("DELETE", "/drive/v3/files/F/revisions/R"), "revisions.delete")
        XCTAssertEqual(name("PATCH", "/drive/v3/files/F/revisions/R"), "revisions.update")
        XCTAssertEqual(name("PUT", "/drive/v3/files/F/revisions/R"), "drive.unknown")
        XCTAssertEqual(name("GET", "/feeds/download/export?id=F&revision=1&mimeType=text%2Fplain"), "revisions.export")
        XCTAssertEqual(name("POST", "/feeds/download/export?id=F"), "drive.unknown")
    }
}
