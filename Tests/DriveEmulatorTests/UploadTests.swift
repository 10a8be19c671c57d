import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

final class UploadTests: XCTestCase {
    var h: DriveHarness!
    override func setUpWithError() throws { h = try DriveHarness() }
    override func tearDown() { h.shutdown() }

    func pattern(_ n: Int, seed: UInt8 = 0) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) } }

    func download(_ id: String) throws -> [UInt8] {
        let r = try h.send("GET", "/drive/v3/files/\(id)?alt=media")
        XCTAssertEqual(r.status, 200)
        return DriveHarness.bytes(r)
    }

    func checkSums(_ id: String, _ content: [UInt8], file: StaticString = #filePath, line: UInt = #line) throws {
        let (_, f) = try h.call("GET", "/drive/v3/files/\(id)?fields=size,md5Checksum,sha1Checksum,sha256Checksum")
        XCTAssertEqual(f["size"] as? String, String(content.count), file: file, line: line)
        XCTAssertEqual(f["md5Checksum"] as? String, Digest.hex(.md5, of: content), file: file, line: line)
        XCTAssertEqual(f["sha1Checksum"] as? String, Digest.hex(.sha1, of: content), file: file, line: line)
        XCTAssertEqual(f["sha256Checksum"] as? String, Digest.hex(.sha256, of: content), file: file, line: line)
        XCTAssertEqual(try download(id), content, file: file, line: line)
    }

    func testMediaUploadCreatesAndUpdates() throws {
        let content = pattern(100_000)
        let r = try h.send("POST", "/upload/drive/v3/files?uploadType=media&fields=id,name,mimeType",
                           headers: [("Content-Type", "image/png")], body: PiecewiseBody(content))
        XCTAssertEqual(r.status, 200)
        let f = DriveHarness.object(r)
        XCTAssertEqual(f["name"] as? String, "Untitled")
        XCTAssertEqual(f["mimeType"] as? String, "image/png")
        let id = f["id"] as! String
        try checkSums(id, content)
        let (_, before) = try h.call("GET", "/drive/v3/files/\(id)?fields=headRevisionId,version")
        let newer = pattern(5000, seed: 9)
        h.clock.advance(60)
        let u = try h.send("PATCH", "/upload/drive/v3/files/\(id)?uploadType=media&fields=headRevisionId,version,modifiedTime",
                           bytes: newer)
        XCTAssertEqual(u.status, 200)
        let after = DriveHarness.object(u)
        XCTAssertNotEqual(after["headRevisionId"] as? String, before["headRevisionId"] as? String)
        XCTAssertGreaterThan(Int(after["version"] as! String)!, Int(before["version"] as! String)!)
        XCTAssertEqual(after["modifiedTime"] as? String, RFC3339.format(millis: 1_700_000_060_000))
        try checkSums(id, newer)
    }

    func multipartBody(boundary: String, newline: String, metadata: String, media: [UInt8], mediaType: String = "text/plain") -> [UInt8] {
        let nl = newline
        var b = Array("--\(boundary)\(nl)Content-Type: application/json; charset=UTF-8\(nl)\(nl)\(metadata)\(nl)--\(boundary)\(nl)Content-Type: \(mediaType)\(nl)\(nl)".utf8)
        b += media
        b += Array("\(nl)--\(boundary)--\(nl)".utf8)
        return b
    }

    func testMultipartBareLFQuotedBoundaryAndCRLFChunked() throws {
        let folder = try h.create("in", mime: "application/vnd.google-apps.folder")
        // google-api-python-client: bare LF, a quoted boundary containing '='.
        let content1 = Array("line one\nline two\r\n--not-a-boundary\n".utf8) + pattern(70_000)
        let boundary1 = "===============1234567890=="
        let body1 = multipartBody(boundary: boundary1, newline: "\n", metadata: "{\"name\": \"py.bin\", \"parents\": [\"\(folder)\"]}",
                                  media: content1, mediaType: "application/octet-stream")
        let r1 = try h.send("POST", "/upload/drive/v3/files?uploadType=multipart&alt=json&fields=id,name,parents",
                            headers: [("Content-Type", "multipart/related; boundary=\"\(boundary1)\"")], body: PiecewiseBody(body1))
        XCTAssertEqual(r1.status, 200, "\(DriveHarness.object(r1))")
        let f1 = DriveHarness.object(r1)
        XCTAssertEqual(f1["name"] as? String, "py.bin")
        XCTAssertEqual(f1["parents"] as? [String], [folder])
        try checkSums(f1["id"] as! String, content1)

        // rclone: CRLF, bare boundary, chunked (no declared length), modifiedTime with 9 digits.
        let content2 = pattern(300_000, seed: 3) + Array("\r\n".utf8)
        let body2 = multipartBody(boundary: "b1b2b3", newline: "\r\n",
                                  metadata: "{\"name\":\"r.txt\",\"modifiedTime\":\"2021-01-01T00:00:00.123456789Z\"}", media: content2)
        let r2 = try h.send("POST", "/upload/drive/v3/files?uploadType=multipart&fields=id,mimeType,modifiedTime",
                            headers: [("Content-Type", "multipart/related; boundary=b1b2b3"), ("Transfer-Encoding", "chunked")],
                            body: PiecewiseBody(body2, declared: false))
        XCTAssertEqual(r2.status, 200)
        let f2 = DriveHarness.object(r2)
        XCTAssertEqual(f2["mimeType"] as? String, "text/plain")
        XCTAssertEqual(f2["modifiedTime"] as? String, "2021-01-01T00:00:00.123Z")
        try checkSums(f2["id"] as! String, content2)

        // curl -F: multipart/form-data.
        let form = Array("--XyZ\r\nContent-Disposition: form-data; name=\"metadata\"\r\nContent-Type: application/json\r\n\r\n{\"name\":\"form.txt\"}\r\n--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\nContent-Type: text/plain\r\n\r\nhi\r\n--XyZ--\r\n".utf8)
        let r3 = try h.send("POST", "/upload/drive/v3/files?uploadType=multipart", headers: [("Content-Type", "multipart/form-data; boundary=XyZ")], bytes: form)
        XCTAssertEqual(r3.status, 200)
        try checkSums(DriveHarness.object(r3)["id"] as! String, Array("hi".utf8))

        // Multipart update of content and name.
        let id = f1["id"] as! String
        let body4 = multipartBody(boundary: "u", newline: "\r\n", metadata: "{\"name\":\"renamed.bin\"}", media: [1, 2, 3])
        let r4 = try h.send("PATCH", "/upload/drive/v3/files/\(id)?uploadType=multipart&fields=name",
                            headers: [("Content-Type", "multipart/related; boundary=u")], bytes: body4)
        XCTAssertEqual(DriveHarness.object(r4)["name"] as? String, "renamed.bin")
        try checkSums(id, [1, 2, 3])

        // Broken bodies are 400s.
        for (ct, body) in [("multipart/related", Array("x".utf8)), ("multipart/related; boundary=q", Array("--q\r\n\r\n{}\r\n".utf8)),
                           ("multipart/related; boundary=q", Array("garbage".utf8))] {
            let r = try h.send("POST", "/upload/drive/v3/files?uploadType=multipart", headers: [("Content-Type", ct)], bytes: body)
            XCTAssertEqual(r.status, 400, ct)
        }
        XCTAssertEqual(try h.send("POST", "/upload/drive/v3/files?uploadType=bogus", bytes: []).status, 400)
    }

    func initiate(_ target: String = "/upload/drive/v3/files?uploadType=resumable&fields=id,name,md5Checksum,size",
                  method: String = "POST", metadata: String = "{\"name\":\"big.bin\"}", length: Int? = nil) throws -> String {
        var headers = [("Content-Type", "application/json; charset=UTF-8"), ("X-Upload-Content-Type", "application/octet-stream")]
        if let length { headers.append(("X-Upload-Content-Length", String(length))) }
        let r = try h.send(method, target, headers: headers, bytes: Array(metadata.utf8))
        XCTAssertEqual(r.status, 200)
        XCTAssertTrue(DriveHarness.bytes(r).isEmpty)
        let location = try XCTUnwrap(r.headers["Location"])
        XCTAssertTrue(location.hasPrefix("http://127.0.0.1:9999/upload/drive/v3/files"), location)
        XCTAssertTrue(location.contains("upload_id="))
        XCTAssertTrue(location.contains("uploadType=resumable"))
        return String(location.dropFirst("http://127.0.0.1:9999".count))
    }

    func put(_ session: String, _ bytes: [UInt8], range: String?, method: String = "PUT", truncateAfter: Int? = nil) throws -> HTTPResponse {
        try h.send(method, session, headers: range.map { [("Content-Range", $0)] } ?? [], body: PiecewiseBody(bytes, truncateAfter: truncateAfter))
    }

    func testResumableInSeveralChunks() throws {
        let chunk = 256 * 1024
        let content = pattern(3 * chunk + 1234)
        let session = try initiate(length: content.count)
        XCTAssertTrue(session.contains("fields=id%2Cname%2Cmd5Checksum%2Csize") || session.contains("fields=id,name,md5Checksum,size"), session)
        // Probe before anything: 308 without Range.
        let p0 = try put(session, [], range: "bytes */\(content.count)")
        XCTAssertEqual(p0.status, 308)
        XCTAssertNil(p0.headers["Range"])
        let r1 = try put(session, Array(content[0..<chunk]), range: "bytes 0-\(chunk - 1)/\(content.count)")
        XCTAssertEqual(r1.status, 308)
        XCTAssertEqual(r1.headers["Range"], "bytes=0-\(chunk - 1)")
        // rclone sends chunks by POST, with an unknown total.
        let r2 = try put(session, Array(content[chunk..<(2 * chunk)]), range: "bytes \(chunk)-\(2 * chunk - 1)/*", method: "POST")
        XCTAssertEqual(r2.status, 308)
        XCTAssertEqual(r2.headers["Range"], "bytes=0-\(2 * chunk - 1)")
        // Not a multiple of 256 KiB and not the last: 400.
        let bad = try put(session, Array(content[(2 * chunk)..<(2 * chunk + 1000)]), range: "bytes \(2 * chunk)-\(2 * chunk + 999)/*")
        XCTAssertEqual(bad.status, 400)
        // Beyond what is held: 400 with Google's wording.
        let gap = try put(session, Array(content[(3 * chunk)...]), range: "bytes \(3 * chunk)-\(content.count - 1)/\(content.count)")
        XCTAssertEqual(gap.status, 400)
        XCTAssertEqual(DriveHarness.message(DriveHarness.object(gap)),
                       "Invalid request.  According to the Content-Range header, the upload offset is \(3 * chunk) byte(s), which exceeds already uploaded size of \(2 * chunk) byte(s).")
        // Overlapping held bytes: the overlap is skipped.
        let overlapStart = chunk
        let last = try put(session, Array(content[overlapStart...]), range: "bytes \(overlapStart)-\(content.count - 1)/\(content.count)")
        XCTAssertEqual(last.status, 200)
        let f = DriveHarness.object(last)
        XCTAssertEqual(Set(f.keys), ["id", "name", "md5Checksum", "size"])
        XCTAssertEqual(f["md5Checksum"] as? String, Digest.hex(.md5, of: content))
        let id = f["id"] as! String
        try checkSums(id, content)
        // A probe after completion answers with the file again.
        let again = try put(session, [], range: "bytes */\(content.count)")
        XCTAssertEqual(again.status, 200)
        XCTAssertEqual(DriveHarness.object(again)["id"] as? String, id)
        // Unknown session.
        XCTAssertEqual(try put("/upload/drive/v3/files?uploadType=resumable&upload_id=nope", [], range: "bytes */*").status, 404)
    }

    func testResumableInterruptedThenResumedAfterProbe() throws {
        let chunk = 256 * 1024
        let content = pattern(2 * chunk + 777, seed: 5)
        let session = try initiate(metadata: "{\"name\":\"resume.bin\"}")
        // The whole thing in one request, cut off after 300,000 bytes.
        XCTAssertThrowsError(try put(session, content, range: "bytes 0-\(content.count - 1)/\(content.count)", truncateAfter: 300_000)) {
            XCTAssertEqual($0 as? HTTPBodyError, .truncated)
        }
        let probe = try put(session, [], range: "bytes */\(content.count)")
        XCTAssertEqual(probe.status, 308)
        XCTAssertEqual(probe.headers["Range"], "bytes=0-299999")
        // The emulator restarts in between: the session survives.
        try h.restart()
        let probe2 = try put(session, [], range: "bytes */*")
        XCTAssertEqual(probe2.headers["Range"], "bytes=0-299999")
        let rest = try put(session, Array(content[300_000...]), range: "bytes 300000-\(content.count - 1)/\(content.count)")
        XCTAssertEqual(rest.status, 200, "\(DriveHarness.object(rest))")
        try checkSums(DriveHarness.object(rest)["id"] as! String, content)
    }

    func testResumableEmptyFileUpdateAndWholeBody() throws {
        let session = try initiate(metadata: "{\"name\":\"empty\"}", length: 0)
        let r = try put(session, [], range: "bytes */0")
        XCTAssertEqual(r.status, 200)
        let id = DriveHarness.object(r)["id"] as! String
        try checkSums(id, [])
        // Update through a resumable session (PATCH initiation), whole body without Content-Range.
        let upd = try initiate("/upload/drive/v3/files/\(id)?uploadType=resumable&fields=id,name,size", method: "PATCH",
                               metadata: "{\"name\":\"not empty\"}")
        XCTAssertTrue(upd.hasPrefix("/upload/drive/v3/files/\(id)?"))
        let done = try put(upd, Array("abc".utf8), range: nil)
        XCTAssertEqual(done.status, 200)
        XCTAssertEqual(DriveHarness.object(done)["name"] as? String, "not empty")
        try checkSums(id, Array("abc".utf8))
        // /resumable/upload/... and an empty initiation body.
        let s2 = try initiate("/resumable/upload/drive/v3/files?uploadType=resumable", metadata: "")
        let d2 = try put(s2, [9], range: "bytes 0-0/1")
        XCTAssertEqual(DriveHarness.object(d2)["name"] as? String, "Untitled")
        // X-GUploader-No-308.
        let s3 = try initiate()
        let r3 = try h.send("PUT", s3, headers: [("Content-Range", "bytes 0-262143/*"), ("X-GUploader-No-308", "yes")],
                            bytes: pattern(262_144))
        XCTAssertEqual(r3.status, 200)
        XCTAssertEqual(r3.headers["X-Http-Status-Code-Override"], "308")
        XCTAssertEqual(r3.headers["Range"], "bytes=0-262143")
        // Initiation validates the metadata up front.
        let bad = try h.send("POST", "/upload/drive/v3/files?uploadType=resumable", bytes: Array("{\"parents\":[\"1none\"]}".utf8))
        XCTAssertEqual(bad.status, 404)
    }

    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        return (Int(fields.count > 1 ? fields[1] : "0") ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    func testOneGiBResumableUploadKeepsMemoryFlat() throws {
        let total: Int64 = 1 << 30
        let chunk: Int64 = 256 << 20
        let session = try initiate(length: Int(total))
        let before = UploadTests.residentBytes()
        var peak = before
        var offset: Int64 = 0
        var last: HTTPResponse?
        while offset < total {
            let end = min(offset + chunk, total)
            let shifted = ShiftedBody(base: offset, count: end - offset)
            // Sampled while the handler reads, so a handler that buffers and frees is still caught.
            shifted.onProgress = { peak = max(peak, UploadTests.residentBytes()) }
            last = try h.send("PUT", session, headers: [("Content-Range", "bytes \(offset)-\(end - 1)/\(total)")], body: shifted)
            peak = max(peak, UploadTests.residentBytes())
            offset = end
        }
        XCTAssertEqual(last?.status, 200)
        let f = DriveHarness.object(last!)
        XCTAssertEqual(f["size"] as? String, String(total))
        XCTAssertLessThan(peak - before, 64 << 20, "RSS grew by \((peak - before) >> 20) MiB")
        // Ranged read from the end.
        let id = f["id"] as! String
        let tail = try h.send("GET", "/drive/v3/files/\(id)?alt=media", headers: [("Range", "bytes=-4")])
        XCTAssertEqual(tail.status, 206)
        XCTAssertEqual(DriveHarness.bytes(tail), [UInt8](repeating: UInt8(truncatingIfNeeded: (total - 1) >> 12), count: 4))
    }

    /// `count` bytes generated on the fly from absolute offset `base` (byte = offset >> 12), never materialised.
    final class ShiftedBody: HTTPRequestBody {
        let base: Int64, count: Int64
        var sent: Int64 = 0
        var onProgress: (() -> Void)?
        init(base: Int64, count: Int64) { self.base = base; self.count = count }
        var declaredLength: Int64? { count }
        func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            let n = Int(min(Int64(buffer.count), count - sent))
            guard n > 0 else { return 0 }
            var i = 0
            while i < n {
                let pos = base + sent + Int64(i)
                let run = min(n - i, Int(((pos >> 12) + 1) << 12 - pos))
                memset(buffer.baseAddress! + i, Int32(UInt8(truncatingIfNeeded: pos >> 12)), run)
                i += run
            }
            if (sent >> 24) != ((sent + Int64(n)) >> 24) { onProgress?() }
            sent += Int64(n)
            return n
        }
    }

    /// Hostile Content-Range values are 400s, never a crash.
    func testMalformedContentRanges() throws {
        let session = try initiate()
        for range in ["bytes 5-2/10", "bytes a-b/c", "bytes 0-9223372036854775807/*", "bytes 0-1/9223372036854775807",
                      "bytes 9223372036854775806-9223372036854775807/*", "bytes */-1", "octets 0-1/2", "bytes 0-10/5", "bytes", ""] {
            let r = try put(session, [1, 2], range: range)
            XCTAssertEqual(r.status, 400, range)
        }
        let huge = try h.send("POST", "/upload/drive/v3/files?uploadType=resumable", headers: [("X-Upload-Content-Length", "99999999999999999999")], bytes: [])
        XCTAssertEqual(huge.status, 400)
    }

    /// The session URI is the credential: chunks and probes need no Authorization, and an access
    /// token that expired mid-upload does not matter. An unknown session is still a 404.
    func testSessionRequestsNeedNoAuthorization() throws {
        let chunk = 256 * 1024
        let content = pattern(chunk + 100, seed: 4)
        let session = try initiate(length: content.count)
        func send(_ bytes: [UInt8], range: String, auth: String?) throws -> HTTPResponse {
            try h.send("PUT", session, headers: [("Content-Range", range)], body: PiecewiseBody(bytes), auth: auth)
        }
        let first = try send(Array(content[0..<chunk]), range: "bytes 0-\(chunk - 1)/\(content.count)", auth: nil)
        XCTAssertEqual(first.status, 308, "\(DriveHarness.object(first))")
        let probe = try send([], range: "bytes */\(content.count)", auth: nil)
        XCTAssertEqual(probe.status, 308)
        XCTAssertEqual(probe.headers["Range"], "bytes=0-\(chunk - 1)")
        let expiredProbe = try send([], range: "bytes */\(content.count)", auth: "Bearer expired")
        XCTAssertEqual(expiredProbe.status, 308)
        let last = try send(Array(content[chunk...]), range: "bytes \(chunk)-\(content.count - 1)/\(content.count)", auth: "Bearer expired")
        XCTAssertEqual(last.status, 200, "\(DriveHarness.object(last))")
        try checkSums(DriveHarness.object(last)["id"] as! String, content)
        // Unknown session: 404 with or without credentials.
        for auth in [nil, "Bearer expired", "Bearer good"] {
            let r = try h.send("PUT", "/upload/drive/v3/files?uploadType=resumable&upload_id=nope", headers: [("Content-Range", "bytes */*")],
                               body: PiecewiseBody([]), auth: auth)
            XCTAssertEqual(r.status, 404, String(describing: auth))
        }
        // Starting a session still needs credentials.
        let anonymous = try h.send("POST", "/upload/drive/v3/files?uploadType=resumable", body: PiecewiseBody(Array("{}".utf8)), auth: nil)
        XCTAssertEqual(anonymous.status, 401)
    }

    /// A chunk whose complete body is shorter than its Content-Range is a 400 and keeps nothing,
    /// whether the length was declared or the body was chunked; a connection cut mid-body keeps what arrived.
    func testChunkShorterThanItsRangeIs400() throws {
        let chunk = 256 * 1024
        let content = pattern(2 * chunk, seed: 8)
        let session = try initiate(length: content.count)
        let range = "bytes 0-\(chunk - 1)/\(content.count)"
        let declared = try h.send("PUT", session, headers: [("Content-Range", range)], body: PiecewiseBody(Array(content[0..<1000])))
        XCTAssertEqual(declared.status, 400)
        XCTAssertEqual(DriveHarness.reason(DriveHarness.object(declared)), "badRequest")
        XCTAssertNil(try put(session, [], range: "bytes */\(content.count)").headers["Range"], "nothing kept")
        let chunked = try h.send("PUT", session, headers: [("Content-Range", range), ("Transfer-Encoding", "chunked")],
                                 body: PiecewiseBody(Array(content[0..<(chunk - 1)]), declared: false))
        XCTAssertEqual(chunked.status, 400)
        XCTAssertNil(try put(session, [], range: "bytes */\(content.count)").headers["Range"], "nothing kept")
        XCTAssertThrowsError(try put(session, Array(content[0..<chunk]), range: range, truncateAfter: 5000)) {
            XCTAssertEqual($0 as? HTTPBodyError, .truncated)
        }
        XCTAssertEqual(try put(session, [], range: "bytes */\(content.count)").headers["Range"], "bytes=0-4999", "a cut connection keeps its bytes")
        let rest = try put(session, Array(content[5000...]), range: "bytes 5000-\(content.count - 1)/\(content.count)")
        XCTAssertEqual(rest.status, 200, "\(DriveHarness.object(rest))")
        try checkSums(DriveHarness.object(rest)["id"] as! String, content)
    }

    func testSessionsExpireAfterAWeek() throws {
        let session = try initiate()
        XCTAssertEqual(try put(session, [], range: "bytes */*").status, 308)
        h.clock.advance(6 * 24 * 3600)
        try h.restart()
        XCTAssertEqual(try put(session, [], range: "bytes */*").status, 308)
        h.clock.advance(2 * 24 * 3600)
        XCTAssertEqual(try put(session, [], range: "bytes */*").status, 404)
        try h.restart()
        XCTAssertEqual(try put(session, [], range: "bytes */*").status, 404)
    }
}
