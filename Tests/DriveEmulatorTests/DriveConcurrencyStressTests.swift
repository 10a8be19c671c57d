import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

/// Eight clients at once over loopback keep-alive connections, mixing creates, renames, moves,
/// trashes, deletes, lists, uploads and downloads on shared folders, for a fixed number of
/// operations (bounded: a few seconds). Then the invariants: every listed child's parent is that
/// folder, every item is listed in exactly one folder, nothing created is lost and nothing deleted
/// survives, the change feed replays to the final state, and a restart on the same state
/// directory lists the same.
final class DriveConcurrencyStressTests: XCTestCase {
    private static let threads = 8
    private static let operationsPerThread = 250

    private struct Shared {
        var files: [String] = []
        var deleted: Set<String> = []
        var created: Set<String> = []
        /// Uploaded content by id (never updated, so a download must return exactly this).
        var content: [String: [UInt8]] = [:]
        var failures: [String] = []
    }

    private static func request(_ c: RawHTTPConnection, _ method: String, _ target: String, json: [String: Any]? = nil,
                         body: [UInt8]? = nil, contentType: String? = nil) throws -> RawHTTPResponse {
        var headers = [("Authorization", "Bearer good")]
        var bytes = body
        if let json {
            bytes = Array(try JSONSerialization.data(withJSONObject: json))
            headers.append(("Content-Type", "application/json"))
        }
        if let contentType { headers.append(("Content-Type", contentType)) }
        try c.sendRequest(method, target, headers: headers, body: bytes ?? (method == "GET" || method == "DELETE" ? nil : []))
        return try c.readResponse(timeout: 15)
    }

