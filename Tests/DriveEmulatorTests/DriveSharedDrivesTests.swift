import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

/// Shared drives: the drives resource, `supportsAllDrives`, corpora, drive change feeds, the seed
/// convention and persistence.
final class DriveSharedDrivesTests: XCTestCase {
    var h: DriveHarness!
    override func setUpWithError() throws { h = try DriveHarness() }
    override func tearDown() { h.shutdown() }

    static let all = "supportsAllDrives=true"
    static let folder = "application/vnd.google-apps.folder"

    func makeDrive(_ name: String, requestId: String = UUID().uuidString) throws -> String {
        let (s, b) = try h.call("POST", "/drive/v3/drives?requestId=\(requestId)", json: ["name": name])
        XCTAssertEqual(s, 200, "\(b)")
        return try XCTUnwrap(b["id"] as? String)
    }

    /// Creates an item in a shared drive (or anywhere) with supportsAllDrives=true.
    @discardableResult
    func create(_ name: String, parent: String, folder: Bool = false) throws -> String {
        var meta: [String: Any] = ["name": name, "parents": [parent]]
        if folder { meta["mimeType"] = Self.folder }
        let (s, b) = try h.call("POST", "/drive/v3/files?\(Self.all)", json: meta)
        XCTAssertEqual(s, 200, "\(b)")
        return try XCTUnwrap(b["id"] as? String)
    }

    func listIds(_ query: String) throws -> Set<String> {
        var ids = Set<String>()
        var token: String?
        repeat {
            let t = token.map { "&pageToken=\(DriveHarness.q($0))" } ?? ""
            let (s, b) = try h.call("GET", "/drive/v3/files?pageSize=7&fields=nextPageToken,files(id)&\(query)\(t)")
            XCTAssertEqual(s, 200, "\(b)")
            guard s == 200 else { return ids }
            for f in b["files"] as? [[String: Any]] ?? [] { ids.insert(f["id"] as! String) }
            token = b["nextPageToken"] as? String
        } while token != nil
        return ids
    }

    func assertNotFound(_ status: Int, _ body: [String: Any], _ id: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(status, 404, file: file, line: line)
        XCTAssertEqual(DriveHarness.reason(body), "notFound", file: file, line: line)
        XCTAssertEqual(DriveHarness.message(body), "File not found: \(id).", file: file, line: line)
        XCTAssertEqual(DriveHarness.location(body), "fileId", file: file, line: line)
    }

    // MARK: The drives resource

