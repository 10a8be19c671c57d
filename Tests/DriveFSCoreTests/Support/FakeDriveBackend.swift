@testable import DriveClient
import DriveSupport
import Foundation

/// An in-memory Drive for the core's tests: folders, files with content, Docs, shortcuts, a
/// change feed, and a request counter per method (named as the emulator names them). Listings
/// follow Google's rules that matter to the core: non-trashed children, at most 460 files a page
/// when `parents` is in the mask, 400 "The query is too complex." past 100 parents, and an optional
/// grouped-query bug (every multi-parent query answers nothing).
final class FakeDriveBackend: DriveBackend, @unchecked Sendable {
    // @unchecked: all state is behind `lock`.
    private let lock = NSLock()
    private var files: [String: DriveFile] = [:]
    private var contents: [String: [UInt8]] = [:]
    private var changeLog: [(seq: Int, id: String)] = []
    private var nextID = 1
    private var counts: [String: Int] = [:]
    private var mediaBytes: Int64 = 0
    let rootID = "root-folder-id"

    /// Google's grouped-listing bug, always on when true.
    var groupedQueriesAnswerNothing = false
    /// Media downloads wait for this semaphore first when set (a stalled connection).
    var downloadGate: DispatchSemaphore?
    /// changes.list fails with this while set (Drive unreachable for the poller).
    var changesFailure: DriveError? {
        get { lock.lock(); defer { lock.unlock() }; return failingChanges }
        set { lock.lock(); failingChanges = newValue; lock.unlock() }
    }
    private var failingChanges: DriveError?
    static let maxParents = 100
    static let pageCapWithParents = 460

    init() {
        files[rootID] = DriveFile(id: rootID, name: "My Drive", mimeType: DriveFile.folderMimeType, createdTime: 0, version: 1)
    }

    // MARK: Building the drive

    private func newID() -> String {
        defer { nextID += 1 }
        return String(format: "id%06d", nextID)
    }

    private func record(_ id: String) {
        changeLog.append(((changeLog.last?.seq ?? 0) + 1, id))
    }

    @discardableResult
    func addFolder(_ name: String, in parent: String? = nil) -> String {
        lock.lock(); defer { lock.unlock() }
        let id = newID()
        files[id] = DriveFile(id: id, name: name, mimeType: DriveFile.folderMimeType, parents: [parent ?? rootID],
                              modifiedTime: 1_700_000_000_000, createdTime: Int64(nextID), version: 1)
        record(id)
        return id
    }

    @discardableResult
    func addFile(_ name: String, in parent: String? = nil, content: [UInt8], mimeType: String = "application/octet-stream") -> String {
        lock.lock(); defer { lock.unlock() }
        let id = newID()
        files[id] = DriveFile(id: id, name: name, mimeType: mimeType, parents: [parent ?? rootID], size: Int64(content.count),
                              md5Checksum: Digest.hex(.md5, of: content), modifiedTime: 1_700_000_000_000, createdTime: Int64(nextID),
                              version: 1, headRevisionId: "rev-\(id)-1")
        contents[id] = content
        record(id)
        return id
    }

    @discardableResult
    func addDocument(_ name: String, in parent: String? = nil, text: String,
                     mimeType: String = "application/vnd.google-apps.document") -> String {
        lock.lock(); defer { lock.unlock() }
        let id = newID()
        files[id] = DriveFile(id: id, name: name, mimeType: mimeType, parents: [parent ?? rootID],
                              modifiedTime: 1_700_000_000_000, createdTime: Int64(nextID), version: 1)
        contents[id] = Array(text.utf8)
        record(id)
        return id
    }

    @discardableResult
    func addShortcut(_ name: String, in parent: String? = nil, to target: String) -> String {
        lock.lock(); defer { lock.unlock() }
        let id = newID()
        files[id] = DriveFile(id: id, name: name, mimeType: DriveFile.shortcutMimeType, parents: [parent ?? rootID],
                              modifiedTime: 1_700_000_000_000, createdTime: Int64(nextID), version: 1,
                              shortcutDetails: DriveFile.ShortcutDetails(targetId: target, targetMimeType: nil))
        record(id)
        return id
    }

    /// New content (a new revision), as another client's upload would make it.
    func replaceContent(_ id: String, with content: [UInt8]) {
        lock.lock(); defer { lock.unlock() }
        var file = files[id]!
        file.size = Int64(content.count)
        file.md5Checksum = Digest.hex(.md5, of: content)
        file.version = (file.version ?? 1) + 1
        file.headRevisionId = "rev-\(id)-\(file.version!)"
        file.modifiedTime = (file.modifiedTime ?? 0) + 1000
        files[id] = file
        contents[id] = content
        record(id)
    }

