@testable import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import Glibc
import TestSupport
import XCTest

/// The upload queue over the in-memory Drive: what each contract of `UploadQueueing` promises,
/// with request counts from the fake.
final class UploadQueueTests: XCTestCase {
    func testANewSmallFileCostsOneCreateAndItsContentFileIsRemoved() throws {
        let h = try UploadQueueHarness()
        let queue = try h.makeQueue()
        let request = try h.newFile("a.txt", appProperties: ["mode": "100755"])
        let path = h.content("hello")
        h.fake.resetCounters()
        try queue.commit(request, contentPath: path, ready: true)
        XCTAssertEqual(queue.status.queued, 1)
        XCTAssertEqual(queue.contentPath(of: request.fileID), path)
        h.start(queue)
        try queue.waitUntilUploaded(request.fileID, within: 120)
        h.waitIdle(queue)
        let file = try XCTUnwrap(h.fake.file(request.fileID))
        XCTAssertEqual(h.fake.content(of: file.id), Array("hello".utf8))
        XCTAssertEqual(file.appProperties, ["mode": "100755"])
        XCTAssertEqual(file.modifiedTime, 1_750_000_000_000)
        XCTAssertEqual(h.fake.requests, ["files.create.upload": 1], "one request for a small new file")
        h.waitUntil("the outcome") { h.outcomes.withLock { $0.count } == 1 }
        let outcome = h.outcomes.withLock { $0[0] }
        XCTAssertEqual(outcome.file?.id, request.fileID)
        XCTAssertFalse(outcome.wasConflict)
        XCTAssertNil(outcome.error)
        h.waitUntil("the content file to go") { !FileManager.default.fileExists(atPath: path) }
        XCTAssertNil(queue.contentPath(of: request.fileID))
        queue.stop()
    }

    func testNewContentForAnExistingFileIsOneGetAndOneUpdate() throws {
        let h = try UploadQueueHarness()
        let id = h.fake.addFile("doc.txt", content: Array("old".utf8))
        let queue = try h.makeQueue()
        h.fake.resetCounters()
        try queue.commit(h.update(id), contentPath: h.content("new content"), ready: true)
        h.start(queue)
        try queue.waitUntilUploaded(id, within: 120)
        XCTAssertEqual(h.fake.content(of: id), Array("new content".utf8))
        XCTAssertEqual(h.fake.file(id)?.modifiedTime, 1_760_000_000_000)
        XCTAssertEqual(h.fake.requests, ["files.get": 1, "files.update.upload": 1])
        XCTAssertEqual(h.rootNames(), ["doc.txt"])
        queue.stop()
    }

    /// An editor's save retargeted over a file with the revision the core read, when an upload of
    /// ours replaced that revision in between (the core had not applied the landing when it read
    /// it): the save goes over our landing, not beside it as a conflict with our own edit.
    func testASaveRetargetedOverARevisionOurOwnUploadReplacedGoesOverThatUpload() throws {
        let h = try UploadQueueHarness()
        let id = h.fake.addFile("doc.txt", content: Array("first".utf8))
        let queue = try UploadQueue(directory: h.uploads, backend: h.fake, transfers: 2, time: h.time, log: h.log, newFileSettle: 3600)
        h.start(queue)
        let before = h.update(id)
        try queue.commit(before, contentPath: h.content("our edit"), ready: true)
        try queue.waitUntilUploaded(id, within: 120)
        h.waitIdle(queue)  // the core heard of the landing (a landing in progress refuses a retarget)
        XCTAssertNotEqual(h.fake.file(id)?.headRevisionId, before.baseRevision)

        let swap = try h.newFile(".doc.txt.swp")
        try queue.commit(swap, contentPath: h.content("the save"), ready: true)
        var save = before
        save.displayPath = "/doc.txt"
        XCTAssertTrue(try queue.retarget(swap.fileID, to: save))
        XCTAssertEqual(queue.queuedBase(of: id).revision, h.fake.file(id)?.headRevisionId, "rebased on our landing")
        XCTAssertTrue(queue.drain(timeout: 60) { _ in })
        XCTAssertEqual(h.fake.content(of: id), Array("the save".utf8))
        XCTAssertEqual(h.rootNames(), ["doc.txt"], "no conflicted copy")
        queue.stop()
    }

    func testAQueuedJobIsReplacedByNewerContentAndOnlyTheNewestIsSent() throws {
        let h = try UploadQueueHarness()
        let queue = try h.makeQueue()
        let request = try h.newFile("a.txt")
        let first = h.content("one")
        try queue.commit(request, contentPath: first, ready: true)
        let second = h.content("two")
        try queue.commit(request, contentPath: second, ready: true)
        XCTAssertFalse(FileManager.default.fileExists(atPath: first), "the superseded content is the queue's to remove")
        XCTAssertEqual(queue.status.queued, 1)
        XCTAssertEqual(queue.contentPath(of: request.fileID), second)
        h.fake.resetCounters()
        h.start(queue)
        try queue.waitUntilUploaded(request.fileID, within: 120)
        XCTAssertEqual(h.fake.content(of: request.fileID), Array("two".utf8))
        XCTAssertEqual(h.fake.requests, ["files.create.upload": 1])
        queue.stop()
    }

