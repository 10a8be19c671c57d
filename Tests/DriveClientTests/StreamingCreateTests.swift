import DriveClient
import DriveEmulator
import DriveSupport
import XCTest

/// `DriveAPI.beginStreamingCreate` against the emulator: a file sent while it grows
/// (`Content-Range: bytes a-b/*`, the last chunk with the total), each byte hashed once even when
/// a chunk is cut and sent again, nothing on Drive before the last chunk, and the pre-generated ID
/// keeping a fallback create from making a second file.
final class StreamingCreateTests: XCTestCase {
    var harness: EmulatorHarness!
    var api: DriveAPI { harness.api }

    override func setUpWithError() throws {
        harness = try EmulatorHarness(retry: RetryPolicy(maxAttempts: 8, maxElapsed: 30, baseDelay: 0.01, maxDelay: 0.2),
                                      chunkSize: 256 << 10)
    }

    override func tearDown() { harness?.stop() }

    /// Sends `path` (`size` bytes) the way the core does: chunks while "writing" (`available`
    /// grows by `step`), then `finish`.
    private func stream(_ path: String, size: Int, step: Int, id: String, name: String,
                        afterBegin: () -> Void = {}) throws -> DriveFile {
        let root = try api.getFile("root").id
        let stream = try api.beginStreamingCreate(name: name, parent: root, mimeType: nil, id: id, appProperties: ["k": "v"])
        afterBegin()
        var available = 0
        while available < size {
            available = min(size, available + step)
            while true {
                let length = stream.chunkLength(available: Int64(available))
                if length == 0 { break }
                try stream.send(path: path, length: length)
            }
            // Nothing exists on Drive before the last chunk.
            XCTAssertThrowsError(try api.getFile(id))
        }
        return try stream.finish(path: path, size: Int64(size))
    }

    /// A file of `size` bytes named `name`, and a stream of it (`name.bin` in the root) that has
    /// sent its first chunk.
    private func streamWithOneChunk(_ name: String, size: Int) throws
        -> (path: String, md5: String, id: String, root: String, stream: any StreamingCreate) {
        let (path, md5) = try harness.makeFile(name, size: size)
        let id = try api.generateIds(count: 1)[0]
        let root = try api.getFile("root").id
        let stream = try api.beginStreamingCreate(name: name + ".bin", parent: root, mimeType: nil, id: id, appProperties: nil)
        try stream.send(path: path, length: stream.chunkLength(available: Int64(size)))
        return (path, md5, id, root, stream)
    }

    func testAGrowingFileLandsWholeWithItsMD5AndEachByteSentOnce() throws {
        for (size, step) in [(3 << 20, 700_000), ((1 << 20) + 1, 1 << 20), (5 << 20, 5 << 20), (1, 1)] {
            let (path, md5) = try harness.makeFile("grow-\(size)", size: size)
            let id = try api.generateIds(count: 1)[0]
            harness.emulator.resetStats()
            let file = try stream(path, size: size, step: step, id: id, name: "grow-\(size).bin")
            XCTAssertEqual(file.id, id)
            XCTAssertEqual(file.size, Int64(size))
            XCTAssertEqual(file.md5Checksum, md5)
            XCTAssertEqual(file.appProperties?["k"], "v")
            XCTAssertEqual(Digest.hex(.md5, of: try api.downloadData(id)), md5, "size \(size)")
            // Request bytes in: every content byte once (plus metadata and headers, which are small).
            let bytesIn = harness.emulator.stats().methods["files.create.upload"]?.bytesIn ?? 0
            XCTAssertGreaterThanOrEqual(bytesIn, Int64(size))
            XCTAssertLessThan(bytesIn, Int64(size) + 4096, "a byte was sent twice (size \(size))")
        }
    }

    func testAChunkCutMidwayIsContinuedFromWhatTheServerHoldsAndHashedOnce() throws {
        let size = (2 << 20) + 12_345
        let (path, md5) = try harness.makeFile("cut", size: size)
        let id = try api.generateIds(count: 1)[0]
        // The first chunk's connection is reset after 100,000 bytes, and the next request (the
        // probe) answers 503 once: the client asks what the server holds and goes on from there.
        let file = try stream(path, size: size, step: 600_000, id: id, name: "cut.bin") {
            harness.emulator.addFaults([FaultRule(method: "files.create.upload", action: .reset(afterBytes: 100_000), times: 1),
                                        FaultRule.status(503, method: "files.create.upload", times: 1)])
        }
        XCTAssertEqual(file.md5Checksum, md5)
        XCTAssertEqual(Digest.hex(.md5, of: try api.downloadData(id)), md5)
        XCTAssertGreaterThanOrEqual(harness.executor.stats.counters(for: "files.create.upload").retries, 2)
    }

    func testAnAbandonedStreamCreatesNothingAndAFallbackCreateMakesOneFile() throws {
        let (path, md5, id, root, stream) = try streamWithOneChunk("abandon", size: 2 << 20)
        XCTAssertGreaterThan(stream.confirmedBytes, 0)
        // Given up: the ordinary create of the whole file under the same ID.
        let file = try api.createFile(name: "abandon.bin", parent: root, source: .file(path: path), id: id)
        XCTAssertEqual(file.md5Checksum, md5)
        XCTAssertEqual(try api.listChildren(of: root).filter { $0.name == "abandon.bin" }.count, 1)
    }

    func testAFileThatChangedUnderTheStreamIsCaughtByItsMD5() throws {
        let size = 1 << 20
        let (path, _, id, _, stream) = try streamWithOneChunk("changed", size: size)
        // A byte already sent changes (what the core's EarlyUpload must never let through): the
        // server holds the old byte, the hash too, and the file's new bytes are not what landed.
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try handle.seek(toOffset: 10)
        try handle.write(contentsOf: Data([0xAB]))
        try handle.close()
        let finished = try stream.finish(path: path, size: Int64(size))
        let onDisk = Digest.hex(.md5, of: try Data(contentsOf: URL(fileURLWithPath: path)))
        XCTAssertNotEqual(finished.md5Checksum, onDisk, "the stream sent what was there when each chunk went")
        XCTAssertEqual(finished.md5Checksum, Digest.hex(.md5, of: try api.downloadData(id)), "the hash is of what was sent")
    }

    /// `.hashedFile`: a resumable upload takes the caller's md5 instead of a pass of its own, and
    /// Drive's md5 is still checked against it (a stale one is a mismatch, never a silent success).
    func testAHashedFileUsesTheGivenMD5AndIsStillChecked() throws {
        let (path, md5) = try harness.makeFile("hashed", size: (6 << 20) + 99)  // above the multipart limit: resumable
        let root = try api.getFile("root").id
        let file = try api.createFile(name: "hashed.bin", parent: root, source: .hashedFile(path: path, md5: md5))
        XCTAssertEqual(file.md5Checksum, md5)
        let stale = String(repeating: "0", count: 32)
        XCTAssertThrowsError(try api.updateContent(file.id, source: .hashedFile(path: path, md5: stale))) { error in
            XCTAssertEqual(error as? DriveError, .checksumMismatch(expected: stale, actual: md5))
        }
    }
}
