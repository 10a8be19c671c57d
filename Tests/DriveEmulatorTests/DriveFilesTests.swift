import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

final class DriveFilesTests: XCTestCase {
    var h: DriveHarness!
    override func setUpWithError() throws { h = try DriveHarness() }
    override func tearDown() { h.shutdown() }

    func testRootAliasAndIdShapes() throws {
        let (status, root) = try h.call("GET", "/drive/v3/files/root?fields=id,name,mimeType,parents")
        XCTAssertEqual(status, 200)
        let rootId = try XCTUnwrap(root["id"] as? String)
        XCTAssertEqual(rootId.count, 19)
        XCTAssertTrue(rootId.hasPrefix("0A") && rootId.hasSuffix("Uk9PVA"))
        XCTAssertEqual(root["name"] as? String, "My Drive")
        XCTAssertNil(root["parents"])
        let id = try h.create("a folder", mime: "application/vnd.google-apps.folder")
        XCTAssertEqual(id.count, 33)
        XCTAssertTrue(id.hasPrefix("1"))
        XCTAssertTrue(id.allSatisfy { DriveIDs.alphabet.contains($0) })
        let (_, f) = try h.call("GET", "/drive/v3/files/\(id)?fields=parents")
        XCTAssertEqual(f["parents"] as? [String], [rootId])
    }

    /// Docs Editors files created natively, imported or copied have 44-character ids starting with `1`.
    func testDocsEditorsFilesHaveLongIds() throws {
        for mime in ["application/vnd.google-apps.document", "application/vnd.google-apps.spreadsheet",
                     "application/vnd.google-apps.presentation", "application/vnd.google-apps.drawing"] {
            let id = try h.create("native", mime: mime)
            XCTAssertEqual(id.count, 44, mime)
            XCTAssertTrue(id.hasPrefix("1"), id)
            XCTAssertTrue(id.allSatisfy { DriveIDs.alphabet.contains($0) }, id)
        }
        let body = Array("--b\r\nContent-Type: application/json\r\n\r\n{\"name\":\"Imported\",\"mimeType\":\"application/vnd.google-apps.document\"}\r\n--b\r\nContent-Type: text/plain\r\n\r\nhello\r\n--b--\r\n".utf8)
        let imported = try h.send("POST", "/upload/drive/v3/files?uploadType=multipart",
                                  headers: [("Content-Type", "multipart/related; boundary=b")], bytes: body)
        XCTAssertEqual(imported.status, 200, "\(DriveHarness.object(imported))")
        let importedId = try XCTUnwrap(DriveHarness.object(imported)["id"] as? String)
        XCTAssertEqual(importedId.count, 44)
        let (status, copy) = try h.call("POST", "/drive/v3/files/\(importedId)/copy", json: [:])
        XCTAssertEqual(status, 200)
        XCTAssertEqual((copy["id"] as? String)?.count, 44)
        XCTAssertEqual(try h.upload("blob.txt", Array("x".utf8)).count, 33)
        XCTAssertEqual(try h.create("shortcut", mime: "application/vnd.google-apps.shortcut",
                                    extra: ["shortcutDetails": ["targetId": importedId]]).count, 33)
    }