    func rename(_ id: String, to name: String) {
        lock.lock(); defer { lock.unlock() }
        files[id]!.name = name
        record(id)
    }

    func moveFile(_ id: String, to parent: String) {
        lock.lock(); defer { lock.unlock() }
        files[id]!.parents = [parent]
        record(id)
    }

    /// Any other metadata change (who modified it, its link...), recorded in the change feed.
    func update(_ id: String, _ change: (inout DriveFile) -> Void) {
        lock.lock(); defer { lock.unlock() }
        change(&files[id]!)
        record(id)
    }

    func trashFile(_ id: String) {
        lock.lock(); defer { lock.unlock() }
        files[id]!.trashed = true
        record(id)
    }

    /// Drive forgets old change-feed positions: every token issued so far is refused.
    func forgetChangeLog() {
        lock.lock(); defer { lock.unlock() }
        refusedBelow = (changeLog.last?.seq ?? 0) + 2  // the last token issued is last seq + 1
    }
    private var refusedBelow = 0

    // MARK: Counters

    private func count(_ method: String) {
        lock.lock(); defer { lock.unlock() }
        counts[method, default: 0] += 1
    }

    var requests: [String: Int] { lock.lock(); defer { lock.unlock() }; return counts }
    var totalRequests: Int { requests.values.reduce(0, +) }
    var downloadedBytes: Int64 { lock.lock(); defer { lock.unlock() }; return mediaBytes }
    func resetCounters() { lock.lock(); counts = [:]; mediaBytes = 0; lock.unlock() }

    // MARK: DriveBackend

    func about() throws -> DriveAbout {
        count("about.get")
        return DriveAbout(displayName: "Fake", emailAddress: "fake@example.com", permissionId: "1", storageLimit: 15 << 30,
                          storageUsage: 1 << 30, usageInDrive: 1 << 30, usageInDriveTrash: 0, maxUploadSize: nil, exportFormats: [:])
    }

    func getFile(_ id: String) throws -> DriveFile {
        count("files.get")
        lock.lock(); defer { lock.unlock() }
        guard let file = files[id == "root" ? rootID : id] else { throw notFound(id) }
        return file
    }

    func listChildren(of folderID: String) throws -> [DriveFile] {
        var all: [DriveFile] = []
        try listChildren(ofAny: [folderID], fields: DriveFile.listingFieldMask, pageSize: 1000) { all += $0.files; return true }
        return all
    }

    func list(query q: String, orderBy: String?, pageSize: Int) throws -> [DriveFile] {
        throw DriveError.invalidArgument(GoogleErrorInfo(status: 400, reason: "invalid", message: "the fake lists children only"))
    }

    func listChildren(ofAny parents: [String], fields: String, pageSize: Int, onPage: (DriveFileListPage) throws -> Bool) throws {
        if parents.count > Self.maxParents {
            // Google's 400, then what DriveAPI does about it (the contract): halves, one query each.
            count("files.list")
            var going = true
            try listChildren(ofAny: Array(parents[..<(parents.count / 2)]), fields: fields, pageSize: pageSize) { page in
                going = try onPage(page)
                return going
            }
            if going { try listChildren(ofAny: Array(parents[(parents.count / 2)...]), fields: fields, pageSize: pageSize, onPage: onPage) }
            return
        }
        let wanted = Set(parents.map { $0 == "root" ? rootID : $0 })
        let matches: [DriveFile] = {
            lock.lock(); defer { lock.unlock() }
            if groupedQueriesAnswerNothing && wanted.count > 1 { return [] }
            return files.values.filter { !$0.trashed && $0.parents.contains(where: wanted.contains) }.sorted { $0.id < $1.id }
        }()
        let cap = min(pageSize, fields.contains("parents") ? Self.pageCapWithParents : 1000)
        var start = 0
        repeat {
            count("files.list")
            let page = Array(matches[start..<min(matches.count, start + cap)])
            start += cap
            guard try onPage(DriveFileListPage(files: page, nextPageToken: start < matches.count ? "p\(start)" : nil,
                                               incompleteSearch: false)) else { return }
        } while start < matches.count
    }