    func testCreateGetListUpdateDelete() throws {
        let (s, created) = try h.call("POST", "/drive/v3/drives?requestId=r1&fields=*", json: ["name": "Team"])
        XCTAssertEqual(s, 200)
        let id = try XCTUnwrap(created["id"] as? String)
        XCTAssertEqual(created["kind"] as? String, "drive#drive")
        XCTAssertEqual(created["name"] as? String, "Team")
        XCTAssertEqual(id.count, 19)
        XCTAssertTrue(id.hasPrefix("0A") && id.hasSuffix("Uk9PVA"))
        XCTAssertEqual((created["capabilities"] as? [String: Bool])?["canAddChildren"], true)
        XCTAssertNotNil(created["createdTime"])

        // A repeated requestId: 409 (discovery: "If the shared drive already exists a 409 error will be returned").
        XCTAssertEqual(try h.call("POST", "/drive/v3/drives?requestId=r1", json: ["name": "Team"]).0, 409)
        XCTAssertEqual(try h.call("POST", "/drive/v3/drives", json: ["name": "Team"]).0, 400)
        XCTAssertEqual(try h.call("POST", "/drive/v3/drives?requestId=r2", json: [:]).0, 400)

        let (gs, got) = try h.call("GET", "/drive/v3/drives/\(id)")
        XCTAssertEqual(gs, 200)
        XCTAssertEqual(got.keys.sorted(), ["id", "kind", "name"])
        let (ms, missing) = try h.call("GET", "/drive/v3/drives/0AnoSuchDriveUk9PVA")
        XCTAssertEqual(ms, 404)
        XCTAssertEqual(DriveHarness.message(missing), "Shared drive not found: 0AnoSuchDriveUk9PVA")
        XCTAssertEqual(DriveHarness.location(missing), "driveId")

        // Its root folder is a file with the drive's id.
        let (fs, root) = try h.call("GET", "/drive/v3/files/\(id)?\(Self.all)&fields=id,name,mimeType,driveId,parents")
        XCTAssertEqual(fs, 200)
        XCTAssertEqual(root["name"] as? String, "Team")
        XCTAssertEqual(root["mimeType"] as? String, Self.folder)
        XCTAssertEqual(root["driveId"] as? String, id)
        XCTAssertNil(root["parents"])
        let (hs, hidden) = try h.call("GET", "/drive/v3/files/\(id)")
        assertNotFound(hs, hidden, id)

        // Rename.
        let (us, renamed) = try h.call("PATCH", "/drive/v3/drives/\(id)", json: ["name": "Team B"])
        XCTAssertEqual(us, 200)
        XCTAssertEqual(renamed["name"] as? String, "Team B")
        XCTAssertEqual(try h.call("PATCH", "/drive/v3/drives/\(id)", json: ["id": "x"]).0, 403)

        // List: paging, q on name.
        let others = try (0..<4).map { try makeDrive("Other \($0)") }
        var listed: [String] = []
        var token: String?
        repeat {
            let t = token.map { "&pageToken=\(DriveHarness.q($0))" } ?? ""
            let (ls, page) = try h.call("GET", "/drive/v3/drives?pageSize=2\(t)")
            XCTAssertEqual(ls, 200)
            XCTAssertEqual(page["kind"] as? String, "drive#driveList")
            listed += (page["drives"] as? [[String: Any]] ?? []).map { $0["id"] as! String }
            token = page["nextPageToken"] as? String
        } while token != nil
        XCTAssertEqual(listed, [id] + others)
        let (_, named) = try h.call("GET", "/drive/v3/drives?q=\(DriveHarness.q("name = 'team b'"))&fields=drives(id,name)")
        XCTAssertEqual((named["drives"] as? [[String: Any]])?.compactMap { $0["id"] as? String }, [id])
        let (_, contains) = try h.call("GET", "/drive/v3/drives?q=\(DriveHarness.q("name contains 'Other'"))")
        XCTAssertEqual((contains["drives"] as? [Any])?.count, 4)
        XCTAssertEqual(try h.call("GET", "/drive/v3/drives?q=\(DriveHarness.q("'x' in parents"))").0, 400)
        XCTAssertEqual(try h.call("GET", "/drive/v3/drives?pageSize=0").0, 400)
        XCTAssertEqual(try h.call("GET", "/drive/v3/drives?fields=drives(bogus)").0, 400)

        // Delete: only without untrashed items.
        let file = try create("f.txt", parent: id)
        let (ds, refused) = try h.call("DELETE", "/drive/v3/drives/\(id)")
        XCTAssertEqual(ds, 403)
        XCTAssertEqual(DriveHarness.reason(refused), "cannotDeleteNonEmptyDrive")
        XCTAssertEqual(try h.call("PATCH", "/drive/v3/files/\(file)?\(Self.all)", json: ["trashed": true]).0, 200)
        XCTAssertEqual(try h.send("DELETE", "/drive/v3/drives/\(id)").status, 204)
        XCTAssertEqual(try h.call("GET", "/drive/v3/drives/\(id)").0, 404)
        XCTAssertEqual(try h.call("GET", "/drive/v3/files/\(file)?\(Self.all)").0, 404)
    }

    func testRouteNames() {
        func name(_ m: String, _ t: String) -> String? {
            DriveService.match(HTTPRequest(method: m, target: t, headers: HTTPHeaders([]), body: BufferedRequestBody([]), baseURL: ""))?.0
        }
        XCTAssertEqual(name("POST", "/drive/v3/drives"), "drives.create")
        XCTAssertEqual(name("GET", "/drive/v3/drives"), "drives.list")
        XCTAssertEqual(name("GET", "/drive/v3/drives/X"), "drives.get")
        XCTAssertEqual(name("PATCH", "/drive/v3/drives/X"), "drives.update")
        XCTAssertEqual(name("DELETE", "/drive/v3/drives/X"), "drives.delete")
        XCTAssertEqual(name("POST", "/drive/v3/drives/X/hide"), "drive.unknown")
    }

    func testAboutSaysCanCreateDrives() throws {
        let (_, about) = try h.call("GET", "/drive/v3/about?fields=canCreateDrives")
        XCTAssertEqual(about["canCreateDrives"] as? Bool, true)
    }

