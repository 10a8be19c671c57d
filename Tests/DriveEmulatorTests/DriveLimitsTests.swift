import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

/// Google's Drive limits through the real server and OAuth service, on an injected clock: each
/// refusal's exact body (against drive-behaviours.md §2.4, §4, §4a), that a refusal leaves no trace
/// in the store, what the write limit counts, the per-user stats, the refused-write quirk, the items
/// per folder and per shared drive.
final class DriveLimitsTests: XCTestCase {
    var emulator: Emulator!
    let clock = ManualTimeSource(now: 1_700_000_000)
    var port: Int { emulator.port }
    let user = "user@drivefs-emulator.test"

    func start(_ limits: DriveLimits, seed: UInt64 = 1) throws {
        var config = EmulatorConfig(port: 0, clock: clock)
        config.driveLimits = limits
        config.listingQuirks.seed = seed
        emulator = try Emulator(config: config)
        try emulator.start()
    }

    override func tearDown() { emulator?.stop() }

    func token(clientID: String = "bench") throws -> String {
        let body = "grant_type=refresh_token&refresh_token=drivefs-emulator-refresh-token&client_id=\(clientID)&client_secret=s"
        let r = try RawHTTP.request(port: port, "POST", "/token", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                    body: Array(body.utf8))
        XCTAssertEqual(r.status, 200, r.text)
        return try XCTUnwrap(r.json?["access_token"] as? String)
    }

    func call(_ t: String, _ method: String, _ target: String, json: [String: Any]? = nil,
              headers: [(String, String)] = [], body: [UInt8]? = nil) throws -> RawHTTPResponse {
        var h = [("Authorization", "Bearer \(t)")] + headers
        var b = body
        if let json {
            h.append(("Content-Type", "application/json"))
            b = Array(try JSONSerialization.data(withJSONObject: json))
        }
        return try RawHTTP.request(port: port, method, target, headers: h, body: b ?? (method == "POST" ? [] : nil))
    }

    func createFolder(_ t: String, _ name: String, parent: String? = nil) throws -> RawHTTPResponse {
        var meta: [String: Any] = ["name": name, "mimeType": "application/vnd.google-apps.folder"]
        if let parent { meta["parents"] = [parent] }
        return try call(t, "POST", "/drive/v3/files?supportsAllDrives=true", json: meta)
    }

    func create(_ t: String, _ name: String, parent: String? = nil) throws -> RawHTTPResponse {
        var meta: [String: Any] = ["name": name]
        if let parent { meta["parents"] = [parent] }
        return try call(t, "POST", "/drive/v3/files?supportsAllDrives=true", json: meta)
    }

    /// The error body member by member: `{"error":{"code","message","errors":[{message,domain,reason}]}}`,
    /// no `status`, no `Retry-After`.
    func assertGoogleError(_ r: RawHTTPResponse, _ code: Int, reason: String, domain: String, message: String,
                           file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(r.status, code, r.text, file: file, line: line)
        XCTAssertTrue(r.header("Content-Type")?.hasPrefix("application/json") == true, file: file, line: line)
        let error = r.json?["error"] as? [String: Any]
        XCTAssertEqual(Set(error?.keys.map { $0 } ?? []), ["code", "message", "errors"], file: file, line: line)
        XCTAssertEqual(error?["code"] as? Int, code, file: file, line: line)
        XCTAssertEqual(error?["message"] as? String, message, file: file, line: line)
        let items = error?["errors"] as? [[String: Any]]
        XCTAssertEqual(items?.count, 1, file: file, line: line)
        XCTAssertEqual(Set(items?.first?.keys.map { $0 } ?? []), ["message", "domain", "reason"], file: file, line: line)
        XCTAssertEqual(items?.first?["domain"] as? String, domain, file: file, line: line)
        XCTAssertEqual(items?.first?["reason"] as? String, reason, file: file, line: line)
        XCTAssertEqual(items?.first?["message"] as? String, message, file: file, line: line)
        XCTAssertNil(r.header("Retry-After"), "Google sends none", file: file, line: line)
    }

    func assertRateLimitExceeded(_ r: RawHTTPResponse, file: StaticString = #filePath, line: UInt = #line) {
        assertGoogleError(r, 403, reason: "rateLimitExceeded", domain: "usageLimits", message: "Rate Limit Exceeded",
                          file: file, line: line)
    }

