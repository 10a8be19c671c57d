import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

/// Another user's items shared with the emulated user: visibility, `sharedWithMe`, owners,
/// capabilities by role, Google's 403 for what the role forbids, inheritance through folders, the
/// change feed, the control API and the seed's `@sharing.json`.
final class DriveSharingTests: XCTestCase {
    var h: DriveHarness!
    let colleague = "colleague@example.com"

    override func setUpWithError() throws { h = try DriveHarness() }
    override func tearDown() { h.shutdown() }

    /// A control request to the Drive service's sharing endpoints.
    func control(_ name: String, _ json: [String: Any], method: String = "POST") throws -> (Int, [String: Any]) {
        let body = Array(try JSONSerialization.data(withJSONObject: json))
        let request = HTTPRequest(method: method, target: "/__emulator/\(name)", headers: HTTPHeaders([("Content-Type", "application/json")]),
                                  body: BufferedRequestBody(body), baseURL: "http://127.0.0.1:9999")
        let r = try XCTUnwrap(h.service.controlResponse(name, request))
        return (r.status, DriveHarness.object(r))
    }

    func makeItem(_ name: String, folder: Bool = false, parent: String? = nil, content: String? = nil, role: String? = nil) throws -> String {
        var json: [String: Any] = ["owner": colleague, "name": name]
        if folder { json["mimeType"] = DriveMime.folder }
        if let parent { json["parent"] = parent }
        if let content { json["content"] = content }
        if let role { json["role"] = role }
        let (status, body) = try control("items", json)
        XCTAssertEqual(status, 200, "\(body)")
        return try XCTUnwrap(body["id"] as? String)
    }