    /// A folder's version grows when a child is added, removed, or moved in or out; the root's too.
    func testFolderVersionCountsChangesToItsChildren() throws {
        func version(_ id: String) throws -> Int {
            let (_, f) = try h.call("GET", "/drive/v3/files/\(id)?fields=version")
            return Int(f["version"] as? String ?? "") ?? -1
        }
        let a = try h.create("a", mime: "application/vnd.google-apps.folder")
        let b = try h.create("b", mime: "application/vnd.google-apps.folder")
        var (va, vb, vroot) = (try version(a), try version(b), try version("root"))
        let child = try h.create("child", parent: a)
        XCTAssertGreaterThan(try version(a), va, "child added")
        va = try version(a)
        XCTAssertEqual(try version(b), vb)
        let (moved, _) = try h.call("PATCH", "/drive/v3/files/\(child)?addParents=\(b)&removeParents=\(a)", json: [:])
        XCTAssertEqual(moved, 200)
        XCTAssertGreaterThan(try version(a), va, "child moved out")
        XCTAssertGreaterThan(try version(b), vb, "child moved in")
        (va, vb) = (try version(a), try version(b))
        let (renamed, _) = try h.call("PATCH", "/drive/v3/files/\(child)", json: ["name": "renamed"])
        XCTAssertEqual(renamed, 200)
        XCTAssertEqual(try version(b), vb, "renaming a child does not change the folder's list")
        let (deleted, _) = try h.call("DELETE", "/drive/v3/files/\(child)")
        XCTAssertEqual(deleted, 204)
        XCTAssertGreaterThan(try version(b), vb, "child removed")
        XCTAssertEqual(try version(a), va)
        vroot = try version("root")
        _ = try h.create("top", mime: "application/vnd.google-apps.folder")
        XCTAssertGreaterThan(try version("root"), vroot, "the root counts its children too")
        // Persisted: the same after a restart.
        let before = try version(b)
        try h.restart()
        XCTAssertEqual(try version(b), before)
    }

    func testCreateFolderEmptyFileAndShortcut() throws {
        let (s1, folder) = try h.call("POST", "/drive/v3/files", json: ["name": "dir/with slash", "mimeType": "application/vnd.google-apps.folder"])
        XCTAssertEqual(s1, 200)
        XCTAssertEqual(Set(folder.keys), ["kind", "id", "name", "mimeType"])
        XCTAssertEqual(folder["name"] as? String, "dir/with slash")
        let folderId = folder["id"] as! String
        let (s2, empty) = try h.call("POST", "/drive/v3/files?fields=id,size,md5Checksum,mimeType,version,headRevisionId",
                                     json: ["name": "empty.txt", "parents": [folderId]])
        XCTAssertEqual(s2, 200)
        XCTAssertEqual(empty["size"] as? String, "0")
        XCTAssertEqual(empty["md5Checksum"] as? String, "d41d8cd98f00b204e9800998ecf8427e")
        XCTAssertEqual(empty["mimeType"] as? String, "text/plain")
        XCTAssertEqual(empty["version"] as? String, "1")
        let target = empty["id"] as! String
        let (s3, sc) = try h.call("POST", "/drive/v3/files?fields=id,name,shortcutDetails,size",
                                  json: ["mimeType": "application/vnd.google-apps.shortcut", "shortcutDetails": ["targetId": target]])
        XCTAssertEqual(s3, 200)
        XCTAssertEqual(sc["name"] as? String, "empty.txt")
        XCTAssertEqual((sc["shortcutDetails"] as? [String: Any])?["targetId"] as? String, target)
        XCTAssertEqual((sc["shortcutDetails"] as? [String: Any])?["targetMimeType"] as? String, "text/plain")
        XCTAssertNil(sc["size"])
        // Duplicate names are fine.
        XCTAssertNotEqual(try h.create("same"), try h.create("same"))
        // A parent that does not exist.
        let (s4, body) = try h.call("POST", "/drive/v3/files", json: ["name": "x", "parents": ["1nope"]])
        XCTAssertEqual(s4, 404)
        XCTAssertEqual(DriveHarness.reason(body), "notFound")
        XCTAssertEqual(DriveHarness.location(body), "fileId")
        XCTAssertEqual(DriveHarness.message(body), "File not found: 1nope.")
    }

    func testNineDigitFractionsAreAcceptedAndStoredAsMillis() throws {
        let id = try h.create("t", extra: ["modifiedTime": "2021-03-04T05:06:07.123456789Z", "createdTime": "2020-01-01T00:00:00Z"])
        let (_, f) = try h.call("GET", "/drive/v3/files/\(id)?fields=modifiedTime,createdTime")
        XCTAssertEqual(f["modifiedTime"] as? String, "2021-03-04T05:06:07.123Z")
        XCTAssertEqual(f["createdTime"] as? String, "2020-01-01T00:00:00.000Z")
    }

