import DriveClient
import DriveEmulator
@testable import DriveFSCore
import DriveSupport
import Foundation
import XCTest

/// The upload queue over DriveAPI and the in-process emulator (real HTTP through libcurl): 100
/// small new files and one above the multipart limit arrive with the right md5s, for at most one
/// create request per small file plus the generateIds batches.
final class UploadQueueEmulatorTests: XCTestCase {
    private func makeAPI(_ emulator: Emulator, batch: Int) throws -> DriveAPI {
        let endpoints = DriveEndpoints.singleHost(emulator.baseURL)
        let transport = try CurlTransport()
        let grant = RefreshTokenGrant(tokenURL: endpoints.tokenURL, clientID: "uploads", clientSecret: "x",
                                      refreshToken: "drivefs-emulator-refresh-token", transport: transport)
        let executor = DriveRequestExecutor(transport: transport, tokens: TokenManager(grant: grant),
                                            pacer: Pacer(ratePerSecond: 10_000, burst: 10_000),
                                            retryPolicy: RetryPolicy(maxAttempts: 4, maxElapsed: 30, baseDelay: 0.01, maxDelay: 0.1))
        return DriveAPI(executor: executor, endpoints: endpoints, idBatchSize: batch)
    }

    func testManySmallFilesAndOneLargeOneArriveWithOneCreateEach() throws {
        let emulator = try Emulator(config: EmulatorConfig(port: 0))
        try emulator.start()
        defer { emulator.stop() }
        let batch = 1000
        let api = try makeAPI(emulator, batch: batch)
        let root = try api.getFile("root").id

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("uploads-emulator-\(UUID().uuidString)").path
        let staging = directory + "/staging"
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let queue = try UploadQueue(directory: directory + "/uploads", backend: api, transfers: 4)

        var random = SplitMix64(seed: 7)
        var expected: [String: (name: String, md5: String)] = [:]
        func commit(_ name: String, _ bytes: [UInt8]) throws {
            let path = "\(staging)/\(name)"
            _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
            let request = UploadRequest(fileID: try api.reserveFileID(), isNew: true, parentID: root, name: name,
                                        modifiedTime: 1_750_000_000_000, appProperties: ["mode": "100644"], displayPath: "/" + name)
            try queue.commit(request, contentPath: path, ready: true)
            expected[request.fileID] = (name, Digest.hex(.md5, of: bytes))
        }
        emulator.resetStats()
        for n in 0..<100 {
            try commit("small-\(n).txt", (0..<random.next(below: 4096)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        }
        let largeSize = Int(api.multipartLimit) + 1
        try commit("large.bin", (0..<largeSize).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 17) })

        let outcomes = Locked<[UploadOutcome]>([])
        queue.start { outcome in outcomes.withLock { $0.append(outcome) } }
        XCTAssertTrue(queue.drain(timeout: 300) { _ in })
        queue.stop()

        let stats = emulator.stats().methods
        let chunks = (Int64(largeSize) + api.chunkSize - 1) / api.chunkSize
        XCTAssertLessThanOrEqual(stats["files.create.upload"]?.requests ?? 0, 100 + 1 + Int(chunks),
                                 "one request per small file; an initiation and its chunks for the large one")
        XCTAssertEqual(stats["files.generateIds"]?.requests ?? 0, (101 + batch - 1) / batch)
        XCTAssertNil(stats["files.get"], "a new file needs no read first")
        XCTAssertNil(stats["files.update"], "nor a metadata update after it")

        let listed = try api.listChildren(of: root)
        XCTAssertEqual(listed.count, 101)
        for file in listed {
            let want = try XCTUnwrap(expected[file.id], file.name)
            XCTAssertEqual(file.name, want.name)
            XCTAssertEqual(file.md5Checksum, want.md5, file.name)
            XCTAssertEqual(file.appProperties?["mode"], "100644")
            XCTAssertEqual(file.modifiedTime, 1_750_000_000_000)
        }
        XCTAssertEqual(outcomes.withLock { $0.count }, 101)
        XCTAssertTrue(outcomes.withLock { $0.allSatisfy { $0.error == nil && !$0.wasConflict } })
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: staging), [], "every content file removed once it landed")
    }

    /// Drive's own revisions: an update over a head that changed becomes a conflicted copy, the
    /// original untouched; an update of a file deleted meanwhile makes it again; our own earlier
    /// upload is never taken for a conflict.
    func testConflictsAndDeletedFilesAgainstTheEmulator() throws {
        let emulator = try Emulator(config: EmulatorConfig(port: 0))
        try emulator.start()
        defer { emulator.stop() }
        let api = try makeAPI(emulator, batch: 100)
        let root = try api.getFile("root").id
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("uploads-emulator-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory + "/staging", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var n = 0
        func content(_ text: String) -> String {
            n += 1
            let path = "\(directory)/staging/\(n)"
            _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
            return path
        }
        func request(_ file: DriveFile) -> UploadRequest {
            UploadRequest(fileID: file.id, isNew: false, parentID: root, name: file.name, baseRevision: file.headRevisionId,
                          baseMD5: file.md5Checksum, displayPath: "/" + file.name)
        }
        let shared = try api.createFile(name: "shared.txt", parent: root, source: .bytes(Array("base".utf8)))
        let mine = try api.createFile(name: "mine.txt", parent: root, source: .bytes(Array("v1".utf8)))
        let doomed = try api.createFile(name: "doomed.txt", parent: root, source: .bytes(Array("d1".utf8)))
        let queue = try UploadQueue(directory: directory + "/uploads", backend: api, transfers: 2)
        let staleShared = request(shared)
        let theirs = try api.updateContent(shared.id, source: .bytes(Array("theirs".utf8)))
        try queue.commit(staleShared, contentPath: content("ours"), ready: true)
        let staleDoomed = request(doomed)
        try api.delete(doomed.id)
        try queue.commit(staleDoomed, contentPath: content("d2"), ready: true)
        queue.start { _ in }
        try queue.commit(request(mine), contentPath: content("v2"), ready: true)
        try queue.waitUntilUploaded(mine.id, within: 120)
        // Written again by a core that had not heard of that landing (the same base): our own
        // upload is not taken for someone else's change.
        try queue.commit(request(mine), contentPath: content("v3"), ready: true)
        XCTAssertTrue(queue.drain(timeout: 300) { _ in })
        queue.stop()

        let listed = try api.listChildren(of: root)
        let names = Set(listed.map(\.name))
        XCTAssertEqual(try api.getFile(shared.id).headRevisionId, theirs.headRevisionId, "the original is untouched")
        XCTAssertEqual(try api.downloadData(shared.id), Array("theirs".utf8))
        let copy = try XCTUnwrap(listed.first { $0.name.hasPrefix("shared (conflicted copy ") && $0.name.hasSuffix(").txt") }, "\(names)")
        XCTAssertEqual(try api.downloadData(copy.id), Array("ours".utf8))
        XCTAssertEqual(try api.downloadData(mine.id), Array("v3".utf8))
        let again = try XCTUnwrap(listed.first { $0.name == "doomed.txt" })
        XCTAssertNotEqual(again.id, doomed.id)
        XCTAssertEqual(try api.downloadData(again.id), Array("d2".utf8))
        XCTAssertEqual(listed.count, 4, "\(names)")
    }
}