    // MARK: supportsAllDrives

    func testItemsCarryDriveIdAndNoOwners() throws {
        let drive = try makeDrive("Team")
        let folder = try create("docs", parent: drive, folder: true)
        let (_, file) = try h.call("POST", "/drive/v3/files?\(Self.all)&fields=*", json: ["name": "a.txt", "parents": [folder]])
        XCTAssertEqual(file["driveId"] as? String, drive)
        XCTAssertNil(file["owners"])
        XCTAssertEqual(file["ownedByMe"] as? Bool, false)
        XCTAssertEqual(file["parents"] as? [String], [folder])
        let (_, mine) = try h.call("POST", "/drive/v3/files?fields=*", json: ["name": "m.txt"])
        XCTAssertNil(mine["driveId"])
        XCTAssertNotNil(mine["owners"])
    }

    func testSharedDriveItemsAre404WithoutSupportsAllDrives() throws {
        let drive = try makeDrive("Team")
        let folder = try create("docs", parent: drive, folder: true)
        let blob = try h.upload("b.bin", [1, 2, 3], parent: nil)
        // Move a blob into the drive (with the flag), so it has content there.
        XCTAssertEqual(try h.call("PATCH", "/drive/v3/files/\(blob)?addParents=\(folder)&removeParents=root&\(Self.all)", json: [:]).0, 200)

        for (method, target) in [("GET", "/drive/v3/files/\(blob)"), ("GET", "/drive/v3/files/\(blob)?alt=media"),
                                 ("GET", "/download/drive/v3/files/\(blob)"), ("PATCH", "/drive/v3/files/\(blob)"),
                                 ("POST", "/drive/v3/files/\(blob)/copy"), ("DELETE", "/drive/v3/files/\(blob)")] {
            let r = try h.send(method, target, headers: method == "GET" || method == "DELETE" ? [] : [("Content-Type", "application/json")],
                               bytes: method == "GET" || method == "DELETE" ? [] : Array("{}".utf8))
            assertNotFound(r.status, DriveHarness.object(r), blob)
        }
        // A parent inside the drive, without the flag, is an unknown parent.
        let (cs, cb) = try h.call("POST", "/drive/v3/files", json: ["name": "x", "parents": [folder]])
        assertNotFound(cs, cb, folder)
        // Uploads too.
        let up = try h.send("PATCH", "/upload/drive/v3/files/\(blob)?uploadType=media", bytes: [9])
        XCTAssertEqual(up.status, 404)
        // Moving a My Drive file into the drive without the flag.
        let mine = try h.create("mine.txt")
        let (ms, mb) = try h.call("PATCH", "/drive/v3/files/\(mine)?addParents=\(folder)&removeParents=root", json: [:])
        assertNotFound(ms, mb, folder)

        // With the flag, everything works.
        XCTAssertEqual(try h.call("GET", "/drive/v3/files/\(blob)?\(Self.all)").0, 200)
        let media = try h.send("GET", "/drive/v3/files/\(blob)?alt=media&\(Self.all)", bytes: [])
        XCTAssertEqual(media.status, 200)
        XCTAssertEqual(DriveHarness.bytes(media), [1, 2, 3])
        // revisions and export take no supportsAllDrives (discovery): served without it.
        XCTAssertEqual(try h.call("GET", "/drive/v3/files/\(blob)/revisions").0, 200)
        let (cps, copy) = try h.call("POST", "/drive/v3/files/\(blob)/copy?\(Self.all)&fields=id,driveId,parents", json: [:])
        XCTAssertEqual(cps, 200)
        XCTAssertEqual(copy["driveId"] as? String, drive)
        XCTAssertEqual(try h.send("DELETE", "/drive/v3/files/\(copy["id"] as! String)?\(Self.all)").status, 204)

        // Listings without the flag never show it; nor does My Drive's change feed.
        XCTAssertFalse(try listIds("q=").contains(blob))
        XCTAssertEqual(try listIds("q=\(DriveHarness.q("'\(folder)' in parents"))"), [])
        let (_, feed) = try h.call("GET", "/drive/v3/changes?pageToken=1&pageSize=1000")
        let ids = (feed["changes"] as? [[String: Any]] ?? []).compactMap { $0["fileId"] as? String }
        XCTAssertFalse(ids.contains(blob))
        XCTAssertFalse(ids.contains(folder))
        XCTAssertTrue(ids.contains(mine))
    }