    func testGenerateIdsAndIdReuse() throws {
        let (status, gen) = try h.call("GET", "/drive/v3/files/generateIds?count=3")
        XCTAssertEqual(status, 200)
        XCTAssertEqual(gen["kind"] as? String, "drive#generatedIds")
        XCTAssertEqual(gen["space"] as? String, "drive")
        let ids = try XCTUnwrap(gen["ids"] as? [String])
        XCTAssertEqual(ids.count, 3)
        let (s1, created) = try h.call("POST", "/drive/v3/files", json: ["id": ids[0], "name": "a"])
        XCTAssertEqual(s1, 200)
        XCTAssertEqual(created["id"] as? String, ids[0])
        let (s2, again) = try h.call("POST", "/drive/v3/files", json: ["id": ids[0], "name": "a"])
        XCTAssertEqual(s2, 409)
        XCTAssertEqual(DriveHarness.reason(again), "fileIdInUse")
        XCTAssertEqual(DriveHarness.message(again), "A file already exists with the provided ID.")
        let (s3, made) = try h.call("POST", "/drive/v3/files", json: ["id": "1" + String(repeating: "x", count: 32), "name": "a"])
        XCTAssertEqual(s3, 400, "\(made)")
        let (_, ten) = try h.call("GET", "/drive/v3/files/generateIds")
        XCTAssertEqual((ten["ids"] as? [String])?.count, 10)
        XCTAssertEqual(try h.call("GET", "/drive/v3/files/generateIds?count=1001").0, 400)
        XCTAssertEqual(try h.call("GET", "/drive/v3/files/generateIds?count=0").0, 400)
    }

    /// Google refuses generated IDs for shortcuts and Docs Editors types (drive-behaviours §2.5).
    func testGeneratedIdsAreRefusedForShortcutsAndDocsEditorsTypes() throws {
        let (_, gen) = try h.call("GET", "/drive/v3/files/generateIds?count=3")
        let ids = try XCTUnwrap(gen["ids"] as? [String])
        let target = try h.create("target")
        let (s1, shortcut) = try h.call("POST", "/drive/v3/files", json: [
            "id": ids[0], "name": "link", "mimeType": "application/vnd.google-apps.shortcut", "shortcutDetails": ["targetId": target]])
        XCTAssertEqual(s1, 400)
        XCTAssertEqual(DriveHarness.message(shortcut), "The provided file ID is not usable.")
        let (s2, doc) = try h.call("POST", "/drive/v3/files", json: ["id": ids[1], "name": "d", "mimeType": "application/vnd.google-apps.document"])
        XCTAssertEqual(s2, 400)
        XCTAssertEqual(DriveHarness.reason(doc), "invalid")
        XCTAssertEqual(DriveHarness.message(doc), "Generated IDs are not supported for Docs Editors formats.")
        let (s3, _) = try h.call("POST", "/drive/v3/files", json: ["id": ids[2], "name": "f", "mimeType": "application/vnd.google-apps.folder"])
        XCTAssertEqual(s3, 200, "folders take generated IDs")
        let (s4, _) = try h.call("POST", "/drive/v3/files", json: ["name": "d", "mimeType": "application/vnd.google-apps.document"])
        XCTAssertEqual(s4, 200, "without an ID a Doc is created")
    }

