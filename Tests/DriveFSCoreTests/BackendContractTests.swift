import DriveClient
import DriveEmulator
import DriveSupport
import Foundation
import XCTest

/// A backend and a way to build a drive on it.
struct ContractWorld {
    var backend: any DriveBackend
    var rootID: String
    var addFolder: (_ name: String, _ parent: String) throws -> String
    var addFile: (_ name: String, _ parent: String, _ bytes: [UInt8]) throws -> String
    var replace: (_ id: String, _ bytes: [UInt8]) throws -> Void
    var trash: (_ id: String) throws -> Void
    var close: () -> Void
}

/// The backend contract (testing tier 2): the same checks of what the filesystem core relies on,
/// run against `FakeDriveBackend` and against `DriveAPI` talking to the in-process emulator, so
/// the fake the core's tests use cannot drift from the real client. Each conforming test class
/// names every check as a test of its own.
protocol BackendContract {
    func makeWorld() throws -> ContractWorld
}

extension BackendContract {
    private func ids(_ files: [DriveFile]) -> Set<String> { Set(files.map(\.id)) }

    private func listAll(_ world: ContractWorld, _ parents: [String]) throws -> [DriveFile] {
        var all: [DriveFile] = []
        try world.backend.listChildren(ofAny: parents, fields: DriveFile.listingFieldMask, pageSize: 1000) { page in
            XCTAssertLessThanOrEqual(page.files.count, 460, "a page with parents in the mask holds at most 460")
            all += page.files
            return true
        }
        return all
    }

    func checkGroupedListingsReturnExactlyTheNonTrashedChildrenWithTheirParents() throws {
        let world = try makeWorld()
        defer { world.close() }
        var folders: [String] = []
        var expected: [String: Set<String>] = [:]
        for f in 0..<3 {
            let folder = try world.addFolder("folder\(f)", world.rootID)
            folders.append(folder)
            for i in 0..<(f == 0 ? 500 : 7) {
                let id = try world.addFile("file\(i)", folder, [UInt8(i & 0xff)])
                expected[folder, default: []].insert(id)
            }
        }
        let gone = try world.addFile("trashed", folders[1], [1])
        try world.trash(gone)
        let empty = try world.addFolder("empty", world.rootID)
        let all = try listAll(world, folders + [empty])
        XCTAssertEqual(all.count, 514, "each child once")
        for folder in folders {
            XCTAssertEqual(ids(all.filter { $0.parents.contains(folder) }), expected[folder] ?? [])
        }
        XCTAssertFalse(ids(all).contains(gone), "trashed children are left out")
        XCTAssertTrue(try listAll(world, [empty]).isEmpty)
        XCTAssertEqual(try listAll(world, [folders[2]]).count, 7)
    }

    func checkMoreParentsThanOneQueryTakesAreListedAnyway() throws {
        let world = try makeWorld()
        defer { world.close() }
        var folders: [String] = []
        var files: Set<String> = []
        for f in 0..<130 {
            let folder = try world.addFolder("f\(f)", world.rootID)
            folders.append(folder)
            if f % 10 == 0 { files.insert(try world.addFile("x", folder, [1])) }
        }
        XCTAssertEqual(ids(try listAll(world, folders)), files)
    }

    func checkDownloadsDeliverExactlyTheRangeAndPinnedRevisions() throws {
        let world = try makeWorld()
        defer { world.close() }
        let bytes = CoreHarness.pattern(300_000, seed: 21)
        let id = try world.addFile("data.bin", world.rootID, bytes)
        let file = try world.backend.getFile(id)
        XCTAssertEqual(file.size, 300_000)
        XCTAssertEqual(file.md5Checksum, Digest.hex(.md5, of: bytes))
        func fetch(_ offset: Int64, _ length: Int64?, revision: String?) throws -> [UInt8] {
            let box = Locked<[UInt8]>([])
            _ = try world.backend.download(id, revision: revision, offset: offset, length: length, to: .callback { chunk in
                box.withLock { $0 += chunk }
                return true
            })
            return box.withLock { $0 }
        }
        XCTAssertEqual(try fetch(0, nil, revision: nil), bytes)
        XCTAssertEqual(try fetch(1000, 5000, revision: file.headRevisionId), Array(bytes[1000..<6000]))
        XCTAssertEqual(try fetch(299_990, 100, revision: file.headRevisionId), Array(bytes[299_990...]), "clamped at the end")
        let empty = try world.addFile("empty", world.rootID, [])
        XCTAssertEqual(try world.backend.download(empty, revision: nil, offset: 0, length: 4096, to: .callback { _ in true }), 0)
        XCTAssertThrowsError(try world.backend.download(id, revision: "no-such-revision", offset: 0, length: 10,
                                                        to: .callback { _ in true })) { error in
            guard case .notFound = error as? DriveError else { return XCTFail("\(error)") }
        }
        try world.replace(id, Array("new".utf8))
        let changed = try world.backend.getFile(id)
        XCTAssertNotEqual(changed.headRevisionId, file.headRevisionId, "new content, new head revision")
        XCTAssertEqual(changed.size, 3)
    }

