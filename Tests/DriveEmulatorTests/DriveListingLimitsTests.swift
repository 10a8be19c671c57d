import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

/// Google's limits on listings (drive-behaviours §3.5a): the parent-term budget of a `q`, the
/// 460-item pages when `parents` is selected, the multi-parent quirk's switches, and GETs sent as
/// `POST` + `X-HTTP-Method-Override`.
final class DriveListingLimitsTests: XCTestCase {
    static func parentsQuery(_ ids: [String], trashed: Bool = true) -> String {
        let chain = ids.map { "'\($0)' in parents" }.joined(separator: " or ")
        return trashed ? "(\(chain)) and trashed = false" : chain
    }

    /// Follows `nextPageToken` to the end (bounded); every page's size and the ids in order.
    static func listAll(_ h: DriveHarness, q: String, fields: String, pageSize: Int? = nil,
                        file: StaticString = #filePath, line: UInt = #line) throws -> (ids: [String], pages: [Int]) {
        var ids: [String] = []
        var pages: [Int] = []
        var token: String?
        repeat {
            var target = "/drive/v3/files?q=\(DriveHarness.q(q))&fields=\(DriveHarness.q(fields))"
            if let pageSize { target += "&pageSize=\(pageSize)" }
            if let token { target += "&pageToken=\(DriveHarness.q(token))" }
            let (status, body) = try h.call("GET", target)
            XCTAssertEqual(status, 200, "\(body)", file: file, line: line)
            guard status == 200 else { break }
            let files = body["files"] as? [[String: Any]] ?? []
            ids += files.compactMap { $0["id"] as? String }
            pages.append(files.count)
            token = body["nextPageToken"] as? String
        } while token != nil && pages.count < 200
        return (ids, pages)
    }

    // MARK: The parent-term budget

    func testTooManyParentTermsIsQueryTooComplexAndFiftyPass() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        let folder = try h.create("f", mime: DriveMime.folder)
        let child = try h.create("c", parent: folder)
        let fillers = (0..<ListingLimits.defaultMaxParentTerms).map { _ in DriveIDs.newFileID() }