    func testUpdateRenameMoveAndWritableFields() throws {
        let a = try h.create("A", mime: "application/vnd.google-apps.folder")
        let b = try h.create("B", parent: a, mime: "application/vnd.google-apps.folder")
        let file = try h.upload("f.txt", Array("hello".utf8))
        let (s1, renamed) = try h.call("PATCH", "/drive/v3/files/\(file)?fields=name,version,description,starred,properties",
                                       json: ["name": "g.txt", "description": "d", "starred": true, "properties": ["k": "v"]])
        XCTAssertEqual(s1, 200)
        XCTAssertEqual(renamed["name"] as? String, "g.txt")
        XCTAssertEqual(renamed["version"] as? String, "2")
        XCTAssertEqual(renamed["starred"] as? Bool, true)
        XCTAssertEqual(renamed["properties"] as? [String: String], ["k": "v"])
        let (s2, moved) = try h.call("PATCH", "/drive/v3/files/\(file)?addParents=\(b)&removeParents=root&fields=parents", json: [:])
        XCTAssertEqual(s2, 200)
        XCTAssertEqual(moved["parents"] as? [String], [b])
        // Two parents, parents in the body, read-only fields, a cycle.
        let (s3, two) = try h.call("PATCH", "/drive/v3/files/\(file)?addParents=\(a)", json: [:])
        XCTAssertEqual(s3, 403)
        XCTAssertEqual(DriveHarness.reason(two), "cannotAddParent")
        let (s4, parents) = try h.call("PATCH", "/drive/v3/files/\(file)", json: ["parents": [a]])
        XCTAssertEqual(s4, 403)
        XCTAssertEqual(DriveHarness.reason(parents), "fieldNotWritable")
        XCTAssertEqual(DriveHarness.message(parents), "The parents field is not directly writable in update requests. Use the addParents and removeParents parameters instead.")
        for body: [String: Any] in [["id": "1x"], ["size": "3"], ["kind": "drive#file"], ["md5Checksum": "00"], ["version": "9"]] {
            let (s, e) = try h.call("PATCH", "/drive/v3/files/\(file)", json: body)
            XCTAssertEqual(s, 403, "\(body)")
            XCTAssertEqual(DriveHarness.reason(e), "fieldNotWritable")
            XCTAssertEqual(DriveHarness.message(e), "The resource body includes fields which are not directly writable.")
        }
        let (s5, cycle) = try h.call("PATCH", "/drive/v3/files/\(a)?addParents=\(b)&removeParents=root", json: [:])
        XCTAssertEqual(s5, 400)
        XCTAssertEqual(DriveHarness.reason(cycle), "badRequest")
        let (s6, _) = try h.call("PATCH", "/drive/v3/files/1missing", json: ["name": "x"])
        XCTAssertEqual(s6, 404)
        let (s7, bad) = try h.call("PATCH", "/drive/v3/files/\(file)", json: nil)
        XCTAssertEqual(s7, 200, "\(bad)")
        let badJSON = try h.send("PATCH", "/drive/v3/files/\(file)", bytes: Array("{not json".utf8))
        XCTAssertEqual(badJSON.status, 400)
    }

    func testTrashPropagatesToDescendantsAndUntrashRestores() throws {
        let top = try h.create("top", mime: "application/vnd.google-apps.folder")
        let mid = try h.create("mid", parent: top, mime: "application/vnd.google-apps.folder")
        let leaf = try h.create("leaf.txt", parent: mid)
        let (s, t) = try h.call("PATCH", "/drive/v3/files/\(top)?fields=trashed,explicitlyTrashed", json: ["trashed": true])
        XCTAssertEqual(s, 200)
        XCTAssertEqual(t["trashed"] as? Bool, true)
        XCTAssertEqual(t["explicitlyTrashed"] as? Bool, true)
        for id in [mid, leaf] {
            let (_, f) = try h.call("GET", "/drive/v3/files/\(id)?fields=trashed,explicitlyTrashed,parents")
            XCTAssertEqual(f["trashed"] as? Bool, true)
            XCTAssertEqual(f["explicitlyTrashed"] as? Bool, false)
            XCTAssertNotNil(f["parents"])
        }
        let (_, listed) = try h.call("GET", "/drive/v3/files?q=\(DriveHarness.q("trashed = false"))")
        XCTAssertEqual((listed["files"] as? [[String: Any]])?.count, 0)
        _ = try h.call("PATCH", "/drive/v3/files/\(top)", json: ["trashed": false])
        let (_, back) = try h.call("GET", "/drive/v3/files/\(leaf)?fields=trashed")
        XCTAssertEqual(back["trashed"] as? Bool, false)
        // emptyTrash removes trashed trees only.
        _ = try h.call("PATCH", "/drive/v3/files/\(mid)", json: ["trashed": true])
        let r = try h.send("DELETE", "/drive/v3/files/trash")
        XCTAssertEqual(r.status, 204)
        XCTAssertEqual(try h.call("GET", "/drive/v3/files/\(leaf)").0, 404)
        XCTAssertEqual(try h.call("GET", "/drive/v3/files/\(top)").0, 200)
    }