    func userStats() throws -> [String: Any]? {
        let json = try RawHTTP.request(port: port, "GET", "/__emulator/stats").json
        return (json?["users"] as? [String: Any])?[user] as? [String: Any]
    }

    // MARK: The write limit

    func testTheWriteLimitRefusesPastTheBurstWithGooglesBodyAndLeavesNoTrace() throws {
        try start(DriveLimits(writesPerSecond: 3, writeBurst: 3))
        let t = try token()
        XCTAssertEqual(try (0..<3).map { try create(t, "f\($0)").status }, [200, 200, 200])
        let before = try XCTUnwrap(emulator.usage())
        let tokenBefore = try call(t, "GET", "/drive/v3/changes/startPageToken").json?["startPageToken"] as? String
        assertRateLimitExceeded(try create(t, "refused"))
        assertRateLimitExceeded(try createFolder(t, "refused folder"))
        XCTAssertEqual(try call(t, "GET", "/drive/v3/files?fields=files(id)").status, 200, "reads do not count")
        XCTAssertEqual(emulator.usage(), before, "a refused write changes nothing")
        XCTAssertEqual(try call(t, "GET", "/drive/v3/changes/startPageToken").json?["startPageToken"] as? String, tokenBefore,
                       "nor the change feed")
        clock.advance(0.34)
        XCTAssertEqual(try create(t, "paced").status, 200, "a third of a second earns one write")
        assertRateLimitExceeded(try create(t, "again"))

        let stats = try XCTUnwrap(try userStats())
        XCTAssertEqual(stats["writes"] as? Int, 4)
        XCTAssertEqual(stats["writesRefused"] as? Int, 3)
        XCTAssertEqual(stats["quotaRefused"] as? Int, 0)
    }

    /// Updates, copies, deletes, emptyTrash, uploads count; a resumable upload counts once, when its
    /// session starts, not per chunk.
    func testWhatTheWriteLimitCounts() throws {
        try start(DriveLimits(writesPerSecond: 1, writeBurst: 1))
        let t = try token()
        let id = try XCTUnwrap(try create(t, "a").json?["id"] as? String)
        for (method, target, json) in [("PATCH", "/drive/v3/files/\(id)", ["name": "b"] as [String: Any]?),
                                       ("POST", "/drive/v3/files/\(id)/copy", [:]),
                                       ("DELETE", "/drive/v3/files/\(id)", nil),
                                       ("DELETE", "/drive/v3/files/trash", nil)] {
            assertRateLimitExceeded(try call(t, method, target, json: json))
            clock.advance(1)
            XCTAssertTrue((200..<300).contains(try call(t, method, target, json: json).status), "\(method) \(target)")
        }
        clock.advance(1)
        let content = Array(repeating: UInt8(ascii: "x"), count: 300_000)
        let start = try call(t, "POST", "/upload/drive/v3/files?uploadType=resumable",
                             json: ["name": "big"], headers: [("X-Upload-Content-Length", "\(content.count)")])
        XCTAssertEqual(start.status, 200, start.text)
        let location = try XCTUnwrap(start.header("Location"))
        let path = String(location[try XCTUnwrap(location.range(of: "/upload/"))!.lowerBound...])
        // Two chunks at once, with no budget left: neither is refused.
        let first = try RawHTTP.request(port: port, "PUT", path, headers: [("Content-Range", "bytes 0-262143/300000")],
                                        body: Array(content[0..<262_144]))
        XCTAssertEqual(first.status, 308, first.text)
        let last = try RawHTTP.request(port: port, "PUT", path, headers: [("Content-Range", "bytes 262144-299999/300000")],
                                       body: Array(content[262_144...]))
        XCTAssertEqual(last.status, 200, last.text)
        // A simple upload is a write.
        assertRateLimitExceeded(try call(t, "POST", "/upload/drive/v3/files?uploadType=media", body: [1, 2, 3]))
    }

