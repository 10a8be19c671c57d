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

    /// Every change after `token`, all pages, and the token the last page gives for the next read.
    private func changes(_ world: ContractWorld, after token: String) throws -> (changes: [DriveChange], next: String) {
        var seen: [DriveChange] = []
        var next = token
        for _ in 0..<100 {
            let page = try world.backend.changes(pageToken: next, pageSize: 100)
            seen += page.changes
            guard let more = page.nextPageToken else {
                return (seen, try XCTUnwrap(page.newStartPageToken, "the last page gives the next start token"))
            }
            next = more
        }
        XCTFail("more than 100 pages of changes")
        return (seen, next)
    }

    func checkTheChangeFeedReportsEachChangeAfterItsStartToken() throws {
        let world = try makeWorld()
        defer { world.close() }
        let token = try world.backend.changesStartPageToken()
        let id = try world.addFile("new.txt", world.rootID, [1, 2])
        let (seen, next) = try changes(world, after: token)
        XCTAssertTrue(seen.contains { $0.fileId == id && $0.file?.name == "new.txt" && $0.file?.parents.isEmpty == false })
        XCTAssertTrue(try world.backend.changes(pageToken: next, pageSize: 100).changes.isEmpty, "nothing after the new token")
        XCTAssertThrowsError(try world.backend.getFile("no-such-file-id")) { error in
            guard case .notFound = error as? DriveError else { return XCTFail("\(error)") }
        }
    }

    // MARK: Writes

    /// A directory of the check's own for upload sources; the caller removes it.
    private func scratch() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("drivefs-contract-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// `bytes` in a file under `directory`, as the upload queue sends content: a path and its md5.
    private func source(_ bytes: [UInt8], in directory: String, _ name: String) throws -> UploadSource {
        let path = directory + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return .hashedFile(path: path, md5: Digest.hex(.md5, of: bytes))
    }

    /// The bytes of `id`: its head, or `revision`.
    private func content(_ world: ContractWorld, _ id: String, revision: String? = nil) throws -> [UInt8] {
        let box = Locked<[UInt8]>([])
        _ = try world.backend.download(id, revision: revision, offset: 0, length: nil, to: .callback { chunk in
            box.withLock { $0 += chunk }
            return true
        })
        return box.withLock { $0 }
    }

    /// Fails unless `expression` throws a `DriveError` that `expected` accepts.
    private func assertFails<T>(_ expression: @autoclosure () throws -> T, _ message: String, file: StaticString = #filePath,
                                line: UInt = #line, as expected: (DriveError) -> Bool) {
        XCTAssertThrowsError(try expression(), message, file: file, line: line) { error in
            guard let drive = error as? DriveError, expected(drive) else { return XCTFail("\(message): \(error)", file: file, line: line) }
        }
    }

    private func assertNotFound<T>(_ expression: @autoclosure () throws -> T, _ message: String, file: StaticString = #filePath,
                                   line: UInt = #line) {
        assertFails(try expression(), message, file: file, line: line) { if case .notFound = $0 { return true } else { return false } }
    }

    /// What the upload queue keeps of a landing and compares later (`UploadJob.Landed`, `holds`).
    private func assertSameItem(_ a: DriveFile, _ b: DriveFile, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(a.id, b.id, file: file, line: line)
        XCTAssertEqual(a.name, b.name, file: file, line: line)
        XCTAssertEqual(a.parents, b.parents, file: file, line: line)
        XCTAssertEqual(a.mimeType, b.mimeType, file: file, line: line)
        XCTAssertEqual(a.size, b.size, file: file, line: line)
        XCTAssertEqual(a.md5Checksum, b.md5Checksum, file: file, line: line)
        XCTAssertEqual(a.headRevisionId, b.headRevisionId, file: file, line: line)
        XCTAssertEqual(a.modifiedTime, b.modifiedTime, file: file, line: line)
        XCTAssertEqual(a.trashed, b.trashed, file: file, line: line)
        XCTAssertEqual(a.appProperties, b.appProperties, file: file, line: line)
    }

    func checkCreatesAnswerTheItemTheyMadeUnderTheIDGiven() throws {
        let world = try makeWorld()
        defer { world.close() }
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let reserved = try (0..<3).map { _ in try world.backend.reserveFileID() }
        XCTAssertEqual(Set(reserved).count, 3, "each reserved ID once")
        let time: Int64 = 1_600_000_000_123
        let folder = try world.backend.createFolder(name: "made", parent: world.rootID, modifiedTime: time, id: reserved[0],
                                                    appProperties: ["mode": "40755"])
        XCTAssertEqual(folder.id, reserved[0])
        XCTAssertEqual(folder.name, "made")
        XCTAssertEqual(folder.parents, [world.rootID])
        XCTAssertEqual(folder.mimeType, DriveFile.folderMimeType)
        XCTAssertEqual(folder.modifiedTime, time)
        XCTAssertEqual(folder.appProperties, ["mode": "40755"])
        XCTAssertNil(folder.md5Checksum)
        XCTAssertFalse(folder.trashed)
        assertSameItem(try world.backend.getFile(folder.id), folder)

        let bytes = CoreHarness.pattern(70_000, seed: 5)
        let file = try world.backend.createFile(name: "notes.txt", parent: folder.id, mimeType: "text/plain",
                                                source: try source(bytes, in: directory, "notes"), modifiedTime: time,
                                                sessionFile: nil, id: reserved[1], appProperties: ["mode": "100644"])
        XCTAssertEqual(file.id, reserved[1])
        XCTAssertEqual(file.name, "notes.txt")
        XCTAssertEqual(file.parents, [folder.id])
        XCTAssertEqual(file.mimeType, "text/plain")
        XCTAssertEqual(file.size, 70_000)
        XCTAssertEqual(file.md5Checksum, Digest.hex(.md5, of: bytes))
        XCTAssertEqual(file.modifiedTime, time)
        XCTAssertNotNil(file.headRevisionId, "the upload queue keeps the landed revision")
        XCTAssertEqual(file.appProperties, ["mode": "100644"])
        XCTAssertFalse(file.trashed)
        assertSameItem(try world.backend.getFile(file.id), file)
        XCTAssertEqual(try content(world, file.id), bytes)

        let picked = try world.backend.createFile(name: "data.bin", parent: folder.id, mimeType: nil, source: .bytes([1, 2, 3]),
                                                  modifiedTime: nil, sessionFile: nil, id: nil, appProperties: nil)
        XCTAssertFalse(picked.id.isEmpty)
        XCTAssertFalse(reserved.contains(picked.id))
        XCTAssertEqual(picked.parents, [folder.id])
        XCTAssertEqual(picked.size, 3)
        XCTAssertEqual(picked.md5Checksum, Digest.hex(.md5, of: [1, 2, 3]))
        XCTAssertNotNil(picked.modifiedTime, "Drive's time when none is given")
        XCTAssertFalse(picked.mimeType.hasPrefix("application/vnd.google-apps."), picked.mimeType)
        XCTAssertNil(picked.appProperties)

        let empty = try world.backend.createEmpty(name: "empty.txt", parent: folder.id, mimeType: "text/plain", modifiedTime: time,
                                                  id: reserved[2], appProperties: nil)
        XCTAssertEqual(empty.id, reserved[2])
        XCTAssertEqual(empty.mimeType, "text/plain")
        XCTAssertEqual(empty.size, 0)
        XCTAssertEqual(empty.md5Checksum, Digest.hex(.md5, of: []))
        XCTAssertEqual(empty.modifiedTime, time)
        XCTAssertEqual(try content(world, empty.id), [])
        let document = try world.backend.createEmpty(name: "Plan", parent: folder.id, mimeType: "application/vnd.google-apps.document",
                                                     modifiedTime: nil, id: nil, appProperties: nil)
        XCTAssertEqual(document.mimeType, "application/vnd.google-apps.document")
        XCTAssertNil(document.size, "a Docs file has no bytes of its own")
        XCTAssertNil(document.md5Checksum)
        XCTAssertNil(document.headRevisionId)

        let listed = try listAll(world, [folder.id])
        XCTAssertEqual(ids(listed), [file.id, picked.id, empty.id, document.id])
        XCTAssertEqual(listed.first { $0.id == file.id }?.md5Checksum, file.md5Checksum)
        XCTAssertEqual(ids(try listAll(world, [world.rootID])), [folder.id])
    }

    func checkACreateAgainUnderItsIDAnswersItsOwnFileAndAnotherFileIsRefused() throws {
        let world = try makeWorld()
        defer { world.close() }
        let id = try world.backend.reserveFileID()
        let bytes = CoreHarness.pattern(1000, seed: 7)
        func create(_ name: String, _ content: [UInt8]) throws -> DriveFile {
            try world.backend.createFile(name: name, parent: world.rootID, mimeType: nil, source: .bytes(content),
                                         modifiedTime: 1_600_000_000_000, sessionFile: nil, id: id, appProperties: nil)
        }
        let first = try create("a.txt", bytes)
        assertSameItem(try create("a.txt", bytes), first)
        XCTAssertEqual(try listAll(world, [world.rootID]).map(\.id), [id], "no second file")
        let inUse: (DriveError) -> Bool = { if case .conflict = $0 { return $0.reason == "fileIdInUse" } else { return false } }
        assertFails(try create("b.txt", bytes), "another name under the ID", as: inUse)
        assertFails(try create("a.txt", [9]), "other bytes under the ID", as: inUse)
        assertFails(try world.backend.createFolder(name: "a.txt", parent: world.rootID, modifiedTime: nil, id: id, appProperties: nil),
                    "a folder under a file's ID", as: inUse)
        assertSameItem(try world.backend.getFile(id), first)
        XCTAssertEqual(try content(world, id), bytes)

        let folderID = try world.backend.reserveFileID()
        let folder = try world.backend.createFolder(name: "dir", parent: world.rootID, modifiedTime: nil, id: folderID, appProperties: nil)
        XCTAssertEqual(try world.backend.createFolder(name: "dir", parent: world.rootID, modifiedTime: nil, id: folderID,
                                                      appProperties: nil).id, folder.id)
        XCTAssertEqual(try listAll(world, [world.rootID]).count, 2)

        _ = try world.backend.trash(id)
        let trashed = try create("a.txt", bytes)
        XCTAssertEqual(trashed.id, id)
        XCTAssertTrue(trashed.trashed, "a create landed and trashed since is answered trashed (the queue makes it again)")
    }

    func checkNewContentChangesBytesSizeChecksumAndHeadRevision() throws {
        let world = try makeWorld()
        defer { world.close() }
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let id = try world.addFile("old.txt", world.rootID, Array("old bytes".utf8))
        let before = try world.backend.getFile(id)
        let bytes = CoreHarness.pattern(90_000, seed: 9)
        let time: Int64 = 1_600_000_000_456
        let updated = try world.backend.updateContent(id, source: try source(bytes, in: directory, "new"), mimeType: nil,
                                                      name: "new.txt", modifiedTime: time, sessionFile: nil,
                                                      appProperties: ["mode": "100600"])
        XCTAssertEqual(updated.id, id)
        XCTAssertEqual(updated.name, "new.txt")
        XCTAssertEqual(updated.parents, before.parents)
        XCTAssertEqual(updated.size, 90_000)
        XCTAssertEqual(updated.md5Checksum, Digest.hex(.md5, of: bytes))
        XCTAssertEqual(updated.modifiedTime, time)
        XCTAssertEqual(updated.appProperties, ["mode": "100600"])
        XCTAssertNotNil(updated.headRevisionId)
        XCTAssertNotEqual(updated.headRevisionId, before.headRevisionId, "new content, new head revision")
        assertSameItem(try world.backend.getFile(id), updated)
        XCTAssertEqual(try content(world, id), bytes)
        XCTAssertEqual(try content(world, id, revision: updated.headRevisionId), bytes)

        let again = try world.backend.updateContent(id, source: .bytes([7]), mimeType: nil, name: nil, modifiedTime: nil,
                                                    sessionFile: nil, appProperties: ["changed": "1"])
        XCTAssertEqual(again.name, "new.txt", "a name not given is kept")
        XCTAssertEqual(again.size, 1)
        XCTAssertNotEqual(again.modifiedTime, time, "Drive's time when none is given")
        XCTAssertEqual(again.appProperties, ["mode": "100600", "changed": "1"], "merged")
        XCTAssertNotEqual(again.headRevisionId, updated.headRevisionId)
        XCTAssertEqual(try content(world, id), [7])
    }

    func checkMetadataUpdatesRenameRetimeAndMergeAppPropertiesKeepingTheContent() throws {
        let world = try makeWorld()
        defer { world.close() }
        let bytes = Array("kept".utf8)
        let id = try world.addFile("doc.txt", world.rootID, bytes)
        let before = try world.backend.getFile(id)
        let time: Int64 = 1_600_000_000_789
        let renamed = try world.backend.updateMetadata(id, name: "renamed.txt", mimeType: nil, modifiedTime: time,
                                                       appProperties: ["mode": "100644", "changed": "1"])
        XCTAssertEqual(renamed.name, "renamed.txt")
        XCTAssertEqual(renamed.modifiedTime, time)
        XCTAssertEqual(renamed.appProperties, ["mode": "100644", "changed": "1"])
        XCTAssertEqual(renamed.parents, before.parents)
        XCTAssertEqual(renamed.size, before.size)
        XCTAssertEqual(renamed.md5Checksum, before.md5Checksum)
        XCTAssertEqual(renamed.headRevisionId, before.headRevisionId, "metadata is not a new revision (the queue's conflict check)")
        assertSameItem(try world.backend.getFile(id), renamed)

        let merged = try world.backend.updateMetadata(id, name: nil, mimeType: nil, modifiedTime: nil, appProperties: ["changed": "2"])
        XCTAssertEqual(merged.name, "renamed.txt")
        XCTAssertEqual(merged.appProperties, ["mode": "100644", "changed": "2"], "a key not named keeps its value")
        XCTAssertEqual(merged.headRevisionId, before.headRevisionId)
        XCTAssertEqual(try content(world, id), bytes)
        XCTAssertEqual(try listAll(world, [world.rootID]).first { $0.id == id }?.name, "renamed.txt")
    }

    func checkAMoveChangesParentNameAndPropertiesInOneRequest() throws {
        let world = try makeWorld()
        defer { world.close() }
        let a = try world.addFolder("a", world.rootID)
        let b = try world.addFolder("b", world.rootID)
        let c = try world.addFolder("c", world.rootID)
        let id = try world.addFile("f.txt", a, [1, 2, 3])
        let before = try world.backend.getFile(id)
        let moved = try world.backend.move(id, addParent: b, removeParent: a, newName: "g.txt", appProperties: ["changed": "5"])
        XCTAssertEqual(moved.parents, [b])
        XCTAssertEqual(moved.name, "g.txt")
        XCTAssertEqual(moved.appProperties?["changed"], "5")
        XCTAssertEqual(moved.headRevisionId, before.headRevisionId)
        assertSameItem(try world.backend.getFile(id), moved)
        XCTAssertTrue(try listAll(world, [a]).isEmpty)
        XCTAssertEqual(try listAll(world, [b]).map(\.name), ["g.txt"])

        let inPlace = try world.backend.move(id, addParent: b, removeParent: b, newName: "h.txt", appProperties: nil)
        XCTAssertEqual(inPlace.parents, [b])
        XCTAssertEqual(inPlace.name, "h.txt")
        XCTAssertEqual(inPlace.appProperties?["changed"], "5", "kept")

        // Taken from a folder it is no longer in (moved elsewhere meanwhile): the queue moves it from where it is.
        assertFails(try world.backend.move(id, addParent: c, removeParent: a, newName: nil, appProperties: nil),
                    "a move from a folder it is not in") { error in
            if case .permissionDenied(let info) = error { return info.status == 403 && info.reason == "cannotAddParent" }
            return false
        }
        XCTAssertEqual(try world.backend.getFile(id).parents, [b])
        let folder = try world.backend.move(c, addParent: b, removeParent: world.rootID, newName: nil, appProperties: nil)
        XCTAssertEqual(folder.parents, [b])
        XCTAssertEqual(Set(try listAll(world, [b]).map(\.id)), [id, c])
    }

    func checkTrashedItemsLeaveListingsAndComeBackWhenUntrashed() throws {
        let world = try makeWorld()
        defer { world.close() }
        let folder = try world.addFolder("box", world.rootID)
        let child = try world.addFile("in.txt", folder, [1])
        let loose = try world.addFile("loose.txt", world.rootID, [2])
        let trashed = try world.backend.trash(folder)
        XCTAssertTrue(trashed.trashed)
        XCTAssertEqual(trashed.parents, [world.rootID], "trashed items keep their parents")
        let below = try world.backend.getFile(child)
        XCTAssertTrue(below.trashed, "trashed with its folder")
        XCTAssertEqual(below.parents, [folder])
        XCTAssertTrue(try world.backend.trash(loose).trashed)
        XCTAssertTrue(try world.backend.getFile(loose).trashed)
        XCTAssertTrue(try listAll(world, [world.rootID, folder]).isEmpty)

        XCTAssertFalse(try world.backend.untrash(folder).trashed)
        XCTAssertFalse(try world.backend.getFile(child).trashed, "back with its folder")
        XCTAssertEqual(ids(try listAll(world, [world.rootID, folder])), [folder, child])
        XCTAssertFalse(try world.backend.untrash(loose).trashed)
        XCTAssertEqual(ids(try listAll(world, [world.rootID])), [folder, loose])
        XCTAssertEqual(try content(world, loose), [2])
    }

    /// The trash listing (`drivefs trash list`): every trashed item once, with its parents, the
    /// ones trashed themselves marked; nothing that is not trashed.
    func checkTheTrashListsEveryTrashedItemAndWhichWereTrashedThemselves() throws {
        let world = try makeWorld()
        defer { world.close() }
        let folder = try world.addFolder("box", world.rootID)
        let child = try world.addFile("in.txt", folder, [1])
        let loose = try world.addFile("loose.txt", world.rootID, [2, 3])
        _ = try world.addFile("kept.txt", world.rootID, [4])
        _ = try world.backend.trash(folder)
        _ = try world.backend.trash(loose)
        var items: [DriveTrashedItem] = []
        try world.backend.listTrash { items += $0; return true }
        let byID = Dictionary(uniqueKeysWithValues: items.map { ($0.file.id, $0) })
        XCTAssertEqual(Set(byID.keys), [folder, child, loose])
        XCTAssertEqual(byID[folder]?.explicitlyTrashed, true)
        XCTAssertEqual(byID[loose]?.explicitlyTrashed, true)
        XCTAssertEqual(byID[child]?.explicitlyTrashed, false, "trashed through its folder")
        XCTAssertEqual(byID[child]?.file.parents, [folder])
        XCTAssertEqual(byID[loose]?.file.name, "loose.txt")
        XCTAssertEqual(byID[loose]?.file.size, 2)
        XCTAssertEqual(byID[folder]?.file.mimeType, DriveFile.folderMimeType)
        _ = try world.backend.untrash(loose)
        items = []
        try world.backend.listTrash { items += $0; return true }
        XCTAssertEqual(Set(items.map(\.file.id)), [folder, child])
    }

    func checkDeletedAndEmptiedItemsAreGoneForGood() throws {
        let world = try makeWorld()
        defer { world.close() }
        let file = try world.addFile("f", world.rootID, [1])
        let folder = try world.addFolder("gone", world.rootID)
        let child = try world.addFile("c", folder, [2])
        try world.backend.delete(file)
        assertNotFound(try world.backend.getFile(file), "a deleted file")
        assertNotFound(try world.backend.delete(file), "a file deleted already")
        try world.backend.delete(folder)
        assertNotFound(try world.backend.getFile(folder), "a deleted folder")
        assertNotFound(try world.backend.getFile(child), "the child of a deleted folder")

        let keep = try world.addFile("keep", world.rootID, [3])
        let binned = try world.addFile("binned", world.rootID, [4])
        let binnedFolder = try world.addFolder("binned folder", world.rootID)
        let inside = try world.addFile("inside", binnedFolder, [5])
        try world.trash(binned)
        try world.trash(binnedFolder)
        try world.backend.emptyTrash()
        for id in [binned, binnedFolder, inside] { assertNotFound(try world.backend.getFile(id), "emptied from the trash") }
        XCTAssertFalse(try world.backend.getFile(keep).trashed)
        XCTAssertEqual(ids(try listAll(world, [world.rootID])), [keep])
    }

    func checkTheChangeFeedReportsEachWrite() throws {
        let world = try makeWorld()
        defer { world.close() }
        let a = try world.addFolder("a", world.rootID)
        let b = try world.addFolder("b", world.rootID)
        /// The newest entry of the item `write` changed, in the feed read from just before it.
        func reported(_ write: () throws -> String) throws -> DriveChange? {
            let token = try world.backend.changesStartPageToken()
            let id = try write()
            return try changes(world, after: token).changes.last { $0.fileId == id }
        }
        let made = try reported {
            try world.backend.createFile(name: "c.txt", parent: a, mimeType: nil, source: .bytes([1]), modifiedTime: nil,
                                         sessionFile: nil, id: try world.backend.reserveFileID(), appProperties: nil).id
        }
        let id = try XCTUnwrap(made?.fileId)
        XCTAssertEqual(made?.removed, false)
        XCTAssertEqual(made?.file?.name, "c.txt")
        XCTAssertEqual(made?.file?.parents, [a])
        XCTAssertEqual(made?.file?.md5Checksum, Digest.hex(.md5, of: [1]))
        XCTAssertEqual(made?.file?.trashed, false)
        let folder = try reported { try world.backend.createFolder(name: "d", parent: b, modifiedTime: nil, id: nil, appProperties: nil).id }
        XCTAssertEqual(folder?.file?.mimeType, DriveFile.folderMimeType)
        XCTAssertEqual(folder?.file?.parents, [b])

        let renamed = try reported { try world.backend.updateMetadata(id, name: "d.txt", mimeType: nil, modifiedTime: nil, appProperties: nil).id }
        XCTAssertEqual(renamed?.file?.name, "d.txt")
        var revision: String?
        let rewritten = try reported {
            let file = try world.backend.updateContent(id, source: .bytes([2, 2]), mimeType: nil, name: nil, modifiedTime: nil,
                                                       sessionFile: nil, appProperties: nil)
            revision = file.headRevisionId
            return file.id
        }
        XCTAssertEqual(rewritten?.file?.md5Checksum, Digest.hex(.md5, of: [2, 2]))
        XCTAssertEqual(rewritten?.file?.headRevisionId, revision)
        let moved = try reported { try world.backend.move(id, addParent: b, removeParent: a, newName: nil, appProperties: nil).id }
        XCTAssertEqual(moved?.file?.parents, [b])
        XCTAssertEqual(moved?.file?.name, "d.txt")
        let trashed = try reported { try world.backend.trash(id).id }
        XCTAssertEqual(trashed?.removed, false, "a trashed item is reported, not removed")
        XCTAssertEqual(trashed?.file?.trashed, true)
        let untrashed = try reported { try world.backend.untrash(id).id }
        XCTAssertEqual(untrashed?.file?.trashed, false)
        let removed = try reported {
            try world.backend.delete(id)
            return id
        }
        XCTAssertEqual(removed?.removed, true)
        XCTAssertNil(removed?.file)
        let emptied = try reported {
            let doomed = try world.addFile("doomed", a, [3])
            try world.trash(doomed)
            try world.backend.emptyTrash()
            return doomed
        }
        XCTAssertEqual(emptied?.removed, true)
        XCTAssertNil(emptied?.file)
    }

    func checkWritesToAnUnknownIDAreNotFound() throws {
        let world = try makeWorld()
        defer { world.close() }
        let unknown = "no-such-file-id"
        assertNotFound(try world.backend.getFile(unknown), "files.get")
        assertNotFound(try world.backend.updateContent(unknown, source: .bytes([1]), mimeType: nil, name: nil, modifiedTime: nil,
                                                       sessionFile: nil, appProperties: nil), "an upload")
        assertNotFound(try world.backend.updateMetadata(unknown, name: "x", mimeType: nil, modifiedTime: nil, appProperties: nil), "a rename")
        assertNotFound(try world.backend.move(unknown, addParent: world.rootID, removeParent: world.rootID, newName: "x", appProperties: nil),
                       "a move")
        assertNotFound(try world.backend.trash(unknown), "a trash")
        assertNotFound(try world.backend.untrash(unknown), "an untrash")
        assertNotFound(try world.backend.delete(unknown), "a delete")
        assertNotFound(try world.backend.download(unknown, revision: nil, offset: 0, length: nil, to: .callback { _ in true }), "a download")
        // A create's 404 is its parent gone (the queue fails it for good).
        assertNotFound(try world.backend.createFile(name: "x", parent: unknown, mimeType: nil, source: .bytes([1]), modifiedTime: nil,
                                                    sessionFile: nil, id: try world.backend.reserveFileID(), appProperties: nil),
                       "a create in a parent that is not there")
        assertNotFound(try world.backend.createFolder(name: "x", parent: unknown, modifiedTime: nil, id: nil, appProperties: nil),
                       "a folder in a parent that is not there")
        XCTAssertTrue(try listAll(world, [world.rootID]).isEmpty, "nothing made")
    }

    func checkLargeUploadsLandWholeAndLeaveNoSession() throws {
        let world = try makeWorld()
        defer { world.close() }
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = CoreHarness.pattern(6 << 20, seed: 11)
        let session = directory + "/session.json"
        let id = try world.backend.reserveFileID()
        let file = try world.backend.createFile(name: "big.bin", parent: world.rootID, mimeType: nil,
                                                source: try source(bytes, in: directory, "big"), modifiedTime: 1_600_000_000_000,
                                                sessionFile: session, id: id, appProperties: nil)
        XCTAssertEqual(file.id, id)
        XCTAssertEqual(file.size, 6 << 20)
        XCTAssertEqual(file.md5Checksum, Digest.hex(.md5, of: bytes))
        XCTAssertFalse(FileManager.default.fileExists(atPath: session), "a landed upload leaves no session to resume")
        XCTAssertEqual(try content(world, id), bytes)

        let newer = CoreHarness.pattern((6 << 20) + 5, seed: 12)
        let updated = try world.backend.updateContent(id, source: try source(newer, in: directory, "newer"), mimeType: nil, name: nil,
                                                      modifiedTime: nil, sessionFile: session, appProperties: nil)
        XCTAssertEqual(updated.size, (6 << 20) + 5)
        XCTAssertEqual(updated.md5Checksum, Digest.hex(.md5, of: newer))
        XCTAssertNotEqual(updated.headRevisionId, file.headRevisionId)
        XCTAssertFalse(FileManager.default.fileExists(atPath: session))
        XCTAssertEqual(try content(world, id), newer)
        // A resumable create again under the ID (the queue's retry after a lost answer) finds the file as it is.
        assertSameItem(try world.backend.createFile(name: "big.bin", parent: world.rootID, mimeType: nil, source: .bytes(newer),
                                                    modifiedTime: nil, sessionFile: nil, id: id, appProperties: nil), updated)
    }

    func checkAStreamedCreateExistsOnlyOnceFinishedUnderItsID() throws {
        let world = try makeWorld()
        defer { world.close() }
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = CoreHarness.pattern((9 << 20) + 3, seed: 13)
        let path = directory + "/growing"
        let id = try world.backend.reserveFileID()
        let stream = try world.backend.beginStreamingCreate(name: "stream.bin", parent: world.rootID, mimeType: nil, id: id,
                                                            appProperties: ["mode": "100644"])
        XCTAssertEqual(stream.fileID, id)
        // Written in two goes: a chunk goes while the rest is still to come.
        try Data(bytes[..<(9 << 20)]).write(to: URL(fileURLWithPath: path))
        var chunks = 0
        while case let length = stream.chunkLength(available: 9 << 20), length > 0 {
            try stream.send(path: path, length: length)
            chunks += 1
        }
        XCTAssertGreaterThan(chunks, 0)
        XCTAssertGreaterThan(stream.confirmedBytes, 0)
        XCTAssertLessThan(stream.confirmedBytes, 9 << 20, "at least a byte left for the finish")
        assertNotFound(try world.backend.getFile(id), "nothing on Drive before the finish")
        XCTAssertTrue(try listAll(world, [world.rootID]).isEmpty)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let file = try stream.finish(path: path, size: Int64(bytes.count))
        XCTAssertEqual(file.id, id)
        XCTAssertEqual(file.name, "stream.bin")
        XCTAssertEqual(file.parents, [world.rootID])
        XCTAssertEqual(file.size, Int64(bytes.count))
        XCTAssertEqual(file.md5Checksum, Digest.hex(.md5, of: bytes))
        XCTAssertEqual(file.appProperties, ["mode": "100644"])
        XCTAssertEqual(try content(world, id), bytes)
        // The ordinary upload the queue falls back to, under the same ID, finds it.
        XCTAssertEqual(try world.backend.createFile(name: "stream.bin", parent: world.rootID, mimeType: nil, source: .bytes(bytes),
                                                    modifiedTime: nil, sessionFile: nil, id: id, appProperties: nil).id, id)
        XCTAssertEqual(try listAll(world, [world.rootID]).map(\.id), [id])
    }
}