    func testEightClientsKeepTheTreeConsistent() throws {
        let stateDir = FileManager.default.temporaryDirectory.appendingPathComponent("drive-stress-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: stateDir) }
        let service = try DriveService(stateDirectory: stateDir, seedDirectory: nil, validator: StubValidator(),
                                       clock: SystemTimeSource())
        let emulator = try Emulator(config: EmulatorConfig(port: 0), services: EmulatorServices(providers: [service], close: { service.close() }))
        try emulator.start()
        let started = Date()
        let port = emulator.port
        let setup = try RawHTTPConnection(port: port)
        var folders: [String] = []
        for i in 0..<4 {
            let r = try Self.request(setup, "POST", "/drive/v3/files",
                                json: ["name": "shared-\(i)", "mimeType": "application/vnd.google-apps.folder"])
            folders.append(try XCTUnwrap(r.json?["id"] as? String))
        }
        let sharedFolders = folders
        let state = Locked(Shared())
        let group = DispatchGroup()
        for t in 0..<DriveConcurrencyStressTests.threads {
            group.enter()
            Thread {
                defer { group.leave() }
                do { try DriveConcurrencyStressTests.client(t, port: port, folders: sharedFolders, state: state) } catch {
                    state.withLock { $0.failures.append("client \(t): \(error)") }
                }
            }.start()
        }
        XCTAssertEqual(group.wait(timeout: .now() + 60), .success, "clients did not finish")
        XCTAssertEqual(state.withLock { $0.failures }, [])

        let final = try snapshot(setup, folders: folders)
        let shared = state.withLock { $0 }
        // Nothing lost, nothing deleted survives, nothing unknown appears.
        XCTAssertEqual(final.all, shared.created.subtracting(shared.deleted).union(folders))
        // Each item is listed under exactly one folder, and that folder is its parent.
        var listedOnce: [String: Int] = [:]
        for (folder, children) in final.children {
            for (id, parents) in children {
                XCTAssertEqual(parents, [folder], "\(id) listed under \(folder)")
                listedOnce[id, default: 0] += 1
            }
        }
        XCTAssertEqual(Set(listedOnce.keys), shared.created.subtracting(shared.deleted))
        XCTAssertTrue(listedOnce.values.allSatisfy { $0 == 1 })
        // The change feed replays to the final state.
        var replay: [String: (removed: Bool, parents: [String], name: String)] = [:]
        var token = "1"
        var pages = 0
        while pages < 1000 {
            pages += 1
            let r = try Self.request(setup, "GET", "/drive/v3/changes?pageToken=\(token)&pageSize=37&fields=nextPageToken,newStartPageToken,changes(fileId,removed,file(name,parents))")
            XCTAssertEqual(r.status, 200)
            for change in r.json?["changes"] as? [[String: Any]] ?? [] {
                let id = change["fileId"] as? String ?? ""
                let file = change["file"] as? [String: Any]
                replay[id] = (change["removed"] as? Bool ?? false, file?["parents"] as? [String] ?? [], file?["name"] as? String ?? "")
            }
            guard let next = r.json?["nextPageToken"] as? String else { break }
            token = next
        }
        XCTAssertEqual(Set(replay.filter { !$0.value.removed }.keys), final.all)
        XCTAssertTrue(shared.deleted.allSatisfy { replay[$0]?.removed == true })
        for (folder, children) in final.children {
            for (id, _) in children {
                XCTAssertEqual(replay[id]?.parents, [folder])
                XCTAssertEqual(replay[id]?.name, final.names[id])
            }
        }

        // A restart on the same state directory lists the same.
        emulator.stop()
        let second = try DriveService(stateDirectory: stateDir, seedDirectory: nil, validator: StubValidator(), clock: SystemTimeSource())
        let restarted = try Emulator(config: EmulatorConfig(port: 0), services: EmulatorServices(providers: [second], close: { second.close() }))
        try restarted.start()
        defer { restarted.stop() }
        let again = try snapshot(try RawHTTPConnection(port: restarted.port), folders: folders)
        XCTAssertEqual(again.all, final.all)
        XCTAssertEqual(again.names, final.names)
        XCTAssertEqual(again.order, final.order)
        XCTAssertLessThan(Date().timeIntervalSince(started), 20, "the stress test must stay bounded")
    }

    private struct Snapshot {
        /// Everything but the root (a full listing, paged).
        var all: Set<String> = []
        var names: [String: String] = [:]
        /// folder → [(id, parents)] in listing order.
        var children: [String: [(String, [String])]] = [:]
        var order: [String: [String]] = [:]
    }

    private func snapshot(_ c: RawHTTPConnection, folders: [String]) throws -> Snapshot {
        var snap = Snapshot()
        func list(_ q: String?) throws -> [[String: Any]] {
            var out: [[String: Any]] = []
            var token: String?
            repeat {
                var target = "/drive/v3/files?pageSize=23&fields=nextPageToken,files(id,name,parents)"
                if let q { target += "&q=\(FileResource.queryEscape(q))" }
                if let token { target += "&pageToken=\(FileResource.queryEscape(token))" }
                let r = try Self.request(c, "GET", target)
                XCTAssertEqual(r.status, 200)
                out += r.json?["files"] as? [[String: Any]] ?? []
                token = r.json?["nextPageToken"] as? String
            } while token != nil
            return out
        }
        for file in try list(nil) {
            let id = file["id"] as? String ?? ""
            snap.all.insert(id)
            snap.names[id] = file["name"] as? String
        }
        for folder in folders {
            let children = try list("'\(folder)' in parents")
            snap.children[folder] = children.map { ($0["id"] as? String ?? "", $0["parents"] as? [String] ?? []) }
            snap.order[folder] = children.compactMap { $0["id"] as? String }
        }
        return snap
    }

    private static func client(_ t: Int, port: Int, folders: [String], state: Locked<Shared>) throws {
        var rng = SplitMix64(seed: UInt64(t + 100))
        let c = try RawHTTPConnection(port: port)
        func fail(_ what: String) { state.withLock { $0.failures.append("client \(t): \(what)") } }
        func pick() -> String? { state.withLock { $0.files.isEmpty ? nil : $0.files[rng.next(below: $0.files.count)] } }
        for i in 0..<DriveConcurrencyStressTests.operationsPerThread {
            let folder = folders[rng.next(below: folders.count)]
            switch rng.next(below: 10) {
            case 0, 1:
                let r = try request(c, "POST", "/drive/v3/files?fields=id", json: ["name": "t\(t)-\(i)", "parents": [folder]])
                guard r.status == 200, let id = r.json?["id"] as? String else { fail("create \(r.status)"); continue }
                state.withLock { $0.files.append(id); $0.created.insert(id) }
            case 2:
                let content = Array("content of t\(t)-\(i) ".utf8) + (0..<rng.next(below: 3000)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ t) }
                let meta = "{\"name\":\"u\(t)-\(i)\",\"parents\":[\"\(folder)\"]}"
                let body = Array("--zz\r\nContent-Type: application/json\r\n\r\n\(meta)\r\n--zz\r\nContent-Type: application/octet-stream\r\n\r\n".utf8)
                    + content + Array("\r\n--zz--\r\n".utf8)
                let r = try request(c, "POST", "/upload/drive/v3/files?uploadType=multipart&fields=id", body: body,
                                    contentType: "multipart/related; boundary=zz")
                guard r.status == 200, let id = r.json?["id"] as? String else { fail("upload \(r.status)"); continue }
                state.withLock { $0.files.append(id); $0.created.insert(id); $0.content[id] = content }
            case 3:
                guard let id = pick() else { continue }
                let r = try request(c, "PATCH", "/drive/v3/files/\(id)?fields=id", json: ["name": "renamed-\(t)-\(i)"])
                if r.status != 200 && r.status != 404 { fail("rename \(r.status)") }
            case 4:
                guard let id = pick() else { continue }
                let g = try request(c, "GET", "/drive/v3/files/\(id)?fields=parents")
                guard g.status == 200, let old = (g.json?["parents"] as? [String])?.first else { continue }
                let r = try request(c, "PATCH", "/drive/v3/files/\(id)?addParents=\(folder)&removeParents=\(old)&fields=id", json: [:])
                // Another client may have moved it first: removeParents then names a parent it no
                // longer has (403 cannotAddParent), or deleted it (404).
                if ![200, 403, 404].contains(r.status) || (r.status == 403 && r.googleReason != "cannotAddParent") {
                    fail("move \(r.status) \(r.googleReason ?? "")")
                }
            case 5:
                guard let id = pick() else { continue }
                let r = try request(c, "PATCH", "/drive/v3/files/\(id)?fields=id", json: ["trashed": rng.next(below: 2) == 0])
                if r.status != 200 && r.status != 404 { fail("trash \(r.status)") }
            case 6:
                guard let id = pick() else { continue }
                let r = try request(c, "DELETE", "/drive/v3/files/\(id)")
                if r.status == 204 {
                    state.withLock { s in s.deleted.insert(id); s.files.removeAll { $0 == id } }
                } else if r.status != 404 { fail("delete \(r.status)") }
            case 7:
                let r = try request(c, "GET", "/drive/v3/files?q=\(FileResource.queryEscape("'\(folder)' in parents and trashed = false"))&pageSize=50&fields=nextPageToken,files(id,parents)")
                guard r.status == 200 else { fail("list \(r.status)"); continue }
                for f in r.json?["files"] as? [[String: Any]] ?? [] where f["parents"] as? [String] != [folder] {
                    fail("listed \(f) under \(folder)")
                }
            default:
                let uploaded = state.withLock { s in s.content.isEmpty ? nil : Array(s.content)[rng.next(below: s.content.count)] }
                guard let (id, content) = uploaded else { continue }
                let r = try request(c, "GET", "/drive/v3/files/\(id)?alt=media")
                if r.status == 200 {
                    if r.body != content { fail("download of \(id): \(r.body.count) bytes, expected \(content.count)") }
                } else if r.status != 404 { fail("download \(r.status)") }
            }
        }
    }
}