    func testMovingAFolderIntoADriveCarriesItsTree() throws {
        let drive = try makeDrive("Team")
        let top = try h.create("top", mime: Self.folder)
        let inner = try h.create("inner.txt", parent: top)
        XCTAssertEqual(try h.call("PATCH", "/drive/v3/files/\(top)?addParents=\(drive)&removeParents=root&\(Self.all)", json: [:]).0, 200)
        let (_, moved) = try h.call("GET", "/drive/v3/files/\(inner)?\(Self.all)&fields=driveId")
        XCTAssertEqual(moved["driveId"] as? String, drive)
        XCTAssertEqual(try h.call("GET", "/drive/v3/files/\(inner)").0, 404)
        // And back out.
        XCTAssertEqual(try h.call("PATCH", "/drive/v3/files/\(top)?addParents=root&removeParents=\(drive)&\(Self.all)", json: [:]).0, 200)
        let (_, back) = try h.call("GET", "/drive/v3/files/\(inner)?fields=driveId,owners")
        XCTAssertNil(back["driveId"])
        XCTAssertNotNil(back["owners"])
        // The drive's root is fixed: no rename through files.update, no files.delete.
        XCTAssertEqual(try h.call("PATCH", "/drive/v3/files/\(drive)?\(Self.all)", json: ["name": "x"]).0, 403)
        XCTAssertEqual(try h.send("DELETE", "/drive/v3/files/\(drive)?\(Self.all)").status, 403)
    }

    // MARK: files.list corpora

    func testCorporaParameterErrors() throws {
        let drive = try makeDrive("Team")
        let (s1, b1) = try h.call("GET", "/drive/v3/files?driveId=\(drive)&includeItemsFromAllDrives=true&\(Self.all)")
        XCTAssertEqual(s1, 400)
        XCTAssertEqual(DriveHarness.reason(b1), "teamDriveIdRequiresTeamDriveCorpora")
        let (s2, b2) = try h.call("GET", "/drive/v3/files?corpora=drive&includeItemsFromAllDrives=true&\(Self.all)")
        XCTAssertEqual(s2, 400)
        XCTAssertEqual(DriveHarness.message(b2), "The driveId parameter must be specified if and only if corpora is set to drive.")
        let (s3, b3) = try h.call("GET", "/drive/v3/files?corpora=drive&driveId=\(drive)&\(Self.all)")
        XCTAssertEqual(s3, 403)
        XCTAssertEqual(DriveHarness.message(b3),
                       "The includeItemsFromAllDrives parameter must be set to true when driveId is specified or corpora contains drive or allDrives.")
        XCTAssertEqual(try h.call("GET", "/drive/v3/files?corpora=allDrives&\(Self.all)").0, 403)
        XCTAssertEqual(try h.call("GET", "/drive/v3/files?corpora=drive&driveId=\(drive)&includeItemsFromAllDrives=true").0, 403)
        XCTAssertEqual(try h.call("GET", "/drive/v3/files?includeItemsFromAllDrives=true").0, 403)
        let (s4, b4) = try h.call("GET", "/drive/v3/files?corpora=drive&driveId=0AnoSuchDriveUk9PVA&includeItemsFromAllDrives=true&\(Self.all)")
        XCTAssertEqual(s4, 404)
        XCTAssertEqual(DriveHarness.location(b4), "driveId")
        // The deprecated names work too.
        XCTAssertEqual(try h.call("GET", "/drive/v3/files?corpora=drive&teamDriveId=\(drive)&includeTeamDriveItems=true&supportsTeamDrives=true").0, 200)
        // A page token of the drive listing is not one of My Drive's.
        for i in 0..<3 { try create("f\(i)", parent: drive) }
        let (_, page) = try h.call("GET", "/drive/v3/files?pageSize=1&corpora=drive&driveId=\(drive)&includeItemsFromAllDrives=true&\(Self.all)")
        let token = try XCTUnwrap(page["nextPageToken"] as? String)
        XCTAssertEqual(try h.call("GET", "/drive/v3/files?pageSize=1&pageToken=\(DriveHarness.q(token))").0, 400)
    }