    func testDeleteIsRecursiveAndRootIsProtected() throws {
        let top = try h.create("top", mime: "application/vnd.google-apps.folder")
        let leaf = try h.upload("leaf.bin", [1, 2, 3], parent: top)
        let r = try h.send("DELETE", "/drive/v3/files/\(top)")
        XCTAssertEqual(r.status, 204)
        XCTAssertTrue(DriveHarness.bytes(r).isEmpty)
        XCTAssertEqual(try h.call("GET", "/drive/v3/files/\(leaf)").0, 404)
        XCTAssertEqual(try h.send("DELETE", "/drive/v3/files/\(top)").status, 404)
        XCTAssertEqual(try h.send("DELETE", "/drive/v3/files/root").status, 403)
        // A download answered a moment ago may still open the old file: it stays until the grace
        // period ends or the service closes.
        try h.restart()
        let content = try FileManager.default.contentsOfDirectory(atPath: h.stateDirectory.appendingPathComponent("drive/content").path)
        XCTAssertEqual(content.count, 0, "deleted content must leave the disk")
    }

    func testCopy() throws {
        let folder = try h.create("dst", mime: "application/vnd.google-apps.folder")
        let src = try h.upload("src.txt", Array("copy me".utf8))
        let (s, copy) = try h.call("POST", "/drive/v3/files/\(src)/copy?fields=id,name,parents,md5Checksum,size",
                                   json: ["parents": [folder]])
        XCTAssertEqual(s, 200)
        XCTAssertNotEqual(copy["id"] as? String, src)
        XCTAssertEqual(copy["name"] as? String, "src.txt")
        XCTAssertEqual(copy["parents"] as? [String], [folder])
        XCTAssertEqual(copy["md5Checksum"] as? String, Digest.hex(.md5, of: Array("copy me".utf8)))
        let media = try h.send("GET", "/drive/v3/files/\(copy["id"] as! String)?alt=media")
        XCTAssertEqual(DriveHarness.bytes(media), Array("copy me".utf8))
        let (s2, e) = try h.call("POST", "/drive/v3/files/\(folder)/copy", json: [:])
        XCTAssertEqual(s2, 403)
        XCTAssertEqual(DriveHarness.reason(e), "cannotCopyFile")
        XCTAssertEqual(DriveHarness.message(e), "This file cannot be copied by the user.")
    }

    func testAbout() throws {
        _ = try h.upload("x.bin", [UInt8](repeating: 7, count: 1000))
        let (s0, e) = try h.call("GET", "/drive/v3/about")
        XCTAssertEqual(s0, 400)
        XCTAssertEqual(DriveHarness.reason(e), "required")
        XCTAssertEqual(DriveHarness.message(e), "The 'fields' parameter is required for this method.")
        let (s, about) = try h.call("GET", "/drive/v3/about?fields=user,storageQuota,exportFormats,importFormats,maxUploadSize,kind")
        XCTAssertEqual(s, 200)
        XCTAssertEqual(about["kind"] as? String, "drive#about")
        let quota = try XCTUnwrap(about["storageQuota"] as? [String: String])
        XCTAssertEqual(quota["usage"], "1000")
        XCTAssertEqual(quota["usageInDriveTrash"], "0")
        XCTAssertNotNil(quota["limit"])
        XCTAssertEqual((about["user"] as? [String: Any])?["me"] as? Bool, true)
        XCTAssertTrue(((about["exportFormats"] as? [String: [String]])?["application/vnd.google-apps.document"] ?? []).contains("text/plain"))
        XCTAssertEqual(about["maxUploadSize"] as? String, "5497558138880")
    }

