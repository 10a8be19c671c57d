@testable import DriveFSCore
import DriveSupport
import Foundation
import Glibc
import XCTest

/// The journal file: records survive reopening exactly; a torn or corrupt tail is cut away without
/// losing an earlier record; write failures keep their errno and leave the journal as it was.
final class UploadJournalTests: XCTestCase {
    private var directory: String!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("journal-\(UUID().uuidString)").path
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func request(_ n: Int) -> UploadRequest {
        UploadRequest(fileID: "file\(n)", isNew: n % 2 == 0, parentID: "parent", name: "name \(n) ü.txt", mimeType: "text/plain",
                      modifiedTime: Int64(n) * 1000, appProperties: ["mode": "100644"], baseRevision: n % 2 == 0 ? nil : "rev\(n)",
                      baseMD5: nil, displayPath: "/dir/name \(n).txt")
    }

    private func sampleRecords() -> [UploadJournal.Record] {
        let job = UploadJob.upload(seq: 9, request: request(9), contentPath: "/staging/9", ready: true)
        return [
            .commit(seq: 1, request: request(1), contentPath: "/staging/1", ready: true, replaces: nil, rebasedOn: nil),
            .commit(seq: 2, request: request(2), contentPath: "/staging/2", ready: false, replaces: 1,
                    rebasedOn: UploadJob.Landed(id: "x", headRevisionId: "r", md5: "m", wasConflict: false)),
            .reclaim(seq: 2),
            .metadata(seq: 2, request: request(3)),
            .cancel(fileID: "file4", removal: .removal(seq: 5, request: request(4), target: "file4", deletes: true)),
            .retarget(seq: 2, target: "new-id"),
            .conflict(seq: 2, copy: UploadJob.ConflictCopy(id: "copy", name: "a (conflicted copy 2026-01-02 030405).txt")),
            .done(seq: 2, landed: UploadJob.Landed(id: "new-id", headRevisionId: "rev", md5: "abc", wasConflict: true)),
            .done(seq: 5, landed: nil),
            .failed(seq: 7, preservedAt: "/uploads/failed/7-x", message: "HTTP 403"),
            .job(job),
        ]
    }

    func testRecordsSurviveReopeningExactly() throws {
        let records = sampleRecords()
        do {
            let journal = try UploadJournal(directory: directory)
            XCTAssertEqual(try journal.replay().records, [])
            for record in records { try journal.append(record) }
        }
        let reopened = try UploadJournal(directory: directory)
        let (replayed, report) = try reopened.replay()
        XCTAssertEqual(replayed, records)
        XCTAssertEqual(report, UploadJournal.ReplayReport(records: records.count, truncatedBytes: 0, skippedBytes: 0))
        // Appending after a replay continues the same file.
        try reopened.append(.reclaim(seq: 42))
        XCTAssertEqual(try UploadJournal(directory: directory).replay().records, records + [.reclaim(seq: 42)])
    }

    /// A crash may leave any prefix of the last record: each one replays as the records before it,
    /// is cut back to them, and the journal takes new records after that.
    func testATornLastRecordIsCutAwayAtEveryByteOffset() throws {
        let records = sampleRecords()
        let journalPath = directory + "/journal"
        do {
            let journal = try UploadJournal(directory: directory)
            _ = try journal.replay()
            for record in records { try journal.append(record) }
        }
        let whole = try Data(contentsOf: URL(fileURLWithPath: journalPath))
        let lastFrame = try UploadJournal.frame(records.last!)
        let start = whole.count - lastFrame.count
        for cut in start..<whole.count {
            try whole.prefix(cut).write(to: URL(fileURLWithPath: journalPath))
            let journal = try UploadJournal(directory: directory)
            let (replayed, report) = try journal.replay()
            XCTAssertEqual(replayed, Array(records.dropLast()), "cut at \(cut)")
            XCTAssertEqual(report.truncatedBytes, cut - start, "cut at \(cut)")
            try journal.append(.reclaim(seq: 99))
            journal.close()
            XCTAssertEqual(try UploadJournal(directory: directory).replay().records, Array(records.dropLast()) + [.reclaim(seq: 99)],
                           "cut at \(cut), then appended")
        }
    }