    /// Random trees split between My Drive and two shared drives: each corpus lists exactly its own
    /// items, whether listed whole, folder by folder, or by name.
    func testEachCorpusListsExactlyItsOwnItems() throws {
        for seed in UInt64(1)...4 {
            h.shutdown()
            h = try DriveHarness()
            var rng = SplitMix64(seed: seed)
            let drives = [try makeDrive("A"), try makeDrive("B")]
            let roots = [h.rootId] + drives
            // corpus index → folder ids (its root first) and every item id.
            var folders: [[String]] = roots.map { [$0] }
            var items: [Set<String>] = [[], [], []]
            for n in 0..<(40 + rng.next(below: 40)) {
                let corpus = rng.next(below: 3)
                let parent = folders[corpus][rng.next(below: folders[corpus].count)]
                let isFolder = rng.next(below: 3) == 0
                let id = try create("item \(n % 7)", parent: parent, folder: isFolder)
                if isFolder { folders[corpus].append(id) }
                items[corpus].insert(id)
            }
            let mine = items[0], a = items[1], b = items[2]
            XCTAssertEqual(try listIds("q="), mine, "seed \(seed)")
            XCTAssertEqual(try listIds("corpora=user"), mine)
            XCTAssertEqual(try listIds("corpora=user&\(Self.all)"), mine)
            XCTAssertEqual(try listIds("corpora=drive&driveId=\(drives[0])&includeItemsFromAllDrives=true&\(Self.all)"), a)
            XCTAssertEqual(try listIds("corpora=drive&driveId=\(drives[1])&includeItemsFromAllDrives=true&\(Self.all)"), b)
            XCTAssertEqual(try listIds("corpora=allDrives&includeItemsFromAllDrives=true&\(Self.all)"), mine.union(a).union(b))
            XCTAssertEqual(try listIds("includeItemsFromAllDrives=true&\(Self.all)"), mine.union(a).union(b))
            // Folder by folder (the ChildList fast path) and by name.
            for (corpus, scope) in ["q=x", "corpora=drive&driveId=\(drives[0])&includeItemsFromAllDrives=true&\(Self.all)",
                                    "corpora=drive&driveId=\(drives[1])&includeItemsFromAllDrives=true&\(Self.all)"].enumerated() {
                let scope = String(scope.dropFirst(scope.hasPrefix("q=x") ? 3 : 0))
                var union = Set<String>()
                for other in 0..<3 {
                    // A folder of another corpus lists nothing in this one.
                    let f = folders[other][rng.next(below: folders[other].count)]
                    let listed = try listIds("q=\(DriveHarness.q("'\(f)' in parents"))&\(scope)")
                    if other != corpus { XCTAssertEqual(listed, [], "seed \(seed)") }
                }
                for f in folders[corpus] { union.formUnion(try listIds("q=\(DriveHarness.q("'\(f)' in parents"))&\(scope)")) }
                XCTAssertEqual(union, items[corpus], "seed \(seed) corpus \(corpus)")
                var named = Set<String>()
                for k in 0..<7 { named.formUnion(try listIds("q=\(DriveHarness.q("name = 'item \(k)'"))&\(scope)")) }
                XCTAssertEqual(named, items[corpus])
            }
        }
    }

    // MARK: Changes

