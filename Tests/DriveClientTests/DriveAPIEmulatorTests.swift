import DriveClient
import DriveEmulator
import DriveSupport
import XCTest

/// DriveAPI over libcurl against the in-process emulator: every operation, every upload size
/// class, interrupted and resumed transfers, token expiry, rate limits and storms.
final class DriveAPIEmulatorTests: XCTestCase {
    var harness: EmulatorHarness!
    var api: DriveAPI { harness.api }

    private func start(_ config: EmulatorConfig = EmulatorConfig(port: 0), chunkSize: Int64 = 8 << 20,
                       retry: RetryPolicy = RetryPolicy(maxAttempts: 8, maxElapsed: 30, baseDelay: 0.01, maxDelay: 0.2)) throws {
        harness = try EmulatorHarness(config: config, retry: retry, chunkSize: chunkSize)
    }

    override func tearDown() { harness?.stop() }

    private func rootID() throws -> String { try api.getFile("root").id }

    // MARK: - Operations

    func testMetadataOperations() throws {
        try start()
        let about = try api.about()
        XCTAssertNotNil(about.emailAddress)
        let root = try rootID()

        let folder = try api.createFolder(name: "docs", parent: root)
        XCTAssertTrue(folder.isFolder)
        XCTAssertEqual(folder.parents, [root])
        let other = try api.createFolder(name: "other", parent: root)

        let tricky = #"it's a \ name/with slash"#
        let file = try api.createFile(name: tricky, parent: folder.id, mimeType: "text/plain", source: .bytes(Array("hello".utf8)),
                                      modifiedTime: 1_600_000_000_123)
        XCTAssertEqual(file.size, 5)
        XCTAssertEqual(file.modifiedTime, 1_600_000_000_123)
        XCTAssertEqual(file.mimeType, "text/plain")

        XCTAssertEqual(try api.listChildren(of: folder.id).map(\.id), [file.id])
        XCTAssertEqual(try api.list(query: DriveQuery.child(named: tricky, in: folder.id)).map(\.id), [file.id])
        XCTAssertEqual(try api.getFile(file.id).name, tricky)

        let renamed = try api.updateMetadata(file.id, name: "renamed.txt")
        XCTAssertEqual(renamed.name, "renamed.txt")
        XCTAssertEqual(try api.setModifiedTime(file.id, millis: 1_500_000_000_000).modifiedTime, 1_500_000_000_000)

        let moved = try api.move(file.id, addParent: other.id, removeParent: folder.id)
        XCTAssertEqual(moved.parents, [other.id])
        XCTAssertTrue(try api.listChildren(of: folder.id).isEmpty)

        let updated = try api.updateContent(file.id, source: .bytes(Array("hello, world".utf8)))
        XCTAssertEqual(updated.size, 12)
        XCTAssertEqual(try api.downloadData(file.id), Array("hello, world".utf8))

        XCTAssertTrue(try api.trash(file.id).trashed)
        XCTAssertTrue(try api.listChildren(of: other.id).isEmpty)
        XCTAssertFalse(try api.untrash(file.id).trashed)
        XCTAssertEqual(try api.listChildren(of: other.id).map(\.id), [file.id])

        try api.delete(file.id)
        XCTAssertThrowsError(try api.getFile(file.id)) { error in
            guard case .notFound = error as? DriveError else { return XCTFail("\(error)") }
        }
        _ = try api.trash(other.id)
        try api.emptyTrash()
        XCTAssertThrowsError(try api.getFile(other.id))

        let ids = try api.generateIds(count: 5)
        XCTAssertEqual(Set(ids).count, 5)
    }

    func testListingFollowsPages() throws {
        try start()
        let folder = try api.createFolder(name: "many", parent: try rootID())
        for i in 0..<25 { _ = try api.createEmpty(name: "f\(i)", parent: folder.id, mimeType: "text/plain") }
        let all = try api.list(query: DriveQuery.children(of: folder.id), pageSize: 7)
        XCTAssertEqual(all.count, 25)
        XCTAssertEqual(Set(all.map(\.name)).count, 25)
        XCTAssertEqual(harness.executor.stats.counters(for: "files.list").requests, 4)
    }

