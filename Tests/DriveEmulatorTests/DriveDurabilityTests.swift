import DriveSupport
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif
@testable import DriveEmulator

/// What the emulator answered survives its death: a child `drivefs-emulator` is killed with SIGKILL
/// right after its answers and restarted on the same state directory. SIGKILL leaves the page cache
/// alone, so those tests show that nothing answered lived only in the process (and that replay works
/// at whatever point the kill fell); the fdatasyncs themselves are checked in-process through test
/// seams: content durable before the journal line naming it, the line durable before the answer.
final class DriveDurabilityTests: XCTestCase {
    var stateDirectory: URL!

    override func setUpWithError() throws {
        stateDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("durability-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: stateDirectory, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: stateDirectory) }

    // MARK: A child process killed after answering

    struct Child {
        let process: SpawnedProcess
        let port: Int
    }

    func startChild(_ extra: [String] = []) throws -> Child {
        let process = try SpawnedProcess(executable: try ExecutableLocator.url(of: "drivefs-emulator"),
                                         arguments: ["--port", "0", "--state-dir", stateDirectory.path] + extra)
        guard let line = process.waitForLine(prefix: "listening on ", timeout: 30),
              let match = line.wholeMatch(of: #/^listening on http://127\.0\.0\.1:(\d+)/$/#), let port = Int(match.1) else {
            process.terminate()
            throw EmulatorExecutableTests.StartFailure(description: "no ready line; stderr: \(process.stderr)")
        }
        return Child(process: process, port: port)
    }

    /// SIGKILL: no signal handler runs, no snapshot is written at stop; only what was on disk counts.
    func kill(_ child: Child) {
        child.process.signal(SIGKILL)
        XCTAssertNotNil(child.process.waitForExit(timeout: 10), "the child died")
    }

    func token(_ port: Int) throws -> String {
        let body = Array("grant_type=refresh_token&refresh_token=drivefs-emulator-refresh-token&client_id=a&client_secret=b".utf8)
        let r = try RawHTTP.request(port: port, "POST", "/token", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: body)
        XCTAssertEqual(r.status, 200, r.text)
        return try XCTUnwrap(r.json?["access_token"] as? String)
    }

    static let boundary = "durability-boundary"

    static func multipart(name: String, media: [UInt8]) -> [UInt8] {
        var b = Array("--\(boundary)\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{\"name\":\"\(name)\"}\r\n".utf8)
        b += Array("--\(boundary)\r\nContent-Type: application/octet-stream\r\n\r\n".utf8) + media
        b += Array("\r\n--\(boundary)--\r\n".utf8)
        return b
    }

    func testAnUploadAnsweredBeforeSIGKILLIsThereAfterARestart() throws {
        var rng = SplitMix64(seed: 0xD0_AB1E)
        let media = (0..<300_000).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        let chunk = 262_144
        let resumable = (0..<(2 * chunk + 1000)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }

        let first = try startChild()
        let port = first.port
        let bearer = try token(port)
        let auth = [("Authorization", "Bearer \(bearer)")]
        let upload = try RawHTTP.request(port: port, "POST", "/upload/drive/v3/files?uploadType=multipart&fields=id,md5Checksum,size",
                                         headers: auth + [("Content-Type", "multipart/related; boundary=\(Self.boundary)")],
                                         body: Self.multipart(name: "answered.bin", media: media))
        XCTAssertEqual(upload.status, 200, upload.text)
        let id = try XCTUnwrap(upload.json?["id"] as? String)
        XCTAssertEqual(upload.json?["md5Checksum"] as? String, Digest.hex(.md5, of: media))
        let renamed = try RawHTTP.request(port: port, "PATCH", "/drive/v3/files/\(id)", headers: auth + [("Content-Type", "application/json")],
                                          body: Array(#"{"name":"renamed.bin","starred":true}"#.utf8))
        XCTAssertEqual(renamed.status, 200, renamed.text)
        // A resumable upload whose first chunk was acknowledged.
        let start = try RawHTTP.request(port: port, "POST", "/upload/drive/v3/files?uploadType=resumable",
                                        headers: auth + [("Content-Type", "application/json"), ("X-Upload-Content-Length", "\(resumable.count)")],
                                        body: Array(#"{"name":"resumed.bin"}"#.utf8))
        XCTAssertEqual(start.status, 200, start.text)
        let location = try XCTUnwrap(start.header("Location"))
        let session = String(location[try XCTUnwrap(location.range(of: "/upload/")).lowerBound...])
        let acked = try RawHTTP.request(port: port, "PUT", session, headers: [("Content-Range", "bytes 0-\(chunk - 1)/\(resumable.count)")],
                                        body: Array(resumable[0..<chunk]))
        XCTAssertEqual(acked.status, 308)
        XCTAssertEqual(acked.header("Range"), "bytes=0-\(chunk - 1)")
        kill(first)

        let second = try startChild()
        defer { second.process.terminate() }
        let again = [("Authorization", "Bearer \(bearer)")]
        let got = try RawHTTP.request(port: second.port, "GET", "/drive/v3/files/\(id)?fields=name,starred,md5Checksum,size", headers: again)
        XCTAssertEqual(got.status, 200, "the access token answered before the kill still works: \(got.text)")
        XCTAssertEqual(got.json?["name"] as? String, "renamed.bin")
        XCTAssertEqual(got.json?["starred"] as? Bool, true)
        XCTAssertEqual(got.json?["size"] as? String, String(media.count))
        let bytes = try RawHTTP.request(port: second.port, "GET", "/drive/v3/files/\(id)?alt=media", headers: again, timeout: 30)
        XCTAssertEqual(bytes.body, media)
        // The session holds what its 308 acknowledged, and finishes.
        let probe = try RawHTTP.request(port: second.port, "PUT", session, headers: [("Content-Range", "bytes */\(resumable.count)")])
        XCTAssertEqual(probe.status, 308)
        XCTAssertEqual(probe.header("Range"), "bytes=0-\(chunk - 1)")
        let done = try RawHTTP.request(port: second.port, "PUT", session,
                                       headers: [("Content-Range", "bytes \(chunk)-\(resumable.count - 1)/\(resumable.count)")],
                                       body: Array(resumable[chunk...]))
        XCTAssertEqual(done.status, 200, done.text)
        let resumedId = try XCTUnwrap(done.json?["id"] as? String)
        let resumedBytes = try RawHTTP.request(port: second.port, "GET", "/drive/v3/files/\(resumedId)?alt=media", headers: again, timeout: 30)
        XCTAssertEqual(resumedBytes.body, resumable)
    }

    /// Many mutations, across a journal compaction, each answered; SIGKILL right after the last one.
    func testEveryAnsweredCreateSurvivesSIGKILLAcrossACompaction() throws {
        let first = try startChild()
        let bearer = try token(first.port)
        let connection = try RawHTTPConnection(port: first.port)
        var ids: [String] = []
        for i in 0..<2_100 {
            try connection.sendRequest("POST", "/drive/v3/files?fields=id", headers: [("Authorization", "Bearer \(bearer)"),
                                                                                  ("Content-Type", "application/json")],
                                       body: Array(#"{"name":"n\#(i)","mimeType":"application/vnd.google-apps.folder"}"#.utf8))
            let r = try connection.readResponse()
            XCTAssertEqual(r.status, 200, r.text)
            ids.append(try XCTUnwrap(r.json?["id"] as? String))
        }
        kill(first)

        let second = try startChild()
        defer { second.process.terminate() }
        let again = try RawHTTPConnection(port: second.port)
        var missing: [Int] = []
        for (i, id) in ids.enumerated() {
            try again.sendRequest("GET", "/drive/v3/files/\(id)?fields=name", headers: [("Authorization", "Bearer \(bearer)")])
            let r = try again.readResponse()
            if r.status != 200 || r.json?["name"] as? String != "n\(i)" { missing.append(i) }
        }
        XCTAssertEqual(missing, [], "every answered create is there")
    }

    /// A seeded start killed at once: the seeding was made durable before the ready line.
    func testASeededStartKilledAtOnceKeepsTheSeed() throws {
        let seed = stateDirectory.appendingPathComponent("seed")
        try FileManager.default.createDirectory(at: seed.appendingPathComponent("docs"), withIntermediateDirectories: true)
        for i in 0..<50 { try Data("file \(i)\n".utf8).write(to: seed.appendingPathComponent("docs/f\(i).txt")) }
        let state = ["--state-dir", stateDirectory.appendingPathComponent("state").path]
        let first = try SpawnedProcess(executable: try ExecutableLocator.url(of: "drivefs-emulator"),
                                       arguments: ["--port", "0", "--seed", seed.path] + state)
        XCTAssertNotNil(first.waitForLine(prefix: "listening on ", timeout: 30), first.stderr)
        first.signal(SIGKILL)
        XCTAssertNotNil(first.waitForExit(timeout: 10))
        let second = try SpawnedProcess(executable: try ExecutableLocator.url(of: "drivefs-emulator"), arguments: ["--port", "0"] + state)
        defer { second.terminate() }
        let line = try XCTUnwrap(second.waitForLine(prefix: "listening on ", timeout: 30), second.stderr)
        let port = try XCTUnwrap(line.wholeMatch(of: #/^listening on http://127\.0\.0\.1:(\d+)/$/#).flatMap { Int($0.1) })
        let r = try RawHTTP.request(port: port, "GET", "/drive/v3/files?q=name%20contains%20%27f%27&pageSize=1000&fields=files(name)",
                                    headers: [("Authorization", "Bearer \(try token(port))")])
        XCTAssertEqual((r.json?["files"] as? [[String: Any]])?.count, 50, r.text)
    }

    // MARK: The commit order, in-process

    enum Event {
        case content(String)
        case line(Int64, [String])
    }

    /// Every answer is sent after a sync covering the journal line of its own mutation, and a
    /// content file is durable before the line naming it is written: 8 threads of media uploads,
    /// folder creates and metadata-only file creates.
    func testEachAnswerWaitsForItsLineAndContentPrecedesItsLine() throws {
        let h = try DriveHarness(stateDirectory: stateDirectory.appendingPathComponent("inproc"))
        defer { h.shutdown() }
        let store = h.service.store
        XCTAssertTrue(store.durable)
        // Per thread: the last journal line it wrote. Globally: the order of content and line events.
        let lines = Locked<[UInt: Int64]>([:])
        let events = Locked<[Event]>([])
        store.onJournalLine.withLock { $0 = { line, contentFiles in
            lines.withLock { $0[UInt(pthread_self())] = line }
            events.withLock { $0.append(.line(line, contentFiles)) }
        } }
        store.onContentDurable.withLock { $0 = { name in events.withLock { $0.append(.content(name)) } } }
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { t in
            for i in 0..<40 {
                do {
                    let before = lines.withLock { $0[UInt(pthread_self())] }
                    let r: HTTPResponse
                    switch i % 3 {
                    case 0:
                        r = try h.send("POST", "/upload/drive/v3/files?uploadType=media", body: BufferedRequestBody([UInt8](repeating: UInt8(t), count: 100 + i)))
                    case 1:
                        r = try h.send("POST", "/drive/v3/files", headers: [("Content-Type", "application/json")],
                                       body: BufferedRequestBody(Array(#"{"name":"d\#(t)-\#(i)","mimeType":"application/vnd.google-apps.folder"}"#.utf8)))
                    default:
                        r = try h.send("POST", "/drive/v3/files", headers: [("Content-Type", "application/json")],
                                       body: BufferedRequestBody(Array(#"{"name":"e\#(t)-\#(i)"}"#.utf8)))
                    }
                    guard r.status == 200 else { failures.withLock { $0.append("status \(r.status)") }; continue }
                    let mine = lines.withLock { $0[UInt(pthread_self())] }
                    guard let mine, mine != before else { failures.withLock { $0.append("no journal line for \(t)/\(i)") }; continue }
                    let durable = store.commits.durableThrough
                    if durable < mine { failures.withLock { $0.append("answered line \(mine) with only \(durable) durable") } }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        // Each content file became durable before the first line that named it.
        var durableContent = Set<String>(), named = Set<String>(), lineCount = 0
        for event in events.withLock({ $0 }) {
            switch event {
            case .content(let name): durableContent.insert(name)
            case .line(let line, let files):
                lineCount += 1
                for file in files where !named.contains(file) {
                    XCTAssertTrue(durableContent.contains(file), "line \(line) names \(file) before it was durable")
                    named.insert(file)
                }
            }
        }
        XCTAssertEqual(lineCount, 8 * 40)
        XCTAssertEqual(named.count, 8 * 40 - 8 * 13, "every upload and empty file has its own content; folders none")
        XCTAssertEqual(named, durableContent)
    }

    /// A failed fdatasync: the answer is a 500, and so is every later one (what is on disk is unknown);
    /// a restart on the same directory serves again.
    func testAFailedSyncAnswers500UntilRestarted() throws {
        let h = try DriveHarness(stateDirectory: stateDirectory.appendingPathComponent("failing"))
        defer { h.shutdown() }
        XCTAssertEqual(try h.send("POST", "/drive/v3/files", headers: [("Content-Type", "application/json")],
                                  body: BufferedRequestBody(Array(#"{"name":"before"}"#.utf8))).status, 200)
        h.service.store.commits.syncFault.withLock { $0 = { _ in EIO } }
        let failed = try h.send("POST", "/drive/v3/files", headers: [("Content-Type", "application/json")],
                                body: BufferedRequestBody(Array(#"{"name":"unsure"}"#.utf8)))
        XCTAssertEqual(failed.status, 500)
        XCTAssertEqual((DriveHarness.object(failed)["error"] as? [String: Any])?["message"] as? String, "Backend Error")
        h.service.store.commits.syncFault.withLock { $0 = nil }
        XCTAssertEqual(try h.send("GET", "/drive/v3/files?fields=files(name)").status, 500, "fail-stop: nothing is answered any more")
        try h.restart()
        let listed = try h.send("GET", "/drive/v3/files?fields=files(name)")
        XCTAssertEqual(listed.status, 200)
        XCTAssertTrue(((DriveHarness.object(listed)["files"] as? [[String: Any]]) ?? []).contains { $0["name"] as? String == "before" })
    }

    /// Seeding defers its syncs: no content file is synced one by one, everything at the end.
    func testSeedingSyncsOnceAtTheEnd() throws {
        let seed = stateDirectory.appendingPathComponent("seed")
        try FileManager.default.createDirectory(at: seed, withIntermediateDirectories: true)
        for i in 0..<20 { try Data("s\(i)".utf8).write(to: seed.appendingPathComponent("s\(i).txt")) }
        let h = try DriveHarness(stateDirectory: stateDirectory.appendingPathComponent("seeded"), seed: seed)
        defer { h.shutdown() }
        let store = h.service.store
        let lines = store.read { s in s.data.items.count }
        XCTAssertEqual(lines, 21)
        XCTAssertGreaterThanOrEqual(store.commits.durableThrough, 20, "the seed's lines were marked durable by the final sync")
        let synced = Locked(0)
        store.onContentDurable.withLock { $0 = { _ in synced.withLock { $0 += 1 } } }
        XCTAssertEqual(try h.send("POST", "/upload/drive/v3/files?uploadType=media", body: BufferedRequestBody([1])).status, 200)
        XCTAssertEqual(synced.withLock { $0 }, 1, "after seeding, content is synced one upload at a time again")
    }
}