    func testACorruptLastRecordIsCutAwayAndDamageInTheMiddleKeepsTheRecordsAfterIt() throws {
        let records = sampleRecords()
        let journalPath = directory + "/journal"
        do {
            let journal = try UploadJournal(directory: directory)
            _ = try journal.replay()
            for record in records { try journal.append(record) }
        }
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: journalPath)))
        // A flipped bit in the last record's payload.
        bytes[bytes.count - 3] ^= 0x10
        try Data(bytes).write(to: URL(fileURLWithPath: journalPath))
        XCTAssertEqual(try UploadJournal(directory: directory).replay().records, Array(records.dropLast()))
        // Damage in the second record: the first and every later one are kept.
        let header = UploadJournal.header.count
        let first = try UploadJournal.frame(records[0]).count
        bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: journalPath)))
        bytes[header + first + UploadJournal.frameHeaderSize + 4] ^= 0xff
        try Data(bytes).write(to: URL(fileURLWithPath: journalPath))
        let (replayed, report) = try UploadJournal(directory: directory).replay()
        XCTAssertEqual(replayed, [records[0]] + Array(records[2..<(records.count - 1)]))
        XCTAssertGreaterThan(report.skippedBytes, 0)
    }

    func testAForeignFileIsRefusedAndATornHeaderStartsOver() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let journalPath = directory + "/journal"
        try Data("something else entirely\n".utf8).write(to: URL(fileURLWithPath: journalPath))
        XCTAssertThrowsError(try UploadJournal(directory: directory).replay()) { XCTAssertEqual(($0 as? FilesystemError)?.errno, EIO) }
        XCTAssertEqual(try String(contentsOfFile: journalPath, encoding: .utf8), "something else entirely\n", "left as it was")
        try Data(UploadJournal.header.prefix(7)).write(to: URL(fileURLWithPath: journalPath))
        let journal = try UploadJournal(directory: directory)
        XCTAssertEqual(try journal.replay().records, [])
        try journal.append(.reclaim(seq: 1))
        XCTAssertEqual(try UploadJournal(directory: directory).replay().records, [.reclaim(seq: 1)])
    }

    /// ENOSPC after part of a record was written, and a failed fdatasync: the errno reaches the
    /// caller unchanged, the partial bytes are gone, and the next append works.
    func testWriteFailuresKeepTheirErrnoAndLeaveTheJournalConsistent() throws {
        let journal = try UploadJournal(directory: directory)
        _ = try journal.replay()
        try journal.append(.reclaim(seq: 1))
        let size = journal.size
        for afterBytes in [0, 1, 5, 11, 30] {
            journal.nextFault = UploadJournal.Fault(errno: ENOSPC, afterBytes: afterBytes)
            XCTAssertThrowsError(try journal.append(.reclaim(seq: 2))) { XCTAssertEqual(($0 as? FilesystemError)?.errno, ENOSPC) }
            XCTAssertEqual(journal.size, size)
            XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: journal.path)[.size] as? Int, Int(size), "cut back")
        }
        journal.nextFault = UploadJournal.Fault(errno: EIO, atSync: true)
        XCTAssertThrowsError(try journal.append(.reclaim(seq: 3))) { XCTAssertEqual(($0 as? FilesystemError)?.errno, EIO) }
        try journal.append(.reclaim(seq: 4))
        XCTAssertEqual(try UploadJournal(directory: directory).replay().records, [.reclaim(seq: 1), .reclaim(seq: 4)])
    }

    /// A group commit's records (`append(frames:)`): one write and one fdatasync for all of them;
    /// a failure anywhere in the write, or of the fdatasync, cuts every one of them back.
    func testRecordsAppendedTogetherAreKeptTogetherOrNotAtAll() throws {
        let journal = try UploadJournal(directory: directory)
        _ = try journal.replay()
        try journal.append(.reclaim(seq: 1))
        let size = journal.size
        let group: [UploadJournal.Record] = [.reclaim(seq: 2), .reclaim(seq: 3), .reclaim(seq: 4)]
        let frames = try group.map { try UploadJournal.frame($0) }
        let faults = [UploadJournal.Fault(errno: ENOSPC, afterBytes: frames[0].count + 3),
                      UploadJournal.Fault(errno: ENOSPC, afterBytes: frames[0].count + frames[1].count),
                      UploadJournal.Fault(errno: EIO, atSync: true)]
        for fault in faults {
            journal.nextFault = fault
            XCTAssertThrowsError(try journal.append(frames: frames)) { XCTAssertEqual(($0 as? FilesystemError)?.errno, fault.errno) }
            XCTAssertEqual(journal.size, size)
            XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: journal.path)[.size] as? Int, Int(size), "cut back")
        }
        let syncs = journal.appendSyncs
        try journal.append(frames: frames)
        XCTAssertEqual(journal.appendSyncs, syncs + 1, "one fdatasync for the three")
        XCTAssertEqual(try UploadJournal(directory: directory).replay().records, [.reclaim(seq: 1)] + group)
    }

    func testCompactionRewritesTheLiveRecordsAndKeepsAppending() throws {
        let journal = try UploadJournal(directory: directory, compactionBound: 2000)
        _ = try journal.replay()
        var state = UploadQueueState()
        for n in 1...40 {
            let record = UploadJournal.Record.commit(seq: UInt64(n), request: request(n % 3), contentPath: "/staging/\(n)", ready: true,
                                                     replaces: state.jobs(of: request(n % 3).fileID).last?.seq, rebasedOn: nil)
            try journal.append(record)
            state.apply(record)
        }
        XCTAssertTrue(journal.wantsCompaction)
        let before = journal.size
        try journal.compact(to: state.snapshot)
        XCTAssertLessThan(journal.size, before)
        XCTAssertFalse(journal.wantsCompaction)
        try journal.append(.reclaim(seq: 40))
        state.apply(.reclaim(seq: 40))
        XCTAssertFalse(LocalFiles.exists(directory + "/journal.compact"))
        let replayed = UploadQueueState(replaying: try UploadJournal(directory: directory).replay().records)
        XCTAssertEqual(replayed, state)
        XCTAssertEqual(replayed.jobs.count, 3, "one job per file: each commit replaced the one before")
    }
}
