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

    func testAboutReadsDrivesInt64StringsAndRefusesGarbage() throws {
        transport.push(status: 200, json: #"{"user":{"displayName":"Ann","emailAddress":"ann@example.com","permissionId":"9"},"storageQuota":{"limit":"16106127360","usage":"42","usageInDrive":"40","usageInDriveTrash":"2"},"maxUploadSize":"5242880000000","exportFormats":{"application/vnd.google-apps.document":["text/plain"]}}"#)
        let about = try api.about()
        XCTAssertEqual(about.emailAddress, "ann@example.com")
        XCTAssertEqual(about.storageLimit, 16_106_127_360)
        XCTAssertEqual(about.usageInDriveTrash, 2)
        XCTAssertEqual(about.maxUploadSize, 5_242_880_000_000)
        XCTAssertEqual(about.exportFormats["application/vnd.google-apps.document"], ["text/plain"])
        // Unlimited storage: no limit.
        transport.push(status: 200, json: #"{"user":{"displayName":"B"},"storageQuota":{"usage":"1"}}"#)
        XCTAssertNil(try api.about().storageLimit)
        transport.push(status: 200, json: #"{"storageQuota":{"limit":"lots"}}"#)
        XCTAssertThrowsError(try api.about()) { error in
            guard case .malformedResponse = error as? DriveError else { return XCTFail("\(error)") }
        }
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
            return ScriptedTransport.response(206, headers: ["content-range": "bytes 10-19/100"], body: Array(repeating: 5, count: 10))
        }
        XCTAssertEqual(try api.downloadData("f", offset: 10, length: 10), Array(repeating: 5, count: 10))
        transport.push(status: 416, headers: ["content-range": "bytes */0"], json: #"{"error":{"code":416,"message":"Request range not satisfiable","errors":[{"reason":"requestedRangeNotSatisfiable"}]}}"#)
        XCTAssertEqual(try api.downloadData("empty"), [])
    }

    /// A ranged read answered 200 with the whole file must not be appended as if it were the range.
    func testRangedDownloadRefusesAFullBodyOrAnotherRange() throws {
        let whole = (0..<100).map { UInt8($0) }
        transport.push(status: 200, json: String(decoding: whole, as: UTF8.self))
        let seen = Locked<[UInt8]>([])
        let sink = ResponseSink.callback { chunk in seen.withLock { $0 += chunk }; return true }
        XCTAssertThrowsError(try api.download("f", offset: 10, length: 10, to: sink)) { error in
            guard case .malformedResponse(let what) = error as? DriveError else { return XCTFail("\(error)") }
            XCTAssertTrue(what.contains("200"), what)
        }
        XCTAssertEqual(seen.withLock { $0 }, [], "nothing of the wrong answer reaches the sink")
        transport.push { _ in ScriptedTransport.response(206, headers: ["content-range": "bytes 0-9/100"], body: Array(whole[0..<10])) }
        XCTAssertThrowsError(try api.download("f", offset: 10, length: 10, to: sink)) { error in
            guard case .malformedResponse = error as? DriveError else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(seen.withLock { $0 }, [])
        // From byte 0 a 200 is fine.
        transport.push(status: 200, json: "abc")
        XCTAssertEqual(try api.downloadData("g"), Array("abc".utf8))
    }

    /// The resume of a cut download is checked too: a server that restarts from byte 0 is refused.
    func testResumedDownloadAnsweredFromTheStartIsRefused() {
        let content = (0..<1000).map { UInt8(truncatingIfNeeded: $0) }
        transport.push { request in
            guard case .callback(let deliver) = request.sink else { throw TransportError.other(code: 0, message: "sink") }
            _ = content[0..<400].withUnsafeBytes { deliver($0) }
            throw TransportError.connectionLost("reset")
        }
        transport.push { _ in ScriptedTransport.response(200, body: content) }
        let seen = Locked<Int>(0)
        XCTAssertThrowsError(try api.download("f", to: .callback { chunk in seen.withLock { $0 += chunk.count }; return true })) { error in
            guard case .malformedResponse = error as? DriveError else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(seen.withLock { $0 }, 400)
    }

    // MARK: - Creates: counters, caller IDs, types without IDs

    /// A create recovered from 409 after a lost answer is one success: no failure is counted.
    func testRecoveredLostCreateCountsNoFailure() throws {
        pushIds(["k1"])
        transport.push(error: .connectionLost("answer lost"))
        transport.pushGoogleError(409, reason: "fileIdInUse", message: "A file already exists with the provided ID.")
        transport.push(status: 200, json: #"{"id":"k1","name":"d","mimeType":"application/vnd.google-apps.folder"}"#)
        XCTAssertEqual(try api.createFolder(name: "d", parent: "root1").id, "k1")
        let counters = api.executor.stats.counters(for: "files.create")
        XCTAssertEqual(counters.failures, 0)
        XCTAssertEqual(counters.retries, 1)
        XCTAssertEqual(counters.requests, 2)
        XCTAssertEqual(api.executor.stats.total().failures, 0)
    }

    /// A caller that passes its own ID may call again after a failure: the earlier call's file comes back.
    func testCallerIDIsReusedAcrossTheCallersOwnRetries() throws {
        let id = "mine1"
        transport.push(error: .connectionLost("answer lost"))
        let policy = RetryPolicy.none
        let once = DriveAPI(executor: DriveRequestExecutor(transport: transport, tokens: nil, pacer: nil, retryPolicy: policy, time: time),
                            endpoints: .singleHost("http://drive.test/"))
        XCTAssertThrowsError(try once.createFolder(name: "d", parent: "root1", id: id))
        transport.pushGoogleError(409, reason: "fileIdInUse", message: "A file already exists with the provided ID.")
        transport.push(status: 200, json: #"{"id":"mine1","name":"d","mimeType":"application/vnd.google-apps.folder"}"#)
        XCTAssertEqual(try once.createFolder(name: "d", parent: "root1", id: id).id, id)
        let posts = transport.requests.filter { $0.method == "POST" }
        XCTAssertEqual(posts.count, 2)
        for post in posts {
            guard case .bytes(let body) = post.body else { return XCTFail() }
            XCTAssertTrue(String(decoding: body, as: UTF8.self).contains(#""id":"mine1""#))
        }
        XCTAssertFalse(transport.requests.contains { $0.url.contains("generateIds") }, "the caller's ID, not the pool's")
    }

    /// Google refuses generated IDs for Docs Editors types and shortcuts: such creates carry none, and a
    /// lost answer is resolved by looking the file up.
    func testDocsEditorCreateCarriesNoIDAndFindsALostCreate() throws {
        let doc = "application/vnd.google-apps.document"
        transport.push(error: .connectionLost("answer lost"))
        transport.push { request in
            XCTAssertEqual(request.method, "GET")
            let q = URLComponents(string: request.url)?.queryItems?.first { $0.name == "q" }?.value ?? ""
            XCTAssertTrue(q.contains("name = 'Plan'") && q.contains("'root1' in parents") && q.contains("mimeType = '\(doc)'")
                          && q.contains("createdTime >= "), q)
            return ScriptedTransport.response(200, body: Array(#"{"files":[{"id":"d1","name":"Plan","mimeType":"\#(doc)","createdTime":"2024-01-01T00:00:00Z"},{"id":"d0","name":"plan","mimeType":"\#(doc)"}]}"#.utf8))
        }
        let file = try api.createEmpty(name: "Plan", parent: "root1", mimeType: doc)
        XCTAssertEqual(file.id, "d1", "the exact-case match")
        let posts = transport.requests.filter { $0.method == "POST" }
        XCTAssertEqual(posts.count, 1, "found, not sent again")
        guard case .bytes(let body) = posts[0].body else { return XCTFail() }
        XCTAssertFalse(String(decoding: body, as: UTF8.self).contains(#""id""#), "no generated ID for a Docs type")
        XCTAssertFalse(transport.requests.contains { $0.url.contains("generateIds") })

        // A rate limit is looked up too (Google carries out some refused inserts); nothing found:
        // sent again. A refusal (nothing done) is not retried at all.
        let sheet = "application/vnd.google-apps.spreadsheet"
        transport.pushGoogleError(403, reason: "userRateLimitExceeded")
        transport.push(status: 200, json: #"{"files":[]}"#)
        transport.push(status: 200, json: #"{"id":"d2","name":"Sheet","mimeType":"\#(sheet)"}"#)
        var before = transport.requests.count
        XCTAssertEqual(try api.createEmpty(name: "Sheet", parent: "root1", mimeType: sheet).id, "d2")
        XCTAssertEqual(transport.requests.dropFirst(before).map(\.method), ["POST", "GET", "POST"])
        transport.pushGoogleError(403, reason: "insufficientFilePermissions")
        before = transport.requests.count
        XCTAssertThrowsError(try api.createEmpty(name: "Sheet", parent: "root1", mimeType: sheet))
        XCTAssertEqual(transport.requests.dropFirst(before).map(\.method), ["POST"])
        transport.push(error: .timedOut("answer lost"))
        transport.push(status: 200, json: #"{"files":[]}"#)
        transport.push(status: 200, json: #"{"id":"d3","name":"Sheet","mimeType":"\#(sheet)"}"#)
        before = transport.requests.count
        XCTAssertEqual(try api.createEmpty(name: "Sheet", parent: "root1", mimeType: sheet).id, "d3")
        XCTAssertEqual(transport.requests.dropFirst(before).map(\.method), ["POST", "GET", "POST"])

        XCTAssertThrowsError(try api.createEmpty(name: "x", parent: "root1", mimeType: doc, id: "abc")) { error in
            guard case .invalidArgument = error as? DriveError else { return XCTFail("\(error)") }
        }
        XCTAssertTrue(DriveAPI.acceptsGeneratedID(mimeType: DriveFile.folderMimeType))
        XCTAssertTrue(DriveAPI.acceptsGeneratedID(mimeType: "text/plain"))
        XCTAssertFalse(DriveAPI.acceptsGeneratedID(mimeType: DriveFile.shortcutMimeType))
        XCTAssertFalse(DriveAPI.acceptsGeneratedID(mimeType: "application/vnd.google-apps.presentation"))
    }

    /// drive-behaviours §2.8: any 4xx during a session means a new session, not just 404/410.
    func testResumableSessionRestartsAfterA400() throws {
        let content = [UInt8](repeating: 3, count: 300 * 1024)
        let md5 = Digest.hex(.md5, of: content)
        pushIds(["r1"])
        transport.push(status: 200, headers: ["location": "http://drive.test/s/1"])
        transport.pushGoogleError(400, reason: "badRequest", message: "Failed to parse Content-Range header.")
        transport.push(status: 200, headers: ["location": "http://drive.test/s/2"])
        transport.push(status: 308, headers: ["range": "bytes=0-262143"])
        transport.push(status: 200, json: fileJSON(id: "r1", name: "f", md5: md5))
        XCTAssertEqual(try api.createFile(name: "f", parent: "root1", source: .bytes(content)).id, "r1")
        XCTAssertEqual(transport.requests.filter { $0.method == "PUT" }.map(\.url), ["http://drive.test/s/1", "http://drive.test/s/2", "http://drive.test/s/2"])
        XCTAssertEqual(api.executor.stats.counters(for: "files.create.upload").failures, 0)
        XCTAssertTrue(DriveAPI.restartsSession(.invalidArgument(GoogleErrorInfo(status: 400, message: ""))))
        XCTAssertTrue(DriveAPI.restartsSession(.notFound(GoogleErrorInfo(status: 410, message: ""))))
        XCTAssertFalse(DriveAPI.restartsSession(.rateLimited(GoogleErrorInfo(status: 403, message: ""))))
        XCTAssertFalse(DriveAPI.restartsSession(.server(GoogleErrorInfo(status: 503, message: ""))))
    }

    /// A restarted session whose create already landed (409 at the new initiation) returns that
    /// file, and counts no failure.
    func testRestartedSessionFindsItsFileAlreadyMadeWithoutCountingAFailure() throws {
        let content = [UInt8](repeating: 4, count: 300 * 1024)
        let md5 = Digest.hex(.md5, of: content)
        pushIds(["t1"])
        transport.push(status: 200, headers: ["location": "http://drive.test/s/1"])
        transport.pushGoogleError(404, reason: "notFound")
        transport.pushGoogleError(409, reason: "fileIdInUse", message: "A file already exists with the provided ID.")
        transport.push(status: 200, json: fileJSON(id: "t1", name: "f", md5: md5))
        XCTAssertEqual(try api.createFile(name: "f", parent: "root1", source: .bytes(content)).id, "t1")
        XCTAssertEqual(transport.requests.last?.method, "GET")
        XCTAssertEqual(api.executor.stats.counters(for: "files.create.upload").failures, 0, "recovered: no failure")
        XCTAssertEqual(api.executor.stats.counters(for: "files.get").failures, 0)
        XCTAssertEqual(api.executor.stats.counters(for: "files.create.upload").requests, 3)
    }

    /// The quota-system 403 is retried like the classic rate limits.
    func testQuotaSystemRateLimitIsRetried() throws {
        transport.push(status: 403, json: #"{"error":{"code":403,"message":"Quota exceeded for quota metric 'Queries' and limit 'Queries per minute' of service 'drive.googleapis.com' for consumer 'project_number:1'.","status":"PERMISSION_DENIED","details":[{"reason":"RATE_LIMIT_EXCEEDED"}]}}"#)
        transport.push(status: 200, json: fileJSON(id: "q1", name: "q"))
        XCTAssertEqual(try api.getFile("q1").id, "q1")
        XCTAssertEqual(api.executor.stats.counters(for: "files.get").retries, 1)
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
