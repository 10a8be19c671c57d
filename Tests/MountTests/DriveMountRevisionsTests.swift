import DriveClient
import DriveEmulator
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// `drivefs revisions PATH` through a live mount: a file seeded on Drive and saved again through
/// the mount lists both revisions, oldest first, the last the current one, each listing one
/// revisions.list; `--ids` prints Drive's revision IDs; a folder has none (a clear error); a revision
/// restored in place reads back at once and lands as a new revision, one restored `--to` a new
/// file fills it, and a restore of an unknown revision leaves no new file.
final class DriveMountRevisionsTests: XCTestCase {
    func testRevisionsOfAFileSavedThroughTheMount() throws {
        _ = try MountedDriveFS.requireFuse()
        var tree = SeedTree()
        let drive = try EmulatedDrive { seed in
            try tree.file("notes/doc.txt", in: seed, text: "first version\n")
        }
        defer { drive.stop() }
        func drivefs(_ arguments: [String]) throws -> ExternalCommand.Result {
            try DriveFSBinary.run(arguments, timeout: 30, environment: drive.environment)
        }
        let mount = try drive.mount()
        let second = "the second version, saved through the mount\n"
        XCTAssertEqual(try ExternalCommand.shell("printf '%s' '\(second)' > '\(mount.path("notes/doc.txt"))'", timeout: 60).status, 0)
        let synced = try poll(timeout: 120, interval: 0.05) {
            try ExternalCommand.tool("getfattr", ["-n", "user.drivefs.state", "--only-values", mount.path("notes/doc.txt")],
                                     timeout: 30).output == "synced"
        }
        XCTAssertTrue(synced, "the save reached Drive\n\(mount.log.suffix(2000))")
        let file = try drive.file(at: "notes/doc.txt")
        let onDrive = try drive.api().listRevisions(file.id)
        XCTAssertEqual(onDrive.count, 2, "Drive keeps both: \(onDrive)")

        let before = drive.requests("revisions.list")
        let ids = try drivefs(["revisions", "--ids", mount.path("notes/doc.txt")])
        XCTAssertEqual(ids.status, 0, ids.summary)
        XCTAssertEqual(ids.output, onDrive.map { $0.id + "\n" }.joined(), "Drive's revision IDs, oldest first")
        XCTAssertEqual(drive.requests("revisions.list") - before, 1, "one request a listing")

        let table = try drivefs(["revisions", mount.path("notes/doc.txt")])
        XCTAssertEqual(table.status, 0, table.summary)
        let lines = table.output.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 3, table.output)
        XCTAssertTrue(lines[0].hasPrefix("REVISION"), table.output)
        XCTAssertTrue(lines[2].hasPrefix(onDrive[1].id + " (current)"), table.output)
        XCTAssertTrue(lines[2].contains(Digest.hex(.md5, of: Array(second.utf8))), "the current one's md5: \(table.output)")
        XCTAssertTrue(lines[1].contains(Digest.hex(.md5, of: Array("first version\n".utf8))), table.output)

        let folder = try drivefs(["revisions", mount.path("notes")])
        XCTAssertNotEqual(folder.status, 0)
        XCTAssertTrue(folder.errorOutput.contains("has no revisions on Drive"), folder.summary)
        let missing = try drivefs(["revisions", mount.path("notes/none.txt")])
        XCTAssertNotEqual(missing.status, 0)
        XCTAssertTrue(missing.errorOutput.contains("no such file"), missing.summary)