    /// revisions.update and revisions.delete are writes; revisions.get?alt=media costs a
    /// download's units, revisions.list a list's, revisions.get a get's.
    func testRevisionMethodsAreCountedAsTheirKind() throws {
        var limits = DriveLimits.google
        limits.writesPerSecond = 1
        limits.writeBurst = 1
        try start(limits)
        let t = try token()
        let up = try call(t, "POST", "/upload/drive/v3/files?uploadType=media&fields=id,headRevisionId", body: [1, 2, 3])
        let id = try XCTUnwrap(up.json?["id"] as? String)
        let first = try XCTUnwrap(up.json?["headRevisionId"] as? String)
        clock.advance(1)
        XCTAssertEqual(try call(t, "PATCH", "/upload/drive/v3/files/\(id)?uploadType=media", body: [4, 5]).status, 200)
        assertRateLimitExceeded(try call(t, "PATCH", "/drive/v3/files/\(id)/revisions/\(first)", json: ["keepForever": true]))
        clock.advance(1)
        XCTAssertEqual(try call(t, "PATCH", "/drive/v3/files/\(id)/revisions/\(first)", json: ["keepForever": true]).status, 200)
        assertRateLimitExceeded(try call(t, "DELETE", "/drive/v3/files/\(id)/revisions/\(first)"))
        clock.advance(1)
        XCTAssertEqual(try call(t, "DELETE", "/drive/v3/files/\(id)/revisions/\(first)").status, 204)
        let before = try XCTUnwrap(try userStats()?["units"] as? Int)
        let head = try XCTUnwrap(try call(t, "GET", "/drive/v3/files/\(id)?fields=headRevisionId").json?["headRevisionId"] as? String)
        XCTAssertEqual(try call(t, "GET", "/drive/v3/files/\(id)/revisions").status, 200)
        XCTAssertEqual(try call(t, "GET", "/drive/v3/files/\(id)/revisions/\(head)").status, 200)
        XCTAssertEqual(try call(t, "GET", "/drive/v3/files/\(id)/revisions/\(head)?alt=media").status, 200)
        XCTAssertEqual(try XCTUnwrap(try userStats()?["units"] as? Int) - before, 5 + 100 + 5 + 200)
        XCTAssertEqual(DriveLimits.google.cost(of: "revisions.update"), 50)
        XCTAssertEqual(DriveLimits.google.cost(of: "revisions.delete"), 50)
    }

    /// A Docs revision's export link is charged as the download it is (200 units, as files.export),
    /// under its own method name; `alt=media` on that revision is refused.
    func testADocsRevisionsExportLinkCostsADownload() throws {
        try start(.google)
        let t = try token()
        let made = try call(t, "POST", "/drive/v3/files?fields=id", json: ["name": "Plan", "mimeType": "application/vnd.google-apps.document"])
        let id = try XCTUnwrap(made.json?["id"] as? String)
        clock.advance(1)
        XCTAssertEqual(try call(t, "PATCH", "/upload/drive/v3/files/\(id)?uploadType=media", headers: [("Content-Type", "text/plain")],
                                body: Array("text".utf8)).status, 200)
        let got = try call(t, "GET", "/drive/v3/files/\(id)/revisions/2?fields=exportLinks")
        let link = try XCTUnwrap((got.json?["exportLinks"] as? [String: String])?["text/plain"])
        let path = String(link[try XCTUnwrap(link.range(of: "/feeds/")).lowerBound...])
        let before = try XCTUnwrap(try userStats()?["units"] as? Int)
        let exported = try call(t, "GET", path)
        XCTAssertEqual(exported.status, 200, exported.text)
        XCTAssertEqual(try XCTUnwrap(try userStats()?["units"] as? Int) - before, 200)
        let stats = try RawHTTP.request(port: port, "GET", "/__emulator/stats").json
        XCTAssertEqual(((stats?["methods"] as? [String: Any])?["revisions.export"] as? [String: Any])?["requests"] as? Int, 1)
        XCTAssertEqual(try call(t, "GET", "/drive/v3/files/\(id)/revisions/2?alt=media").status, 403)
        XCTAssertEqual(DriveLimits.google.cost(of: "revisions.export"), 200)
        XCTAssertEqual(DriveLimits.legacy.cost(of: "revisions.export"), 1)
    }

    /// The quirk: a refused write is carried out anyway (F = 1 here), and the client still hears the
    /// refusal: one file, created once, not two.
    func testRefusedWriteLandsQuirk() throws {
        var limits = DriveLimits(writesPerSecond: 1, writeBurst: 1)
        limits.refusedWriteLands = 1
        try start(limits)
        let t = try token()
        XCTAssertEqual(try create(t, "first").status, 200)
        assertRateLimitExceeded(try create(t, "landed"))
        let q = "name%20%3D%20%27landed%27"
        let found = try call(t, "GET", "/drive/v3/files?q=\(q)&fields=files(id)").json?["files"] as? [[String: Any]]
        XCTAssertEqual(found?.count, 1, "the refused create is on Drive all the same")
        XCTAssertEqual(try userStats()?["writesRefused"] as? Int, 1)
    }