        for count in [1, 50, ListingLimits.defaultMaxParentTerms] {
            let q = Self.parentsQuery([folder] + fillers.prefix(count - 1))
            let (status, body) = try h.call("GET", "/drive/v3/files?q=\(DriveHarness.q(q))&fields=files(id)")
            XCTAssertEqual(status, 200, "\(count) terms: \(body)")
            XCTAssertEqual((body["files"] as? [[String: Any]])?.compactMap { $0["id"] as? String }, [child], "\(count) terms")
        }
        // One more than the budget, whether in one chain or spread over the query.
        for q in [Self.parentsQuery([folder] + fillers),
                  "(\(Self.parentsQuery(Array(fillers.prefix(60)), trashed: false))) and not (\(Self.parentsQuery([folder] + fillers.suffix(40), trashed: false)))"] {
            let (status, body) = try h.call("GET", "/drive/v3/files?q=\(DriveHarness.q(q))")
            XCTAssertEqual(status, 400)
            XCTAssertEqual(DriveHarness.message(body), "The query is too complex.")
            XCTAssertEqual(DriveHarness.reason(body), "invalid")
            XCTAssertEqual(DriveHarness.location(body), "q")
            XCTAssertEqual((body["error"] as? [String: Any])?["code"] as? Int, 400)
        }
    }

    func testParentTermBudgetIsConfigurable() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("drive-test-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let service = try DriveService(stateDirectory: dir, seedDirectory: nil, validator: StubValidator(),
                                       clock: ManualTimeSource(now: 1_700_000_000), limits: ListingLimits(maxParentTerms: 3))
        defer { service.close() }
        func status(_ terms: Int) throws -> Int {
            let q = Self.parentsQuery((0..<terms).map { _ in DriveIDs.newFileID() })
            let request = HTTPRequest(method: "GET", target: "/drive/v3/files?q=\(DriveHarness.q(q))",
                                      headers: HTTPHeaders([("Authorization", "Bearer good")]))
            return try service.route(for: request)!.handle(request).status
        }
        XCTAssertEqual(try status(3), 200)
        XCTAssertEqual(try status(4), 400)
    }

    // MARK: 460 items per page with `parents`

    func testPagesHoldAtMost460ItemsWhenParentsIsSelected() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        let folder = try h.create("big", mime: DriveMime.folder)
        var created: [String] = []
        for i in 0..<1200 { created.append(try h.create("item-\(i)", parent: folder)) }
        let q = "'\(folder)' in parents and trashed = false"

        let capped = ["nextPageToken,files(id,parents)", "nextPageToken,files/parents,files/id", "*", "nextPageToken,files(*)",
                      "nextPageToken,files"]
        for fields in capped {
            let (ids, pages) = try Self.listAll(h, q: q, fields: fields, pageSize: 1000)
            XCTAssertEqual(pages, [460, 460, 280], fields)
            if fields.contains("id") || !fields.contains("parents") { XCTAssertEqual(ids, created, fields) }
        }
        let (ids, pages) = try Self.listAll(h, q: q, fields: "nextPageToken,files(id,name)", pageSize: 1000)
        XCTAssertEqual(pages, [1000, 200])
        XCTAssertEqual(ids, created)
        // A page size under the cap is kept; the default (100) too.
        XCTAssertEqual(try Self.listAll(h, q: q, fields: "nextPageToken,files(id,parents)", pageSize: 300).pages, [300, 300, 300, 300])
        XCTAssertEqual(try Self.listAll(h, q: q, fields: "nextPageToken,files(id,parents)").pages.count, 12)
        // Other orders and queries are capped the same way, and still list each item once.
        let (byName, namePages) = try Self.listAll(h, q: q + " and name contains 'item'", fields: "nextPageToken,files(id,parents)",
                                                   pageSize: 1000)
        XCTAssertEqual(namePages, [460, 460, 280])
        XCTAssertEqual(Set(byName), Set(created))
        XCTAssertEqual(byName.count, created.count)
    }

    // MARK: Grouped listings

    func testGroupedListingUsesEveryParentAndPagesExactly() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        var folders: [String] = []
        var children = Set<String>()
        for f in 0..<5 {
            let folder = try h.create("g\(f)", mime: DriveMime.folder)
            folders.append(folder)
            for i in 0..<(f * 7 + 3) { children.insert(try h.create("c\(f)-\(i)", parent: folder)) }
        }
        let trashed = try h.create("gone", parent: folders[0], extra: ["trashed": true])
        let (ids, _) = try Self.listAll(h, q: Self.parentsQuery(folders + ["root"]), fields: "nextPageToken,files(id,parents)", pageSize: 4)
        XCTAssertEqual(ids.count, children.count + 5, "children plus the five folders under root")
        XCTAssertEqual(Set(ids), children.union(folders))
        XCTAssertFalse(ids.contains(trashed))
    }

    func testQuirkDropsSomeParentsOfGroupedListingsOnly() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        let a = try h.create("a", mime: DriveMime.folder), b = try h.create("b", mime: DriveMime.folder)
        let inA = try h.create("x", parent: a), inB = try h.create("y", parent: b)
        let grouped = Self.parentsQuery([a, b])

        h.quirks.set(.init(multiParentDropFraction: 1, seed: 3))
        XCTAssertEqual(try Self.listAll(h, q: grouped, fields: "nextPageToken,files(id)").ids, [])
        XCTAssertEqual(try Self.listAll(h, q: "'\(a)' in parents", fields: "nextPageToken,files(id)").ids, [inA])
        XCTAssertEqual(try Self.listAll(h, q: "'\(b)' in parents and trashed = false", fields: "files(id)").ids, [inB])

        // Half the parents, replayed exactly from the seed.
        func run(seed: UInt64) throws -> [[String]] {
            h.quirks.set(.init(multiParentDropFraction: 0.5, seed: seed))
            return try (0..<20).map { _ in try Self.listAll(h, q: grouped, fields: "nextPageToken,files(id)").ids }
        }
        let first = try run(seed: 11)
        XCTAssertEqual(try run(seed: 11), first)
        XCTAssertTrue(first.allSatisfy { Set($0).isSubset(of: [inA, inB]) })
        XCTAssertTrue(first.contains { $0.count < 2 }, "some answers are partial")
        XCTAssertTrue(first.contains { $0.count == 2 }, "some answers are whole")

        h.quirks.set(.init())
        XCTAssertEqual(Set(try Self.listAll(h, q: grouped, fields: "nextPageToken,files(id)").ids), [inA, inB])
    }

    /// Standard services over HTTP: the quirk is switched by `/__emulator/quirks` and by config.
    func testQuirksControlAPI() throws {
        var config = EmulatorConfig(port: 0)
        config.listingQuirks = .init(multiParentDropFraction: 0.25, seed: 9)
        let emulator = try Emulator(config: config)
        try emulator.start()
        defer { emulator.stop() }
        let port = emulator.port
        let got = try RawHTTP.request(port: port, "GET", "/__emulator/quirks")
        XCTAssertEqual(got.status, 200)
        XCTAssertEqual(got.json?["multiParentDrop"] as? Double, 0.25)
        XCTAssertEqual(got.json?["seed"] as? Int, 9)

        let token = try accessToken(port)
        let auth = [("Authorization", "Bearer \(token)")]
        let folders = try (0..<2).map { i -> String in
            let r = try RawHTTP.request(port: port, "POST", "/drive/v3/files", headers: auth + [("Content-Type", "application/json")],
                                        body: Array("{\"name\":\"q\(i)\",\"mimeType\":\"\(DriveMime.folder)\"}".utf8))
            return r.json?["id"] as? String ?? ""
        }
        for f in folders {
            let r = try RawHTTP.request(port: port, "POST", "/drive/v3/files", headers: auth + [("Content-Type", "application/json")],
                                        body: Array("{\"name\":\"child\",\"parents\":[\"\(f)\"]}".utf8))
            XCTAssertEqual(r.status, 200)
        }
        let list = "/drive/v3/files?q=\(DriveHarness.q(Self.parentsQuery(folders)))&fields=files(id)"

        let on = try RawHTTP.request(port: port, "POST", "/__emulator/quirks", body: Array("{\"multiParentDrop\":1}".utf8))
        XCTAssertEqual(on.status, 200, on.text)
        XCTAssertEqual(on.json?["multiParentDrop"] as? Double, 1)
        XCTAssertEqual(on.json?["seed"] as? Int, 9)
        XCTAssertEqual(emulator.listingQuirks.multiParentDropFraction, 1)
        XCTAssertEqual((try RawHTTP.request(port: port, "GET", list, headers: auth).json?["files"] as? [Any])?.count, 0)

        for bad in ["{\"multiParentDrop\":2}", "{\"other\":1}", "[1]", "{\"seed\":-1}"] {
            let r = try RawHTTP.request(port: port, "POST", "/__emulator/quirks", body: Array(bad.utf8))
            XCTAssertEqual(r.status, 400, bad)
        }
        XCTAssertEqual(emulator.listingQuirks.multiParentDropFraction, 1, "a refused document changes nothing")

        let off = try RawHTTP.request(port: port, "DELETE", "/__emulator/quirks")
        XCTAssertEqual(off.json?["multiParentDrop"] as? Double, 0)
        XCTAssertEqual((try RawHTTP.request(port: port, "GET", list, headers: auth).json?["files"] as? [Any])?.count, 2)
        XCTAssertEqual(try RawHTTP.request(port: port, "PUT", "/__emulator/quirks").status, 405)
        // Control requests are not counted.
        XCTAssertNil(emulator.stats().methods["unknown"])
    }

    func accessToken(_ port: Int) throws -> String {
        let form = Array("grant_type=refresh_token&refresh_token=drivefs-emulator-refresh-token&client_id=a&client_secret=b".utf8)
        let r = try RawHTTP.request(port: port, "POST", "/token", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: form)
        return try XCTUnwrap(r.json?["access_token"] as? String)
    }

    // MARK: X-HTTP-Method-Override

    func testMethodOverridePostIsServedAsTheGet() throws {
        let h = try DriveHarness()
        defer { h.shutdown() }
        var folders: [String] = []
        for i in 0..<50 {
            let folder = try h.create("o\(i)", mime: DriveMime.folder)
            folders.append(folder)
            try h.create("in-\(i)", parent: folder)
        }
        let file = try h.upload("blob.bin", Array("hello".utf8))
        let startToken = try h.call("GET", "/drive/v3/changes/startPageToken").1["startPageToken"] as? String ?? "1"
        let longQuery = "q=\(DriveHarness.q(Self.parentsQuery(folders)))&pageSize=7&fields=\(DriveHarness.q("nextPageToken,files(id,name,parents)"))&alt=json"
        XCTAssertGreaterThan(longQuery.count, 2048)
        let cases: [(path: String, query: String)] = [
            ("/drive/v3/files", longQuery),
            ("/drive/v3/files", "q=\(DriveHarness.q("'\(folders[3])' in parents"))&fields=files(id)&prettyPrint=false"),
            ("/drive/v3/files/\(file)", "fields=id,name,size,md5Checksum"),
            ("/drive/v3/files/\(file)", "alt=media"),
            ("/drive/v3/changes", "pageToken=1&pageSize=3&fields=\(DriveHarness.q("nextPageToken,changes(fileId)"))"),
            ("/drive/v3/changes/startPageToken", ""),
            ("/drive/v3/about", "fields=user"),
        ]
        _ = startToken
        for c in cases {
            let get = try h.send("GET", c.path + (c.query.isEmpty ? "" : "?" + c.query))
            let post = try h.send("POST", c.path, headers: [("X-HTTP-Method-Override", "GET"),
                                                            ("Content-Type", "application/x-www-form-urlencoded")],
                                  bytes: Array(c.query.utf8))
            XCTAssertEqual(get.status, 200, c.path)
            XCTAssertEqual(post.status, get.status, c.path)
            XCTAssertEqual(DriveHarness.bytes(post), DriveHarness.bytes(get), "\(c.path)?\(c.query.prefix(60))")
        }
        // Paging through the long grouped query by POST, following its tokens.
        var ids: [String] = []
        var token: String?
        var rounds = 0
        repeat {
            let body = longQuery + (token.map { "&pageToken=\(DriveHarness.q($0))" } ?? "")
            let r = try h.send("POST", "/drive/v3/files", headers: [("X-HTTP-Method-Override", "get"),
                                                                    ("Content-Type", "application/x-www-form-urlencoded")],
                               bytes: Array(body.utf8))
            XCTAssertEqual(r.status, 200)
            let page = DriveHarness.object(r)
            ids += (page["files"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            token = page["nextPageToken"] as? String
            rounds += 1
        } while token != nil && rounds < 50
        XCTAssertEqual(ids.count, 50)
        XCTAssertEqual(Set(ids).count, 50)
        // A form body only: anything else is refused, and a plain POST still creates.
        let json = try h.send("POST", "/drive/v3/files", headers: [("X-HTTP-Method-Override", "GET"), ("Content-Type", "application/json")],
                              bytes: Array("{}".utf8))
        XCTAssertEqual(json.status, 400)
        XCTAssertEqual(try h.call("POST", "/drive/v3/files", json: ["name": "plain"]).0, 200)
    }

    /// Over the HTTP server: the route (and so stats and faults) is the GET's.
    func testMethodOverrideOverHTTPCountsAsTheGetRoute() throws {
        let emulator = try Emulator(config: EmulatorConfig(port: 0))
        try emulator.start()
        defer { emulator.stop() }
        let token = try accessToken(emulator.port)
        let q = Self.parentsQuery((0..<60).map { _ in DriveIDs.newFileID() })
        let body = Array("q=\(DriveHarness.q(q))&fields=files(id)".utf8)
        XCTAssertGreaterThan(body.count, 2048)
        let r = try RawHTTP.request(port: emulator.port, "POST", "/drive/v3/files",
                                    headers: [("Authorization", "Bearer \(token)"), ("X-HTTP-Method-Override", "GET"),
                                              ("Content-Type", "application/x-www-form-urlencoded")], body: body)
        XCTAssertEqual(r.status, 200, r.text)
        XCTAssertEqual((r.json?["files"] as? [Any])?.count, 0)
        XCTAssertEqual(emulator.stats().methods["files.list"]?.statuses["200"], 1)
        XCTAssertNil(emulator.stats().methods["files.create"])
    }
}
