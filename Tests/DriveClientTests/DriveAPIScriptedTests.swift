import DriveClient
import DriveSupport
import XCTest

/// DriveAPI logic against a scripted transport: idempotent creates, resumable protocol, paging,
/// download resume. (The same operations run against the emulator in DriveAPIEmulatorTests.)
final class DriveAPIScriptedTests: XCTestCase {
    var time: ManualTimeSource!
    var transport: ScriptedTransport!
    var api: DriveAPI!

    override func setUp() {
        time = ManualTimeSource()
        transport = ScriptedTransport()
        let executor = DriveRequestExecutor(transport: transport, tokens: TokenManager(grant: CountingGrant(time: time), time: time),
                                            pacer: nil, retryPolicy: RetryPolicy(random: FixedRandom(value: 0.5)), time: time)
        api = DriveAPI(executor: executor, endpoints: .singleHost("http://drive.test/"), chunkSize: 256 * 1024,
                       multipartLimit: 1000, idBatchSize: 3)
    }

    private func fileJSON(id: String, name: String, md5: String? = nil, size: Int? = nil) -> String {
        var fields = #""id":"\#(id)","name":"\#(name)","mimeType":"application/octet-stream","parents":["root1"],"modifiedTime":"2024-01-02T03:04:05.678Z","version":"7""#
        if let md5 { fields += #","md5Checksum":"\#(md5)""# }
        if let size { fields += #","size":"\#(size)""# }
        return "{\(fields)}"
    }

    private func pushIds(_ ids: [String]) {
        transport.push(status: 200, json: #"{"kind":"drive#generatedIds","space":"drive","ids":[\#(ids.map { "\"\($0)\"" }.joined(separator: ","))]}"#)
    }

    func testLostCreateResponseIsNotADuplicate() throws {
        let content: [UInt8] = Array("hello".utf8)
        let md5 = Digest.hex(.md5, of: content)
        pushIds(["idA", "idB", "idC"])
        // The first create lands on the server but its answer is lost; the retry meets 409 fileIdInUse.
        transport.push(error: .connectionLost("reset after the request was sent"))
        transport.pushGoogleError(409, reason: "fileIdInUse", message: "A file already exists with the provided ID.")
        transport.push(status: 200, json: fileJSON(id: "idC", name: "a.txt", md5: md5, size: 5))

        let file = try api.createFile(name: "a.txt", parent: "root1", source: .bytes(content))
        XCTAssertEqual(file.id, "idC")
        XCTAssertEqual(file.size, 5)

        let creates = transport.requests.filter { $0.method == "POST" }
        XCTAssertEqual(creates.count, 2)
        for create in creates {
            guard case .bytes(let body) = create.body else { return XCTFail("multipart body expected") }
            XCTAssertTrue(String(decoding: body, as: UTF8.self).contains(#""id":"idC""#), "both attempts carry the same pooled ID")
            XCTAssertTrue(create.url.contains("upload/drive/v3/files?uploadType=multipart"))
        }
        XCTAssertEqual(transport.requests.last?.method, "GET")
        XCTAssertTrue(transport.requests.last!.url.hasPrefix("http://drive.test/drive/v3/files/idC?fields="))
    }

    func testConflictOnTheFirstAttemptIsAnError() {
        pushIds(["x1"])
        transport.pushGoogleError(409, reason: "fileIdInUse")
        XCTAssertThrowsError(try api.createFolder(name: "d", parent: "root1")) { error in
            guard case .conflict = error as? DriveError else { return XCTFail("\(error)") }
        }
    }

    func testIDsArePooled() throws {
        pushIds(["a", "b", "c"])
        for id in ["c", "b", "a"] {
            transport.push { request in
                guard case .bytes(let body) = request.body, String(decoding: body, as: UTF8.self).contains("\"id\":\"\(id)\"") else {
                    throw TransportError.other(code: 0, message: "expected id \(id)")
                }
                return ScriptedTransport.response(200, body: Array(#"{"id":"\#(id)","name":"d","mimeType":"application/vnd.google-apps.folder"}"#.utf8))
            }
        }
        for _ in 0..<3 { XCTAssertTrue(try api.createFolder(name: "d", parent: "root1").isFolder) }
        XCTAssertEqual(transport.requests.filter { $0.url.contains("generateIds") }.count, 1)
    }

    func testResumableUploadProbesAfterAFailureAndContinuesFromTheServersRange() throws {
        let size = 600 * 1024
        let content = (0..<size).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let md5 = Digest.hex(.md5, of: content)
        pushIds(["up1"])
        transport.push(status: 200, headers: ["location": "http://drive.test/upload/drive/v3/files?uploadType=resumable&upload_id=S1"])
        transport.push(status: 308, headers: ["range": "bytes=0-262143"])
        transport.push(error: .connectionLost("reset mid-chunk"))
        transport.push(status: 308, headers: ["range": "bytes=0-393215"]) // the probe: part of chunk 2 arrived
        transport.push(status: 200, json: fileJSON(id: "up1", name: "big", md5: md5, size: size))

        let file = try api.createFile(name: "big", parent: "root1", source: .bytes(content))
        XCTAssertEqual(file.id, "up1")
        let puts = transport.requests.filter { $0.method == "PUT" }
        XCTAssertEqual(puts.map { $0.header("Content-Range") }, [
            "bytes 0-262143/614400", "bytes 262144-524287/614400", "bytes */614400", "bytes 393216-614399/614400",
        ])
        XCTAssertTrue(puts.allSatisfy { $0.url.hasSuffix("upload_id=S1") })
        guard case .bytes(let last) = puts.last!.body else { return XCTFail() }
        XCTAssertEqual(last, Array(content[393216...]))
        let initiation = transport.requests.first { $0.url.contains("uploadType=resumable") }!
        XCTAssertEqual(initiation.header("X-Upload-Content-Length"), String(size))
    }

    func testResumableSessionThatExpiredStartsOver() throws {
        let content = [UInt8](repeating: 9, count: 300 * 1024)
        let md5 = Digest.hex(.md5, of: content)
        pushIds(["up2"])
        transport.push(status: 200, headers: ["location": "http://drive.test/s/1"])
        transport.pushGoogleError(404, reason: "notFound") // session gone
        transport.push(status: 200, headers: ["location": "http://drive.test/s/2"])
        transport.push(status: 308, headers: ["range": "bytes=0-262143"])
        transport.push(status: 200, json: fileJSON(id: "up2", name: "f", md5: md5))
        XCTAssertEqual(try api.createFile(name: "f", parent: "root1", source: .bytes(content)).id, "up2")
        XCTAssertEqual(transport.requests.filter { $0.method == "PUT" }.map(\.url), ["http://drive.test/s/1", "http://drive.test/s/2", "http://drive.test/s/2"])
    }

    func testChecksumMismatchIsReported() {
        pushIds(["m1"])
        transport.push(status: 200, json: fileJSON(id: "m1", name: "x", md5: "00000000000000000000000000000000"))
        XCTAssertThrowsError(try api.createFile(name: "x", parent: "root1", source: .bytes([1, 2, 3]))) { error in
            XCTAssertEqual(error as? DriveError, .checksumMismatch(expected: Digest.hex(.md5, of: [UInt8]([1, 2, 3])), actual: "00000000000000000000000000000000"))
        }
    }

    func testListFollowsPagesIncludingEmptyOnes() throws {
        transport.push(status: 200, json: #"{"nextPageToken":"p2","incompleteSearch":false,"files":[\#(fileJSON(id: "1", name: "a"))]}"#)
        transport.push(status: 200, json: #"{"nextPageToken":"p3","files":[]}"#)
        transport.push(status: 200, json: #"{"files":[\#(fileJSON(id: "2", name: "b")),\#(fileJSON(id: "3", name: "c"))]}"#)
        let files = try api.listChildren(of: "fold'er")
        XCTAssertEqual(files.map(\.id), ["1", "2", "3"])
        let urls = transport.requests.map(\.url)
        XCTAssertEqual(urls.count, 3)
        XCTAssertTrue(urls[0].contains("q=%27fold%5C%27er%27%20in%20parents%20and%20trashed%20%3D%20false"), urls[0])
        XCTAssertTrue(urls[0].contains("pageSize=1000"))
        XCTAssertTrue(urls[0].contains("fields=nextPageToken%2CincompleteSearch%2Cfiles%28"))
        XCTAssertTrue(urls[1].contains("pageToken=p2"))
        XCTAssertTrue(urls[2].contains("pageToken=p3"))
    }

    func testDownloadCutMidBodyResumesFromWhatArrived() throws {
        let content = (0..<10_000).map { UInt8(truncatingIfNeeded: $0) }
        transport.push { request in
            XCTAssertEqual(request.header("Range"), "bytes=100-")
            guard case .callback(let deliver) = request.sink else { throw TransportError.other(code: 0, message: "sink") }
            _ = content[100..<4000].withUnsafeBytes { deliver($0) }
            throw TransportError.connectionLost("reset")
        }
        transport.push { request in
            XCTAssertEqual(request.header("Range"), "bytes=4000-")
            return ScriptedTransport.response(206, headers: ["content-range": "bytes 4000-9999/10000"], body: Array(content[4000...]))
        }
        let data = try api.downloadData("f1", offset: 100)
        XCTAssertEqual(data, Array(content[100...]))
    }

    func testRangedDownloadAndEmptyFile() throws {
        transport.push { request in
            XCTAssertEqual(request.header("Range"), "bytes=10-19")
            return ScriptedTransport.response(206, body: Array(repeating: 5, count: 10))
        }
        XCTAssertEqual(try api.downloadData("f", offset: 10, length: 10), Array(repeating: 5, count: 10))
        transport.push(status: 416, headers: ["content-range": "bytes */0"], json: #"{"error":{"code":416,"message":"Request range not satisfiable","errors":[{"reason":"requestedRangeNotSatisfiable"}]}}"#)
        XCTAssertEqual(try api.downloadData("empty"), [])
    }

    func testDriveFileDecodesDrivesEncodings() throws {
        let json = #"{"id":"x","name":"n","mimeType":"text/plain","size":"12345678901","version":"42","modifiedTime":"2020-08-29T05:18:45.123Z","createdTime":"2020-08-29T05:18:45Z","trashed":false,"shortcutDetails":{"targetId":"t","targetMimeType":"text/plain"},"capabilities":{"canEdit":true}}"#
        let file = try JSONDecoder().decode(DriveFile.self, from: Data(json.utf8))
        XCTAssertEqual(file.size, 12_345_678_901)
        XCTAssertEqual(file.version, 42)
        XCTAssertEqual(file.modifiedTime, 1_598_678_325_123)
        XCTAssertEqual(file.createdTime, 1_598_678_325_000)
        XCTAssertEqual(file.shortcutDetails?.targetId, "t")
        XCTAssertEqual(file.capabilities?.canEdit, true)
        let again = try JSONDecoder().decode(DriveFile.self, from: JSONEncoder().encode(file))
        XCTAssertEqual(again, file)
        XCTAssertThrowsError(try JSONDecoder().decode(DriveFile.self, from: Data(#"{"id":"x","size":"big"}"#.utf8)))
    }

    func testQueryEscaping() {
        XCTAssertEqual(DriveQuery.quote(#"it's a \ name"#), #"'it\'s a \\ name'"#)
        XCTAssertEqual(DriveQuery.children(of: "abc"), "'abc' in parents and trashed = false")
        XCTAssertEqual(DriveQuery.child(named: "a'b", in: "p"), #"name = 'a\'b' and 'p' in parents and trashed = false"#)
    }

    func testEndpointsFromEnvironment() {
        let e = DriveEndpoints.fromEnvironment(["DRIVEFS_API_URL": "http://127.0.0.1:9000", "DRIVEFS_TOKEN_URL": "http://127.0.0.1:9000/token"])
        XCTAssertEqual(e.apiRoot, "http://127.0.0.1:9000/")
        XCTAssertEqual(e.driveBase, "http://127.0.0.1:9000/drive/v3/")
        XCTAssertEqual(e.uploadBase, "http://127.0.0.1:9000/upload/drive/v3/")
        XCTAssertEqual(e.tokenURL, "http://127.0.0.1:9000/token")
        XCTAssertEqual(e.authURL, DriveEndpoints.googleAuthURL)
        XCTAssertEqual(DriveEndpoints.fromEnvironment([:]), .google)
        XCTAssertEqual(DriveEndpoints.google.driveBase, "https://www.googleapis.com/drive/v3/")
    }
}