    func testChangesFeed() throws {
        try start()
        let token = try api.changesStartPageToken()
        let folder = try api.createFolder(name: "changed", parent: try rootID())
        var page = try api.changes(pageToken: token)
        var seen = page.changes
        while let next = page.nextPageToken { page = try api.changes(pageToken: next); seen += page.changes }
        XCTAssertNotNil(page.newStartPageToken)
        XCTAssertTrue(seen.contains { $0.fileId == folder.id && !$0.removed })
        try api.delete(folder.id)
        let after = try api.changes(pageToken: page.newStartPageToken!)
        XCTAssertTrue(after.changes.contains { $0.fileId == folder.id && $0.removed })
    }

    func testExportOfAGoogleDoc() throws {
        try start()
        let doc = try api.createEmpty(name: "notes", parent: try rootID(), mimeType: "application/vnd.google-apps.document")
        XCTAssertTrue(doc.isGoogleWorkspaceDocument)
        let text = try api.export(doc.id, mimeType: "text/plain")
        XCTAssertEqual(try api.export(doc.id, mimeType: "text/plain"), text, "exports are deterministic")
        XCTAssertThrowsError(try api.downloadData(doc.id)) { error in
            guard case .permissionDenied(let info) = error as? DriveError else { return XCTFail("\(error)") }
            XCTAssertEqual(info.reason, "fileNotDownloadable")
        }
    }

    // MARK: - Upload size classes

    private func roundTrip(size: Int, expectResumable: Bool) throws {
        let (path, md5) = try harness.makeFile("f\(size)", size: size)
        let before = harness.executor.stats.counters(for: "files.create.upload").requests
        let file = try api.createFile(name: "f\(size)", parent: try rootID(), source: .file(path: path))
        let requests = harness.executor.stats.counters(for: "files.create.upload").requests - before
        XCTAssertEqual(file.md5Checksum, md5)
        XCTAssertEqual(file.size, Int64(size))
        XCTAssertEqual(requests > 1, expectResumable, "size \(size): \(requests) upload requests")
        let back = try api.downloadData(file.id)
        XCTAssertEqual(back.count, size)
        XCTAssertEqual(Digest.hex(.md5, of: back), md5)
    }

    func testUploadSizeClasses() throws {
        try start(chunkSize: 1 << 20)
        try roundTrip(size: 0, expectResumable: false)
        try roundTrip(size: 1, expectResumable: false)
        try roundTrip(size: 5 << 20, expectResumable: false)
        try roundTrip(size: (5 << 20) + 1, expectResumable: true)
    }

    func testHundredMiBResumableUploadWithFlatMemory() throws {
        try start()
        let size = 100 << 20
        let (path, md5) = try harness.makeFile("big", size: size)
        let rssBefore = Self.residentBytes()
        let file = try api.createFile(name: "big", parent: try rootID(), source: .file(path: path))
        let rssAfter = Self.residentBytes()
        XCTAssertEqual(file.md5Checksum, md5)
        XCTAssertEqual(file.size, Int64(size))
        XCTAssertGreaterThanOrEqual(harness.executor.stats.counters(for: "files.create.upload").requests, 13, "13 chunks of 8 MiB")
        // Loose: the client streams from disk; growth stays far below the file size.
        XCTAssertLessThan(rssAfter - rssBefore, 60 << 20, "resident memory grew by \((rssAfter - rssBefore) >> 20) MiB")

        // Ranged download into a file descriptor, then the tail.
        let out = harness.temp.appendingPathComponent("big.out").path
        let fd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        defer { close(fd) }
        XCTAssertEqual(try api.download(file.id, to: .fileDescriptor(fd, offset: 0)), Int64(size))
        XCTAssertEqual(try PreparedMD5.of(path: out), md5)
    }