    // MARK: Quota units

    /// Past the user's units, Google's long 403 `userRateLimitExceeded`; units are charged per
    /// method; a refusal charges nothing; the minute slides.
    func testQuotaUnitsPerUserOverASlidingMinute() throws {
        var limits = DriveLimits(unitsPerUserPerMinute: 300)
        limits.methodCosts["files.list"] = 100
        try start(limits)
        let t = try token()
        XCTAssertEqual(try (0..<3).map { _ in try call(t, "GET", "/drive/v3/files").status }, [200, 200, 200])
        let refused = try call(t, "GET", "/drive/v3/files")
        XCTAssertEqual(refused.status, 403)
        let error = refused.json?["error"] as? [String: Any]
        let item = (error?["errors"] as? [[String: Any]])?.first
        XCTAssertEqual(item?["reason"] as? String, "userRateLimitExceeded")
        XCTAssertEqual(item?["domain"] as? String, "usageLimits")
        XCTAssertTrue((error?["message"] as? String)?.hasPrefix("User Rate Limit Exceeded. Rate of requests for user exceed configured project quota.") == true)
        XCTAssertNil(refused.header("Retry-After"))
        XCTAssertEqual(try call(t, "GET", "/drive/v3/files").status, 403)
        clock.advance(59.999)
        XCTAssertEqual(try call(t, "GET", "/drive/v3/files").status, 403, "still inside the minute")
        clock.advance(0.002)
        XCTAssertEqual(try (0..<4).map { _ in try call(t, "GET", "/drive/v3/files").status }, [200, 200, 200, 403])

        let stats = try XCTUnwrap(try userStats())
        XCTAssertEqual(stats["unitsLastMinute"] as? Int, 300)
        XCTAssertEqual(stats["units"] as? Int, 600)
        XCTAssertEqual(stats["quotaRefused"] as? Int, 4)
        XCTAssertEqual(stats["writesRefused"] as? Int, 0)
        _ = try RawHTTP.request(port: port, "POST", "/__emulator/reset-stats")
        let reset = try XCTUnwrap(try userStats())
        XCTAssertEqual(reset["units"] as? Int, 0, "reset zeroes the counters")
        XCTAssertEqual(reset["unitsLastMinute"] as? Int, 300, "but not the budget spent")
        XCTAssertEqual(try call(t, "GET", "/drive/v3/files").status, 403)
    }

    /// The project's budget is shared by its users; past it, 403 `rateLimitExceeded`.
    func testQuotaUnitsPerProject() throws {
        try start(DriveLimits(unitsPerUserPerMinute: 1000, unitsPerProjectPerMinute: 10))
        let a = try token(clientID: "123456789012-a.apps.googleusercontent.com")
        let b = try token(clientID: "123456789012-b.apps.googleusercontent.com")
        XCTAssertEqual(try call(a, "GET", "/drive/v3/about?fields=user").status, 200)
        XCTAssertEqual(try call(b, "GET", "/drive/v3/about?fields=user").status, 200)
        assertRateLimitExceeded(try call(a, "GET", "/drive/v3/about?fields=user"))
        let other = try token(clientID: "999999999999-c.apps.googleusercontent.com")
        XCTAssertEqual(try call(other, "GET", "/drive/v3/about?fields=user").status, 200, "another project has its own budget")
    }

    // MARK: Daily uploads

    func testTheDailyUploadCapSaysUserRateLimitExceeded() throws {
        try start(DriveLimits(dailyUploadBytes: 10))
        let t = try token()
        XCTAssertEqual(try call(t, "POST", "/upload/drive/v3/files?uploadType=media", body: Array(repeating: 1, count: 8)).status, 200)
        let before = try XCTUnwrap(emulator.usage())
        let refused = try call(t, "POST", "/upload/drive/v3/files?uploadType=media", body: Array(repeating: 1, count: 8))
        assertGoogleError(refused, 403, reason: "userRateLimitExceeded", domain: "usageLimits", message: "User rate limit exceeded.")
        XCTAssertEqual(emulator.usage(), before)
        XCTAssertEqual(try create(t, "metadata only").status, 200, "a create without content brings no bytes")
        clock.advance(86_400)
        let fresh = try token()
        XCTAssertEqual(try call(fresh, "POST", "/upload/drive/v3/files?uploadType=media", body: Array(repeating: 1, count: 8)).status, 200)
        XCTAssertEqual(try userStats()?["uploadsRefused"] as? Int, 1)
    }