    func testAuthShapes() throws {
        let missing = try h.send("GET", "/drive/v3/files", auth: nil)
        XCTAssertEqual(missing.status, 401)
        let m = DriveHarness.object(missing)["error"] as! [String: Any]
        XCTAssertEqual(m["status"] as? String, "UNAUTHENTICATED")
        let item = (m["errors"] as! [[String: Any]])[0]
        XCTAssertEqual(item["message"] as? String, "Login Required.")
        XCTAssertEqual(item["reason"] as? String, "required")
        XCTAssertEqual(item["location"] as? String, "Authorization")
        XCTAssertEqual(item["locationType"] as? String, "header")
        let detail = (m["details"] as! [[String: Any]])[0]
        XCTAssertEqual(detail["reason"] as? String, "CREDENTIALS_MISSING")
        XCTAssertEqual((detail["metadata"] as? [String: String])?["method"], "google.apps.drive.v3.DriveFiles.List")

        let invalid = try h.send("GET", "/drive/v3/files", auth: "Bearer expired")
        XCTAssertEqual(invalid.status, 401)
        XCTAssertEqual(invalid.headers["WWW-Authenticate"], "Bearer realm=\"https://accounts.google.com/\", error=\"invalid_token\"")
        let i = DriveHarness.object(invalid)["error"] as! [String: Any]
        XCTAssertEqual(i["status"] as? String, "UNAUTHENTICATED")
        XCTAssertEqual(i["code"] as? Int, 401)
        XCTAssertEqual(((i["errors"] as! [[String: Any]])[0])["reason"] as? String, "authError")
        XCTAssertEqual(((i["errors"] as! [[String: Any]])[0])["message"] as? String, "Invalid Credentials")

        // A read-only token lists but cannot create.
        XCTAssertEqual(try h.call("GET", "/drive/v3/files", auth: "Bearer readonly").0, 200)
        let (s, e) = try h.call("POST", "/drive/v3/files", json: ["name": "x"], auth: "Bearer readonly")
        XCTAssertEqual(s, 403)
        XCTAssertEqual(DriveHarness.reason(e), "insufficientPermissions")
    }

    func testRouteNamesAndUnknownPaths() throws {
        let cases: [(String, String, String?)] = [
            ("GET", "/drive/v3/about", "about.get"), ("GET", "/drive/v3/files", "files.list"),
            ("GET", "/drive/v3/files/abc", "files.get"), ("GET", "/drive/v3/files/abc?alt=media", "files.get.media"),
            ("GET", "/download/drive/v3/files/abc?alt=media", "files.get.media"), ("GET", "/drive/v3/files/abc/export", "files.export"),
            ("POST", "/drive/v3/files", "files.create"), ("POST", "/upload/drive/v3/files?uploadType=media", "files.create.upload"),
            ("POST", "/resumable/upload/drive/v3/files", "files.create.upload"),
            ("PUT", "/upload/drive/v3/files?upload_id=x", "files.create.upload"),
            ("PATCH", "/drive/v3/files/abc", "files.update"), ("PATCH", "/upload/drive/v3/files/abc?uploadType=media", "files.update.upload"),
            ("POST", "/drive/v3/files/abc/copy", "files.copy"), ("DELETE", "/drive/v3/files/abc", "files.delete"),
            ("DELETE", "/drive/v3/files/trash", "files.emptyTrash"), ("GET", "/drive/v3/files/generateIds", "files.generateIds"),
            ("GET", "/drive/v3/changes/startPageToken", "changes.getStartPageToken"), ("GET", "/drive/v3/changes", "changes.list"),
            ("GET", "/drive/v3/nothing", "drive.unknown"), ("GET", "/token", nil), ("GET", "/__emulator/stats", nil),
        ]
        for (method, target, name) in cases {
            XCTAssertEqual(h.service.route(for: HTTPRequest(method: method, target: target))?.method, name, "\(method) \(target)")
        }
        let r = try h.send("GET", "/drive/v3/nothing")
        XCTAssertEqual(r.status, 404)
    }