    func download(_ id: String, offset: Int64, length: Int64?, to sink: ResponseSink) throws -> Int64 {
        try download(id, revision: nil, offset: offset, length: length, to: sink)
    }

    func download(_ id: String, revision: String?, offset: Int64, length: Int64?, to sink: ResponseSink) throws -> Int64 {
        count(revision == nil ? "files.get.media" : "revisions.get.media")
        downloadGate?.wait()
        downloadGate?.signal()
        let bytes: [UInt8] = try {
            lock.lock(); defer { lock.unlock() }
            guard let file = files[id], let content = contents[id] else { throw notFound(id) }
            if let revision, revision != file.headRevisionId { throw notFound(revision) }
            let start = Int(min(Int64(content.count), offset))
            let end = Int(min(Int64(content.count), length.map { offset + $0 } ?? Int64(content.count)))
            return Array(content[start..<end])
        }()
        lock.lock(); mediaBytes += Int64(bytes.count); lock.unlock()
        guard case .callback(let deliver) = sink else { throw DriveError.malformedResponse("the fake takes callback sinks") }
        var at = 0
        while at < bytes.count {
            let chunk = min(16 << 10, bytes.count - at)
            let going = bytes[at..<at + chunk].withUnsafeBytes { deliver($0) }
            at += chunk
            if !going { throw DriveError.cancelled }
        }
        return Int64(bytes.count)
    }

    func export(_ id: String, mimeType: String) throws -> [UInt8] {
        count("files.export")
        lock.lock(); defer { lock.unlock() }
        guard let text = contents[id] else { throw notFound(id) }
        return Array("export as \(mimeType)\n".utf8) + text
    }

    func changesStartPageToken() throws -> String {
        count("changes.getStartPageToken")
        lock.lock(); defer { lock.unlock() }
        return String((changeLog.last?.seq ?? 0) + 1)
    }

    func changes(pageToken: String, pageSize: Int) throws -> DriveChangePage {
        count("changes.list")
        lock.lock(); defer { lock.unlock() }
        if let failingChanges { throw failingChanges }
        let from = Int(pageToken) ?? 1
        if from < refusedBelow {
            throw DriveError.invalidArgument(GoogleErrorInfo(status: 400, reason: "invalid", message: "Invalid Value"))
        }
        let pending = changeLog.filter { $0.seq >= from }
        let page = pending.prefix(pageSize)
        let changes = page.map { entry in DriveChange(fileId: entry.id, removed: false, time: nil, file: files[entry.id]) }
        if pending.count > page.count {
            return DriveChangePage(changes: changes, nextPageToken: String(page.last!.seq + 1), newStartPageToken: nil)
        }
        return DriveChangePage(changes: changes, nextPageToken: nil, newStartPageToken: String((changeLog.last?.seq ?? 0) + 1))
    }

    // Writes are not part of the read side; the core never calls them yet.
    func createFolder(name: String, parent: String, modifiedTime: Int64?, id: String?) throws -> DriveFile { throw readOnly() }
    func createEmpty(name: String, parent: String, mimeType: String, modifiedTime: Int64?, id: String?) throws -> DriveFile { throw readOnly() }
    func createFile(name: String, parent: String, mimeType: String?, source: UploadSource, modifiedTime: Int64?,
                    sessionFile: String?, id: String?) throws -> DriveFile { throw readOnly() }
    func reserveFileID() throws -> String { throw readOnly() }
    func updateContent(_ id: String, source: UploadSource, mimeType: String?, name: String?, modifiedTime: Int64?,
                       sessionFile: String?) throws -> DriveFile { throw readOnly() }
    func updateMetadata(_ id: String, name: String?, mimeType: String?, modifiedTime: Int64?) throws -> DriveFile { throw readOnly() }
    func move(_ id: String, addParent: String, removeParent: String?, newName: String?) throws -> DriveFile { throw readOnly() }
    func trash(_ id: String) throws -> DriveFile { throw readOnly() }
    func untrash(_ id: String) throws -> DriveFile { throw readOnly() }
    func delete(_ id: String) throws { throw readOnly() }
    func emptyTrash() throws { throw readOnly() }

    private func readOnly() -> DriveError {
        DriveError.permissionDenied(GoogleErrorInfo(status: 403, reason: "readOnlyFake", message: "the read-side fake has no writes"))
    }

    private func notFound(_ id: String) -> DriveError {
        DriveError.notFound(GoogleErrorInfo(status: 404, reason: "notFound", message: "File not found: \(id)."))
    }
}