final class FakeBackendContractTests: XCTestCase, BackendContract {
    func testGroupedListingsReturnExactlyTheNonTrashedChildrenWithTheirParents() throws {
        try checkGroupedListingsReturnExactlyTheNonTrashedChildrenWithTheirParents()
    }
    func testMoreParentsThanOneQueryTakesAreListedAnyway() throws { try checkMoreParentsThanOneQueryTakesAreListedAnyway() }
    func testDownloadsDeliverExactlyTheRangeAndPinnedRevisions() throws { try checkDownloadsDeliverExactlyTheRangeAndPinnedRevisions() }
    func testTheChangeFeedReportsEachChangeAfterItsStartToken() throws { try checkTheChangeFeedReportsEachChangeAfterItsStartToken() }
    func testCreatesAnswerTheItemTheyMadeUnderTheIDGiven() throws { try checkCreatesAnswerTheItemTheyMadeUnderTheIDGiven() }
    func testACreateAgainUnderItsIDAnswersItsOwnFileAndAnotherFileIsRefused() throws { try checkACreateAgainUnderItsIDAnswersItsOwnFileAndAnotherFileIsRefused() }
    func testNewContentChangesBytesSizeChecksumAndHeadRevision() throws { try checkNewContentChangesBytesSizeChecksumAndHeadRevision() }
    func testMetadataUpdatesRenameRetimeAndMergeAppPropertiesKeepingTheContent() throws { try checkMetadataUpdatesRenameRetimeAndMergeAppPropertiesKeepingTheContent() }
    func testAMoveChangesParentNameAndPropertiesInOneRequest() throws { try checkAMoveChangesParentNameAndPropertiesInOneRequest() }
    func testTrashedItemsLeaveListingsAndComeBackWhenUntrashed() throws { try checkTrashedItemsLeaveListingsAndComeBackWhenUntrashed() }
    func testDeletedAndEmptiedItemsAreGoneForGood() throws { try checkDeletedAndEmptiedItemsAreGoneForGood() }
    func testTheTrashListsEveryTrashedItemAndWhichWereTrashedThemselves() throws {
        try checkTheTrashListsEveryTrashedItemAndWhichWereTrashedThemselves()
    }
    func testTheChangeFeedReportsEachWrite() throws { try checkTheChangeFeedReportsEachWrite() }
    func testWritesToAnUnknownIDAreNotFound() throws { try checkWritesToAnUnknownIDAreNotFound() }
    func testLargeUploadsLandWholeAndLeaveNoSession() throws { try checkLargeUploadsLandWholeAndLeaveNoSession() }
    func testAStreamedCreateExistsOnlyOnceFinishedUnderItsID() throws { try checkAStreamedCreateExistsOnlyOnceFinishedUnderItsID() }

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
    func testCreatesAnswerTheItemTheyMadeUnderTheIDGiven() throws { try checkCreatesAnswerTheItemTheyMadeUnderTheIDGiven() }
    func testACreateAgainUnderItsIDAnswersItsOwnFileAndAnotherFileIsRefused() throws { try checkACreateAgainUnderItsIDAnswersItsOwnFileAndAnotherFileIsRefused() }
    func testNewContentChangesBytesSizeChecksumAndHeadRevision() throws { try checkNewContentChangesBytesSizeChecksumAndHeadRevision() }
    func testMetadataUpdatesRenameRetimeAndMergeAppPropertiesKeepingTheContent() throws { try checkMetadataUpdatesRenameRetimeAndMergeAppPropertiesKeepingTheContent() }
    func testAMoveChangesParentNameAndPropertiesInOneRequest() throws { try checkAMoveChangesParentNameAndPropertiesInOneRequest() }
    func testTrashedItemsLeaveListingsAndComeBackWhenUntrashed() throws { try checkTrashedItemsLeaveListingsAndComeBackWhenUntrashed() }
    func testDeletedAndEmptiedItemsAreGoneForGood() throws { try checkDeletedAndEmptiedItemsAreGoneForGood() }
    func testTheTrashListsEveryTrashedItemAndWhichWereTrashedThemselves() throws {
        try checkTheTrashListsEveryTrashedItemAndWhichWereTrashedThemselves()
    }
    func testTheChangeFeedReportsEachWrite() throws { try checkTheChangeFeedReportsEachWrite() }
    func testWritesToAnUnknownIDAreNotFound() throws { try checkWritesToAnUnknownIDAreNotFound() }
    func testLargeUploadsLandWholeAndLeaveNoSession() throws { try checkLargeUploadsLandWholeAndLeaveNoSession() }
    func testAStreamedCreateExistsOnlyOnceFinishedUnderItsID() throws { try checkAStreamedCreateExistsOnlyOnceFinishedUnderItsID() }

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
