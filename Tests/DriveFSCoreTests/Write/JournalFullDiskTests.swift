@testable import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import XCTest

/// Found by the 30-minute chaos run: the cache disk full of queued uploads' content, then a
/// `kill -9`, and every new mount refused to start ("cannot prepare the upload journal: No space
/// left on device"): opening the queue compacts the journal when the last run ended with files
/// open, and a second copy of the journal did not fit. The uploads that would have freed the disk
/// could then never drain. The queue now starts on the journal as it is.
final class JournalFullDiskTests: XCTestCase {
    func testAQueueWhoseJournalCannotBeCompactedAtStartStillStartsAndLands() throws {
        let h = try UploadQueueHarness()
        let request = try h.newFile("open-at-the-end.txt")
        do {
            let first = try h.makeQueue()
            // Journaled while open for writing (a flush before the last close), then the process dies.
            try first.commit(request, contentPath: h.content("written before the crash\n"), ready: false)
        }
        // No room for the compacted copy: where it would be written cannot be.
        try FileManager.default.createDirectory(atPath: h.uploads + "/journal.compact", withIntermediateDirectories: false)

        let queue = try h.makeQueue()
        h.start(queue)
        defer { queue.stop() }
        h.waitIdle(queue)
        XCTAssertEqual(h.rootNames(), ["open-at-the-end.txt"])
        XCTAssertEqual(h.fake.content(of: request.fileID), Array("written before the crash\n".utf8))
        XCTAssertTrue(h.logText.contains("cannot compact the journal"), h.logText)

        // The journal as it was is read the same way again by a later start: nothing runs twice.
        queue.stop()
        let again = try h.makeQueue()
        h.start(again)
        defer { again.stop() }
        h.waitIdle(again)
        XCTAssertEqual(h.fake.filesCreated, 1, "the file was made once")
    }
}