        // The first revision back, in place: read at once, then a third revision on Drive.
        let restored = try drivefs(["revisions", mount.path("notes/doc.txt"), "--restore", onDrive[0].id])
        XCTAssertEqual(restored.status, 0, restored.summary)
        XCTAssertEqual(try String(contentsOfFile: mount.path("notes/doc.txt"), encoding: .utf8), "first version\n")
        let landed = try poll(timeout: 120, interval: 0.05) { try drive.api().listRevisions(file.id).count == 3 }
        XCTAssertTrue(landed, "the restore reached Drive as a new revision\n\(mount.log.suffix(2000))")
        XCTAssertEqual(try drive.api().listRevisions(file.id).last?.md5Checksum, onDrive[0].md5Checksum)
        // The second into a new file beside it; the file itself stays.
        let beside = try drivefs(["revisions", mount.path("notes/doc.txt"), "--restore", onDrive[1].id, "--to", mount.path("notes/doc (saved).txt")])
        XCTAssertEqual(beside.status, 0, beside.summary)
        XCTAssertEqual(try String(contentsOfFile: mount.path("notes/doc (saved).txt"), encoding: .utf8), second)
        XCTAssertEqual(try String(contentsOfFile: mount.path("notes/doc.txt"), encoding: .utf8), "first version\n")
        let bogus = try drivefs(["revisions", mount.path("notes/doc.txt"), "--restore", "nosuchrevision", "--to", mount.path("notes/x.txt")])
        XCTAssertNotEqual(bogus.status, 0)
        XCTAssertTrue(bogus.errorOutput.contains("Drive has no revision nosuchrevision"), bogus.summary)
        XCTAssertFalse(FileManager.default.fileExists(atPath: mount.path("notes/x.txt")), "the new file goes when the restore fails")
    }

    /// A Google Doc's revisions through a live mount: listed (no size, md5 or keep-forever choice),
    /// one brought back `--to` a new file as the Doc was at that revision, exported in the format
    /// the mount shows it in (the revision's export link, one request), and `--restore` onto the
    /// Doc itself refused with what to do instead, before anything is asked of Drive.
    func testAGoogleDocsRevisionExportedIntoANewFile() throws {
        _ = try MountedDriveFS.requireFuse()
        var tree = SeedTree()
        let drive = try EmulatedDrive { seed in
            try tree.file("Plan.gdoc", in: seed, text: "first draft\n")
        }
        defer { drive.stop() }
        func drivefs(_ arguments: [String]) throws -> ExternalCommand.Result {
            try DriveFSBinary.run(arguments, timeout: 30, environment: drive.environment)
        }
        let doc = try drive.file(at: "Plan")
        let docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
        let firstDraft = try drive.api().export(doc.id, mimeType: docx)
        let edit = TransportRequest(method: "PATCH", url: drive.baseURL + "/upload/drive/v3/files/\(doc.id)?uploadType=media",
                                    headers: [("Content-Type", "text/plain")], body: .bytes(Array("second draft\n".utf8)))
        XCTAssertEqual(try drive.api().executor.execute("files.update.upload", edit).status, 200)
        XCTAssertEqual(try drive.api().listRevisions(doc.id).map(\.id), ["1", "2"])

        let mount = try drive.mount()
        let table = try drivefs(["revisions", mount.path("Plan.docx")])
        XCTAssertEqual(table.status, 0, table.summary)
        let lines = table.output.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
        XCTAssertEqual(lines.count, 3, table.output)
        XCTAssertEqual(lines.dropFirst().map { $0[0] }, ["1", "2"], table.output)
        XCTAssertEqual(lines[1].filter { $0 == "-" }.count, 3, "no size, md5 or keep-forever choice: \(table.output)")

        let before = drive.requests("revisions.export")
        let refused = try drivefs(["revisions", mount.path("Plan.docx"), "--restore", "1"])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.errorOutput.contains("cannot make an old revision of a Google Docs file its current one")
                      && refused.errorOutput.contains("--to NEWPATH"), refused.summary)

        let restored = try drivefs(["revisions", mount.path("Plan.docx"), "--restore", "1", "--to", mount.path("Plan (first draft).docx")])
        XCTAssertEqual(restored.status, 0, restored.summary)
        XCTAssertEqual(drive.requests("revisions.export") - before, 1, "one export link followed")
        let expected = try drive.api().exportRevision(doc.id, revision: "1", mimeType: docx)
        XCTAssertEqual(expected, firstDraft, "revision 1 exports as the Doc exported before the edit")
        XCTAssertEqual(Array(try Data(contentsOf: URL(fileURLWithPath: mount.path("Plan (first draft).docx")))), expected,
                       "the Doc as it was at revision 1, as a docx")
        XCTAssertNotEqual(expected, try drive.api().exportRevision(doc.id, revision: "2", mimeType: docx), "not the head's")
        let synced = try poll(timeout: 120, interval: 0.05) {
            try ExternalCommand.tool("getfattr", ["-n", "user.drivefs.state", "--only-values", mount.path("Plan (first draft).docx")],
                                     timeout: 30).output == "synced"
        }
        XCTAssertTrue(synced, "the new file reached Drive\n\(mount.log.suffix(2000))")
        XCTAssertEqual(try drive.file(at: "Plan (first draft).docx").mimeType, docx, "a regular file on Drive")
        XCTAssertEqual(try drive.api().listRevisions(doc.id).count, 2, "the Doc itself unchanged")
    }
}
