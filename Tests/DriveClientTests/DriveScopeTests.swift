import DriveClient
import DriveEmulator
import DriveSupport
import XCTest

/// `DriveScope`: the parameters each request carries in each scope (scripted), and a shared drive
/// used through a scoped `DriveAPI` against the emulator; `resolveSharedDrive`.
final class DriveScopeScriptedTests: XCTestCase {
    var time: ManualTimeSource!
    var transport: ScriptedTransport!

    override func setUp() {
        time = ManualTimeSource()
        transport = ScriptedTransport()
    }

    private func api(_ scope: DriveScope) -> DriveAPI {
        let executor = DriveRequestExecutor(transport: transport, tokens: TokenManager(grant: CountingGrant(time: time), time: time),
                                            pacer: nil, retryPolicy: RetryPolicy(random: FixedRandom(value: 0.5)), time: time)
        return DriveAPI(executor: executor, endpoints: .singleHost("http://drive.test/"), multipartLimit: 1000, idBatchSize: 3, scope: scope)
    }

    static let file = #"{"id":"f1","name":"a","mimeType":"application/octet-stream","parents":["0AdriveUk9PVA"],"driveId":"0AdriveUk9PVA"}"#

    /// Runs the same calls in `scope` and returns each request's (method, URL).
    private func urls(_ scope: DriveScope) throws -> [String] {
        let api = api(scope)
        let before = transport.requests.count
        transport.push(status: 200, json: Self.file)
        let got = try api.getFile("f1")
        XCTAssertEqual(got.driveId, scope == .myDrive ? "0AdriveUk9PVA" : scope.driveId)
        transport.push(status: 200, json: #"{"files":[\#(Self.file)]}"#)
        try api.listChildren(ofAny: ["p1", "p2"]) { _ in true }
        transport.push(status: 200, json: #"{"files":[]}"#)
        _ = try api.listChildren(of: "p1")
        transport.push(status: 200, json: #"{"startPageToken":"5"}"#)
        _ = try api.changesStartPageToken()
        transport.push(status: 200, json: #"{"changes":[],"newStartPageToken":"5"}"#)
        _ = try api.changes(pageToken: "5")
        transport.push(status: 200, json: Self.file)
        _ = try api.updateMetadata("f1", name: "b")
        transport.push(status: 204)
        try api.delete("f1")
        transport.push(status: 204)
        try api.emptyTrash()
        transport.push { request in ScriptedTransport.response(200, body: Array("xyz".utf8)) }
        _ = try api.downloadData("f1")
        transport.push(status: 200, json: #"{"kind":"drive#generatedIds","ids":["i1","i2","i3"]}"#)
        transport.push(status: 200, json: Self.file)
        _ = try api.createFolder(name: "d", parent: scope.rootFolderID)
        transport.push(status: 200, json: "{}")
        _ = try? api.export("f1", mimeType: "text/plain")
        return transport.requests[before...].map { "\($0.method) \($0.url)" }
    }

    func testMyDriveRequestsCarryNoDriveParameters() throws {
        let all = try urls(.myDrive)
        XCTAssertEqual(all.count, 12)
        for url in all {
            for p in ["supportsAllDrives", "includeItemsFromAllDrives", "corpora", "driveId="] { XCTAssertFalse(url.contains(p), url) }
        }
        XCTAssertTrue(all[0].hasPrefix("GET http://drive.test/drive/v3/files/f1?fields="), all[0])
        XCTAssertTrue(all[10].contains("parents"), all[10])
    }

    func testSharedDriveRequestsCarryTheirParameters() throws {
        let id = "0AdriveUk9PVA"
        let all = try urls(.sharedDrive(id))
        XCTAssertEqual(all.count, 12)
        func has(_ i: Int, _ parts: [String], not: [String] = []) {
            for p in parts { XCTAssertTrue(all[i].contains(p), "\(all[i]) lacks \(p)") }
            for p in not { XCTAssertFalse(all[i].contains(p), "\(all[i]) has \(p)") }
        }
        let listing = ["supportsAllDrives=true", "includeItemsFromAllDrives=true", "corpora=drive", "driveId=\(id)"]
        has(0, ["GET", "files/f1?", "supportsAllDrives=true"], not: ["corpora", "driveId="])
        has(1, listing)
        has(2, listing)
        has(3, ["changes/startPageToken?", "driveId=\(id)", "supportsAllDrives=true"], not: ["corpora"])
        has(4, ["changes?", "driveId=\(id)", "supportsAllDrives=true", "includeItemsFromAllDrives=true"], not: ["corpora"])
        has(5, ["PATCH", "supportsAllDrives=true"])
        has(6, ["DELETE", "files/f1?supportsAllDrives=true"])
        has(7, ["DELETE", "files/trash?driveId=\(id)"], not: ["supportsAllDrives"])
        has(8, ["alt=media", "supportsAllDrives=true"])
        has(9, ["generateIds"], not: ["supportsAllDrives", "driveId"])
        has(10, ["POST", "drive/v3/files?supportsAllDrives=true"])
        has(11, ["export"], not: ["supportsAllDrives"])
        XCTAssertEqual(DriveScope.sharedDrive(id).rootFolderID, id)
        XCTAssertEqual(DriveScope.myDrive.rootFolderID, "root")
    }

    func testUploadsCarrySupportsAllDrives() throws {
        let api = api(.sharedDrive("0AdriveUk9PVA"))
        transport.push(status: 200, json: #"{"kind":"drive#generatedIds","ids":["i1","i2","i3"]}"#)
        transport.push(status: 200, json: #"{"id":"i1","name":"a","mimeType":"text/plain","md5Checksum":"900150983cd24fb0d6963f7d28e17f72","size":"3"}"#)
        _ = try api.createFile(name: "a", parent: "0AdriveUk9PVA", source: .bytes(Array("abc".utf8)))
        let upload = try XCTUnwrap(transport.requests.last?.url)
        XCTAssertTrue(upload.contains("upload/drive/v3/files?uploadType=multipart&supportsAllDrives=true"), upload)
    }

    func testResolveSharedDrive() throws {
        let api = api(.myDrive)
        let list = #"{"drives":[{"id":"0AaaaUk9PVA","name":"Team"},{"id":"0AbbbUk9PVA","name":"Twin"}],"nextPageToken":"n"}"#
        let list2 = #"{"drives":[{"id":"0AcccUk9PVA","name":"Twin"}]}"#
        // By ID: one drives.get.
        transport.push(status: 200, json: #"{"id":"0AaaaUk9PVA","name":"Team"}"#)
        XCTAssertEqual(try api.resolveSharedDrive("0AaaaUk9PVA"), SharedDrive(id: "0AaaaUk9PVA", name: "Team"))
        XCTAssertTrue(transport.requests.last!.url.contains("drive/v3/drives/0AaaaUk9PVA?fields=id%2Cname"))
        // By name: the get 404s, then every page of drives.list.
        transport.pushGoogleError(404, reason: "notFound", message: "Shared drive not found: Team")
        transport.push(status: 200, json: list)
        transport.push(status: 200, json: list2)
        XCTAssertEqual(try api.resolveSharedDrive("Team").id, "0AaaaUk9PVA")
        XCTAssertTrue(transport.requests.last!.url.contains("pageToken=n"))
        // A name that is not an ID shape asks no drives.get.
        let before = transport.requests.count
        transport.push(status: 200, json: list)
        transport.push(status: 200, json: list2)
        XCTAssertThrowsError(try api.resolveSharedDrive("No such drive")) { error in
            guard case .notFound(let info) = error as? DriveError else { return XCTFail("\(error)") }
            XCTAssertTrue(info.message.contains("No such drive"))
        }
        XCTAssertEqual(transport.requests.count - before, 2)
        transport.pushGoogleError(404, reason: "notFound")
        transport.push(status: 200, json: list)
        transport.push(status: 200, json: list2)
        XCTAssertThrowsError(try api.resolveSharedDrive("Twin")) { error in
            guard case .invalidArgument(let info) = error as? DriveError else { return XCTFail("\(error)") }
            XCTAssertEqual(info.reason, "ambiguousSharedDriveName")
            XCTAssertTrue(info.message.contains("0AbbbUk9PVA") && info.message.contains("0AcccUk9PVA"), info.message)
        }
    }
}

final class DriveScopeEmulatorTests: XCTestCase {
    var harness: EmulatorHarness!
    override func setUpWithError() throws {
        harness = try EmulatorHarness(config: EmulatorConfig(port: 0),
                                      retry: RetryPolicy(maxAttempts: 4, maxElapsed: 30, baseDelay: 0.01, maxDelay: 0.2), chunkSize: 8 << 20)
    }
    override func tearDown() { harness?.stop() }

    private func makeDrive(_ name: String) throws -> String {
        let url = harness.endpoints.driveBase + "drives?requestId=\(UUID().uuidString)"
        let body = try JSONSerialization.data(withJSONObject: ["name": name])
        let response = try harness.executor.execute("drives.create", TransportRequest(method: "POST", url: url,
                                                    headers: [("Content-Type", "application/json")], body: .bytes(Array(body))))
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        return try XCTUnwrap(object?["id"] as? String)
    }

    private func scoped(_ id: String) -> DriveAPI {
        DriveAPI(executor: harness.executor, endpoints: harness.endpoints, scope: .sharedDrive(id))
    }

    func testASharedDriveThroughAScopedAPI() throws {
        let driveID = try makeDrive("Team")
        let api = scoped(driveID)
        let start = try api.changesStartPageToken()
        let root = try api.getFile(api.scope.rootFolderID)
        XCTAssertEqual(root.id, driveID)
        XCTAssertEqual(root.driveId, driveID)
        XCTAssertTrue(root.isFolder)
        let docs = try api.createFolder(name: "docs", parent: driveID)
        let content = Array("shared bytes".utf8)
        let file = try api.createFile(name: "a.txt", parent: docs.id, source: .bytes(content))
        XCTAssertEqual(file.driveId, driveID)
        let top = try api.createFile(name: "top.txt", parent: driveID, source: .bytes([1]))

        var listed: [DriveFile] = []
        try api.listChildren(ofAny: [driveID, docs.id]) { page in listed += page.files; return true }
        XCTAssertEqual(Set(listed.map(\.id)), [docs.id, file.id, top.id])
        XCTAssertTrue(listed.allSatisfy { $0.driveId == driveID })
        XCTAssertEqual(try api.downloadData(file.id), content)
        XCTAssertEqual(try api.downloadData(file.id, offset: 7, length: 5), Array("bytes".utf8))

        var page = try api.changes(pageToken: start)
        var seen = page.changes
        while let next = page.nextPageToken { page = try api.changes(pageToken: next); seen += page.changes }
        XCTAssertEqual(Set(seen.map(\.fileId)), [docs.id, file.id, top.id])
        XCTAssertTrue(seen.allSatisfy { $0.file?.driveId == driveID })

        // My Drive's API sees none of it, and its listing of the drive's folder is empty.
        XCTAssertThrowsError(try harness.api.getFile(file.id)) { error in
            guard case .notFound = error as? DriveError else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(try harness.api.listChildren(of: docs.id), [])
        let mine = try harness.api.changes(pageToken: start)
        XCTAssertFalse(mine.changes.contains { $0.fileId == file.id })

        // Trash and delete within the drive.
        _ = try api.trash(top.id)
        try api.emptyTrash()
        XCTAssertThrowsError(try api.getFile(top.id))
        try api.delete(file.id)
        XCTAssertEqual(try api.listChildren(of: docs.id), [])
    }

    /// The user's feed read with `feedSeesDriveChanges` hands a drive left or joined (`changeType:
    /// drive`, no `fileId`) over as `driveChanges`, not as a file change; the plain feed stays as it was.
    func testMyDrivesFeedCarriesTheSharedDrivesOwnChangesWhenAsked() throws {
        let driveID = try makeDrive("Away")
        _ = try scoped(driveID).createFile(name: "x.txt", parent: driveID, source: .bytes([1]))
        let seeing = DriveAPI(executor: harness.executor, endpoints: harness.endpoints, feedSeesDriveChanges: true)
        let start = try seeing.changesStartPageToken()
        let body = try JSONSerialization.data(withJSONObject: ["driveId": driveID, "role": NSNull()])
        let left = try harness.executor.execute("control", TransportRequest(method: "POST", url: harness.endpoints.apiRoot + "__emulator/membership",
                                                                            headers: [("Content-Type", "application/json")],
                                                                            body: .bytes(Array(body))))
        XCTAssertEqual(left.status, 200, String(decoding: left.body, as: UTF8.self))

        let page = try seeing.changes(pageToken: start)
        XCTAssertEqual(page.driveChanges, [driveID])
        XCTAssertTrue(page.changes.allSatisfy { !$0.fileId.isEmpty && $0.fileId != driveID }, "\(page.changes)")
        let plain = try harness.api.changes(pageToken: start)
        XCTAssertEqual(plain.driveChanges, [])
        XCTAssertEqual(plain.changes, [])
    }

    func testResolveSharedDriveByNameAndID() throws {
        let team = try makeDrive("Team")
        let twinA = try makeDrive("Twin")
        let twinB = try makeDrive("Twin")
        for n in 0..<3 { _ = try makeDrive("Filler \(n)") }
        let api = harness.api
        XCTAssertEqual(try api.listDrives().count, 6)
        XCTAssertEqual(try api.getDrive(team), SharedDrive(id: team, name: "Team"))
        XCTAssertEqual(try api.resolveSharedDrive(team), SharedDrive(id: team, name: "Team"))
        XCTAssertEqual(try api.resolveSharedDrive("Team"), SharedDrive(id: team, name: "Team"))
        XCTAssertEqual(try api.resolveSharedDrive(twinB).id, twinB)
        XCTAssertThrowsError(try api.resolveSharedDrive("Twin")) { error in
            guard case .invalidArgument(let info) = error as? DriveError else { return XCTFail("\(error)") }
            XCTAssertTrue(info.message.contains(twinA) && info.message.contains(twinB), info.message)
        }
        XCTAssertThrowsError(try api.resolveSharedDrive("team")) { error in
            guard case .notFound = error as? DriveError else { return XCTFail("\(error)") }
        }
        XCTAssertThrowsError(try api.getDrive("0AnoSuchDriveUk9PVA")) { error in
            guard case .notFound = error as? DriveError else { return XCTFail("\(error)") }
        }
    }
}