    func listIds(_ q: String) throws -> Set<String> {
        let (status, body) = try h.call("GET", "/drive/v3/files?q=\(DriveHarness.q(q))&fields=files(id)&pageSize=1000")
        XCTAssertEqual(status, 200, "\(body)")
        return Set((body["files"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
    }

    func assertInsufficient(_ result: (Int, [String: Any]), _ id: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.0, 403, "\(result.1)", file: file, line: line)
        XCTAssertEqual(DriveHarness.reason(result.1), "insufficientFilePermissions", file: file, line: line)
        XCTAssertEqual(DriveHarness.message(result.1), "The user does not have sufficient permissions for file \(id).", file: file, line: line)
        let domain = ((result.1["error"] as? [String: Any])?["errors"] as? [[String: Any]])?.first?["domain"] as? String
        XCTAssertEqual(domain, "global", file: file, line: line)
    }

    func testUnsharedItemsOfAnotherUserAre404AndUnlisted() throws {
        let id = try makeItem("secret.txt", content: "x")
        let (status, body) = try h.call("GET", "/drive/v3/files/\(id)")
        XCTAssertEqual(status, 404)
        XCTAssertEqual(DriveHarness.message(body), "File not found: \(id).")
        XCTAssertEqual(try h.call("GET", "/drive/v3/files/\(id)?alt=media").0, 404)
        XCTAssertEqual(try h.call("PATCH", "/drive/v3/files/\(id)", json: ["name": "n"]).0, 404)
        XCTAssertEqual(try h.call("DELETE", "/drive/v3/files/\(id)").0, 404)
        XCTAssertEqual(try listIds("trashed = false"), [])
        XCTAssertEqual(try listIds("sharedWithMe"), [])
        XCTAssertEqual(h.service.usage(), DriveUsage(), "another user's items are not the user's")
    }

    func testASharedFileIsVisibleWithOwnersSharedWithMeTimeAndReaderCapabilities() throws {
        h.clock.advance(10)
        let id = try makeItem("report.txt", content: "numbers", role: "reader")
        let (status, file) = try h.call("GET", "/drive/v3/files/\(id)?fields=*")
        XCTAssertEqual(status, 200, "\(file)")
        XCTAssertEqual(file["ownedByMe"] as? Bool, false)
        XCTAssertEqual(file["shared"] as? Bool, true)
        XCTAssertEqual(file["sharedWithMeTime"] as? String, RFC3339.format(millis: 1_700_000_010_000))
        let owners = try XCTUnwrap(file["owners"] as? [[String: Any]])
        XCTAssertEqual(owners.count, 1)
        XCTAssertEqual(owners[0]["emailAddress"] as? String, colleague)
        XCTAssertEqual(owners[0]["me"] as? Bool, false)
        XCTAssertEqual((file["sharingUser"] as? [String: Any])?["emailAddress"] as? String, colleague)
        XCTAssertNil(file["parents"], "the owner's folder is not the user's to see")
        XCTAssertNil(file["permissions"], "a reader cannot share: no permissions listed")
        let caps = try XCTUnwrap(file["capabilities"] as? [String: Bool])
        XCTAssertEqual(caps["canEdit"], false)
        XCTAssertEqual(caps["canModifyContent"], false)
        XCTAssertEqual(caps["canRename"], false)
        XCTAssertEqual(caps["canTrash"], false)
        XCTAssertEqual(caps["canDelete"], false)
        XCTAssertEqual(caps["canDownload"], true)
        XCTAssertEqual(caps["canCopy"], true)
        XCTAssertEqual(caps["canComment"], false)
        XCTAssertEqual(caps["canShare"], false)
        // Readable: download and listed as shared with me.
        XCTAssertEqual(DriveHarness.bytes(try h.send("GET", "/drive/v3/files/\(id)?alt=media")), Array("numbers".utf8))
        XCTAssertEqual(try listIds("sharedWithMe and trashed = false"), [id])
        XCTAssertEqual(try listIds("sharedWithMe = true"), [id])
        XCTAssertEqual(try listIds("not sharedWithMe"), [])
        XCTAssertEqual(try listIds("'root' in parents"), [], "not in the user's My Drive")
        XCTAssertEqual(try listIds("'me' in owners"), [])
        XCTAssertEqual(try listIds("'\(colleague)' in owners"), [id])
        XCTAssertEqual(try listIds("'me' in readers"), [id])
        XCTAssertEqual(try listIds("'me' in writers"), [])
    }

    func testWhatEachRoleMayDo() throws {
        for role in ["reader", "commenter", "writer"] {
            let id = try makeItem("\(role).txt", content: "v1", role: role)
            let caps = try XCTUnwrap(try h.call("GET", "/drive/v3/files/\(id)?fields=capabilities").1["capabilities"] as? [String: Bool])
            XCTAssertEqual(caps["canEdit"], role == "writer", role)
            XCTAssertEqual(caps["canComment"], role != "reader", role)
            XCTAssertEqual(caps["canTrash"], false, role)
            XCTAssertEqual(caps["canDownload"], true, role)
            let rename = try h.call("PATCH", "/drive/v3/files/\(id)", json: ["name": "renamed-\(role)"])
            let upload = try h.send("PATCH", "/upload/drive/v3/files/\(id)?uploadType=media", headers: [("Content-Type", "text/plain")],
                                    bytes: Array("v2".utf8))
            if role == "writer" {
                XCTAssertEqual(rename.0, 200, "\(rename.1)")
                XCTAssertEqual(upload.status, 200)
                let file = try h.call("GET", "/drive/v3/files/\(id)?fields=lastModifyingUser,modifiedByMe,owners").1
                XCTAssertEqual((file["lastModifyingUser"] as? [String: Any])?["me"] as? Bool, true)
                XCTAssertEqual(((file["owners"] as? [[String: Any]])?.first)?["emailAddress"] as? String, colleague)
            } else {
                assertInsufficient(rename, id)
                assertInsufficient((upload.status, DriveHarness.object(upload)), id)
                let resumable = try h.send("PATCH", "/upload/drive/v3/files/\(id)?uploadType=resumable", headers: [], bytes: [])
                assertInsufficient((resumable.status, DriveHarness.object(resumable)), id)
            }
            // Nobody but the owner trashes or deletes.
            assertInsufficient(try h.call("PATCH", "/drive/v3/files/\(id)", json: ["trashed": true]), id)
            assertInsufficient(try h.call("DELETE", "/drive/v3/files/\(id)"), id)
            // Starring is the user's own business.
            XCTAssertEqual(try h.call("PATCH", "/drive/v3/files/\(id)", json: ["starred": true]).0, 200)
        }
    }

    func testFolderRoleIsInheritedAndWritersMayAddChildren() throws {
        let folder = try makeItem("Team notes", folder: true)
        let inner = try makeItem("inner.txt", parent: folder, content: "in")
        let sub = try makeItem("sub", folder: true, parent: folder)
        let deep = try makeItem("deep.txt", parent: sub, content: "deep")
        XCTAssertEqual(try h.call("GET", "/drive/v3/files/\(deep)").0, 404)

        XCTAssertEqual(try control("share", ["fileId": folder, "role": "reader"]).0, 200)
        XCTAssertEqual(try listIds("'\(folder)' in parents"), [inner, sub])
        XCTAssertEqual(try listIds("'\(sub)' in parents"), [deep])
        XCTAssertEqual(try listIds("sharedWithMe"), [folder], "only what was shared directly is in Shared with me")
        let deepFile = try h.call("GET", "/drive/v3/files/\(deep)?fields=parents,sharedWithMeTime,capabilities").1
        XCTAssertEqual(deepFile["parents"] as? [String], [sub])
        XCTAssertNil(deepFile["sharedWithMeTime"])
        XCTAssertEqual((deepFile["capabilities"] as? [String: Bool])?["canEdit"], false)
        assertInsufficient(try h.call("POST", "/drive/v3/files", json: ["name": "mine.txt", "parents": [sub]]), sub)
        XCTAssertEqual((try h.call("GET", "/drive/v3/files/\(sub)?fields=capabilities").1["capabilities"] as? [String: Bool])?["canAddChildren"],
                       false)

        // A writer of the folder: children inherit it; the user may add to it and owns what they add.
        XCTAssertEqual(try control("share", ["fileId": folder, "role": "writer"]).0, 200)
        XCTAssertEqual((try h.call("GET", "/drive/v3/files/\(sub)?fields=capabilities").1["capabilities"] as? [String: Bool])?["canAddChildren"],
                       true)
        let (status, mine) = try h.call("POST", "/drive/v3/files?fields=id,ownedByMe,parents", json: ["name": "mine.txt", "parents": [sub]])
        XCTAssertEqual(status, 200, "\(mine)")
        XCTAssertEqual(mine["ownedByMe"] as? Bool, true)
        XCTAssertEqual(try h.call("PATCH", "/drive/v3/files/\(deep)", json: ["name": "deeper.txt"]).0, 200)
        // A file shared directly as reader inside a folder shared as writer: the stronger role wins.
        XCTAssertEqual(try control("share", ["fileId": deep, "role": "reader"]).0, 200)
        XCTAssertEqual((try h.call("GET", "/drive/v3/files/\(deep)?fields=capabilities").1["capabilities"] as? [String: Bool])?["canEdit"], true)
        // Unsharing the folder leaves what is shared directly.
        XCTAssertEqual(try control("unshare", ["fileId": folder]).0, 200)
        XCTAssertEqual(try h.call("GET", "/drive/v3/files/\(inner)").0, 404)
        XCTAssertEqual(try h.call("GET", "/drive/v3/files/\(deep)").0, 200)
        XCTAssertNil(try h.call("GET", "/drive/v3/files/\(deep)?fields=parents").1["parents"])
        // The user's own file in the folder stays the user's, its parent no longer shown.
        let mineId = try XCTUnwrap(mine["id"] as? String)
        let (s2, own) = try h.call("GET", "/drive/v3/files/\(mineId)?fields=parents,ownedByMe")
        XCTAssertEqual(s2, 200)
        XCTAssertNil(own["parents"])
    }

    func testCopyOfAReadersFileIsTheUsersAndLandsInMyDrive() throws {
        let folder = try makeItem("F", folder: true)
        let id = try makeItem("a.txt", parent: folder, content: "copy me")
        XCTAssertEqual(try control("share", ["fileId": folder, "role": "reader"]).0, 200)
        let (status, copy) = try h.call("POST", "/drive/v3/files/\(id)/copy?fields=id,parents,ownedByMe,md5Checksum", json: [:])
        XCTAssertEqual(status, 200, "\(copy)")
        XCTAssertEqual(copy["parents"] as? [String], [h.rootId])
        XCTAssertEqual(copy["ownedByMe"] as? Bool, true)
        XCTAssertEqual(copy["md5Checksum"] as? String, Digest.hex(.md5, of: Array("copy me".utf8)))
    }

    func testSharingAndUnsharingShowInTheChangeFeed() throws {
        let token = try XCTUnwrap(try h.call("GET", "/drive/v3/changes/startPageToken").1["startPageToken"] as? String)
        let id = try makeItem("later.txt", content: "x")
        func changes(from t: String) throws -> [[String: Any]] {
            let (status, body) = try h.call("GET", "/drive/v3/changes?pageToken=\(t)&fields=*")
            XCTAssertEqual(status, 200, "\(body)")
            return body["changes"] as? [[String: Any]] ?? []
        }
        XCTAssertEqual(try changes(from: token).count, 0, "an item the user cannot see is not in their feed")
        XCTAssertEqual(try control("share", ["fileId": id, "role": "commenter"]).0, 200)
        var feed = try changes(from: token)
        XCTAssertEqual(feed.count, 1)
        XCTAssertEqual(feed[0]["fileId"] as? String, id)
        XCTAssertEqual(feed[0]["removed"] as? Bool, false)
        XCTAssertEqual((feed[0]["file"] as? [String: Any])?["sharedWithMeTime"] != nil, true)
        let after = try XCTUnwrap(try h.call("GET", "/drive/v3/changes/startPageToken").1["startPageToken"] as? String)
        XCTAssertEqual(try control("unshare", ["fileId": id]).0, 200)
        feed = try changes(from: after)
        XCTAssertEqual(feed.count, 1)
        XCTAssertEqual(feed[0]["fileId"] as? String, id)
        XCTAssertEqual(feed[0]["removed"] as? Bool, true)
        XCTAssertNil(feed[0]["file"])
        let (_, noRemoved) = try h.call("GET", "/drive/v3/changes?pageToken=\(after)&includeRemoved=false")
        XCTAssertEqual((noRemoved["changes"] as? [Any])?.count, 0)
    }

    func testControlEndpointsRefuseWhatTheyCannotDo() throws {
        XCTAssertEqual(try control("items", ["owner": "user@drivefs-emulator.test", "name": "x"]).0, 400)
        XCTAssertEqual(try control("items", ["name": "x"]).0, 400)
        XCTAssertEqual(try control("items", ["owner": colleague, "name": "x", "role": "owner"]).0, 400)
        XCTAssertEqual(try control("items", ["owner": colleague, "name": "x", "bogus": 1]).0, 400)
        XCTAssertEqual(try control("share", ["fileId": h.rootId, "role": "reader"]).0, 404, "the user's own items are not shared with them")
        XCTAssertEqual(try control("share", ["fileId": "nope", "role": "reader"]).0, 404)
        let id = try makeItem("x")
        XCTAssertEqual(try control("share", ["fileId": id, "role": "organizer"]).0, 400)
        XCTAssertEqual(try control("share", ["fileId": id], method: "GET").0, 405)
        // Another user's folders are theirs: the user's folder cannot be a parent of theirs.
        XCTAssertEqual(try control("items", ["owner": colleague, "name": "y", "parent": h.rootId]).0, 404)
        let (status, state) = try control("sharing", [:], method: "GET")
        XCTAssertEqual(status, 200)
        XCTAssertEqual((state["shared"] as? [Any])?.count, 0)
    }

    func testSharingSurvivesARestart() throws {
        let id = try makeItem("kept.txt", content: "k", role: "writer")
        try h.restart()
        let (status, file) = try h.call("GET", "/drive/v3/files/\(id)?fields=ownedByMe,capabilities,sharedWithMeTime")
        XCTAssertEqual(status, 200)
        XCTAssertEqual(file["ownedByMe"] as? Bool, false)
        XCTAssertEqual((file["capabilities"] as? [String: Bool])?["canEdit"], true)
        XCTAssertNotNil(file["sharedWithMeTime"])
    }

    func testSeedSharingFile() throws {
        let seed = FileManager.default.temporaryDirectory.appendingPathComponent("seed-sharing-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: seed) }
        try FileManager.default.createDirectory(at: seed.appendingPathComponent("@shared/Team"), withIntermediateDirectories: true)
        try Data("mine".utf8).write(to: seed.appendingPathComponent("mine.txt"))
        try Data("team".utf8).write(to: seed.appendingPathComponent("@shared/Team/t.txt"))
        let sharing: [String: Any] = [
            "items": [
                ["owner": colleague, "name": "Plans", "mimeType": DriveMime.folder,
                 "permissions": [["type": "user", "emailAddress": "me", "role": "writer"]],
                 "children": [["name": "notes.txt", "content": "hello"]]],
                ["owner": colleague, "name": "private.txt", "content": "no"],
            ],
            "drives": [["name": "Team", "role": "reader"], ["name": "Elsewhere", "role": NSNull()]],
        ]
        try JSONSerialization.data(withJSONObject: sharing).write(to: seed.appendingPathComponent("@sharing.json"))
        let seeded = try DriveHarness(seed: seed)
        defer { seeded.shutdown() }
        let (_, list) = try seeded.call("GET", "/drive/v3/files?fields=files(id,name,ownedByMe,sharedWithMeTime)")
        let files = list["files"] as? [[String: Any]] ?? []
        XCTAssertEqual(Set(files.compactMap { $0["name"] as? String }), ["mine.txt", "Plans", "notes.txt"])
        let plans = try XCTUnwrap(files.first { $0["name"] as? String == "Plans" })
        XCTAssertEqual(plans["ownedByMe"] as? Bool, false)
        XCTAssertNotNil(plans["sharedWithMeTime"])
        let (_, drives) = try seeded.call("GET", "/drive/v3/drives?fields=drives(name,capabilities)")
        let listed = drives["drives"] as? [[String: Any]] ?? []
        XCTAssertEqual(listed.compactMap { $0["name"] as? String }, ["Team"])
        XCTAssertEqual((listed.first?["capabilities"] as? [String: Bool])?["canAddChildren"], false)
    }
}