    func testDriveChangeFeeds() throws {
        let drive = try makeDrive("Team")
        let other = try makeDrive("Other")
        let (ts, tb) = try h.call("GET", "/drive/v3/changes/startPageToken?driveId=\(drive)&\(Self.all)")
        XCTAssertEqual(ts, 200)
        let start = try XCTUnwrap(tb["startPageToken"] as? String)
        XCTAssertEqual(try h.call("GET", "/drive/v3/changes/startPageToken?driveId=\(drive)").0, 404)
        XCTAssertEqual(try h.call("GET", "/drive/v3/changes/startPageToken?driveId=0AnoSuchDriveUk9PVA&\(Self.all)").0, 404)

        let inDrive = try create("a.txt", parent: drive)
        let inOther = try create("o.txt", parent: other)
        let mine = try h.create("m.txt")
        let gone = try create("gone.txt", parent: drive)
        XCTAssertEqual(try h.send("DELETE", "/drive/v3/files/\(gone)?\(Self.all)").status, 204)

        let feed = "&driveId=\(drive)&\(Self.all)&includeItemsFromAllDrives=true"
        let (s, page) = try h.call("GET", "/drive/v3/changes?pageToken=\(start)\(feed)&fields=*")
        XCTAssertEqual(s, 200, "\(page)")
        let entries = try XCTUnwrap(page["changes"] as? [[String: Any]])
        XCTAssertEqual(entries.compactMap { $0["fileId"] as? String }, [inDrive, gone])
        for e in entries {
            XCTAssertEqual(e["driveId"] as? String, drive)
            XCTAssertEqual(e["changeType"] as? String, "file")
        }
        XCTAssertEqual(entries[1]["removed"] as? Bool, true)
        XCTAssertNotNil(page["newStartPageToken"])
        // Errors: a driveId without includeItemsFromAllDrives / supportsAllDrives.
        XCTAssertEqual(try h.call("GET", "/drive/v3/changes?pageToken=\(start)&driveId=\(drive)&\(Self.all)").0, 403)
        XCTAssertEqual(try h.call("GET", "/drive/v3/changes?pageToken=\(start)&driveId=\(drive)&includeItemsFromAllDrives=true").0, 403)

        // My Drive's feed: shared-drive items only with includeItemsFromAllDrives (and not restrictToMyDrive).
        let (_, plain) = try h.call("GET", "/drive/v3/changes?pageToken=\(start)")
        XCTAssertEqual((plain["changes"] as? [[String: Any]])?.compactMap { $0["fileId"] as? String }, [mine])
        let (_, everything) = try h.call("GET", "/drive/v3/changes?pageToken=\(start)&includeItemsFromAllDrives=true&\(Self.all)")
        XCTAssertEqual((everything["changes"] as? [[String: Any]])?.compactMap { $0["fileId"] as? String }, [inDrive, inOther, mine, gone])
        let (_, restricted) = try h.call("GET", "/drive/v3/changes?pageToken=\(start)&includeItemsFromAllDrives=true&restrictToMyDrive=true&\(Self.all)")
        XCTAssertEqual((restricted["changes"] as? [[String: Any]])?.compactMap { $0["fileId"] as? String }, [mine])
    }

    func testEmptyTrashOfADrive() throws {
        let drive = try makeDrive("Team")
        let a = try create("a", parent: drive)
        XCTAssertEqual(try h.call("PATCH", "/drive/v3/files/\(a)?\(Self.all)", json: ["trashed": true]).0, 200)
        let m = try h.create("m")
        XCTAssertEqual(try h.call("PATCH", "/drive/v3/files/\(m)", json: ["trashed": true]).0, 200)
        XCTAssertEqual(try h.send("DELETE", "/drive/v3/files/trash").status, 204)
        XCTAssertEqual(try h.call("GET", "/drive/v3/files/\(m)").0, 404)
        XCTAssertEqual(try h.call("GET", "/drive/v3/files/\(a)?\(Self.all)").0, 200)
        XCTAssertEqual(try h.send("DELETE", "/drive/v3/files/trash?driveId=0AnoSuchDriveUk9PVA").status, 404)
        XCTAssertEqual(try h.send("DELETE", "/drive/v3/files/trash?driveId=\(drive)").status, 204)
        XCTAssertEqual(try h.call("GET", "/drive/v3/files/\(a)?\(Self.all)").0, 404)
    }

