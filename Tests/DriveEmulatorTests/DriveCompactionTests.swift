import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

/// Journal compaction runs off the metadata lock (rotate the journal, write the snapshot on a
/// queue) and loses nothing: not when it completes, not when a start finds an old journal whose
/// records the snapshot already holds (a crash after the snapshot rename, before the unlink).
final class DriveCompactionTests: XCTestCase {
    private func state(_ h: DriveHarness) -> [String: String] {
        h.service.store.read { s in
            Dictionary(uniqueKeysWithValues: s.data.items.values.map { ($0.id, "\($0.name)|\($0.parent ?? "")|\($0.trashed)|\($0.version)") })
        }
    }

    func testBackgroundCompactionKeepsEveryMutationAcrossRestarts() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        let drive = h.stateDirectory.appendingPathComponent("drive")
        let journal = drive.appendingPathComponent("metadata.journal")
        let oldJournal = drive.appendingPathComponent("metadata.journal.old")
        let folder = try h.create("folder", mime: "application/vnd.google-apps.folder")
        var files: [String] = []
        for i in 0..<40 { files.append(try h.create("f\(i)", parent: i % 2 == 0 ? folder : nil)) }
        // More than 2000 journal lines: one compaction starts on the way.
        for i in 0..<2100 {
            let (status, _) = try h.call("PATCH", "/drive/v3/files/\(files[i % files.count])", json: ["name": "r\(i)", "trashed": i % 7 == 0])
            XCTAssertEqual(status, 200)
        }
        h.service.store.waitForCompaction()
        XCTAssertFalse(FileManager.default.fileExists(atPath: oldJournal.path), "the old journal is removed once the snapshot is written")
        let lines = try Data(contentsOf: journal).split(separator: UInt8(ascii: "\n")).count
        XCTAssertLessThan(lines, 200, "the journal was rotated")
        let snapshot = try JSONDecoder().decode(DriveSnapshot.self, from: Data(contentsOf: drive.appendingPathComponent("metadata.json")))
        XCTAssertEqual(snapshot.items.count, 42)
        let before = state(h)
        try h.restart()
        XCTAssertEqual(state(h), before)
    }

    /// The states a crash can leave in the middle of a compaction: (snapshot before or after the
    /// rename) + old journal + journal. Each start must end in the state before the crash.
    func testAStartReplaysAnOldJournalOverEitherSnapshot() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        let drive = h.stateDirectory.appendingPathComponent("drive")
        let snapshotURL = drive.appendingPathComponent("metadata.json")
        let journal = drive.appendingPathComponent("metadata.journal")
        let oldJournal = drive.appendingPathComponent("metadata.journal.old")
        let initialSnapshot = try Data(contentsOf: snapshotURL)
        let folder = try h.create("folder", mime: "application/vnd.google-apps.folder")
        var files: [String] = []
        for i in 0..<20 { files.append(try h.create("f\(i)", parent: i % 2 == 0 ? folder : nil)) }
        for i in 0..<300 {
            _ = try h.call("PATCH", "/drive/v3/files/\(files[i % files.count])", json: ["name": "r\(i)", "trashed": i % 5 == 0])
            if i % 50 == 0 { XCTAssertEqual(try h.send("DELETE", "/drive/v3/files/\(files[(i / 50) % files.count])").status, 204) }
        }
        let fullJournal = try Data(contentsOf: journal)
        let lines = fullJournal.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)
        let before = state(h)
        h.service.close()
        let finalSnapshot = try Data(contentsOf: snapshotURL)
        let half = lines.count / 2
        let firstHalf = Data(lines[..<half].joined(separator: [UInt8(ascii: "\n")]) + [UInt8(ascii: "\n")])
        let secondHalf = Data(lines[half...].joined(separator: [UInt8(ascii: "\n")]) + [UInt8(ascii: "\n")])
        let cases: [(String, Data, Data, Data)] = [
            ("crash after the snapshot rename", finalSnapshot, fullJournal, Data()),
            ("crash before the snapshot rename", initialSnapshot, fullJournal, Data()),
            ("crash before the rename, journal rotated mid-way", initialSnapshot, firstHalf, secondHalf),
        ]
        for (name, snapshot, old, current) in cases {
            try snapshot.write(to: snapshotURL)
            try old.write(to: oldJournal)
            try current.write(to: journal)
            try h.restart()
            XCTAssertEqual(state(h), before, name)
            XCTAssertFalse(FileManager.default.fileExists(atPath: oldJournal.path), name)
            h.service.close()
        }
        try h.restart()
        XCTAssertEqual(state(h), before)
    }
}
