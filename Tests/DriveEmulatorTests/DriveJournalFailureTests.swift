import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

/// A journal line that cannot be written is an error answer, never a silent loss (issue 7): the
/// request fails with Google's 500, the store stays as it was (in memory and after a restart), and
/// a torn line never swallows the record after it.
final class DriveJournalFailureTests: XCTestCase {
    var h: DriveHarness!
    override func setUpWithError() throws { h = try DriveHarness() }
    override func tearDown() { h.shutdown() }

    /// Fails every journal append, writing `torn` bytes of each line first.
    func failAppends(errno code: Int32, torn: Int = 0) {
        h.service.store.journalFault.withLock { $0 = { _ in (written: torn, errno: code) } }
    }

    func healAppends() { h.service.store.journalFault.withLock { $0 = nil } }

    /// What a client can see of the store: every item's id, name, parent, size, md5, version; the
    /// start page token.
    func visibleState() throws -> [String] {
        let (_, list) = try h.call("GET", "/drive/v3/files?pageSize=1000&q=trashed%3Dfalse&fields=files(id,name,parents,size,md5Checksum,version)")
        var lines = (list["files"] as? [[String: Any]] ?? []).map { f in
            ["id", "name", "parents", "size", "md5Checksum", "version"].map { "\(f[$0] ?? "-")" }.joined(separator: " ")
        }.sorted()
        let (_, token) = try h.call("GET", "/drive/v3/changes/startPageToken")
        lines.append("token \(token["startPageToken"] ?? "-")")
        let (_, root) = try h.call("GET", "/drive/v3/files/root?fields=version")
        lines.append("root version \(root["version"] ?? "-")")
        return lines
    }

    /// The answer a client gets: the dispatcher turns what the handler threw into Google's error.
    func dispatched(_ method: String, _ target: String, headers: [(String, String)] = [], bytes: [UInt8] = []) -> HTTPResponse {
        var hh = HTTPHeaders(headers)
        hh.add("Authorization", "Bearer good")
        let request = HTTPRequest(method: method, target: target, headers: hh, body: BufferedRequestBody(bytes), baseURL: "http://127.0.0.1:9999")
        let route = h.service.route(for: request)!
        return RequestDispatcher.run(route, request, log: EmulatorLog(level: .info))
    }

    func testFailedAppendIsA500AndChangesNothing() throws {
        let folder = try h.create("folder", mime: "application/vnd.google-apps.folder")
        let file = try h.upload("kept.bin", [1, 2, 3], parent: folder)
        let (_, gen) = try h.call("GET", "/drive/v3/files/generateIds?count=2")
        let reserved = gen["ids"] as! [String]
        let before = try visibleState()

        for (code, torn) in [(ENOSPC, 0), (EIO, 17), (ENOSPC, 1)] {
            failAppends(errno: code, torn: torn)
            let mediaBody = Array("new content".utf8)
            let boundary = "jb"
            let multipart = Array("--\(boundary)\r\nContent-Type: application/json\r\n\r\n{\"name\":\"lost.bin\",\"id\":\"\(reserved[0])\",\"parents\":[\"\(folder)\"]}\r\n--\(boundary)\r\nContent-Type: application/octet-stream\r\n\r\n".utf8)
                + mediaBody + Array("\r\n--\(boundary)--\r\n".utf8)
            let attempts: [HTTPResponse] = [
                dispatched("POST", "/upload/drive/v3/files?uploadType=multipart", headers: [("Content-Type", "multipart/related; boundary=\(boundary)")], bytes: multipart),
                dispatched("POST", "/drive/v3/files", headers: [("Content-Type", "application/json")], bytes: Array("{\"name\":\"lost folder\"}".utf8)),
                dispatched("PATCH", "/drive/v3/files/\(file)?addParents=root&removeParents=\(folder)", headers: [("Content-Type", "application/json")],
                           bytes: Array("{\"name\":\"renamed.bin\"}".utf8)),
                dispatched("PATCH", "/upload/drive/v3/files/\(file)?uploadType=media", bytes: mediaBody),
                dispatched("DELETE", "/drive/v3/files/\(folder)"),
                dispatched("GET", "/drive/v3/files/generateIds?count=5"),
            ]
            for (i, r) in attempts.enumerated() {
                XCTAssertEqual(r.status, 500, "attempt \(i), errno \(code)")
                let error = DriveHarness.object(r)["error"] as? [String: Any]
                XCTAssertEqual((error?["errors"] as? [[String: Any]])?.first?["reason"] as? String, "backendError", "attempt \(i)")
            }
            XCTAssertEqual(try visibleState(), before, "errno \(code), torn \(torn)")
            XCTAssertEqual(DriveHarness.bytes(try h.send("GET", "/drive/v3/files/\(file)?alt=media")), [1, 2, 3])
        }

        // The store works again once the disk does; the reserved ID was never consumed.
        healAppends()
        let (status, made) = try h.call("POST", "/drive/v3/files", json: ["id": reserved[0], "name": "after.txt", "parents": [folder]])
        XCTAssertEqual(status, 200)
        XCTAssertEqual(made["id"] as? String, reserved[0])
        let after = try visibleState()
        XCTAssertNotEqual(after, before)

        // A restart replays exactly what was answered with success: no torn line ate the last record.
        try h.restart()
        XCTAssertEqual(try visibleState(), after)
        XCTAssertEqual(try h.call("POST", "/drive/v3/files", json: ["id": reserved[1], "name": "second"]).0, 200)
        let referenced = try h.service.store.read { s in Set(s.data.items.values.flatMap(\.allContentFiles)) }
        let onDisk = Set(try FileManager.default.contentsOfDirectory(atPath: h.service.store.contentDirectory.path))
        XCTAssertEqual(onDisk, referenced, "content of failed writes is not left behind after a restart")
    }

    /// A resumable upload whose completing chunk cannot be journaled is a 500; the session keeps
    /// its bytes' absence honest (the client starts over) and the store holds no file for it.
    func testFailedAppendOnTheFinalChunkOfAResumableUpload() throws {
        let before = try visibleState()
        let r = try h.send("POST", "/upload/drive/v3/files?uploadType=resumable", headers: [("Content-Type", "application/json")],
                           bytes: Array("{\"name\":\"resumable.bin\"}".utf8))
        let session = String(try XCTUnwrap(r.headers["Location"]).dropFirst("http://127.0.0.1:9999".count))
        failAppends(errno: ENOSPC, torn: 5)
        let content: [UInt8] = Array(repeating: 7, count: 1000)
        XCTAssertEqual(dispatched("PUT", session, headers: [("Content-Range", "bytes 0-999/1000")], bytes: content).status, 500)
        XCTAssertEqual(try visibleState(), before)
        healAppends()
        // A new session stores the file whole.
        let again = try h.send("POST", "/upload/drive/v3/files?uploadType=resumable&fields=id,size,md5Checksum",
                               headers: [("Content-Type", "application/json")], bytes: Array("{\"name\":\"resumable.bin\"}".utf8))
        let second = String(try XCTUnwrap(again.headers["Location"]).dropFirst("http://127.0.0.1:9999".count))
        let done = try h.send("PUT", second, headers: [("Content-Range", "bytes 0-999/1000")], bytes: content)
        XCTAssertEqual(done.status, 200)
        XCTAssertEqual(DriveHarness.object(done)["md5Checksum"] as? String, Digest.hex(.md5, of: content))
        try h.restart()
        XCTAssertEqual(try visibleState().count, before.count + 1)
    }
}