    /// A commit while the file's upload runs waits for it, then goes as an update on top of it
    /// (never taken for a conflict with our own upload).
    func testACommitWhileTheFileUploadsRunsAfterItAsAnUpdate() throws {
        let h = try UploadQueueHarness()
        let gate = WriteGate(method: "files.create.upload")
        h.fake.writeHook = gate.hook
        let queue = try h.makeQueue()
        let request = try h.newFile("a.txt")
        try queue.commit(request, contentPath: h.content("one"), ready: true)
        h.start(queue)
        h.waitUntil("the create to be in flight") { gate.waiting == 1 }
        XCTAssertNil(queue.reclaim(request.fileID), "a running upload cannot be taken back")
        let second = h.content("two")
        try queue.commit(request, contentPath: second, ready: true)
        XCTAssertEqual(queue.status.running.count, 1)
        XCTAssertEqual(queue.status.queued, 1)
        XCTAssertEqual(queue.contentPath(of: request.fileID), second)
        gate.open()
        try queue.waitUntilUploaded(request.fileID, within: 120)
        h.waitIdle(queue)
        XCTAssertEqual(h.fake.content(of: request.fileID), Array("two".utf8))
        XCTAssertEqual(h.rootNames(), ["a.txt"], "no conflicted copy, no second file")
        XCTAssertEqual(h.fake.requests["files.create.upload"], 1)
        XCTAssertEqual(h.fake.requests["files.update.upload"], 1)
        h.waitUntil("two outcomes") { h.outcomes.withLock { $0.count } == 2 }
        let second2 = h.outcomes.withLock { $0[1] }
        XCTAssertFalse(second2.request.isNew, "the second job was rebased on the first one's landing")
        XCTAssertEqual(second2.request.baseRevision, h.outcomes.withLock { $0[0].file?.headRevisionId })
        queue.stop()
    }

    func testReclaimGivesAQueuedJobBackAndTheJournalKeepsItNotReady() throws {
        let h = try UploadQueueHarness()
        let queue = try h.makeQueue()
        let request = try h.newFile("a.txt")
        let path = h.content("one")
        try queue.commit(request, contentPath: path, ready: true)
        let back = try XCTUnwrap(queue.reclaim(request.fileID))
        XCTAssertEqual(back.request, request)
        XCTAssertEqual(back.contentPath, path)
        XCTAssertEqual(queue.status.queued, 0)
        XCTAssertNil(queue.reclaim(request.fileID))
        // Not started after a reclaim; a restart recovers it (the file was open when the daemon died).
        let again = try h.makeQueue()
        XCTAssertEqual(again.recovered.map(\.contentPath), [path])
        XCTAssertEqual(again.status.queued, 1)
        // The core writes on and commits again: one upload of the newest content.
        _ = FileManager.default.createFile(atPath: path, contents: Data("one and more".utf8))
        try queue.commit(request, contentPath: path, ready: true)
        XCTAssertTrue(FileManager.default.fileExists(atPath: path), "the same path, committed again, is not removed")
        h.start(queue)
        try queue.waitUntilUploaded(request.fileID, within: 120)
        XCTAssertEqual(h.fake.content(of: request.fileID), Array("one and more".utf8))
        queue.stop()
    }

