import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

/// The emulator stores exactly the bytes it was sent (issue 7): random payloads, including the
/// endings a multipart reader can get wrong, through every upload type and both delimiter styles.
final class UploadBytesPropertyTests: XCTestCase {
    var h: DriveHarness!
    override func setUpWithError() throws { h = try DriveHarness() }
    override func tearDown() { h.shutdown() }

    static let boundary = "===============4242424242424242=="
    static let chunk = 256 * 1024

    /// What was stored for `id`: size and md5 as reported, and the bytes as downloaded.
    func assertStored(_ response: HTTPResponse, _ sent: [UInt8], _ what: String,
                      file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(response.status, 200, "\(what): \(DriveHarness.object(response))", file: file, line: line)
        let f = DriveHarness.object(response)
        let id = try XCTUnwrap(f["id"] as? String, what, file: file, line: line)
        XCTAssertEqual(f["size"] as? String, String(sent.count), what, file: file, line: line)
        XCTAssertEqual(f["md5Checksum"] as? String, Digest.hex(.md5, of: sent), what, file: file, line: line)
        let d = try h.send("GET", "/drive/v3/files/\(id)?alt=media")
        XCTAssertEqual(DriveHarness.bytes(d), sent, what, file: file, line: line)
    }

    /// Random bytes of a random size, with one of the endings (or starts) that matter to a parser.
    static func payload(_ rng: inout SplitMix64) -> [UInt8] {
        let sizes = [0, 1, 2, 3, rng.next(below: 64), rng.next(below: 5000), rng.next(below: 70_000),
                     chunk - 1, chunk, chunk + 1 + rng.next(below: 2 * chunk)]
        let size = sizes[rng.next(below: sizes.count)]
        var bytes = (0..<size).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        let endings: [[UInt8]] = [[], [0x0D], [0x0A], [0x0D, 0x0A], [0x0D, 0x0D], [0x0A, 0x0D], Array("--".utf8),
                                  Array("\r\n--".utf8), Array("\n--".utf8), Array("--\(boundary)".utf8)]
        let ending = endings[rng.next(below: endings.count)]
        switch rng.next(below: 4) {
        case 0: bytes = Array("--\(boundary)".utf8) + bytes + ending  // the boundary itself as a prefix
        case 1: bytes = ending + bytes
        default: bytes += ending
        }
        return bytes
    }

    static func multipartBody(newline nl: String, metadata: String, media: [UInt8]) -> [UInt8] {
        var b = Array("--\(boundary)\(nl)Content-Type: application/json; charset=UTF-8\(nl)\(nl)\(metadata)\(nl)".utf8)
        b += Array("--\(boundary)\(nl)Content-Type: application/octet-stream\(nl)MIME-Version: 1.0\(nl)\(nl)".utf8)
        b += media
        b += Array("\(nl)--\(boundary)--\(nl)".utf8)
        return b
    }

    /// google-api-python-client's body, found by hand: bare LF everywhere and a media part ending in
    /// `\r` used to lose that byte (the `\r` was taken for the delimiter's).
    func testBareLFMultipartWhoseMediaEndsInCarriageReturn() throws {
        for media in [Array("abc\r".utf8), [0x0D], Array("x\r\r".utf8), Array("\r\n\r".utf8)] {
            let body = Self.multipartBody(newline: "\n", metadata: "{\"name\": \"cr.bin\"}", media: media)
            let r = try h.send("POST", "/upload/drive/v3/files?uploadType=multipart&fields=id,size,md5Checksum",
                               headers: [("Content-Type", "multipart/related; boundary=\"\(Self.boundary)\"")],
                               body: PiecewiseBody(body))
            try assertStored(r, media, "LF, media \(media)")
        }
    }