    func checkTheChangeFeedReportsEachChangeAfterItsStartToken() throws {
        let world = try makeWorld()
        defer { world.close() }
        let token = try world.backend.changesStartPageToken()
        let id = try world.addFile("new.txt", world.rootID, [1, 2])
        var seen: [DriveChange] = []
        var next = token
        for _ in 0..<100 {
            let page = try world.backend.changes(pageToken: next, pageSize: 100)
            seen += page.changes
            guard let more = page.nextPageToken else {
                XCTAssertNotNil(page.newStartPageToken)
                next = page.newStartPageToken!
                break
            }
            next = more
        }
        XCTAssertTrue(seen.contains { $0.fileId == id && $0.file?.name == "new.txt" && $0.file?.parents.isEmpty == false })
        XCTAssertTrue(try world.backend.changes(pageToken: next, pageSize: 100).changes.isEmpty, "nothing after the new token")
        XCTAssertThrowsError(try world.backend.getFile("no-such-file-id")) { error in
            guard case .notFound = error as? DriveError else { return XCTFail("\(error)") }
        }
    }
}

final class FakeBackendContractTests: XCTestCase, BackendContract {
    func testGroupedListingsReturnExactlyTheNonTrashedChildrenWithTheirParents() throws {
        try checkGroupedListingsReturnExactlyTheNonTrashedChildrenWithTheirParents()
    }
    func testMoreParentsThanOneQueryTakesAreListedAnyway() throws { try checkMoreParentsThanOneQueryTakesAreListedAnyway() }
    func testDownloadsDeliverExactlyTheRangeAndPinnedRevisions() throws { try checkDownloadsDeliverExactlyTheRangeAndPinnedRevisions() }
    func testTheChangeFeedReportsEachChangeAfterItsStartToken() throws { try checkTheChangeFeedReportsEachChangeAfterItsStartToken() }

    func makeWorld() throws -> ContractWorld {
        let fake = FakeDriveBackend()
        return ContractWorld(backend: fake, rootID: fake.rootID,
                     addFolder: { name, parent in fake.addFolder(name, in: parent) },
                     addFile: { name, parent, bytes in fake.addFile(name, in: parent, content: bytes) },
                     replace: { id, bytes in fake.replaceContent(id, with: bytes) },
                     trash: { id in fake.trashFile(id) },
                     close: {})
    }
}

final class EmulatorBackendContractTests: XCTestCase, BackendContract {
    func testGroupedListingsReturnExactlyTheNonTrashedChildrenWithTheirParents() throws {
        try checkGroupedListingsReturnExactlyTheNonTrashedChildrenWithTheirParents()
    }
    func testMoreParentsThanOneQueryTakesAreListedAnyway() throws { try checkMoreParentsThanOneQueryTakesAreListedAnyway() }
    func testDownloadsDeliverExactlyTheRangeAndPinnedRevisions() throws { try checkDownloadsDeliverExactlyTheRangeAndPinnedRevisions() }
    func testTheChangeFeedReportsEachChangeAfterItsStartToken() throws { try checkTheChangeFeedReportsEachChangeAfterItsStartToken() }

    func makeWorld() throws -> ContractWorld {
        let emulator = try Emulator(config: EmulatorConfig(port: 0))
        try emulator.start()
        let endpoints = DriveEndpoints.singleHost(emulator.baseURL)
        let transport = try CurlTransport()
        let grant = RefreshTokenGrant(tokenURL: endpoints.tokenURL, clientID: "contract", clientSecret: "x",
                                      refreshToken: "drivefs-emulator-refresh-token", transport: transport)
        let executor = DriveRequestExecutor(transport: transport, tokens: TokenManager(grant: grant),
                                            pacer: Pacer(ratePerSecond: 10_000, burst: 10_000),
                                            retryPolicy: RetryPolicy(maxAttempts: 4, maxElapsed: 30, baseDelay: 0.01, maxDelay: 0.1))
        let api = DriveAPI(executor: executor, endpoints: endpoints)
        let root = try api.getFile("root").id
        return ContractWorld(backend: api, rootID: root,
                     addFolder: { name, parent in try api.createFolder(name: name, parent: parent).id },
                     addFile: { name, parent, bytes in try api.createFile(name: name, parent: parent, source: .bytes(bytes)).id },
                     replace: { id, bytes in _ = try api.updateContent(id, source: .bytes(bytes)) },
                     trash: { id in _ = try api.trash(id) },
                     close: { emulator.stop() })
    }
}
