import DriveClient
import Foundation
import TestSupport
import XCTest

/// What Drive has and a local tree cannot: Google Docs (exported), duplicate names, names with a
/// `/`, shortcuts; and files changed by another client while mounted.
final class DriveMountNamesTests: XCTestCase {
    static let docxMime = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

    func testGoogleDocCopiesOutAsTheExportedDocx() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try EmulatedDrive { seed in
            try Data("Plan for 2026\n\nFirst: mount tests.\n".utf8).write(to: seed.appendingPathComponent("Plan.gdoc"))
        }
        defer { drive.stop() }
        let mount = try drive.mount()
        let doc = try drive.file(at: "Plan")
        let export = try drive.api().export(doc.id, mimeType: Self.docxMime)

        // Drive reports no size for a Doc: it shows with size 0 until exported (on open), then
        // with the export's size.
        let ls = try ExternalCommand.tool("ls", ["-1", mount.mountpoint])
        XCTAssertEqual(ls.output, "Plan.docx\n", ls.summary)
        let copy = drive.temp.appendingPathComponent("Plan-copy.docx").path
        let cp = try ExternalCommand.tool("cp", [mount.path("Plan.docx"), copy])
        XCTAssertEqual(cp.status, 0, cp.summary)
        XCTAssertEqual(FileManager.default.contents(atPath: copy).map { [UInt8]($0) }, export, "cp's bytes are the docx export's")
        let size = try ExternalCommand.tool("stat", ["-c", "%s", mount.path("Plan.docx")])
        XCTAssertEqual(size.output, "\(export.count)\n", "once exported, the export's size is shown: \(size.summary)")
        let zip = try ExternalCommand.tool("python3", ["-c", """
            import sys, zipfile
            z = zipfile.ZipFile(sys.argv[1])
            assert z.testzip() is None, "a corrupt member"
            assert "word/document.xml" in z.namelist(), z.namelist()
            assert b"mount tests" in z.read("word/document.xml")
            """, copy])
        XCTAssertEqual(zip.status, 0, "the copy is a valid OOXML zip: \(zip.summary)")
    }

    func testDuplicatesAndSlashNamesAreEachReadable() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try EmulatedDrive { seed in
            try Data("first notes\n".utf8).write(to: seed.appendingPathComponent("notes.txt"))
            try Data("second notes, longer\n".utf8).write(to: seed.appendingPathComponent("notes.txt~dup1"))
            try Data("a slash in the name\n".utf8).write(to: seed.appendingPathComponent("Reports%2F2026.txt"))
        }
        defer { drive.stop() }
        let mount = try drive.mount()
        let root = try drive.api().getFile("root")
        let duplicates = try drive.api().listChildren(of: root.id).filter { $0.name == "notes.txt" }
        XCTAssertEqual(duplicates.count, 2)

        let shown = try FileManager.default.contentsOfDirectory(atPath: mount.mountpoint).sorted()
        let notes = shown.filter { $0.hasPrefix("notes") }
        XCTAssertEqual(notes.count, 2, "both duplicates are listed: \(shown)")
        XCTAssertTrue(notes.contains("notes.txt"), "one keeps the name: \(shown)")
        var read = 0
        for file in duplicates {
            let content = try drive.api().downloadData(file.id)
            let own = "notes (\(file.id.prefix(8))).txt"
            let name = notes.contains(own) ? own : "notes.txt"
            let cat = try ExternalCommand.tool("cat", [mount.path(name)])
            XCTAssertEqual(cat.status, 0, cat.summary)
            XCTAssertEqual([UInt8](cat.standardOutput), content, "\(name) (Drive file \(file.id)) shows its own content")
            read += 1
        }
        XCTAssertEqual(Set(try duplicates.map { try drive.api().downloadData($0.id) }).count, 2, "the two differ")

        XCTAssertTrue(shown.contains("Reports\u{2215}2026.txt"), "a '/' shows as U+2215: \(shown)")
        let slash = try ExternalCommand.tool("cat", [mount.path("Reports\u{2215}2026.txt")])
        XCTAssertEqual(slash.output, "a slash in the name\n", slash.summary)
    }

    func testShortcutIsASymbolicLinkThatCanBeFollowed() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try EmulatedDrive { seed in
            try FileManager.default.createDirectory(at: seed.appendingPathComponent("docs"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: seed.appendingPathComponent("links"), withIntermediateDirectories: true)
            try Data("the target's bytes\n".utf8).write(to: seed.appendingPathComponent("docs/target.txt"))
        }
        defer { drive.stop() }
        let target = try drive.file(at: "docs/target.txt")
        let links = try drive.file(at: "links")
        try drive.createShortcut(name: "to target", parent: links.id, target: target.id)
        let mount = try drive.mount()

        let readlink = try ExternalCommand.tool("readlink", [mount.path("links/to target")])
        XCTAssertEqual(readlink.output, "../docs/target.txt\n", readlink.summary)
        let cat = try ExternalCommand.tool("cat", [mount.path("links/to target")])
        XCTAssertEqual(cat.output, "the target's bytes\n", cat.summary)
        let type = try ExternalCommand.tool("stat", ["-c", "%F", mount.path("links/to target")])
        XCTAssertEqual(type.output, "symbolic link\n", type.summary)
    }

    /// A file changed through another client shows its new size and content within about one
    /// poll interval (1 s; waited for up to 20 s), and no read in between returns anything but the
    /// old or the new content.
    func testAFileChangedByAnotherClientIsSeenAndNeverReadStale() throws {
        _ = try MountedDriveFS.requireFuse()
        let old = TestContent.bytes(count: 300_000, seed: 11)
        let new = TestContent.bytes(count: 450_001, seed: 12)
        let drive = try EmulatedDrive { seed in try Data(old).write(to: seed.appendingPathComponent("changing.bin")) }
        defer { drive.stop() }
        let mount = try drive.mount(pollInterval: "1s")
        let shown = mount.path("changing.bin")
        // Read and cached, attributes too.
        XCTAssertEqual([UInt8](try ExternalCommand.tool("cat", [shown]).standardOutput), old)
        XCTAssertEqual(try ExternalCommand.tool("stat", ["-c", "%s", shown]).output, "\(old.count)\n")

        let file = try drive.file(at: "changing.bin")
        let changedAt = Date()
        _ = try drive.api().updateContent(file.id, source: .bytes(new))
        var sawNewSize = false
        let seen = try poll(timeout: 20) {
            let size = try ExternalCommand.tool("stat", ["-c", "%s", shown]).output
            if size == "\(new.count)\n" { sawNewSize = true }
            let content = [UInt8](try ExternalCommand.tool("cat", [shown]).standardOutput)
            if sawNewSize {
                XCTAssertEqual(content.count, new.count, "after the new size was shown, a read returned \(content.count) bytes")
                XCTAssertTrue(content == new, "after the new size was shown, a read returned stale or mixed bytes")
                return true
            }
            XCTAssertTrue(content == old || content == new, "a read returned \(content.count) bytes, neither old nor new")
            return content == new
        }
        let elapsed = Date().timeIntervalSince(changedAt)
        XCTAssertTrue(seen, "the change was not seen within 20 s; stats: \(drive.statsSummary())\nlog:\n\(mount.log)")
        print("DriveMountNamesTests: change seen after \(String(format: "%.2f", elapsed)) s (poll interval 1 s)")
        XCTAssertEqual([UInt8](try ExternalCommand.tool("cat", [shown]).standardOutput), new)
        XCTAssertEqual(try ExternalCommand.tool("stat", ["-c", "%s", shown]).output, "\(new.count)\n")
    }
}
