import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

/// revisions.update (`keepForever`), revisions.delete, restoring an old revision, and who may.
final class DriveRevisionsUpdateTests: XCTestCase {
    typealias R = DriveRevisionsTests

    static func keep(_ h: DriveHarness, _ id: String, _ rev: String, _ value: Bool) throws -> (Int, [String: Any]) {
        try h.call("PATCH", "/drive/v3/files/\(id)/revisions/\(rev)?fields=id,keepForever", json: ["keepForever": value])
    }

    func testKeepForeverIsSetAndSavesARevisionFromPruning() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        let id = try h.upload("log.txt", Array("v0".utf8))
        let first = try R.headRevision(h, id)
        let (status, body) = try Self.keep(h, id, first, true)
        XCTAssertEqual(status, 200, "\(body)")
        XCTAssertEqual(body["keepForever"] as? Bool, true)
        XCTAssertEqual(Set(try h.call("PATCH", "/drive/v3/files/\(id)/revisions/\(first)", json: ["keepForever": true]).1.keys),
                       ["kind", "id", "mimeType", "modifiedTime"])
        var ids = [first]
        for i in 1...12 { ids.append(try R.replaceContent(h, id, "v\(i)")) }
        // The kept-forever one stays; 10 others (the head included) are kept.
        XCTAssertEqual(try R.revisionIds(h, id), [first] + ids.suffix(DriveItem.keptRevisions))
        XCTAssertEqual(DriveHarness.bytes(try h.send("GET", "/drive/v3/files/\(id)/revisions/\(first)?alt=media")), Array("v0".utf8))
        let (_, got) = try h.call("GET", "/drive/v3/files/\(id)/revisions/\(first)?fields=keepForever,lastModifyingUser")
        XCTAssertEqual(got["keepForever"] as? Bool, true)
        // Read-only members are refused; a wrong type is a 400; unknown revisions a 404.
        XCTAssertEqual(try h.call("PATCH", "/drive/v3/files/\(id)/revisions/\(first)", json: ["size": "3"]).0, 403)
        XCTAssertEqual(try h.call("PATCH", "/drive/v3/files/\(id)/revisions/\(first)", json: ["keepForever": "yes"]).0, 400)
        let (missing, missingBody) = try Self.keep(h, id, "0Bnope", true)
        XCTAssertEqual(missing, 404)
        XCTAssertEqual(DriveHarness.message(missingBody), "Revision not found: 0Bnope.")
    }

    func testDeleteRemovesAnOldRevisionButNeverTheHead() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        let id = try h.upload("a.txt", Array("one".utf8))
        let one = try R.headRevision(h, id)
        let two = try R.replaceContent(h, id, "two")
        XCTAssertEqual(try Self.keep(h, id, one, true).0, 200)
        let (headStatus, headBody) = try h.call("DELETE", "/drive/v3/files/\(id)/revisions/\(two)")
        XCTAssertEqual(headStatus, 400)
        XCTAssertEqual(DriveHarness.reason(headBody), "badRequest")
        XCTAssertEqual(try h.send("DELETE", "/drive/v3/files/\(id)/revisions/\(one)").status, 204, "kept forever, still deletable")
        XCTAssertEqual(try R.revisionIds(h, id), [two])
        XCTAssertEqual(try h.call("GET", "/drive/v3/files/\(id)/revisions/\(one)").0, 404)
        XCTAssertEqual(try h.call("DELETE", "/drive/v3/files/\(id)/revisions/\(one)").0, 404)
        XCTAssertEqual(try h.call("DELETE", "/drive/v3/files/\(id)/revisions/\(two)").0, 400, "the last remaining version")
        let doc = try h.create("Doc", mime: DriveMime.document)
        XCTAssertEqual(try h.call("DELETE", "/drive/v3/files/\(doc)/revisions/1").0, 400)
    }

    func testRestoringAnOldRevisionMakesANewHead() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        let id = try h.upload("doc.txt", Array("original".utf8), mime: "text/plain")
        let original = try R.headRevision(h, id)
        _ = try R.replaceContent(h, id, "overwritten")
        // What clients do: download the revision, upload it as the file's content.
        let bytes = DriveHarness.bytes(try h.send("GET", "/drive/v3/files/\(id)/revisions/\(original)?alt=media"))
        XCTAssertEqual(bytes, Array("original".utf8))
        let restored = try R.replaceContent(h, id, String(decoding: bytes, as: UTF8.self))
        XCTAssertNotEqual(restored, original)
        let (_, file) = try h.call("GET", "/drive/v3/files/\(id)?fields=md5Checksum,headRevisionId,size")
        XCTAssertEqual(file["md5Checksum"] as? String, Digest.hex(.md5, of: bytes))
        XCTAssertEqual(file["headRevisionId"] as? String, restored)
        XCTAssertEqual(try R.revisionIds(h, id).count, 3)
        XCTAssertEqual(DriveHarness.bytes(try h.send("GET", "/drive/v3/files/\(id)?alt=media")), bytes)
    }

    func testAtMost200RevisionsAreKeptForever() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        let id = try h.upload("many.bin", [0])
        var kept = 0
        for i in 0...DriveItem.maxKeptForever {
            let head = try R.headRevision(h, id)
            let (status, body) = try Self.keep(h, id, head, true)
            if kept < DriveItem.maxKeptForever {
                XCTAssertEqual(status, 200, "\(i)")
                kept += 1
            } else {
                XCTAssertEqual(status, 400, "\(body)")
                XCTAssertEqual(DriveHarness.location(body), "keepForever")
            }
            _ = try R.replaceContent(h, id, "v\(i)")
        }
        let (_, list) = try h.call("GET", "/drive/v3/files/\(id)/revisions?pageSize=1000&fields=revisions(keepForever)")
        let rows = list["revisions"] as? [[String: Any]] ?? []
        XCTAssertEqual(rows.count, DriveItem.maxKeptForever + 2, "200 kept forever, the one refused and the head")
        XCTAssertEqual(rows.filter { $0["keepForever"] as? Bool == true }.count, DriveItem.maxKeptForever)
    }

    func testOnlyWritersReadOrChangeRevisionsOfAnotherUsersFile() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        let item = try h.service.makeForeignItem(owner: "colleague@example.com", name: "theirs.txt", mimeType: nil, parent: nil,
                                                 content: Array("c".utf8), role: .reader)
        let rev = try XCTUnwrap(item.headRevisionId)
        let (status, body) = try h.call("GET", "/drive/v3/files/\(item.id)/revisions")
        XCTAssertEqual(status, 403)
        XCTAssertEqual(DriveHarness.reason(body), "insufficientFilePermissions")
        XCTAssertEqual(try Self.keep(h, item.id, rev, true).0, 403)
        try h.service.share(item.id, role: .writer)
        let (s2, list) = try h.call("GET", "/drive/v3/files/\(item.id)/revisions?fields=revisions(id,lastModifyingUser)")
        XCTAssertEqual(s2, 200)
        let user = (list["revisions"] as? [[String: Any]])?.first?["lastModifyingUser"] as? [String: Any]
        XCTAssertEqual(user?["emailAddress"] as? String, "colleague@example.com")
        XCTAssertEqual(user?["me"] as? Bool, false)
        XCTAssertEqual(try Self.keep(h, item.id, rev, true).0, 200)
    }

    /// Random uploads, keepForever switches and deletes against a model of the history: the list,
    /// each revision's keepForever and its bytes always agree with the model, and a restart keeps it.
    func testRandomHistoriesAgreeWithAModel() throws {
        var rng = SplitMix64(seed: 20261207)
        for round in 0..<6 {
            let h = try DriveHarness()
            defer { h.shutdown() }
            let id = try h.upload("p.txt", Array("r\(round)-0".utf8))
            var model: [(id: String, keep: Bool, text: String)] = [(try R.headRevision(h, id), false, "r\(round)-0")]
            for step in 1...40 {
                switch rng.next() % 4 {
                case 0, 1:
                    let text = "r\(round)-\(step)"
                    model.append((try R.replaceContent(h, id, text), false, text))
                    // Pruning: the oldest not kept forever go while more than 10 (the head counted) remain.
                    var purgeable = model.filter { !$0.keep }.count + (model.last!.keep ? 1 : 0)
                    var i = 0
                    while purgeable > DriveItem.keptRevisions, i < model.count - 1 {
                        if model[i].keep { i += 1 } else { model.remove(at: i); purgeable -= 1 }
                    }
                case 2:
                    let k = Int(rng.next() % UInt64(model.count))
                    let value = rng.next() % 2 == 0
                    XCTAssertEqual(try Self.keep(h, id, model[k].id, value).0, 200)
                    model[k].keep = value
                default:
                    let k = Int(rng.next() % UInt64(model.count))
                    let status = try h.send("DELETE", "/drive/v3/files/\(id)/revisions/\(model[k].id)").status
                    if k == model.count - 1 { XCTAssertEqual(status, 400) } else {
                        XCTAssertEqual(status, 204)
                        model.remove(at: k)
                    }
                }
                if step % 10 == 0 { try h.restart() }
                let (_, list) = try h.call("GET", "/drive/v3/files/\(id)/revisions?fields=revisions(id,keepForever)")
                let rows = list["revisions"] as? [[String: Any]] ?? []
                XCTAssertEqual(rows.compactMap { $0["id"] as? String }, model.map(\.id), "round \(round) step \(step)")
                XCTAssertEqual(rows.compactMap { $0["keepForever"] as? Bool }, model.map(\.keep), "round \(round) step \(step)")
            }
            for rev in model {
                XCTAssertEqual(DriveHarness.bytes(try h.send("GET", "/drive/v3/files/\(id)/revisions/\(rev.id)?alt=media")), Array(rev.text.utf8))
            }
        }
    }
}
