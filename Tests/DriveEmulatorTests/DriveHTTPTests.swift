import DriveSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest
@testable import DriveEmulator

/// The Drive service behind the real HTTP server (`Emulator`), reached over loopback with URLSession.
final class DriveHTTPTests: XCTestCase {
    var emulator: Emulator!
    var drive: DriveService!
    var session: URLSession!

    override func setUpWithError() throws {
        drive = try DriveService(stateDirectory: nil, seedDirectory: nil, validator: StubValidator(), clock: SystemTimeSource())
        let service = drive!
        emulator = try Emulator(config: EmulatorConfig(port: 0), services: EmulatorServices(providers: [service], close: { service.close() }))
        try emulator.start()
        let config = URLSessionConfiguration.ephemeral
        config.timeoutIntervalForRequest = 30
        session = URLSession(configuration: config)
    }

    override func tearDown() {
        session.invalidateAndCancel()
        emulator.stop()
    }

    struct Reply {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:] }
        func header(_ name: String) -> String? { headers.first { $0.key.lowercased() == name.lowercased() }?.value }
    }

    func send(_ method: String, _ pathOrURL: String, headers: [String: String] = [:], body: [UInt8]? = nil, stream: Bool = false,
              auth: Bool = true) throws -> Reply {
        let url = URL(string: pathOrURL.hasPrefix("http") ? pathOrURL : emulator.baseURL + pathOrURL)!
        var request = URLRequest(url: url)
        request.httpMethod = method
        for (k, v) in headers { request.setValue(v, forHTTPHeaderField: k) }
        if auth { request.setValue("Bearer good", forHTTPHeaderField: "Authorization") }
        if let body {
            if stream { request.httpBodyStream = InputStream(data: Data(body)) } else { request.httpBody = Data(body) }
        }
        let done = DispatchSemaphore(value: 0)
        let result = Locked<Reply?>(nil)
        let failure = Locked<Error?>(nil)
        session.dataTask(with: request) { data, response, error in
            if let error { failure.withLock { $0 = error } }
            if let http = response as? HTTPURLResponse {
                var h: [String: String] = [:]
                for (k, v) in http.allHeaderFields { h["\(k)"] = "\(v)" }
                result.withLock { $0 = Reply(status: http.statusCode, headers: h, body: Array(data ?? Data())) }
            }
            done.signal()
        }.resume()
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success)
        if let error = failure.withLock({ $0 }) { throw error }
        return try XCTUnwrap(result.withLock { $0 })
    }

    func testCrudOverHTTP() throws {
        let root = try send("GET", "/drive/v3/files/root?fields=id&alt=json&prettyPrint=false")
        XCTAssertEqual(root.status, 200)
        let rootId = try XCTUnwrap(root.json["id"] as? String)
        let folder = try send("POST", "/drive/v3/files", headers: ["Content-Type": "application/json"],
                              body: Array("{\"name\":\"over http\",\"mimeType\":\"application/vnd.google-apps.folder\"}".utf8))
        XCTAssertEqual(folder.status, 200)
        let folderId = try XCTUnwrap(folder.json["id"] as? String)
        let q = FileResource.queryEscape("'\(rootId)' in parents and trashed = false")
        let list = try send("GET", "/drive/v3/files?q=\(q)&fields=files(id,name),nextPageToken")
        XCTAssertEqual((list.json["files"] as? [[String: Any]])?.compactMap { $0["id"] as? String }, [folderId])
        let missing = try send("GET", "/drive/v3/files/1nothing")
        XCTAssertEqual(missing.status, 404)
        XCTAssertEqual(((missing.json["error"] as? [String: Any])?["message"]) as? String, "File not found: 1nothing.")
        let noAuth = try send("GET", "/drive/v3/files", auth: false)
        XCTAssertEqual(noAuth.status, 401)
        let deleted = try send("DELETE", "/drive/v3/files/\(folderId)")
        XCTAssertEqual(deleted.status, 204)
    }

    func testChunkedMultipartAndRangedDownloadOverHTTP() throws {
        let content = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        var body = Array("--sep\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{\"name\":\"chunked.bin\"}\r\n--sep\r\nContent-Type: application/octet-stream\r\n\r\n".utf8)
        body += content + Array("\r\n--sep--\r\n".utf8)
        let created = try send("POST", "/upload/drive/v3/files?uploadType=multipart&fields=id,md5Checksum,size",
                               headers: ["Content-Type": "multipart/related; boundary=sep"], body: body, stream: true)
        XCTAssertEqual(created.status, 200, String(decoding: created.body, as: UTF8.self))
        XCTAssertEqual(created.json["md5Checksum"] as? String, Digest.hex(.md5, of: content))
        let id = try XCTUnwrap(created.json["id"] as? String)
        let ranged = try send("GET", "/drive/v3/files/\(id)?alt=media", headers: ["Range": "bytes=100000-"])
        XCTAssertEqual(ranged.status, 206)
        XCTAssertEqual(ranged.header("Content-Range"), "bytes 100000-299999/300000")
        XCTAssertEqual(ranged.body, Array(content[100_000...]))
        let empty = try send("POST", "/drive/v3/files?fields=id", headers: ["Content-Type": "application/json"], body: Array("{\"name\":\"e\"}".utf8))
        let emptyId = try XCTUnwrap(empty.json["id"] as? String)
        let r416 = try send("GET", "/drive/v3/files/\(emptyId)?alt=media", headers: ["Range": "bytes=0-1"])
        XCTAssertEqual(r416.status, 416)
        XCTAssertEqual(r416.header("Content-Range"), "bytes */0")
    }

    func testResumableOverHTTPUsesTheAbsoluteLocation() throws {
        let chunk = 256 * 1024
        let content = (0..<(2 * chunk + 10)).map { UInt8(truncatingIfNeeded: $0 >> 3) }
        let start = try send("POST", "/upload/drive/v3/files?uploadType=resumable&fields=id,size,md5Checksum",
                             headers: ["Content-Type": "application/json; charset=UTF-8", "X-Upload-Content-Length": String(content.count)],
                             body: Array("{\"name\":\"resumable.bin\"}".utf8))
        XCTAssertEqual(start.status, 200)
        let location = try XCTUnwrap(start.header("Location"))
        XCTAssertTrue(location.hasPrefix(emulator.baseURL + "/upload/drive/v3/files?"), location)
        let first = try send("PUT", location, headers: ["Content-Range": "bytes 0-\(chunk - 1)/\(content.count)"], body: Array(content[0..<chunk]))
        XCTAssertEqual(first.status, 308)
        XCTAssertEqual(first.header("Range"), "bytes=0-\(chunk - 1)")
        let probe = try send("PUT", location, headers: ["Content-Range": "bytes */\(content.count)"], body: [])
        XCTAssertEqual(probe.status, 308)
        XCTAssertEqual(probe.header("Range"), "bytes=0-\(chunk - 1)")
        let last = try send("POST", location, headers: ["Content-Range": "bytes \(chunk)-\(content.count - 1)/\(content.count)"],
                            body: Array(content[chunk...]))
        XCTAssertEqual(last.status, 200)
        XCTAssertEqual(last.json["size"] as? String, String(content.count))
        XCTAssertEqual(last.json["md5Checksum"] as? String, Digest.hex(.md5, of: content))
    }

    /// Sends raw bytes on a fresh connection and closes it without reading (a client that dies mid-upload).
    func sendRawAndHangUp(_ bytes: [UInt8]) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(emulator.port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        XCTAssertEqual(rc, 0)
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + off, bytes.count - off) }
            guard n > 0 else { break }
            off += n
        }
    }

    func testChunkCutByADisconnectKeepsWhatArrived() throws {
        let chunk = 256 * 1024
        let content = (0..<(2 * chunk)).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let start = try send("POST", "/upload/drive/v3/files?uploadType=resumable",
                             headers: ["Content-Type": "application/json"], body: Array("{\"name\":\"cut.bin\"}".utf8))
        let location = try XCTUnwrap(start.header("Location"))
        let path = String(location.dropFirst(emulator.baseURL.count))
        let head = "PUT \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(emulator.port)\r\nAuthorization: Bearer good\r\n"
            + "Content-Range: bytes 0-\(content.count - 1)/\(content.count)\r\nContent-Length: \(content.count)\r\n\r\n"
        try sendRawAndHangUp(Array(head.utf8) + Array(content[0..<100_000]))
        // The server notices the hang-up; then a probe says how much it kept.
        var held = ""
        for _ in 0..<100 {
            let probe = try send("PUT", location, headers: ["Content-Range": "bytes */\(content.count)"], body: [])
            XCTAssertEqual(probe.status, 308)
            held = probe.header("Range") ?? ""
            if held == "bytes=0-99999" { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        XCTAssertEqual(held, "bytes=0-99999")
        let rest = try send("PUT", location, headers: ["Content-Range": "bytes 100000-\(content.count - 1)/\(content.count)"],
                            body: Array(content[100_000...]))
        XCTAssertEqual(rest.status, 200)
        let id = try XCTUnwrap(rest.json["id"] as? String)
        XCTAssertEqual(try send("GET", "/drive/v3/files/\(id)?alt=media").body, content)
    }
}