    /// `trashedTime` and `trashingUser`: Google fills them only for items in shared drives; here on
    /// the item trashed itself, from its trashing until it is untrashed.
    func testTrashedTimeAndTrashingUserOnlyInSharedDrives() throws {
        let drive = try makeDrive("Team")
        let folder = try create("box", parent: drive, folder: true)
        let inside = try create("in", parent: folder)
        let fields = "fields=trashed,explicitlyTrashed,trashedTime,trashingUser(emailAddress)"
        XCTAssertEqual(try h.call("PATCH", "/drive/v3/files/\(folder)?\(Self.all)", json: ["trashed": true]).0, 200)
        let (s, trashed) = try h.call("GET", "/drive/v3/files/\(folder)?\(Self.all)&\(fields)")
        XCTAssertEqual(s, 200)
        let time = try XCTUnwrap(trashed["trashedTime"] as? String, "\(trashed)")
        XCTAssertNotNil(RFC3339.parseMillis(time))
        XCTAssertNotNil((trashed["trashingUser"] as? [String: Any])?["emailAddress"] as? String, "the user who trashed it")
        let (_, child) = try h.call("GET", "/drive/v3/files/\(inside)?\(Self.all)&\(fields)")
        XCTAssertEqual(child["trashed"] as? Bool, true)
        XCTAssertNil(child["trashedTime"], "trashed through its folder: \(child)")
        let (_, listed) = try h.call("GET", "/drive/v3/files?\(Self.all)&includeItemsFromAllDrives=true&corpora=drive&driveId=\(drive)"
                                    + "&q=\(DriveHarness.q("trashed = true"))&fields=files(id,\(fields.dropFirst(7)))")
        let byID = Dictionary(uniqueKeysWithValues: (listed["files"] as? [[String: Any]] ?? []).map { ($0["id"] as! String, $0) })
        XCTAssertEqual(Set(byID.keys), [folder, inside])
        XCTAssertEqual(byID[folder]?["trashedTime"] as? String, time, "the listing too")

        // Untrashed: gone.
        XCTAssertEqual(try h.call("PATCH", "/drive/v3/files/\(folder)?\(Self.all)", json: ["trashed": false]).0, 200)
        XCTAssertNil(try h.call("GET", "/drive/v3/files/\(folder)?\(Self.all)&\(fields)").1["trashedTime"])

        // My Drive: never.
        let mine = try h.create("m")
        XCTAssertEqual(try h.call("PATCH", "/drive/v3/files/\(mine)", json: ["trashed": true]).0, 200)
        let (_, m) = try h.call("GET", "/drive/v3/files/\(mine)?\(fields)")
        XCTAssertEqual(m["explicitlyTrashed"] as? Bool, true)
        XCTAssertNil(m["trashedTime"], "\(m)")
        XCTAssertNil(m["trashingUser"])
    }

    // MARK: Persistence and seeds

    func testDrivesSurviveARestart() throws {
        let drive = try makeDrive("Team", requestId: "req")
        let file = try create("a.txt", parent: drive)
        try h.restart()
        let (_, list) = try h.call("GET", "/drive/v3/drives")
        XCTAssertEqual((list["drives"] as? [[String: Any]])?.compactMap { $0["name"] as? String }, ["Team"])
        XCTAssertEqual(try listIds("corpora=drive&driveId=\(drive)&includeItemsFromAllDrives=true&\(Self.all)"), [file])
        XCTAssertEqual(try h.call("GET", "/drive/v3/files/\(file)").0, 404)
        XCTAssertEqual(try h.call("POST", "/drive/v3/drives?requestId=req", json: ["name": "Team"]).0, 409)
        h.service.store.waitForCompaction()
        try h.restart()
        XCTAssertEqual(try h.call("GET", "/drive/v3/drives/\(drive)").0, 200)
    }

    func testSeedSharedFolderMakesDrives() throws {
        let seed = FileManager.default.temporaryDirectory.appendingPathComponent("seed-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: seed) }
        let fm = FileManager.default
        try fm.createDirectory(at: seed.appendingPathComponent("@shared/Team A/docs"), withIntermediateDirectories: true)
        try fm.createDirectory(at: seed.appendingPathComponent("@shared/Team%2FB"), withIntermediateDirectories: true)
        try Data("hello".utf8).write(to: seed.appendingPathComponent("@shared/Team A/docs/hello.txt"))
        try Data("b".utf8).write(to: seed.appendingPathComponent("@shared/Team%2FB/b.txt"))
        try Data("mine".utf8).write(to: seed.appendingPathComponent("mine.txt"))
        h.shutdown()
        h = try DriveHarness(seed: seed)
        let (_, list) = try h.call("GET", "/drive/v3/drives")
        let drives = try XCTUnwrap(list["drives"] as? [[String: Any]])
        XCTAssertEqual(drives.compactMap { $0["name"] as? String }, ["Team A", "Team/B"])
        let (_, mine) = try h.call("GET", "/drive/v3/files?fields=files(name)")
        XCTAssertEqual((mine["files"] as? [[String: Any]])?.compactMap { $0["name"] as? String }, ["mine.txt"])
        let a = drives[0]["id"] as! String
        let (_, inA) = try h.call("GET", "/drive/v3/files?corpora=drive&driveId=\(a)&includeItemsFromAllDrives=true&\(Self.all)&fields=files(name,driveId)")
        let files = try XCTUnwrap(inA["files"] as? [[String: Any]])
        XCTAssertEqual(Set(files.compactMap { $0["name"] as? String }), ["docs", "hello.txt"])
        XCTAssertTrue(files.allSatisfy { $0["driveId"] as? String == a })
    }
}
