import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

final class DrivePersistenceTests: XCTestCase {
    func testRestartRestoresIdsContentChangesAndTokens() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        let rootId = h.rootId
        let folder = try h.create("kept", mime: "application/vnd.google-apps.folder")
        let file = try h.upload("kept.bin", [1, 2, 3, 4], parent: folder)
        let (_, gen) = try h.call("GET", "/drive/v3/files/generateIds?count=2")
        let issued = gen["ids"] as! [String]
        _ = try h.call("PATCH", "/drive/v3/files/\(file)", json: ["name": "renamed.bin", "starred": true])
        let (_, tokenBody) = try h.call("GET", "/drive/v3/changes/startPageToken")
        let (_, before) = try h.call("GET", "/drive/v3/files/\(file)?fields=*")

        try h.restart()
        XCTAssertEqual(h.rootId, rootId)
        let (_, after) = try h.call("GET", "/drive/v3/files/\(file)?fields=*")
        for key in ["id", "name", "parents", "md5Checksum", "size", "version", "headRevisionId", "modifiedTime", "createdTime", "starred"] {
            XCTAssertEqual("\(before[key] ?? "-")", "\(after[key] ?? "-")", key)
        }
        XCTAssertEqual(DriveHarness.bytes(try h.send("GET", "/drive/v3/files/\(file)?alt=media")), [1, 2, 3, 4])
        let (_, tokenAfter) = try h.call("GET", "/drive/v3/changes/startPageToken")
        XCTAssertEqual(tokenAfter["startPageToken"] as? String, tokenBody["startPageToken"] as? String)
        let (_, feed) = try h.call("GET", "/drive/v3/changes?pageToken=1")
        XCTAssertEqual(Set((feed["changes"] as? [[String: Any]] ?? []).compactMap { $0["fileId"] as? String }), [folder, file])
        // Issued ids survive too.
        XCTAssertEqual(try h.call("POST", "/drive/v3/files", json: ["id": issued[1], "name": "late"]).0, 200)
        // A new change continues the counter.
        try h.create("after restart")
        let (_, newer) = try h.call("GET", "/drive/v3/changes/startPageToken")
        XCTAssertEqual(Int(newer["startPageToken"] as! String)!, Int(tokenBody["startPageToken"] as! String)! + 2)
    }

    func testManyMutationsCompactTheJournal() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        var ids: [String] = []
        for i in 0..<2100 { ids.append(try h.create("n\(i)")) }
        try h.restart()
        let (_, f) = try h.call("GET", "/drive/v3/files/\(ids[2099])?fields=name")
        XCTAssertEqual(f["name"] as? String, "n2099")
        let journal = try FileManager.default.attributesOfItem(atPath: h.stateDirectory.appendingPathComponent("drive/metadata.journal").path)
        XCTAssertLessThan((journal[.size] as? Int) ?? 0, 1 << 20)
    }

    func testTemporaryStateIsRemovedOnClose() throws {
        let service = try DriveService(stateDirectory: nil, seedDirectory: nil, validator: StubValidator(), clock: ManualTimeSource())
        let dir = service.store.directory.deletingLastPathComponent()
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir.path))
        service.close()
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.path))
    }

    func testSeedImportConvention() throws {
        let seed = FileManager.default.temporaryDirectory.appendingPathComponent("seed-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: seed) }
        try FileManager.default.createDirectory(at: seed.appendingPathComponent("Projects"), withIntermediateDirectories: true)
        try Data("doc text\n".utf8).write(to: seed.appendingPathComponent("Projects/Plan.gdoc"))
        try Data("one".utf8).write(to: seed.appendingPathComponent("notes.txt"))
        try Data("two".utf8).write(to: seed.appendingPathComponent("notes.txt~dup1"))
        try Data("slash".utf8).write(to: seed.appendingPathComponent("a%2Fb.md"))
        try Data([0x89, 0x50, 0x4E, 0x47]).write(to: seed.appendingPathComponent("pic.png"))

        let h = try DriveHarness(seed: seed)
        defer { h.shutdown() }
        let (_, list) = try h.call("GET", "/drive/v3/files?fields=files(id,name,mimeType,parents,size)&orderBy=name")
        let files = list["files"] as? [[String: Any]] ?? []
        XCTAssertEqual(files.compactMap { $0["name"] as? String }, ["a/b.md", "notes.txt", "notes.txt", "pic.png", "Plan", "Projects"])
        let byName = Dictionary(files.map { ($0["name"] as! String, $0) }, uniquingKeysWith: { a, _ in a })
        XCTAssertEqual(byName["Plan"]?["mimeType"] as? String, "application/vnd.google-apps.document")
        XCTAssertEqual(byName["Plan"]?["parents"] as? [String], [byName["Projects"]?["id"] as! String])
        XCTAssertEqual(byName["pic.png"]?["mimeType"] as? String, "image/png")
        XCTAssertEqual(byName["a/b.md"]?["mimeType"] as? String, "text/markdown")
        let plan = byName["Plan"]?["id"] as! String
        XCTAssertEqual(plan.count, 44, "a seeded Google Doc has a Docs-sized id")
        XCTAssertEqual((byName["pic.png"]?["id"] as? String)?.count, 33)
        XCTAssertEqual(DriveHarness.bytes(try h.send("GET", "/drive/v3/files/\(plan)/export?mimeType=text/plain")), Array("doc text\n".utf8))
        // A restart with the seed again does not import twice.
        try h.restart(seed: seed)
        let (_, again) = try h.call("GET", "/drive/v3/files")
        XCTAssertEqual((again["files"] as? [Any])?.count, 6)
        XCTAssertEqual(SeedImporter.driveName(forLocalName: "Plans%2F2026.gsheet~dup3").name, "Plans/2026")
        XCTAssertEqual(SeedImporter.driveName(forLocalName: "Plans%2F2026.gsheet~dup3").workspaceMime, "application/vnd.google-apps.spreadsheet")
    }

    /// The sample tree of `make demo` imports as documented.
    func testDemoSeedImports() throws {
        let seed = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/demo-seed")
        let h = try DriveHarness(seed: seed)
        defer { h.shutdown() }
        let (_, list) = try h.call("GET", "/drive/v3/files?pageSize=1000&fields=files(name,mimeType,size)")
        let files = list["files"] as? [[String: Any]] ?? []
        let names = files.compactMap { $0["name"] as? String }
        XCTAssertEqual(names.filter { $0 == "notes.txt" }.count, 2)
        XCTAssertTrue(names.contains("Reports/2026.txt"))
        XCTAssertTrue(files.contains { $0["name"] as? String == "Meeting notes" && $0["mimeType"] as? String == "application/vnd.google-apps.document" })
        XCTAssertTrue(files.contains { $0["name"] as? String == "Budget" && $0["mimeType"] as? String == "application/vnd.google-apps.spreadsheet" })
        XCTAssertTrue(files.contains { $0["name"] as? String == "checkerboard.png" && $0["mimeType"] as? String == "image/png" })
        XCTAssertTrue(files.contains { $0["name"] as? String == "data.bin" && $0["size"] as? String == "1024" })
        XCTAssertTrue(files.contains { $0["name"] as? String == "drivefs" && $0["mimeType"] as? String == "application/vnd.google-apps.folder" })
    }
}