    func testCancellingAQueuedNewFileCostsNoRequestAtAll() throws {
        let h = try UploadQueueHarness()
        let queue = try h.makeQueue()
        let request = try h.newFile("tmp.txt")
        let path = h.content("scratch")
        try queue.commit(request, contentPath: path, ready: true)
        h.fake.resetCounters()
        XCTAssertTrue(try queue.cancel(request.fileID))
        XCTAssertFalse(try queue.cancel(request.fileID), "nothing of it left")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path))
        h.start(queue)
        h.waitIdle(queue)
        try queue.waitUntilUploaded(request.fileID, within: 120)
        XCTAssertEqual(h.fake.totalRequests, 0)
        XCTAssertNil(h.fake.file(request.fileID))
        queue.stop()
        XCTAssertEqual(try h.makeQueue().recovered.count, 0)
    }

    func testCancellingARunningUploadTrashesItOnceLanded() throws {
        for deletes in [false, true] {
            let h = try UploadQueueHarness()
            let gate = WriteGate(method: "files.create.upload")
            h.fake.writeHook = gate.hook
            let queue = try h.makeQueue(deletePermanently: deletes)
            let request = try h.newFile("a.txt")
            try queue.commit(request, contentPath: h.content("one"), ready: true)
            h.start(queue)
            h.waitUntil("the create to be in flight") { gate.waiting == 1 }
            XCTAssertTrue(try queue.cancel(request.fileID))
            try queue.waitUntilUploaded(request.fileID, within: 120)
            gate.open()
            h.waitIdle(queue)
            if deletes {
                XCTAssertNil(h.fake.file(request.fileID))
                XCTAssertEqual(h.fake.requests["files.delete"], 1)
            } else {
                XCTAssertEqual(h.fake.file(request.fileID)?.trashed, true)
            }
            XCTAssertEqual(h.rootNames(), [])
            XCTAssertEqual(h.outcomes.withLock { $0.count }, 0, "a cancelled job is not reported")
            XCTAssertEqual(h.stagingFiles, [], "its content is removed")
            queue.stop()
        }
    }

    func testMetadataChangesGoWithAQueuedJobAndFollowARunningOne() throws {
        let h = try UploadQueueHarness()
        let folder = h.fake.addFolder("dir")
        let gate = WriteGate(method: "files.create.upload")
        h.fake.writeHook = gate.hook
        let queue = try h.makeQueue(transfers: 1)
        let running = try h.newFile("running.txt")
        let queued = try h.newFile("queued.txt")
        try queue.commit(running, contentPath: h.content("r"), ready: true)
        try queue.commit(queued, contentPath: h.content("q"), ready: true)
        XCTAssertTrue(try queue.updateMetadata(of: queued.fileID) { $0.name = "renamed.txt"; $0.parentID = folder })
        XCTAssertFalse(try queue.updateMetadata(of: "unknown") { $0.name = "x" })
        h.fake.resetCounters()
        h.start(queue)
        h.waitUntil("the first create to be in flight") { gate.waiting == 1 }
        XCTAssertTrue(try queue.updateMetadata(of: running.fileID) {
            $0.name = "moved.txt"
            $0.parentID = folder
            $0.modifiedTime = 42_000
            $0.appProperties["mode"] = "100600"
        })
        gate.open()
        h.waitIdle(queue)
        XCTAssertEqual(h.fake.children(of: folder).map(\.name), ["moved.txt", "renamed.txt"])
        let moved = try XCTUnwrap(h.fake.file(running.fileID))
        XCTAssertEqual(moved.modifiedTime, 42_000)
        XCTAssertEqual(moved.appProperties?["mode"], "100600")
        XCTAssertEqual(h.fake.requests, ["files.create.upload": 2, "files.update": 2],
                       "the queued one was created in place; the running one moved (one files.update) and updated (one more)")
        XCTAssertEqual(h.outcomes.withLock { $0.first { $0.request.fileID == running.fileID }?.request.name }, "moved.txt")
        queue.stop()
    }

    func testAConflictGoesBesideTheOriginalWhichIsUntouched() throws {
        let h = try UploadQueueHarness()
        let id = h.fake.addFile("report.final.txt", content: Array("base".utf8))
        let request = h.update(id)
        h.fake.replaceContent(id, with: Array("theirs".utf8))
        let theirs = h.fake.file(id)!
        let queue = try h.makeQueue()
        try queue.commit(request, contentPath: h.content("ours"), ready: true)
        h.time.advance(1_767_323_045 - h.time.now())  // 2026-01-02 03:04:05 UTC
        h.start(queue)
        try queue.waitUntilUploaded(id, within: 120)
        XCTAssertEqual(h.fake.file(id), theirs, "the original is untouched")
        XCTAssertEqual(h.fake.content(of: id), Array("theirs".utf8))
        let copyName = "report.final (conflicted copy 2026-01-02 030405).txt"
        XCTAssertEqual(h.rootNames(), [copyName, "report.final.txt"])
        let copy = try XCTUnwrap(h.fake.children(of: h.fake.rootID).first { $0.name == copyName })
        XCTAssertEqual(h.fake.content(of: copy.id), Array("ours".utf8))
        h.waitUntil("the outcome") { h.outcomes.withLock { $0.count } == 1 }
        let outcome = h.outcomes.withLock { $0[0] }
        XCTAssertTrue(outcome.wasConflict)
        XCTAssertEqual(outcome.file?.id, copy.id)
        XCTAssertTrue(h.logText.contains("WARN  uploads: /report.final.txt: changed on Drive"), h.logText)
        XCTAssertTrue(h.logText.contains(copyName))
        queue.stop()
    }

    func testConflictNamesKeepTheLastExtension() {
        let t = 1_767_323_045.9
        XCTAssertEqual(UploadQueue.conflictName("a.txt", at: t), "a (conflicted copy 2026-01-02 030405).txt")
        XCTAssertEqual(UploadQueue.conflictName("archive.tar.gz", at: t), "archive.tar (conflicted copy 2026-01-02 030405).gz")
        XCTAssertEqual(UploadQueue.conflictName("Makefile", at: t), "Makefile (conflicted copy 2026-01-02 030405)")
        XCTAssertEqual(UploadQueue.conflictName(".bashrc", at: t), ".bashrc (conflicted copy 2026-01-02 030405)")
        XCTAssertEqual(UploadQueue.conflictName("trailing.", at: t), "trailing. (conflicted copy 2026-01-02 030405)")
    }

    func testAFileGoneFromDriveIsCreatedAgainUnderANewID() throws {
        for trashed in [false, true] {
            let h = try UploadQueueHarness()
            let id = h.fake.addFile("notes.txt", content: Array("v1".utf8))
            let request = h.update(id)
            if trashed { h.fake.trashFile(id) } else { try h.fake.delete(id) }
            let queue = try h.makeQueue()
            try queue.commit(request, contentPath: h.content("v2"), ready: true)
            h.start(queue)
            try queue.waitUntilUploaded(id, within: 120)
            let again = try XCTUnwrap(h.fake.children(of: h.fake.rootID).first)
            XCTAssertNotEqual(again.id, id)
            XCTAssertEqual(again.name, "notes.txt")
            XCTAssertEqual(h.fake.content(of: again.id), Array("v2".utf8))
            h.waitUntil("the outcome") { h.outcomes.withLock { $0.count } == 1 }
            XCTAssertEqual(h.outcomes.withLock { $0.first?.file?.id }, again.id)
            XCTAssertTrue(h.logText.contains("gone from Drive"), h.logText)
            queue.stop()
        }
    }

    /// 5xx answers (after the client's own retries) are retried by the queue with backoff until the
    /// upload lands; the status says why it waits meanwhile.
    func testServerErrorStormsAreRetriedUntilTheUploadLands() throws {
        let h = try UploadQueueHarness()
        let queue = try h.makeQueue(transfers: 1)
        let request = try h.newFile("a.txt")
        h.fake.failNext(method: "files.create.upload", count: 6)
        try queue.commit(request, contentPath: h.content("survivor"), ready: true)
        h.start(queue)
        try queue.waitUntilUploaded(request.fileID, within: 120)
        XCTAssertEqual(h.fake.content(of: request.fileID), Array("survivor".utf8))
        XCTAssertEqual(h.fake.requests["files.create.upload"], 7)
        XCTAssertEqual(h.rootNames(), ["a.txt"])
        XCTAssertEqual(h.time.sleeps.reduce(0, +), 2 + 4 + 8 + 16 + 32 + 64, accuracy: 0.001, "capped exponential backoff")
        XCTAssertTrue(queue.status.lastError?.contains("backendError") == true, "\(String(describing: queue.status.lastError))")
        XCTAssertEqual(queue.status.failed, 0)
        queue.stop()
    }

    /// The create landed but its answer was lost: the retry under the same pre-generated ID finds
    /// it, and there is one file.
    func testALostAnswerAfterLandingLeavesNoDuplicate() throws {
        let h = try UploadQueueHarness()
        let queue = try h.makeQueue()
        let request = try h.newFile("a.txt")
        h.fake.failNext(method: "files.create.upload", count: 2, afterLanding: true)
        try queue.commit(request, contentPath: h.content("once"), ready: true)
        h.start(queue)
        try queue.waitUntilUploaded(request.fileID, within: 120)
        XCTAssertEqual(h.rootNames(), ["a.txt"])
        XCTAssertEqual(h.fake.allFiles.count, 1)
        XCTAssertEqual(h.fake.content(of: request.fileID), Array("once".utf8))
        XCTAssertEqual(h.fake.requests["files.create.upload"], 3)
        queue.stop()
    }

    /// A checksum mismatch (Drive stored other bytes) is uploaded again over the same file.
    func testAChecksumMismatchIsUploadedAgain() throws {
        let h = try UploadQueueHarness()
        let queue = try h.makeQueue()
        let request = try h.newFile("a.txt")
        h.fake.corruptNextUpload()
        try queue.commit(request, contentPath: h.content("exact"), ready: true)
        h.start(queue)
        try queue.waitUntilUploaded(request.fileID, within: 120)
        XCTAssertEqual(h.fake.content(of: request.fileID), Array("exact".utf8))
        XCTAssertEqual(h.fake.allFiles.count, 1)
        queue.stop()
    }

    /// Drive stored other bytes than an update sent (its md5 differs): that revision is ours, not
    /// a change made elsewhere, so the next try writes over it; no conflicted copy is made.
    func testAChecksumMismatchOnAnUpdateIsUploadedAgainWithoutAConflict() throws {
        let h = try UploadQueueHarness()
        let id = h.fake.addFile("doc.txt", content: Array("old".utf8))
        let queue = try h.makeQueue()
        h.fake.corruptNextUpload()
        try queue.commit(h.update(id), contentPath: h.content("new content"), ready: true)
        h.start(queue)
        try queue.waitUntilUploaded(id, within: 120)
        h.waitIdle(queue)
        XCTAssertEqual(h.fake.content(of: id), Array("new content".utf8), "the corrupt revision is superseded")
        XCTAssertEqual(h.rootNames(), ["doc.txt"], "no conflicted copy")
        XCTAssertEqual(h.fake.requests["files.update.upload"], 2)
        h.waitUntil("the outcome") { h.outcomes.withLock { $0.count } == 1 }
        XCTAssertFalse(h.outcomes.withLock { $0[0].wasConflict })
        XCTAssertEqual(queue.status.failed, 0)
        queue.stop()
    }

    /// The corrupt landing is journaled: a queue started again after it (a crash, a restart)
    /// still takes that revision for its own.
    func testAChecksumMismatchIsRememberedAcrossARestart() throws {
        let h = try UploadQueueHarness()
        let id = h.fake.addFile("doc.txt", content: Array("old".utf8))
        let queue = try h.makeQueue()
        h.fake.corruptNextUpload()
        // The first files.get passes; every one after the corrupt landing fails, so the job waits.
        h.fake.failNext(method: "files.get", count: 1_000, after: 1)
        try queue.commit(h.update(id), contentPath: h.content("new content"), ready: true)
        h.start(queue)
        h.waitUntil("a try after the corrupt landing") { h.fake.requests["files.get", default: 0] >= 2 }
        queue.stop()
        h.fake.clearFaults()
        let again = try h.makeQueue()
        XCTAssertEqual(again.recovered.count, 1)
        h.start(again)
        try again.waitUntilUploaded(id, within: 120)
        h.waitIdle(again)
        XCTAssertEqual(h.fake.content(of: id), Array("new content".utf8))
        XCTAssertEqual(h.rootNames(), ["doc.txt"], "no conflicted copy after the restart")
        again.stop()
    }

    /// Drive keeps storing other bytes: after `maximumChecksumMismatches` tries the upload fails
    /// for good, loudly, and its content is kept in failed/.
    func testRepeatedChecksumMismatchesFailForGoodAndKeepTheContent() throws {
        let h = try UploadQueueHarness()
        let id = h.fake.addFile("doc.txt", content: Array("old".utf8))
        let queue = try h.makeQueue()
        for _ in 0..<UploadQueue.maximumChecksumMismatches { h.fake.corruptNextUpload() }
        try queue.commit(h.update(id), contentPath: h.content("precious"), ready: true)
        h.start(queue)
        XCTAssertThrowsError(try queue.waitUntilUploaded(id, within: 120)) {
            XCTAssertEqual($0 as? FilesystemError, .ioError)
        }
        h.waitUntil("the outcome") { h.outcomes.withLock { $0.count } == 1 }
        let outcome = h.outcomes.withLock { $0[0] }
        let kept = try XCTUnwrap(outcome.preservedAt)
        XCTAssertTrue(kept.hasPrefix(h.uploads + "/failed/"))
        XCTAssertEqual(FileManager.default.contents(atPath: kept), Data("precious".utf8))
        XCTAssertTrue(try String(contentsOfFile: kept + ".note", encoding: .utf8).contains("other bytes"))
        XCTAssertEqual(h.fake.requests["files.update.upload"], UploadQueue.maximumChecksumMismatches)
        XCTAssertEqual(h.rootNames(), ["doc.txt"], "no conflicted copy")
        XCTAssertEqual(queue.status.failed, 1)
        XCTAssertTrue(h.logText.contains("upload failed for good"), h.logText)
        queue.stop()
    }

    /// A 408 (Request Timeout: the server gave up waiting for the request) is transient, like a
    /// 5xx: retried with backoff, and the file lands, on a create and on an update.
    func testARequestTimeoutIsRetriedAndTheFileLands() throws {
        let h = try UploadQueueHarness()
        let body = Array(#"{"error":{"code":408,"message":"Request Timeout","errors":[{"reason":"requestTimeout","message":"Request Timeout"}]}}"#.utf8)
        let timeout = DriveError.classify(status: 408, headers: [:], body: body, now: 0)
        let queue = try h.makeQueue()
        let request = try h.newFile("a.txt")
        let id = h.fake.addFile("doc.txt", content: Array("old".utf8))
        h.fake.failNext(method: "files.create.upload", count: 2, error: timeout)
        h.fake.failNext(method: "files.update.upload", count: 2, error: timeout)
        try queue.commit(request, contentPath: h.content("late"), ready: true)
        try queue.commit(h.update(id), contentPath: h.content("later"), ready: true)
        h.start(queue)
        try queue.waitUntilUploaded(request.fileID, within: 120)
        try queue.waitUntilUploaded(id, within: 120)
        XCTAssertEqual(h.fake.content(of: request.fileID), Array("late".utf8))
        XCTAssertEqual(h.fake.content(of: id), Array("later".utf8))
        XCTAssertEqual(h.fake.requests["files.create.upload"], 3)
        XCTAssertEqual(h.fake.requests["files.update.upload"], 3)
        XCTAssertEqual(queue.status.failed, 0)
        queue.stop()
    }

    func testAPermanentFailureKeepsTheContentAndReportsTheError() throws {
        let h = try UploadQueueHarness()
        let queue = try h.makeQueue()
        let request = try h.newFile("a.txt", parent: "gone-folder")
        let path = h.content("precious")
        try queue.commit(request, contentPath: path, ready: true)
        h.start(queue)
        XCTAssertThrowsError(try queue.waitUntilUploaded(request.fileID, within: 120)) {
            XCTAssertEqual($0 as? FilesystemError, .notFound)
        }
        h.waitUntil("the outcome") { h.outcomes.withLock { $0.count } == 1 }
        let outcome = h.outcomes.withLock { $0[0] }
        XCTAssertEqual(outcome.error, .notFound)
        let kept = try XCTUnwrap(outcome.preservedAt)
        XCTAssertTrue(kept.hasPrefix(h.uploads + "/failed/"))
        XCTAssertEqual(FileManager.default.contents(atPath: kept), Data("precious".utf8))
        XCTAssertTrue(try String(contentsOfFile: kept + ".note", encoding: .utf8).contains("/a.txt"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: path))
        XCTAssertEqual(queue.status.failed, 1)
        XCTAssertEqual(h.fake.requests["files.create.upload"], 1, "not retried")
        queue.stop()
        XCTAssertEqual(try h.makeQueue().recovered.count, 0, "ended for good")
    }

    func testForbiddenIsPermanentButRateLimitsAndQuotaAreRetried() {
        let info = { (status: Int, reason: String) in GoogleErrorInfo(status: status, reason: reason, message: "m") }
        XCTAssertTrue(UploadQueue.isPermanent(.permissionDenied(info(403, "insufficientFilePermissions")), in: .create))
        XCTAssertTrue(UploadQueue.isPermanent(.invalidArgument(info(400, "invalid")), in: .update))
        XCTAssertTrue(UploadQueue.isPermanent(.notFound(info(404, "notFound")), in: .create))
        XCTAssertFalse(UploadQueue.isPermanent(.notFound(info(404, "notFound")), in: .update), "the file went since it was read")
        XCTAssertFalse(UploadQueue.isPermanent(.rateLimited(info(403, "userRateLimitExceeded")), in: .create))
        XCTAssertFalse(UploadQueue.isPermanent(.quotaExceeded(info(403, "storageQuotaExceeded")), in: .create))
        XCTAssertFalse(UploadQueue.isPermanent(.server(info(503, "backendError")), in: .create))
        XCTAssertFalse(UploadQueue.isPermanent(.transport(.connectionLost("reset")), in: .create))
        XCTAssertFalse(UploadQueue.isPermanent(.checksumMismatch(expected: "a", actual: "b"), in: .create))
        XCTAssertFalse(UploadQueue.isPermanent(.invalidArgument(info(0, "uploadSourceChanged")), in: .create))
        let timeout = DriveError.classify(status: 408, headers: [:], body: [], now: 0)
        XCTAssertFalse(UploadQueue.isPermanent(timeout, in: .create), "408: \(timeout)")
        XCTAssertFalse(UploadQueue.isPermanent(timeout, in: .update), "408: \(timeout)")
    }

    func testWaitUntilUploadedStopsAtItsDeadlineAndOnCancellation() throws {
        let h = try UploadQueueHarness()
        let queue = try h.makeQueue()
        let request = try h.newFile("a.txt")
        try queue.commit(request, contentPath: h.content("x"), ready: true)
        // Not started: nothing can land.
        XCTAssertThrowsError(try queue.waitUntilUploaded(request.fileID, deadline: h.time.now(), cancellation: nil)) {
            XCTAssertEqual($0 as? FilesystemError, .ioError)
        }
        let flag = CancellationFlag()
        flag.cancel()
        XCTAssertThrowsError(try queue.waitUntilUploaded(request.fileID, deadline: .infinity, cancellation: flag)) {
            XCTAssertEqual(($0 as? FilesystemError)?.errno, EINTR)
        }
        XCTAssertNoThrow(try queue.waitUntilUploaded("no-such-file", deadline: 0, cancellation: nil))
    }

    func testDrainWaitsForEveryJobAndReportsProgress() throws {
        let h = try UploadQueueHarness()
        let queue = try h.makeQueue(transfers: 3)
        for n in 0..<20 { try queue.commit(try h.newFile("f\(n)"), contentPath: h.content("content \(n)"), ready: true) }
        XCTAssertFalse(queue.drain(timeout: 0) { _ in }, "not started: jobs are left")
        let reports = Locked<[UploadQueueStatus]>([])
        h.start(queue)
        XCTAssertTrue(queue.drain(timeout: .infinity) { status in reports.withLock { $0.append(status) } })
        XCTAssertEqual(h.rootNames().count, 20)
        XCTAssertEqual(h.fake.requests["files.create.upload"], 20)
        XCTAssertTrue(queue.status.isIdle)
        queue.stop()
    }

    /// What the journal holds is recovered by the next queue over the same directory, and uploaded
    /// once it starts; a file whose upload landed is not recovered.
    func testJobsSurviveARestart() throws {
        let h = try UploadQueueHarness()
        var requests: [UploadRequest] = []
        do {
            let queue = try h.makeQueue()
            for n in 0..<5 {
                let request = try h.newFile("f\(n)")
                requests.append(request)
                try queue.commit(request, contentPath: h.content("content \(n)"), ready: n != 4)
            }
            // Never started: the process ends here.
        }
        let queue = try h.makeQueue()
        XCTAssertEqual(queue.recovered.map(\.request), requests, "in commit order, the one still open for writing included")
        h.start(queue)
        h.waitIdle(queue)
        XCTAssertEqual(h.rootNames(), ["f0", "f1", "f2", "f3", "f4"])
        for request in requests {
            let n = request.name.dropFirst()
            XCTAssertEqual(h.fake.content(of: request.fileID), Array("content \(n)".utf8))
        }
        queue.stop()
        XCTAssertEqual(try h.makeQueue().recovered.count, 0)
        XCTAssertEqual(h.stagingFiles, [])
    }

    /// A large upload interrupted after some chunks continues from the persisted session after a
    /// restart: the chunks the server holds are not sent again.
    func testAnInterruptedResumableUploadContinuesFromItsSession() throws {
        let h = try UploadQueueHarness()
        h.fake.multipartLimit = 1000
        h.fake.chunkSize = 1000
        let bytes = (0..<10_500).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let request = try h.newFile("big.bin")
        do {
            let queue = try h.makeQueue(transfers: 1)
            // The initiation and 4 chunks pass, then the network goes: the session file stays.
            h.fake.failNext(method: "files.create.upload", count: 1000, after: 5)
            try queue.commit(request, contentPath: h.content(bytes), ready: true)
            h.start(queue)
            h.waitUntil("the upload to be failing") { queue.status.lastError != nil }
            XCTAssertEqual(queue.status.running.first?.bytesDone, 4000, "bytes done come from the session Drive confirmed")
            XCTAssertEqual(queue.status.running.first?.size, 10_500)
            queue.stop()
        }
        h.fake.clearFaults()
        h.fake.resetCounters()
        let queue = try h.makeQueue(transfers: 1)
        h.start(queue)
        try queue.waitUntilUploaded(request.fileID, within: 120)
        XCTAssertEqual(h.fake.content(of: request.fileID), bytes)
        XCTAssertEqual(h.fake.requests, ["files.create.upload": 1 + 7], "a probe, then the 7 chunks left")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: h.uploads + "/sessions"), [])
        XCTAssertTrue(h.logText.contains("resumed its upload from byte 4000"), h.logText)
        queue.stop()
    }

    /// A session the server forgot starts over, under the same ID: one file.
    func testAForgottenSessionStartsOverWithoutADuplicate() throws {
        let h = try UploadQueueHarness()
        h.fake.multipartLimit = 1000
        h.fake.chunkSize = 1000
        let bytes = [UInt8](repeating: 9, count: 3500)
        let request = try h.newFile("big.bin")
        do {
            let queue = try h.makeQueue(transfers: 1)
            h.fake.failNext(method: "files.create.upload", count: 1000, after: 2)
            try queue.commit(request, contentPath: h.content(bytes), ready: true)
            h.start(queue)
            h.waitUntil("the upload to be failing") { queue.status.lastError != nil }
            queue.stop()
        }
        h.fake.clearFaults()
        h.fake.forgetUploadSessions()
        let queue = try h.makeQueue(transfers: 1)
        h.start(queue)
        try queue.waitUntilUploaded(request.fileID, within: 120)
        XCTAssertEqual(h.fake.content(of: request.fileID), bytes)
        XCTAssertEqual(h.fake.allFiles.count, 1)
        queue.stop()
    }

    /// A full journal disk: the commit fails with ENOSPC, nothing is queued, and the next commit works.
    func testAFullDiskFailsTheCommitWithENOSPCAndLosesNothingAccepted() throws {
        let h = try UploadQueueHarness()
        let queue = try h.makeQueue()
        let kept = try h.newFile("kept.txt")
        try queue.commit(kept, contentPath: h.content("kept"), ready: true)
        queue.injectJournalFault(UploadJournal.Fault(errno: ENOSPC, afterBytes: 7))
        let refused = try h.newFile("refused.txt")
        XCTAssertThrowsError(try queue.commit(refused, contentPath: h.content("refused"), ready: true)) {
            XCTAssertEqual(($0 as? FilesystemError)?.errno, ENOSPC)
        }
        XCTAssertEqual(queue.status.queued, 1)
        XCTAssertThrowsError(try queue.commit(try h.newFile("x"), contentPath: h.staging + "/missing", ready: true)) {
            XCTAssertEqual(($0 as? FilesystemError)?.errno, ENOENT)
        }
        let later = try h.newFile("later.txt")
        try queue.commit(later, contentPath: h.content("later"), ready: true)
        XCTAssertEqual(try h.makeQueue().recovered.map(\.request.name), ["kept.txt", "later.txt"])
    }

    func testTheJournalIsCompactedAsItGrows() throws {
        let h = try UploadQueueHarness()
        let queue = try h.makeQueue(transfers: 2, compactionBound: 4096)
        for n in 0..<60 { try queue.commit(try h.newFile("f\(n)"), contentPath: h.content("c\(n)"), ready: true) }
        h.start(queue)
        h.waitIdle(queue)
        queue.stop()
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: h.uploads + "/journal")[.size] as? Int)
        XCTAssertLessThan(size, 60 * 600, "compacted along the way")
        XCTAssertEqual(try h.makeQueue().recovered.count, 0)
        XCTAssertEqual(h.rootNames().count, 60)
    }

    /// What the queue keeps of uploads that ended does not grow with every file uploaded: a
    /// landing is kept only while someone waits for its file; a failure for good is kept (a later
    /// fsync still hears it), the most recent `settledKept`.
    func testEndedUploadsAreNotKeptOnePerFileForever() throws {
        let h = try UploadQueueHarness()
        let queue = try h.makeQueue()
        var requests: [UploadRequest] = []
        for i in 0..<20 {
            let request = try h.newFile("f\(i).txt")
            try queue.commit(request, contentPath: h.content("content \(i)"), ready: true)
            requests.append(request)
        }
        let denied = DriveError.permissionDenied(GoogleErrorInfo(status: 403, reason: "insufficientFilePermissions",
                                                                 message: "The user does not have sufficient permissions for this file."))
        let refused = try h.newFile("refused.txt")
        h.start(queue)
        // One waiter, as an fsync: answered, and then nothing of its file is kept either.
        try queue.waitUntilUploaded(requests[0].fileID, within: 120)
        h.waitIdle(queue)
        h.fake.failNext(method: "files.create.upload", count: 1, error: denied)
        try queue.commit(refused, contentPath: h.content("refused"), ready: true)
        h.waitIdle(queue)
        XCTAssertEqual(h.rootNames().count, 20, "every file landed but the refused one")
        let kept = queue.withLock { $0.settled }
        XCTAssertEqual(Array(kept.keys), [refused.fileID], "only the failure for good is kept")
        XCTAssertThrowsError(try queue.waitUntilUploaded(refused.fileID, within: 120),
                             "a later fsync of the refused file hears its failure")
        queue.stop()
    }

    /// Offline, an upload waits in backoff; when Drive answers again (the poller's probe, here
    /// the tenth step of the wait) the backoff ends at once and the file lands, instead of up to
    /// the backoff's end (an hour here). Time is the queue's manual clock: the sleeps are counted.
    func testAnUploadHeldOfflineGoesAsSoonAsDriveAnswersAgain() throws {
        let h = try UploadQueueHarness()
        let reachability = try XCTUnwrap(h.fake.reachability)
        let clock = ComebackClock { [fake = h.fake] in
            fake.unreachable = nil
            reachability.recordReached()
        }
        let queue = try UploadQueue(directory: h.uploads, backend: h.fake, transfers: 1, time: clock, log: h.log,
                                    initialBackoff: 3_600, maximumBackoff: 3_600)
        let request = try h.newFile("held.txt")
        h.fake.unreachable = FakeDriveBackend.cannotConnect
        reachability.markOffline("test: connection refused")
        try queue.commit(request, contentPath: h.content("written offline"), ready: true)
        h.start(queue)
        h.waitIdle(queue)
        XCTAssertEqual(h.rootNames(), ["held.txt"], "the file landed once Drive answered")
        XCTAssertLessThan(clock.slept, 60, "the backoff ended when Drive came back, not after its hour (slept \(clock.slept) s)")
        queue.stop()
    }
}

/// A manual clock whose tenth sleep runs `comeback` (Drive answering again mid-backoff).
final class ComebackClock: TimeSource, @unchecked Sendable {
    // @unchecked: the state is behind its Locked box; `comeback` is called once, on a sleeping thread.
    private let state = Locked((now: 1_700_000_000.0, sleeps: 0, slept: 0.0))
    private let comeback: @Sendable () -> Void
    init(comeback: @escaping @Sendable () -> Void) { self.comeback = comeback }
    func now() -> Double { state.withLock { $0.now } }
    func sleep(_ seconds: Double) {
        let count = state.withLock { s -> Int in
            s.now += max(0, seconds)
            s.slept += max(0, seconds)
            s.sleeps += 1
            return s.sleeps
        }
        if count == 10 { comeback() }
    }
    var slept: Double { state.withLock { $0.slept } }
}