    func testEveryUploadTypeStoresExactlyTheBytesSent() throws {
        var rng = SplitMix64(seed: 0x7_0001)
        let fields = "fields=id,size,md5Checksum"
        for round in 0..<48 {
            let media = Self.payload(&rng)
            let what = "round \(round), \(media.count) bytes, ends \(media.suffix(3))"

            // uploadType=media, fixed length and chunked.
            for declared in [true, false] {
                let r = try h.send("POST", "/upload/drive/v3/files?uploadType=media&\(fields)",
                                   headers: [("Content-Type", "application/octet-stream")], body: PiecewiseBody(media, declared: declared))
                try assertStored(r, media, "media declared=\(declared) \(what)")
            }

            // multipart: both delimiter styles, fixed length and chunked.
            for newline in ["\n", "\r\n"] {
                for declared in [true, false] {
                    let body = Self.multipartBody(newline: newline, metadata: "{\"name\":\"p\(round)\"}", media: media)
                    let quoted = rng.next(below: 2) == 0 ? "\"\(Self.boundary)\"" : Self.boundary
                    let r = try h.send("POST", "/upload/drive/v3/files?uploadType=multipart&\(fields)",
                                       headers: [("Content-Type", "multipart/related; boundary=\(quoted)")],
                                       body: PiecewiseBody(body, declared: declared))
                    try assertStored(r, media, "multipart newline=\(Array(newline.utf8)) declared=\(declared) \(what)")
                }
            }

            // resumable in one chunk.
            let one = try initiate(name: "r1-\(round)", length: media.count)
            let range = media.isEmpty ? "bytes */0" : "bytes 0-\(media.count - 1)/\(media.count)"
            try assertStored(try h.send("PUT", one, headers: [("Content-Range", range)], body: PiecewiseBody(media)), media,
                             "resumable one chunk \(what)")

            // resumable in several: whole 256 KiB chunks with `bytes a-b/*`, then the rest with the total.
            let several = try initiate(name: "rn-\(round)", length: nil)
            var offset = 0
            while media.count - offset > Self.chunk {
                let n = Self.chunk * (1 + rng.next(below: (media.count - offset - 1) / Self.chunk))
                let r = try h.send("PUT", several, headers: [("Content-Range", "bytes \(offset)-\(offset + n - 1)/*")],
                                   body: PiecewiseBody(Array(media[offset..<(offset + n)]), declared: rng.next(below: 2) == 0))
                XCTAssertEqual(r.status, 308, what)
                offset += n
            }
            let lastRange = offset == media.count ? "bytes */\(media.count)" : "bytes \(offset)-\(media.count - 1)/\(media.count)"
            let last = try h.send("PUT", several, headers: [("Content-Range", lastRange)],
                                  body: PiecewiseBody(Array(media[offset...]), declared: rng.next(below: 2) == 0))
            try assertStored(last, media, "resumable several \(what)")

            // multipart update of an existing file, either style.
            let created = DriveHarness.object(last)["id"] as! String
            let updated = Self.payload(&rng)
            let body = Self.multipartBody(newline: rng.next(below: 2) == 0 ? "\n" : "\r\n", metadata: "{}", media: updated)
            let u = try h.send("PATCH", "/upload/drive/v3/files/\(created)?uploadType=multipart&\(fields)",
                               headers: [("Content-Type", "multipart/related; boundary=\"\(Self.boundary)\"")], body: PiecewiseBody(body))
            try assertStored(u, updated, "multipart update round \(round)")
        }
    }

    func initiate(name: String, length: Int?) throws -> String {
        var headers = [("Content-Type", "application/json; charset=UTF-8")]
        if let length { headers.append(("X-Upload-Content-Length", String(length))) }
        let r = try h.send("POST", "/upload/drive/v3/files?uploadType=resumable&fields=id,size,md5Checksum", headers: headers,
                           bytes: Array("{\"name\":\"\(name)\"}".utf8))
        XCTAssertEqual(r.status, 200)
        let location = try XCTUnwrap(r.headers["Location"])
        return String(location.dropFirst("http://127.0.0.1:9999".count))
    }
}
