import DriveClient
import DriveEmulator
import DriveSupport
import XCTest

/// A retried create can never leave a duplicate, whatever the file's size (issue 7): against the
/// emulator, with the answer to the final request cut after the server made the file.
final class CreateNeverDuplicatesTests: XCTestCase {
    var harness: EmulatorHarness!
    override func tearDown() { harness?.stop() }

    /// One try per call: the caller (the upload queue) is the one that retries.
    private func startWithoutRetries(chunkSize: Int64 = 1 << 20) throws {
        harness = try EmulatorHarness(retry: RetryPolicy(maxAttempts: 1, maxElapsed: 5, baseDelay: 0.01, maxDelay: 0.01),
                                      chunkSize: chunkSize)
    }

    private func children(named name: String, in parent: String) throws -> [DriveFile] {
        try harness.api.list(query: DriveQuery.child(named: name, in: parent))
    }

    /// The final chunk of a resumable create lands, its answer is lost, the call fails; the caller
    /// calls again with the same ID: the initiation meets 409 fileIdInUse and the landed file is
    /// returned (checked to be ours), with no error and no second file.
    func testRetriedResumableCreateAfterItLandedReturnsTheFile() throws {
        try startWithoutRetries()
        let api = harness.api
        let root = try api.getFile("root").id
        let (path, md5) = try harness.makeFile("big", size: (2 << 20) + 333)  // 3 chunks of 1 MiB
        let id = try api.reserveFileID()
        // The initiation's answer has no body, so a response-phase rule passes it by; chunks 1 and 2
        // answer 308 without a body too: the first answer with a body is the final chunk's.
        harness.emulator.addFaults([FaultRule(method: "files.create.upload", action: .reset(afterBytes: 0, phase: .response), times: 1)])
        XCTAssertThrowsError(try api.createFile(name: "big.bin", parent: root, source: .file(path: path), id: id)) { error in
            guard case .transport = error as? DriveError else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(try children(named: "big.bin", in: root).map(\.id), [id], "the first call landed")

        let before = api.executor.stats.counters(for: "files.create.upload")
        let file = try api.createFile(name: "big.bin", parent: root, source: .file(path: path), id: id)
        XCTAssertEqual(file.id, id)
        XCTAssertEqual(file.md5Checksum, md5)
        XCTAssertEqual(try children(named: "big.bin", in: root).map(\.id), [id], "still one file")
        let after = api.executor.stats.counters(for: "files.create.upload")
        XCTAssertEqual(after.requests - before.requests, 1, "one initiation, answered 409: no content sent again")
        XCTAssertEqual(after.failures, before.failures, "the 409 is the expected answer, not a failure")
        XCTAssertEqual(Digest.hex(.md5, of: try api.downloadData(id)), md5)
    }

    /// The same for a multipart create, and for a folder.
    func testRetriedMultipartCreateAndFolderCreateAfterTheyLanded() throws {
        try startWithoutRetries()
        let api = harness.api
        let root = try api.getFile("root").id
        let content = Array("small file\r".utf8)
        let id = try api.reserveFileID()
        harness.emulator.addFaults([FaultRule(method: "files.create.upload", action: .reset(afterBytes: 0, phase: .response), times: 1)])
        XCTAssertThrowsError(try api.createFile(name: "small.txt", parent: root, source: .bytes(content), id: id))
        XCTAssertEqual(try api.createFile(name: "small.txt", parent: root, source: .bytes(content), id: id).id, id)
        XCTAssertEqual(try children(named: "small.txt", in: root).map(\.id), [id])

        let folderID = try api.reserveFileID()
        harness.emulator.addFaults([FaultRule(method: "files.create", action: .reset(afterBytes: 0, phase: .response), times: 1)])
        XCTAssertThrowsError(try api.createFolder(name: "dir", parent: root, id: folderID))
        XCTAssertEqual(try api.createFolder(name: "dir", parent: root, id: folderID).id, folderID)
        XCTAssertEqual(try children(named: "dir", in: root).map(\.id), [folderID])
    }

    /// An ID taken by some other file (another name, size or content) is a conflict, on either
    /// path: nothing is returned in its place and nothing is overwritten.
    func testIDTakenByAnotherFileIsAConflict() throws {
        try startWithoutRetries()
        let api = harness.api
        let root = try api.getFile("root").id
        let id = try api.reserveFileID()
        let first = try api.createFile(name: "first.bin", parent: root, source: .bytes([1, 2, 3]), id: id)
        let (path, _) = try harness.makeFile("other", size: (1 << 20) + 1)
        for (name, source) in [("first.bin", UploadSource.bytes([9, 9, 9])), ("other.bin", .bytes([1, 2, 3])), ("first.bin", .file(path: path))] {
            XCTAssertThrowsError(try api.createFile(name: name, parent: root, source: source, id: id), name) { error in
                guard case .conflict(let info) = error as? DriveError else { return XCTFail("\(error)") }
                XCTAssertEqual(info.reason, "fileIdInUse")
            }
        }
        XCTAssertThrowsError(try api.createFolder(name: "first.bin", parent: root, id: id)) { error in
            guard case .conflict = error as? DriveError else { return XCTFail("\(error)") }
        }
        let now = try api.getFile(id)
        XCTAssertEqual(now.md5Checksum, first.md5Checksum)
        XCTAssertEqual(try api.listChildren(of: root).map(\.id), [id])
    }
}

/// Google refuses writes past its write limit (403 `rateLimitExceeded`), and some refused inserts
/// are carried out all the same (issue 16; the emulator's `--quirk-refused-write-lands`). The
/// client's retry of such a create meets its own file under the pre-generated ID (409
/// `fileIdInUse`), checks it (name, folder, size, md5) and takes it: one file per create, never two,
/// and no error.
final class RefusedWriteLandsTests: XCTestCase {
    func testCreatesRefusedByTheWriteLimitButCarriedOutEndAsOneFileEach() throws {
        var config = EmulatorConfig(port: 0)
        config.driveLimits.writesPerSecond = 4
        config.driveLimits.writeBurst = 1
        config.driveLimits.refusedWriteLands = 1.0
        // The client does not pace writes here, so that it runs into the limit; its retries wait.
        let harness = try EmulatorHarness(config: config,
                                          retry: RetryPolicy(maxAttempts: 30, maxElapsed: 120, baseDelay: 0.05, maxDelay: 0.5))
        defer { harness.stop() }
        let api = harness.api
        let root = try api.getFile("root").id
        let count = 6
        let failures = Locked<[String]>([])
        let group = DispatchGroup()
        for n in 0..<count {
            group.enter()
            Thread {
                defer { group.leave() }
                do {
                    let content = Array("file \(n)\n".utf8)
                    let file = try api.createFile(name: "f\(n).txt", parent: root, source: .bytes(content))
                    if file.name != "f\(n).txt" { failures.withLock { $0.append("f\(n): answered \(file.name)") } }
                    if n % 2 == 0 { _ = try api.createFolder(name: "d\(n)", parent: root) }
                } catch {
                    failures.withLock { $0.append("f\(n): \(error)") }
                }
            }.start()
        }
        XCTAssertEqual(group.wait(timeout: .now() + 180), .success, "the creates did not end")
        XCTAssertEqual(failures.withLock { $0 }, [])
        let refused = harness.emulator.stats().methods.values.reduce(0) { $0 + ($1.statuses["403"] ?? 0) }
        XCTAssertGreaterThan(refused, 0, "the write limit refused some creates (so the quirk was met)")
        let all = try api.list(query: "'\(root)' in parents and trashed = false")
        for n in 0..<count {
            let named = all.filter { $0.name == "f\(n).txt" }
            XCTAssertEqual(named.count, 1, "f\(n).txt once: \(all.map(\.name).sorted())")
            if let file = named.first {
                XCTAssertEqual(try api.downloadData(file.id), Array("file \(n)\n".utf8))
            }
            if n % 2 == 0 { XCTAssertEqual(all.filter { $0.name == "d\(n)" }.count, 1, "d\(n) once") }
        }
        XCTAssertEqual(all.count, count + count / 2, "\(all.map(\.name).sorted())")
    }
}