    /// Chunks double while Drive takes them whole, up to `maxChunkSize`: 40 MiB in 256 KiB chunks
    /// growing to 4 MiB is 15 PUTs (256 KiB, 512 KiB, 1, 2, then nine of 4 MiB and the rest), not 161.
    func testResumableChunksGrowUpToTheMaximum() throws {
        try start(chunkSize: 256 << 10)
        let growing = DriveAPI(executor: harness.executor, endpoints: harness.endpoints, chunkSize: 256 << 10, maxChunkSize: 4 << 20)
        XCTAssertEqual(growing.maxChunkSize, 4 << 20)
        let size = (40 << 20) + 5
        let (path, md5) = try harness.makeFile("growing", size: size)
        let before = harness.executor.stats.counters(for: "files.create.upload").requests
        let file = try growing.createFile(name: "growing", parent: try rootID(), source: .file(path: path))
        XCTAssertEqual(file.md5Checksum, md5)
        let requests = harness.executor.stats.counters(for: "files.create.upload").requests - before
        XCTAssertGreaterThanOrEqual(requests, 15)
        XCTAssertLessThanOrEqual(requests, 16, "the session's POST and 15 chunks at most")
        XCTAssertEqual(try growing.downloadData(file.id).count, size)
    }

    // MARK: - Interrupted transfers

    func testUploadResetMidChunkIsResumed() throws {
        try start(chunkSize: 1 << 20)
        let (path, md5) = try harness.makeFile("reset", size: (3 << 20) + 5)
        let sessionFile = harness.temp.appendingPathComponent("reset.session").path
        let session = try api.beginUpload(name: "reset", parent: try rootID(), path: path, sessionFile: sessionFile)
        // The first matching request is resumeUpload's status probe (no body: the fault would cut its
        // empty answer, i.e. nothing); the second is the first chunk, cut after 300,000 bytes.
        harness.emulator.addFaults([FaultRule(method: "files.create.upload", action: .reset(afterBytes: 300_000), times: 2)])
        let file = try api.resumeUpload(from: sessionFile)
        XCTAssertEqual(file.id, session.fileId)
        XCTAssertEqual(file.md5Checksum, md5)
        XCTAssertGreaterThanOrEqual(harness.executor.stats.counters(for: "files.create.upload").retries, 1)
        XCTAssertFalse(FileManager.default.fileExists(atPath: sessionFile), "the session file is removed on success")
    }

    func testResumedUploadIsFinishedByASecondClient() throws {
        // (SecondProcessUploadTests does the same with a real second process.)
        try start(chunkSize: 1 << 20)
        let (path, md5) = try harness.makeFile("handover", size: (6 << 20) + 17)
        let sessionFile = harness.temp.appendingPathComponent("handover.session").path
        let root = try rootID()

        // Client A dies after two chunks: its transport fails every later request, and it does not retry.
        let dying = FailingAfterTransport(inner: harness.transport, allowedPUTs: 2)
        let executorA = DriveRequestExecutor(transport: dying, tokens: harness.tokens, pacer: nil, retryPolicy: .none)
        let clientA = DriveAPI(executor: executorA, endpoints: harness.endpoints, chunkSize: 1 << 20)
        XCTAssertThrowsError(try clientA.createFile(name: "handover", parent: root, source: .file(path: path), sessionFile: sessionFile))
        let persisted = try ResumableUploadSession.load(from: sessionFile)
        XCTAssertEqual(persisted.confirmedBytes, 2 << 20)

        let clientB = try harness.secondAPI(chunkSize: 1 << 20)
        let file = try clientB.resumeUpload(from: sessionFile)
        XCTAssertEqual(file.md5Checksum, md5)
        XCTAssertEqual(file.id, persisted.fileId)
        XCTAssertEqual(try api.list(query: DriveQuery.child(named: "handover", in: root)).count, 1, "no duplicate")
        XCTAssertEqual(Digest.hex(.md5, of: try api.downloadData(file.id)), md5)
    }

    func testDownloadCutMidBodyIsCompleted() throws {
        try start()
        let content = TransportTestRoutes.bytes(0..<(2 << 20))
        let file = try api.createFile(name: "cut", parent: try rootID(), source: .bytes(content))
        harness.emulator.addFaults([FaultRule(method: "files.get.media", action: .reset(afterBytes: 700_000), times: 1)])
        let back = try api.downloadData(file.id, offset: 1000)
        XCTAssertEqual(back, Array(content[1000...]))
        XCTAssertEqual(harness.executor.stats.counters(for: "files.get.media").retries, 1)
        // (Bytes of the cut attempt are not counted: the transport reports no total for a failed exchange.)
        XCTAssertLessThanOrEqual(harness.executor.stats.counters(for: "files.get.media").bytesIn, Int64(content.count - 1000))
    }