    func testListParameters() throws {
        for i in 0..<5 { try h.create("n\(i)") }
        XCTAssertEqual(try h.call("GET", "/drive/v3/files?pageSize=0").0, 400)
        XCTAssertEqual(try h.call("GET", "/drive/v3/files?pageSize=5000").0, 200)
        let (s1, e1) = try h.call("GET", "/drive/v3/files?orderBy=size")
        XCTAssertEqual(s1, 400)
        XCTAssertEqual(DriveHarness.location(e1), "orderBy")
        let (s2, e2) = try h.call("GET", "/drive/v3/files?pageToken=bogus")
        XCTAssertEqual(s2, 400)
        XCTAssertEqual(DriveHarness.location(e2), "pageToken")
        // A token bound to another query is refused.
        let (_, page) = try h.call("GET", "/drive/v3/files?pageSize=2&q=\(DriveHarness.q("trashed = false"))")
        let token = try XCTUnwrap(page["nextPageToken"] as? String)
        XCTAssertTrue(token.hasPrefix("~!!~"))
        XCTAssertEqual(try h.call("GET", "/drive/v3/files?pageSize=2&pageToken=\(DriveHarness.q(token))").0, 400)
        XCTAssertEqual(try h.call("GET", "/drive/v3/files?pageSize=2&q=\(DriveHarness.q("trashed = false"))&pageToken=\(DriveHarness.q(token))").0, 200)
        let (s3, _) = try h.call("GET", "/drive/v3/files?supportsAllDrives=true&includeItemsFromAllDrives=true&corpora=user&spaces=drive&alt=json&prettyPrint=false")
        XCTAssertEqual(s3, 200)
        let (_, ordered) = try h.call("GET", "/drive/v3/files?orderBy=\(DriveHarness.q("name desc"))&fields=files(name)")
        XCTAssertEqual((ordered["files"] as? [[String: Any]])?.compactMap { $0["name"] as? String }, ["n4", "n3", "n2", "n1", "n0"])
        let (_, none) = try h.call("GET", "/drive/v3/files?q=\(DriveHarness.q("name = 'zzz'"))")
        XCTAssertEqual((none["files"] as? [Any])?.count, 0)
    }

    /// Many callers at once: creates, uploads, lists and renames from 8 threads.
    func testConcurrentRequests() throws {
        let folder = try h.create("shared", mime: "application/vnd.google-apps.folder")
        let failures = Locked(0)
        let harness = h!
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for i in 0..<30 {
                do {
                    let id = try harness.upload("w\(worker)-\(i)", Array("worker \(worker) item \(i)".utf8), parent: folder)
                    let (s1, _) = try harness.call("PATCH", "/drive/v3/files/\(id)", json: ["description": "d\(i)"])
                    let (s2, _) = try harness.call("GET", "/drive/v3/files?q=\(DriveHarness.q("'\(folder)' in parents"))&pageSize=50")
                    let media = try harness.send("GET", "/drive/v3/files/\(id)?alt=media")
                    if s1 != 200 || s2 != 200 || DriveHarness.bytes(media) != Array("worker \(worker) item \(i)".utf8) {
                        failures.withLock { $0 += 1 }
                    }
                } catch {
                    failures.withLock { $0 += 1 }
                }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, 0)
        var count = 0
        var token: String?
        repeat {
            let (_, page) = try h.call("GET", "/drive/v3/files?q=\(DriveHarness.q("'\(folder)' in parents"))&pageSize=100\(token.map { "&pageToken=\(DriveHarness.q($0))" } ?? "")")
            count += (page["files"] as? [Any])?.count ?? 0
            token = page["nextPageToken"] as? String
        } while token != nil
        XCTAssertEqual(count, 240)
    }

    func testContentOfAnAnsweredDownloadOutlivesAnUpdateAndADelete() throws {
        let id = try h.upload("v1.bin", [1, 2, 3])
        let download = try h.send("GET", "/drive/v3/files/\(id)?alt=media")
        _ = try h.send("PATCH", "/upload/drive/v3/files/\(id)?uploadType=media", bytes: [4, 5, 6, 7])
        XCTAssertEqual(DriveHarness.bytes(download), [1, 2, 3])
        let second = try h.send("GET", "/drive/v3/files/\(id)?alt=media")
        XCTAssertEqual(try h.send("DELETE", "/drive/v3/files/\(id)").status, 204)
        XCTAssertEqual(DriveHarness.bytes(second), [4, 5, 6, 7])
    }
}