    // MARK: Items

    func testItemsPerFolderRootExempt() throws {
        try start(DriveLimits(maxItemsPerFolder: 2))
        let t = try token()
        let folder = try XCTUnwrap(try createFolder(t, "full").json?["id"] as? String)
        XCTAssertEqual(try create(t, "1", parent: folder).status, 200)
        XCTAssertEqual(try create(t, "2", parent: folder).status, 200)
        let before = try XCTUnwrap(emulator.usage())
        assertGoogleError(try create(t, "3", parent: folder), 403, reason: "numChildrenInNonRootLimitExceeded", domain: "global",
                          message: "The limit for this folder's number of children (files and folders) has been exceeded.")
        XCTAssertEqual(emulator.usage(), before, "nothing created")
        let loose = try XCTUnwrap(try create(t, "loose").json?["id"] as? String)
        XCTAssertEqual(try create(t, "root has no limit").status, 200)
        let move = try call(t, "PATCH", "/drive/v3/files/\(loose)?addParents=\(folder)&removeParents=root", json: [:])
        XCTAssertEqual(move.status, 403, "moving in counts too: \(move.text)")
        XCTAssertEqual(try call(t, "PATCH", "/drive/v3/files/\(loose)", json: ["name": "renamed"]).status, 200)
    }

    func testItemsPerSharedDrive() throws {
        try start(DriveLimits(maxItemsPerSharedDrive: 2))
        let t = try token()
        let drive = try call(t, "POST", "/drive/v3/drives?requestId=r1", json: ["name": "Team"])
        let driveId = try XCTUnwrap(drive.json?["id"] as? String, drive.text)
        let sub = try XCTUnwrap(try createFolder(t, "sub", parent: driveId).json?["id"] as? String)
        XCTAssertEqual(try create(t, "1", parent: sub).status, 200)
        assertGoogleError(try create(t, "2", parent: driveId), 403, reason: "teamDriveFileLimitExceeded", domain: "global",
                          message: "The file limit for this shared drive has been exceeded.")
    }

    // MARK: Presets and stats

    func testPresetsAndStatsShape() throws {
        XCTAssertEqual(DriveLimits.google.unitsPerUserPerMinute, 325_000)
        XCTAssertEqual(DriveLimits.google.unitsPerProjectPerMinute, 1_000_000)
        XCTAssertEqual(DriveLimits.google.writesPerSecond, 3)
        XCTAssertEqual(DriveLimits.google.dailyUploadBytes, 750_000_000_000)
        XCTAssertEqual(DriveLimits.google.maxItemsPerFolder, 500_000)
        XCTAssertEqual(DriveLimits.google.maxItemsPerSharedDrive, 400_000)
        XCTAssertEqual(["files.get", "files.list", "files.get.media", "files.export", "files.update", "files.generateIds",
                        "files.create", "files.copy", "files.delete", "files.emptyTrash", "changes.list"]
                        .map { DriveLimits.google.cost(of: $0) }, [5, 100, 200, 200, 50, 5, 50, 50, 50, 50, 100])
        XCTAssertEqual(DriveLimits.legacy.unitsPerUserPerMinute, 12_000)
        XCTAssertNil(DriveLimits.legacy.writesPerSecond)
        XCTAssertEqual(DriveLimits.legacy.cost(of: "files.get.media"), 1)
        XCTAssertFalse(DriveLimits.none.isActive)

        try start(.google)
        let t = try token()
        XCTAssertEqual(try create(t, "x").status, 200)
        XCTAssertEqual(try call(t, "GET", "/drive/v3/files").status, 200)
        let stats = try XCTUnwrap(try userStats())
        XCTAssertEqual(Set(stats.keys), ["unitsLastMinute", "units", "writes", "writesRefused", "quotaRefused",
                                         "uploadsRefused", "uploadBytesLastDay"])
        XCTAssertEqual(stats["units"] as? Int, 150)
        XCTAssertEqual(stats["writes"] as? Int, 1)
    }

    func testWithoutLimitsTheStatsHaveNoUsers() throws {
        try start(.none)
        XCTAssertNil(try RawHTTP.request(port: port, "GET", "/__emulator/stats").json?["users"])
    }
}