    func testEmptyFileAndRangePastTheEnd() throws {
        try start()
        let empty = try api.createFile(name: "empty", parent: try rootID(), source: .bytes([]))
        XCTAssertEqual(try api.downloadData(empty.id), [])
        let small = try api.createFile(name: "small", parent: try rootID(), source: .bytes([1, 2, 3]))
        XCTAssertEqual(try api.downloadData(small.id, offset: 1, length: 100), [2, 3], "a range past the end is clamped")
        XCTAssertEqual(try api.downloadData(small.id, offset: 3), [])
    }

    // MARK: - Tokens, rate limits, storms

    func testTokenExpiringEveryFewSecondsDuringALongTransfer() throws {
        try start(EmulatorConfig(port: 0, latencyMs: 150, tokenLifetime: 2), chunkSize: 256 << 10)
        let (path, md5) = try harness.makeFile("slow", size: (6 << 20) + 1)
        let file = try api.createFile(name: "slow", parent: try rootID(), source: .file(path: path))
        XCTAssertEqual(file.md5Checksum, md5)
        XCTAssertGreaterThanOrEqual(harness.tokens.refreshCount, 2, "the token was refreshed during the upload")
    }

    func testRateLimitBurstSucceedsAfterBackoff() throws {
        try start()
        harness.emulator.addFaults([FaultRule.status(403, method: "files.list", reason: "userRateLimitExceeded", times: 3)])
        _ = try api.listChildren(of: try rootID())
        XCTAssertEqual(harness.executor.stats.counters(for: "files.list").retries, 3)
    }

    func testServerStormIsBoundedByTheRetryBudget() throws {
        try start()
        let root = try rootID()
        harness.emulator.addFaults([FaultRule.status(500, method: "files.list", times: nil)])
        XCTAssertThrowsError(try api.listChildren(of: root)) { error in
            guard case .server = error as? DriveError else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(harness.executor.stats.counters(for: "files.list").requests, 8)
    }

    /// The emulator creates the file, then resets the connection before a byte of its answer: the
    /// client retries, meets 409 fileIdInUse, and returns the file the first attempt made.
    func testLostCreateResponseLeavesNoDuplicate() throws {
        try start()
        let root = try rootID()
        harness.emulator.addFaults([FaultRule(method: "files.create", action: .reset(afterBytes: 0, phase: .response), times: 1)])
        let folder = try api.createFolder(name: "once", parent: root)
        XCTAssertEqual(try api.list(query: DriveQuery.child(named: "once", in: root)).map(\.id), [folder.id])
        XCTAssertEqual(api.executor.stats.counters(for: "files.create").retries, 1, "the answer was lost once")
        XCTAssertEqual(api.executor.stats.counters(for: "files.create").failures, 0)

        let content = Array("multipart content".utf8)
        harness.emulator.addFaults([FaultRule(method: "files.create.upload", action: .reset(afterBytes: 0, phase: .response), times: 1)])
        let file = try api.createFile(name: "once.txt", parent: root, source: .bytes(content))
        XCTAssertEqual(api.executor.stats.counters(for: "files.create.upload").retries, 1)
        let found = try api.list(query: DriveQuery.child(named: "once.txt", in: root))
        XCTAssertEqual(found.map(\.id), [file.id])
        XCTAssertEqual(found.first?.md5Checksum, Digest.hex(.md5, of: content))
    }

    /// The answer to the final chunk of a resumable upload is cut after the server completed the
    /// file: the status probe gets the finished file back, and no second file is made.
    func testLostAnswerToTheFinalChunkIsRecoveredByTheProbe() throws {
        try start()
        let root = try rootID()
        let (path, md5) = try harness.makeFile("final", size: (5 << 20) + 7)
        // The initiation's answer has no body, so the rule (which needs a body longer than 0 bytes)
        // passes it by; the one chunk (8 MiB chunks) is the final one, and its answer is cut.
        harness.emulator.addFaults([FaultRule(method: "files.create.upload", action: .reset(afterBytes: 0, phase: .response), times: 1)])
        let file = try api.createFile(name: "final.bin", parent: root, source: .file(path: path))
        XCTAssertEqual(file.md5Checksum, md5)
        let counters = api.executor.stats.counters(for: "files.create.upload")
        XCTAssertEqual(counters.retries, 1, "the final chunk's answer was lost once")
        XCTAssertEqual(counters.requests, 3, "initiation, the final chunk, the probe")
        let found = try api.list(query: DriveQuery.child(named: "final.bin", in: root))
        XCTAssertEqual(found.map(\.id), [file.id], "exactly one file")
        XCTAssertEqual(found.first?.md5Checksum, md5)
        XCTAssertEqual(Digest.hex(.md5, of: try api.downloadData(file.id)), md5)
    }

    /// Resumable content update with a rename: the same file, new content, still one file.
    func testResumableContentUpdateKeepsTheFile() throws {
        try start(chunkSize: 1 << 20)
        let root = try rootID()
        let first = try api.createFile(name: "doc.bin", parent: root, source: .bytes(Array("v1".utf8)))
        let (path, md5) = try harness.makeFile("v2", size: (5 << 20) + 9)
        let updated = try api.updateContent(first.id, source: .file(path: path), name: "doc-v2.bin")
        XCTAssertEqual(updated.id, first.id)
        XCTAssertEqual(updated.name, "doc-v2.bin")
        XCTAssertEqual(updated.md5Checksum, md5)
        XCTAssertEqual(updated.size, Int64((5 << 20) + 9))
        XCTAssertGreaterThan(api.executor.stats.counters(for: "files.update.upload").requests, 2, "resumable, in chunks")
        XCTAssertEqual(try api.listChildren(of: root).map(\.id), [first.id], "still one file")
        XCTAssertEqual(Digest.hex(.md5, of: try api.downloadData(first.id)), md5)
    }

    /// Docs Editors types take no generated ID (the emulator refuses one, as Google does); the client
    /// sends none, and a lost answer is resolved by looking the file up.
    func testLostDocsEditorCreateIsFoundByLookup() throws {
        try start()
        let root = try rootID()
        harness.emulator.addFaults([FaultRule(method: "files.create", action: .reset(afterBytes: 0, phase: .response), times: 1)])
        let doc = try api.createEmpty(name: "Plan", parent: root, mimeType: "application/vnd.google-apps.document")
        XCTAssertEqual(doc.mimeType, "application/vnd.google-apps.document")
        XCTAssertEqual(try api.list(query: DriveQuery.child(named: "Plan", in: root)).map(\.id), [doc.id], "no duplicate")
        XCTAssertEqual(api.executor.stats.counters(for: "files.create").requests, 1, "found, not sent again")
        XCTAssertEqual(api.executor.stats.counters(for: "files.create").failures, 0)
    }

    // MARK: - Helpers

    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
              let pages = text.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}

enum PreparedMD5 {
    static func of(path: String) throws -> String {
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        var digest = Digest(.md5)
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty { digest.update(chunk) }
        return digest.hexDigest()
    }
}

/// A transport that lets `allowedPUTs` upload chunks through, then fails everything: a client
/// process dying mid-upload.
final class FailingAfterTransport: HTTPTransport, @unchecked Sendable {
    let inner: any HTTPTransport
    private let remaining: Locked<Int>

    init(inner: any HTTPTransport, allowedPUTs: Int) {
        self.inner = inner
        self.remaining = Locked(allowedPUTs)
    }

    func perform(_ request: TransportRequest) throws -> TransportResponse {
        if request.method == "PUT" {
            let allowed = remaining.withLock { r -> Bool in
                defer { r -= 1 }
                return r > 0
            }
            guard allowed else { throw TransportError.connectionLost("the client died") }
        }
        return try inner.perform(request)
    }
}
