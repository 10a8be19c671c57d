@testable import DriveClient
import DriveSupport
import Foundation

/// An in-memory Drive for the core's tests: folders, files with content, Docs, shortcuts, a
/// change feed, and a request counter per method (named as the emulator names them). Writes
/// behave as DriveAPI's do against Drive: creates under a reserved ID (a repeated create with the
/// same ID answers the file it made), appProperties merged by updates, trash inherited by the
/// items below, a new revision (headRevisionId) per content change, uploads checked by md5. Tests
/// inject faults per method (`failNext`, also after the request landed: a lost answer) and run a
/// hook around every write (`writeHook`). Listings
/// follow Google's rules that matter to the core: non-trashed children, at most 460 files a page
/// when `parents` is in the mask, 400 "The query is too complex." past 100 parents, and an optional
/// grouped-query bug (every multi-parent query answers nothing).
final class FakeDriveBackend: DriveBackend, @unchecked Sendable {
    // @unchecked: all state is behind `lock` (the ID pool guards its own). Hooks run with no lock held.
    private let lock = NSLock()
    private var files: [String: DriveFile] = [:]
    private var contents: [String: [UInt8]] = [:]
    /// Each file's revisions, oldest first, and each revision's bytes.
    private var revisions: [String: [DriveRevision]] = [:]
    private var revisionContents: [String: [UInt8]] = [:]
    /// A Doc's text at each revision, by "FILE_ID REVISION" (a Doc's revision ids repeat across files).
    private var documentRevisionTexts: [String: [UInt8]] = [:]
    private var changeLog: [(seq: Int, id: String)] = []
    private var nextID = 1
    private var counts: [String: Int] = [:]
    private var mediaBytes: Int64 = 0
    private var faults: [Fault] = []
    private var hook: WriteHook?
    private var corruptUploads = 0
    /// Every ID files.generateIds issued and no create used yet (Drive's side of the IDs).
    private var issued: Set<String> = []
    private var generatedIDs = 0
    private var explicitlyTrashed: Set<String> = []
    /// When each explicitly trashed item was trashed (the fake gives `trashedTime` everywhere; Drive
    /// only in shared drives).
    private var trashedTimes: [String: Int64] = [:]
    private var clock: Int64 = 1_700_000_000_000
    private var sessions: [String: UploadSessionState] = [:]
    private var sessionCount = 0
    private var created = 0
    let rootID = "root-folder-id"

    /// Google's grouped-listing bug, always on when true.
    var groupedQueriesAnswerNothing = false
    /// Media downloads wait for this semaphore first when set (a stalled connection).
    var downloadGate: DispatchSemaphore?
    /// Media downloads at `.background` priority (fills) wait for this semaphore first when set:
    /// a test holds the background fill back as a slow link would, while readers' downloads go.
    var backgroundDownloadGate: DispatchSemaphore?
    /// Media downloads wait for this after their first chunk was delivered, when set: a test sees
    /// what a reader gets while the rest of its range is still on the way.
    var afterFirstChunkGate: DispatchSemaphore?
    /// Signalled as a download stops at `afterFirstChunkGate`.
    var firstChunkHeld: DispatchSemaphore?
    /// Signalled as each media download begins, before `downloadGate`: a test knows a fetch is in
    /// flight (and held) without polling.
    var downloadStarted: DispatchSemaphore?
    /// Called with the parents of every children listing before it is answered (outside the
    /// fake's lock): a test may hold a listing there.
    var listHook: (@Sendable ([String]) -> Void)? {
        get { lock.lock(); defer { lock.unlock() }; return listing }
        set { lock.lock(); listing = newValue; lock.unlock() }
    }
    private var listing: (@Sendable ([String]) -> Void)?
    /// Called with the parents of every children listing once its answer is made, before its first
    /// page is handed back (outside the fake's lock): a test may hold a listing's answer there while
    /// Drive changes, so that the listing is older than what happens meanwhile.
    var listAnsweredHook: (@Sendable ([String]) -> Void)? {
        get { lock.lock(); defer { lock.unlock() }; return listAnswered }
        set { lock.lock(); listAnswered = newValue; lock.unlock() }
    }
    private var listAnswered: (@Sendable ([String]) -> Void)?
    /// Called with every page of changes once it is read, before it is answered (outside the
    /// fake's lock): a test may hold the page there, so that what it does meanwhile comes after the read.
    var changesHook: (@Sendable (DriveChangePage) -> Void)? {
        get { lock.lock(); defer { lock.unlock() }; return changesRead }
        set { lock.lock(); changesRead = newValue; lock.unlock() }
    }
    private var changesRead: (@Sendable (DriveChangePage) -> Void)?
    /// changes.list fails with this while set (Drive unreachable for the poller).
    var changesFailure: DriveError? {
        get { lock.lock(); defer { lock.unlock() }; return failingChanges }
        set { lock.lock(); failingChanges = newValue; lock.unlock() }
    }
    private var failingChanges: DriveError?
    /// Every request fails with this while set (counted, as a failed request is): Drive unreachable.
    var unreachable: DriveError? {
        get { lock.lock(); defer { lock.unlock() }; return offline }
        set { lock.lock(); offline = newValue; lock.unlock() }
    }
    private var offline: DriveError?
    /// What the core asks to know whether it is offline; a test marks it (`markOffline`) beside
    /// `unreachable`, as the real executor would after a while of failures to connect.
    let reachability: Reachability? = Reachability()
    static let cannotConnect = DriveError.transport(.couldNotConnect("drive.test: connection refused"))
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
        if feedHeld != nil {
            feedHeld!.append(id)
            return
        }
        changeLog.append(((changeLog.last?.seq ?? 0) + 1, id))
    }

    /// Changes made while the feed is held, not in it yet: Drive's change feed lags its writes.
    private var feedHeld: [String]?

    /// From now on the change feed lags: what changes is not in it until `releaseFeed`.
    func holdFeed() {
        lock.lock(); defer { lock.unlock() }
        feedHeld = feedHeld ?? []
    }

    /// The changes held since `holdFeed` reach the feed, in the order they were made.
    func releaseFeed() {
        lock.lock(); defer { lock.unlock() }
        let held = feedHeld ?? []
        feedHeld = nil
        for id in held { record(id) }
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
        keepRevision(files[id]!)
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
        keepDocumentRevision(id)
        record(id)
        return id
    }

    /// A Google Docs file's new text (a new revision, ids counting up from "1" as Drive's do).
    func editDocument(_ id: String, text: String) {
        lock.lock(); defer { lock.unlock() }
        files[id]!.version = (files[id]!.version ?? 1) + 1
        files[id]!.modifiedTime = (files[id]!.modifiedTime ?? 0) + 1000
        contents[id] = Array(text.utf8)
        keepDocumentRevision(id)
        record(id)
    }

    /// Under `lock`: a Doc's text now as its next revision (no size or md5: Drive gives none).
    private func keepDocumentRevision(_ id: String) {
        let revision = String((revisions[id]?.count ?? 0) + 1)
        documentRevisionTexts[id + " " + revision] = contents[id]
        revisions[id, default: []].append(DriveRevision(id: revision, modifiedTime: files[id]?.modifiedTime))
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
        keepRevision(file)
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

    var requests: [String: Int] { lock.lock(); defer { lock.unlock() }; return counts }
    var totalRequests: Int { requests.values.reduce(0, +) }
    /// The counts by method, for failure messages (`files.list=3 changes.list=1`).
    var requestSummary: String { requests.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ") }
    var downloadedBytes: Int64 { lock.lock(); defer { lock.unlock() }; return mediaBytes }
    func resetCounters() { lock.lock(); counts = [:]; mediaBytes = 0; lock.unlock() }

    // MARK: DriveBackend

    func about() throws -> DriveAbout {
        try request("about.get")
        let (limit, usage) = storageQuota
        return DriveAbout(displayName: "Fake", emailAddress: "fake@example.com", permissionId: "1", storageLimit: limit,
                          storageUsage: usage, usageInDrive: usage, usageInDriveTrash: 0, maxUploadSize: nil, exportFormats: [:])
    }

    /// What about.get answers as `storageQuota` (nil limit: unlimited). Not enforced by uploads.
    var storageQuota: (limit: Int64?, usage: Int64) {
        get { lock.lock(); defer { lock.unlock() }; return quota }
        set { lock.lock(); quota = newValue; lock.unlock() }
    }
    private var quota: (limit: Int64?, usage: Int64) = (15 << 30, 1 << 30)

    func getFile(_ id: String) throws -> DriveFile {
        try request("files.get")
        lock.lock(); defer { lock.unlock() }
        guard let file = files[id == "root" ? rootID : id] else { throw notFound(id) }
        return file
    }

    func listChildren(of folderID: String) throws -> [DriveFile] {
        var all: [DriveFile] = []
        try listChildren(ofAny: [folderID], fields: DriveFile.listingFieldMask, pageSize: 1000) { all += $0.files; return true }
        return all
    }

    /// Only the query the upload queue sends for a name in a folder:
    /// `name = 'N' and 'P' in parents and trashed = false` (quotes and backslashes escaped).
    func list(query q: String, orderBy: String?, pageSize: Int) throws -> [DriveFile] {
        let literals = Self.quotedLiterals(q)
        let shape = q.replacingOccurrences(of: "'[^'\\\\]*(?:\\\\.[^'\\\\]*)*'", with: "''", options: .regularExpression)
        guard literals.count == 2, shape == "name = '' and '' in parents and trashed = false" else {
            throw DriveError.invalidArgument(GoogleErrorInfo(status: 400, reason: "invalid", message: "the fake does not know the query \(q)"))
        }
        try request("files.list")
        let parent = literals[1] == "root" ? rootID : literals[1]
        lock.lock(); defer { lock.unlock() }
        return files.values.filter { !$0.trashed && $0.name == literals[0] && $0.parents.contains(parent) }.sorted { $0.id < $1.id }
    }

    /// The single-quoted literals of a Drive query, unescaped.
    private static func quotedLiterals(_ q: String) -> [String] {
        var literals: [String] = [], current = "", inside = false, escaped = false
        for c in q {
            if !inside {
                if c == "'" { inside = true; current = "" }
            } else if escaped {
                current.append(c)
                escaped = false
            } else if c == "\\" {
                escaped = true
            } else if c == "'" {
                literals.append(current)
                inside = false
            } else {
                current.append(c)
            }
        }
        return literals
    }

    func listChildren(ofAny parents: [String], fields: String, pageSize: Int, onPage: (DriveFileListPage) throws -> Bool) throws {
        listHook?(parents)
        if parents.count > Self.maxParents {
            // Google's 400, then what DriveAPI does about it (the contract): halves, one query each.
            try request("files.list")
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
        listAnsweredHook?(parents)
        let cap = min(pageSize, fields.contains("parents") ? Self.pageCapWithParents : 1000)
        var start = 0
        repeat {
            try request("files.list")
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
        try request(revision == nil ? "files.get.media" : "revisions.get.media")
        downloadStarted?.signal()
        downloadGate?.wait()
        downloadGate?.signal()
        if RequestContext.current?.priority == .background, let gate = backgroundDownloadGate {
            gate.wait()
            gate.signal()
        }
        let bytes: [UInt8] = try {
            lock.lock(); defer { lock.unlock() }
            guard let file = files[id], var content = contents[id] else { throw notFound(id) }
            if let revision, revision != file.headRevisionId {
                guard revisions[id]?.contains(where: { $0.id == revision }) == true, let old = revisionContents[revision] else {
                    throw notFound(revision)
                }
                content = old
            }
            let start = Int(min(Int64(content.count), offset))
            let end = Int(min(Int64(content.count), length.map { offset + $0 } ?? Int64(content.count)))
            return Array(content[start..<end])
        }()
        lock.lock(); mediaBytes += Int64(bytes.count); lock.unlock()
        let deliver: @Sendable (UnsafeRawBufferPointer) -> Bool
        switch sink {
        case .callback(let callback): deliver = callback
        case .fileDescriptor(let fd, let offset):
            let written = Locked(Int64(0))
            deliver = { chunk in
                let at = written.withLock { $0 }
                guard pwrite(fd, chunk.baseAddress, chunk.count, off_t(offset + at)) == chunk.count else { return false }
                written.withLock { $0 += Int64(chunk.count) }
                return true
            }
        case .memory: throw DriveError.malformedResponse("the fake takes callback and file descriptor sinks")
        }
        var at = 0
        while at < bytes.count {
            let chunk = min(16 << 10, bytes.count - at)
            let going = bytes[at..<at + chunk].withUnsafeBytes { deliver($0) }
            at += chunk
            if !going { throw DriveError.cancelled }
            if at == chunk, at < bytes.count, let gate = afterFirstChunkGate {
                firstChunkHeld?.signal()
                gate.wait()
                gate.signal()
            }
        }
        return Int64(bytes.count)
    }

    func listRevisions(_ fileID: String) throws -> [DriveRevision] {
        try request("revisions.list")
        lock.lock(); defer { lock.unlock() }
        guard files[fileID] != nil else { throw notFound(fileID) }
        return revisions[fileID] ?? []
    }

    func export(_ id: String, mimeType: String) throws -> [UInt8] {
        try request("files.export")
        lock.lock(); defer { lock.unlock() }
        guard let text = contents[id] else { throw notFound(id) }
        return Array("export as \(mimeType)\n".utf8) + text
    }

    /// As `export`, of the text the Doc had at `revision` (`revisions.export`); a binary file has
    /// no export links (`invalidArgument`, as `DriveAPI.exportRevision` says).
    func exportRevision(_ id: String, revision: String, mimeType: String) throws -> [UInt8] {
        try request("revisions.get")
        try request("revisions.export")
        lock.lock(); defer { lock.unlock() }
        guard let file = files[id] else { throw notFound(id) }
        guard file.isGoogleWorkspaceDocument else {
            throw DriveError.invalidArgument(GoogleErrorInfo(status: 0, reason: "exportFormat", message: "no export links"))
        }
        guard let text = documentRevisionTexts[id + " " + revision] else { throw notFound(revision) }
        return Array("export as \(mimeType)\n".utf8) + text
    }

    func changesStartPageToken() throws -> String {
        try request("changes.getStartPageToken")
        lock.lock(); defer { lock.unlock() }
        return String((changeLog.last?.seq ?? 0) + 1)
    }

    func changes(pageToken: String, pageSize: Int) throws -> DriveChangePage {
        let page = try readChanges(pageToken: pageToken, pageSize: pageSize)
        changesHook?(page)
        return page
    }

    private func readChanges(pageToken: String, pageSize: Int) throws -> DriveChangePage {
        try request("changes.list")
        lock.lock(); defer { lock.unlock() }
        if let failingChanges { throw failingChanges }
        let from = Int(pageToken) ?? 1
        if from < refusedBelow {
            throw DriveError.invalidArgument(GoogleErrorInfo(status: 400, reason: "invalid", message: "Invalid Value"))
        }
        let pending = changeLog.filter { $0.seq >= from }
        let page = pending.prefix(pageSize)
        let changes = page.map { entry in DriveChange(fileId: entry.id, removed: files[entry.id] == nil, time: nil, file: files[entry.id]) }
        if pending.count > page.count {
            return DriveChangePage(changes: changes, nextPageToken: String(page.last!.seq + 1), newStartPageToken: nil)
        }
        return DriveChangePage(changes: changes, nextPageToken: nil, newStartPageToken: String((changeLog.last?.seq ?? 0) + 1))
    }

    // MARK: Faults and hooks (tests)

    /// When a write hook runs: `.before` the request takes effect, `.after` it landed and before
    /// its answer is returned. A hook that throws at `.after` is a lost answer: the change stays
    /// on the drive, the caller sees the error (what pre-generated IDs make safe to retry).
    enum WritePhase: Sendable { case before, after }
    typealias WriteHook = @Sendable (_ method: String, _ phase: WritePhase, _ id: String?) throws -> Void

    static let serverError = DriveError.server(GoogleErrorInfo(status: 503, reason: "backendError", message: "Backend Error"))

    /// The next `count` requests of `method` (the emulator's names: `files.create.upload`,
    /// `files.update`, `files.get`, ...) fail with `error`, which by default is a 503, as it reaches
    /// a caller after the client's retries. `afterLanding`: the request takes effect first and only
    /// its answer is lost. `after`: that many requests of the method pass first (a resumable
    /// upload cut after some chunks). Faults of one method are used in the order they were added;
    /// a request is still counted when it fails.
    func failNext(method: String, count: Int = 1, error: DriveError = FakeDriveBackend.serverError, afterLanding: Bool = false,
                  after: Int = 0) {
        lock.lock(); defer { lock.unlock() }
        faults.append(Fault(method: method, remaining: count, error: error, afterLanding: afterLanding, skip: after))
    }

    /// Drops every fault not used yet.
    func clearFaults() {
        lock.lock(); faults = []; lock.unlock()
    }

    /// Faults added with `failNext` and not used yet, by method.
    var pendingFaults: [String: Int] {
        lock.lock(); defer { lock.unlock() }
        return faults.reduce(into: [:]) { $0[$1.method, default: 0] += $1.remaining }
    }

    /// Called for every write request (outside the fake's lock, on the caller's thread), before
    /// and after it lands; it may block (a gate holding an upload "in flight") or throw.
    var writeHook: WriteHook? {
        get { lock.lock(); defer { lock.unlock() }; return hook }
        set { lock.lock(); hook = newValue; lock.unlock() }
    }

    /// The next content upload is stored with its first byte flipped (or one byte where it was
    /// empty), so Drive's md5 differs from the one sent: the upload lands and then throws
    /// `checksumMismatch`, as DriveAPI does.
    func corruptNextUpload() {
        lock.lock(); corruptUploads += 1; lock.unlock()
    }

    private struct Fault {
        var method: String
        var remaining: Int
        var error: DriveError
        var afterLanding: Bool
        var skip: Int
    }

    /// Under `lock`.
    private func takeFault(_ method: String, afterLanding: Bool) -> DriveError? {
        guard let at = faults.firstIndex(where: { $0.method == method && $0.afterLanding == afterLanding && $0.remaining > 0 }) else {
            return nil
        }
        if faults[at].skip > 0 {
            faults[at].skip -= 1
            return nil
        }
        faults[at].remaining -= 1
        let error = faults[at].error
        if faults[at].remaining == 0 { faults.remove(at: at) }
        return error
    }

    /// Counts one request of `method` and throws its first pending fault, if any.
    private func request(_ method: String) throws {
        let (fault, marks): (DriveError?, Bool) = {
            lock.lock(); defer { lock.unlock() }
            counts[method, default: 0] += 1
            return (offline ?? takeFault(method, afterLanding: false), offline != nil && marksOffline)
        }()
        // As the executor does once every try failed to connect for a while: the mount is offline.
        if marks { reachability?.markOffline("test: connection refused") }
        if let fault { throw fault }
    }

    /// While `unreachable` is set, a request that fails marks `reachability` offline (as the real
    /// executor would after its tries failed for a while): Drive going away under a request.
    var marksOfflineWhenUnreachable: Bool {
        get { lock.lock(); defer { lock.unlock() }; return marksOffline }
        set { lock.lock(); marksOffline = newValue; lock.unlock() }
    }
    private var marksOffline = false

    /// One write request: counted (and maybe failed), the hook's `.before`, the change itself
    /// (`land`, under the lock), the hook's `.after`, then maybe a lost answer.
    private func write<T>(_ method: String, id: String?, _ land: () throws -> T) throws -> T {
        var landed = false
        return try write(method, id: id, landed: &landed, land)
    }

    /// `landed` is true once the change took effect (an error after that is a lost answer).
    private func write<T>(_ method: String, id: String?, landed: inout Bool, _ land: () throws -> T) throws -> T {
        try request(method)
        try writeHook?(method, .before, id)
        let result: T = try {
            lock.lock(); defer { lock.unlock() }
            return try land()
        }()
        landed = true
        try writeHook?(method, .after, id)
        let lost: DriveError? = {
            lock.lock(); defer { lock.unlock() }
            return takeFault(method, afterLanding: true)
        }()
        if let lost { throw lost }
        return result
    }

    // MARK: Inspecting the drive (tests; no request counted)

    /// The file as Drive holds it now (trashed ones included); nil once deleted.
    func file(_ id: String) -> DriveFile? {
        lock.lock(); defer { lock.unlock() }
        return files[id == "root" ? rootID : id]
    }

    func content(of id: String) -> [UInt8]? {
        lock.lock(); defer { lock.unlock() }
        return contents[id]
    }

    /// Every item but the root, trashed ones included, by ID.
    var allFiles: [DriveFile] {
        lock.lock(); defer { lock.unlock() }
        return files.values.filter { $0.id != rootID }.sorted { $0.id < $1.id }
    }

    /// Children of `parent` by name order (trashed ones only when asked).
    func children(of parent: String, includingTrashed: Bool = false) -> [DriveFile] {
        lock.lock(); defer { lock.unlock() }
        let id = parent == "root" ? rootID : parent
        return files.values.filter { $0.parents.contains(id) && (includingTrashed || !$0.trashed) }
            .sorted { ($0.name, $0.id) < ($1.name, $1.id) }
    }

    /// Items the writes made (a create that found its ID taken makes none).
    var filesCreated: Int {
        lock.lock(); defer { lock.unlock() }
        return created
    }

    /// IDs handed out by `reserveFileID` and not yet used by a create.
    var unusedReservedIDs: Int {
        lock.lock(); defer { lock.unlock() }
        return issued.count
    }

    // MARK: DriveBackend writes

    /// IDs come from a batch of `idBatchSize` (one files.generateIds request per batch).
    static let idBatchSize = 1000

    /// The client's side: DriveAPI's own pool (`FileIDPool`, with its reserve when the core
    /// attaches one), refilled on the taker's thread only (`startIDPool` starts no thread here),
    /// so request counts are exact. Low water 0: a refill only when it is empty.
    private let idPool = Locked(FileIDPool(batchSize: FakeDriveBackend.idBatchSize, lowWater: 0))
    /// How often the core asked for the background refill.
    let idPoolStarts = Locked(0)

    /// The client's ID pool ends with its process (`CoreHarness.crash`, `unmount`): the IDs it
    /// held in memory are forgotten (Drive still takes them, but nobody knows them); what its
    /// reserve holds on disk is the next process's.
    func forgetIDPool() {
        idPool.withLock { $0 = FileIDPool(batchSize: Self.idBatchSize, lowWater: 0) }
    }

    /// The pool is single-flight: an empty pool costs one files.generateIds however many threads ask.
    func reserveFileID() throws -> String {
        try idPool.withLock { $0 }.next { [self] count in
            try request("files.generateIds")
            lock.lock(); defer { lock.unlock() }
            let ids = (0..<count).map { _ in
                generatedIDs += 1
                return String(format: "gen%07d", generatedIDs)
            }
            issued.formUnion(ids)
            return ids
        }
    }

    func attachIDReserve(_ reserve: any FileIDReserve) { idPool.withLock { $0 }.attach(reserve) }
    func startIDPool() { idPoolStarts.withLock { $0 += 1 } }
    func stopIDPool() { idPool.withLock { $0 }.stop() }

    func createFolder(name: String, parent: String, modifiedTime: Int64?, id: String?,
                      appProperties: [String: String]?) throws -> DriveFile {
        try create(method: "files.create", name: name, parent: parent, mimeType: DriveFile.folderMimeType, checkMimeType: true,
                   modifiedTime: modifiedTime, id: id, appProperties: appProperties, content: nil)
    }

    func createEmpty(name: String, parent: String, mimeType: String, modifiedTime: Int64?, id: String?,
                     appProperties: [String: String]?) throws -> DriveFile {
        // A Docs Editors file has no bytes of its own (no size, md5 or revision), as `addDocument`'s.
        let hasBytes = !mimeType.hasPrefix("application/vnd.google-apps.")
        return try create(method: "files.create", name: name, parent: parent, mimeType: mimeType, checkMimeType: true,
                          modifiedTime: modifiedTime, id: id, appProperties: appProperties, content: hasBytes ? [] : nil)
    }

    func createFile(name: String, parent: String, mimeType: String?, source: UploadSource, modifiedTime: Int64?,
                    sessionFile: String?, id: String?, appProperties: [String: String]?) throws -> DriveFile {
        let content = try read(source)
        return try createUpload(name: name, parent: parent, mimeType: mimeType, content: content, modifiedTime: modifiedTime,
                                sessionFile: sessionFile, id: id, appProperties: appProperties, resuming: nil)
    }

    func updateContent(_ id: String, source: UploadSource, mimeType: String?, name: String?, modifiedTime: Int64?,
                       sessionFile: String?, appProperties: [String: String]?) throws -> DriveFile {
        let content = try read(source)
        return try updateUpload(id, content: content, mimeType: mimeType, name: name, modifiedTime: modifiedTime,
                                sessionFile: sessionFile, appProperties: appProperties, resuming: nil)
    }

    /// As DriveAPI's: the source must be unchanged (size and mtime); a probe (one request) asks
    /// what the session holds; the rest is sent. A session the fake forgot (`forgetUploadSessions`)
    /// starts over; one whose last chunk landed answers the file.
    func resumeUpload(from sessionFile: String) throws -> DriveFile {
        let session = try ResumableUploadSession.load(from: sessionFile)
        let (size, mtime) = try PreparedSource.statFile(session.sourcePath)
        guard size == session.size, session.sourceModifiedNanos == nil || session.sourceModifiedNanos == mtime else {
            throw ResumableUploadSession.error("\(session.sourcePath) changed since the upload began; start a new upload")
        }
        let content = try read(.file(path: session.sourcePath))
        try request(session.method)
        let held: UploadSessionState? = { lock.lock(); defer { lock.unlock() }; return sessions[session.sessionURI] }()
        var resuming: ResumableUploadSession?
        switch held {
        case .landed(let id)?:
            unlink(sessionFile)
            guard let file = file(id) else { throw notFound(id) }
            return try verified(file, sent: content)
        case .holding(let confirmed)?:
            resuming = session
            resuming?.confirmedBytes = confirmed
        case nil:
            resuming = nil
        }
        let metadata = FileMetadataBody(json: session.metadataJSON) ?? FileMetadataBody()
        let mimeType = metadata.mimeType
        let modifiedTime = metadata.modifiedTime.flatMap { RFC3339.parseMillis($0) }
        let appProperties = metadata.appProperties
        if session.isUpdate {
            return try updateUpload(session.fileId, content: content, mimeType: mimeType, name: metadata.name,
                                    modifiedTime: modifiedTime, sessionFile: sessionFile, appProperties: appProperties, resuming: resuming)
        }
        return try createUpload(name: metadata.name ?? "Untitled", parent: metadata.parents?.first ?? "root",
                                mimeType: mimeType, content: content, modifiedTime: modifiedTime, sessionFile: sessionFile,
                                id: session.fileId.isEmpty ? nil : session.fileId, appProperties: appProperties, resuming: resuming)
    }

    /// As DriveAPI's: the initiation is one `files.create.upload` request, each chunk another, and
    /// the last one lands the file through the same create as `createFile` (so a taken ID is
    /// checked the same way). The bytes of each chunk are read from the file when it is sent.
    func beginStreamingCreate(name: String, parent: String, mimeType: String?, id: String,
                              appProperties: [String: String]?) throws -> any StreamingCreate {
        try request("files.create.upload")
        lock.lock(); streamsBegun += 1; lock.unlock()
        return FakeStream(backend: self, fileID: id, chunkSize: chunkSize) { [self] (bytes: [UInt8]) throws -> DriveFile in
            let file = try create(method: "files.create.upload", name: name, parent: parent, mimeType: mimeType ?? "application/octet-stream",
                                  checkMimeType: mimeType != nil, modifiedTime: nil, id: id, appProperties: appProperties, content: bytes)
            return try verified(file, sent: Content(bytes: bytes, path: nil, modifiedNanos: nil))
        }
    }

    /// Streaming creates begun so far (`beginStreamingCreate`).
    var streamedCreates: Int { lock.lock(); defer { lock.unlock() }; return streamsBegun }

    /// One chunk of a streaming create: a counted request that may fail.
    fileprivate func streamChunk() throws { try request("files.create.upload") }

    /// Every resumable session is forgotten (they expired): a resume starts over.
    func forgetUploadSessions() {
        lock.lock(); sessions = [:]; lock.unlock()
    }

    private var streamsBegun = 0

    /// Content uploads up to this size are one request; larger ones resumable (as DriveAPI's).
    var multipartLimit: Int64 = 5 << 20
    /// Bytes per resumable request.
    var chunkSize: Int64 = 8 << 20

    private func createUpload(name: String, parent: String, mimeType: String?, content: Content, modifiedTime: Int64?,
                              sessionFile: String?, id: String?, appProperties: [String: String]?,
                              resuming: ResumableUploadSession?) throws -> DriveFile {
        let upload = Upload(content: content, sessionFile: sessionFile, resuming: resuming, method: "files.create.upload", isUpdate: false,
                            metadata: FileMetadataBody(id: id, name: name, parents: [parent], mimeType: mimeType, modifiedTime: modifiedTime,
                                                      appProperties: appProperties),
                            contentType: mimeType)
        let file = try create(method: "files.create.upload", name: name, parent: parent, mimeType: mimeType ?? "application/octet-stream",
                              checkMimeType: mimeType != nil, modifiedTime: modifiedTime, id: id, appProperties: appProperties,
                              content: content.bytes, upload: upload)
        return try verified(file, sent: content)
    }

    private func updateUpload(_ id: String, content: Content, mimeType: String?, name: String?, modifiedTime: Int64?,
                              sessionFile: String?, appProperties: [String: String]?, resuming: ResumableUploadSession?) throws -> DriveFile {
        let upload = Upload(content: content, sessionFile: sessionFile, resuming: resuming, method: "files.update.upload", isUpdate: true,
                            metadata: FileMetadataBody(name: name, mimeType: mimeType, modifiedTime: modifiedTime, appProperties: appProperties),
                            contentType: mimeType)
        let file = try send(upload, id: id) { () throws -> DriveFile in
            guard var file = files[id] else { throw notFound(id) }
            guard !file.isFolder, !file.isShortcut else { throw badRequest("Folders and shortcuts cannot have content.") }
            if let mimeType { file.mimeType = mimeType }
            if let name { file.name = name }
            file.appProperties = merged(file.appProperties, appProperties)
            setContent(&file, content.bytes)
            file.modifiedTime = modifiedTime ?? tick()
            files[id] = file
            record(id)
            return file
        }
        return try verified(file, sent: content)
    }

    /// The bytes of an upload, and the file they were read from (nil for `.bytes`).
    struct Content {
        var bytes: [UInt8]
        var path: String?
        var modifiedNanos: Int64?
    }

    private struct Upload {
        var content: Content
        var sessionFile: String?
        var resuming: ResumableUploadSession?
        var method: String
        var isUpdate: Bool
        var metadata: FileMetadataBody
        var contentType: String?
    }

    private enum UploadSessionState {
        case holding(Int64)
        case landed(String)
    }

    /// Sends content as DriveAPI does: up to `multipartLimit` bytes in the one request `write`
    /// makes; above, resumable: an initiation, then one request per `chunkSize`, the session
    /// persisted to `sessionFile` after each (a fault between them leaves it for `resumeUpload`),
    /// the last chunk landing the upload through `write`.
    private func send<T>(_ upload: Upload, id: String?, _ land: () throws -> T) throws -> T {
        let size = Int64(upload.content.bytes.count)
        guard size > multipartLimit || upload.resuming != nil else { return try write(upload.method, id: id, land) }
        let persist = upload.content.path != nil ? upload.sessionFile : nil
        var session: ResumableUploadSession
        if let resuming = upload.resuming {
            session = resuming
        } else {
            try request(upload.method)
            session = ResumableUploadSession(sessionURI: "", sourcePath: upload.content.path ?? "", size: size,
                                             md5: Digest.hex(.md5, of: upload.content.bytes), sourceModifiedNanos: upload.content.modifiedNanos,
                                             confirmedBytes: 0, chunkSize: chunkSize, fileId: id ?? "", isUpdate: upload.isUpdate,
                                             metadataJSON: String(decoding: upload.metadata.json, as: UTF8.self),
                                             contentType: upload.contentType ?? "application/octet-stream", method: upload.method)
            lock.lock()
            sessionCount += 1
            session.sessionURI = "fake-upload-session-\(sessionCount)"
            sessions[session.sessionURI] = .holding(0)
            lock.unlock()
            try persist.map { try session.save(to: $0) }
        }
        while size - session.confirmedBytes > chunkSize {
            try request(upload.method)
            session.confirmedBytes += chunkSize
            lock.lock(); sessions[session.sessionURI] = .holding(session.confirmedBytes); lock.unlock()
            try persist.map { try session.save(to: $0) }
        }
        var landed = false
        do {
            let result = try write(upload.method, id: id, landed: &landed, land)
            lock.lock(); sessions[session.sessionURI] = nil; lock.unlock()
            if let persist { unlink(persist) }
            return result
        } catch {
            // A lost answer to the last chunk: the session now answers with the file.
            lock.lock()
            if landed, let id, files[id] != nil { sessions[session.sessionURI] = .landed(id) }
            lock.unlock()
            throw error
        }
    }

    func updateMetadata(_ id: String, name: String?, mimeType: String?, modifiedTime: Int64?,
                        appProperties: [String: String]?) throws -> DriveFile {
        try write("files.update", id: id) { () throws -> DriveFile in
            guard var file = files[id == "root" ? rootID : id] else { throw notFound(id) }
            if file.id == rootID, name != nil { throw cannotChangeRoot() }
            if let mimeType, mimeType != file.mimeType {
                let workspace = { (m: String) in m.hasPrefix("application/vnd.google-apps.") }
                if file.isFolder || file.isShortcut || workspace(mimeType) != workspace(file.mimeType) {
                    throw badRequest("The mimeType of this item cannot be changed to \(mimeType).")
                }
                file.mimeType = mimeType
            }
            if let name { file.name = name }
            if let modifiedTime { file.modifiedTime = modifiedTime }
            file.appProperties = merged(file.appProperties, appProperties)
            file.version = (file.version ?? 1) + 1
            files[file.id] = file
            record(file.id)
            return file
        }
    }

    func move(_ id: String, addParent: String, removeParent: String?, newName: String?,
              appProperties: [String: String]?) throws -> DriveFile {
        try write("files.update", id: id) { () throws -> DriveFile in
            guard var file = files[id] else { throw notFound(id) }
            guard file.id != rootID else { throw cannotChangeRoot() }
            let add = addParent == "root" ? rootID : addParent
            let remove = removeParent.map { $0 == "root" ? rootID : $0 }
            if !file.parents.contains(add) {
                guard let remove, file.parents.contains(remove) else {
                    throw DriveError.permissionDenied(GoogleErrorInfo(status: 403, reason: "cannotAddParent",
                                                                      message: "Increasing the number of parents is not allowed."))
                }
                guard let target = files[add] else { throw notFound(addParent) }
                guard target.isFolder else { throw badRequest("The specified parent is not a folder.") }
                guard add != id, !descendants(of: id).contains(add) else {
                    throw badRequest("A folder cannot be moved into itself or one of its descendants.")
                }
                file.parents = [add]
            }
            if let newName { file.name = newName }
            file.appProperties = merged(file.appProperties, appProperties)
            file.version = (file.version ?? 1) + 1
            files[id] = file
            propagateTrash(below: id, explicitly: explicitlyTrashed.contains(id))
            record(id)
            return files[id]!
        }
    }

    func trash(_ id: String) throws -> DriveFile { try setTrashed(id, true) }

    func untrash(_ id: String) throws -> DriveFile { try setTrashed(id, false) }

    func delete(_ id: String) throws {
        try write("files.delete", id: id) { () throws -> Void in
            guard files[id] != nil else { throw notFound(id) }
            guard id != rootID else { throw cannotChangeRoot() }
            removeTree(id)
        }
    }

    /// The items of a trash listing's page (Drive's is 1,000).
    var trashPageSize: Int {
        get { lock.lock(); defer { lock.unlock() }; return trashPage }
        set { lock.lock(); trashPage = newValue; lock.unlock() }
    }
    private var trashPage = 1000

    func listTrash(onPage: ([DriveTrashedItem]) throws -> Bool) throws {
        let (items, pageSize): ([DriveTrashedItem], Int) = {
            lock.lock(); defer { lock.unlock() }
            let items = files.values.filter(\.trashed).sorted { $0.id < $1.id }.map { file in
                DriveTrashedItem(file: DriveFile(id: file.id, name: file.name, mimeType: file.mimeType, parents: file.parents, size: file.size,
                                                 createdTime: file.createdTime, trashed: true),
                                 explicitlyTrashed: explicitlyTrashed.contains(file.id), trashedTime: trashedTimes[file.id])
            }
            return (items, trashPage)
        }()
        var start = 0
        repeat {
            try request("files.list")
            let page = Array(items[start..<min(items.count, start + pageSize)])
            start += pageSize
            guard try onPage(page) else { return }
        } while start < items.count
    }

    /// When `id` was trashed itself (nil: not trashed itself).
    func trashedTime(of id: String) -> Int64? {
        lock.lock(); defer { lock.unlock() }
        return trashedTimes[id]
    }

    /// Trashes `id` as another client would (explicitly, its children through it), counting no request.
    func trashItem(_ id: String) {
        lock.lock(); defer { lock.unlock() }
        explicitlyTrashed.insert(id)
        trashedTimes[id] = tick()
        files[id]!.version = (files[id]!.version ?? 1) + 1
        propagateTrash(below: id, explicitly: true)
        record(id)
    }

    func emptyTrash() throws {
        try write("files.emptyTrash", id: nil) { () -> Void in
            let tops = files.values.filter { file in
                file.trashed && !file.parents.contains { files[$0]?.trashed ?? false }
            }.map(\.id)
            tops.forEach(removeTree)
        }
    }

    // MARK: Write helpers (under `lock` unless said otherwise)

    /// A create as DriveAPI makes it: a caller's `id` must come from `reserveFileID`; a second
    /// create with an ID already used answers the file that ID names when it is this create's
    /// (name, parent, MIME type when given, size and md5; one files.get, as DriveAPI's caller-ID
    /// retry), and `conflict` (fileIdInUse) otherwise. Docs Editors types take no ID.
    private func create(method: String, name: String, parent: String, mimeType: String, checkMimeType: Bool, modifiedTime: Int64?,
                        id: String?, appProperties: [String: String]?, content: [UInt8]?, upload: Upload? = nil) throws -> DriveFile {
        if id != nil, !DriveAPI.acceptsGeneratedID(mimeType: mimeType) {
            throw DriveError.invalidArgument(GoogleErrorInfo(
                status: 0, reason: "idNotSupported",
                message: "Drive does not accept a pre-generated ID for \(mimeType) files; create it without an id"))
        }
        enum Outcome { case created(DriveFile), taken(String) }
        func land() throws -> Outcome {
            let parentID = parent == "root" ? rootID : parent
            guard let folder = files[parentID] else { throw notFound(parent) }
            guard folder.isFolder else { throw badRequest("The specified parent is not a folder.") }
            var fileID = newID()
            if let id {
                if files[id] != nil { return .taken(id) }
                guard issued.contains(id) else { throw badRequest("The provided file ID is not usable.") }
                issued.remove(id)
                fileID = id
            }
            let now = tick()
            var file = DriveFile(id: fileID, name: name, mimeType: mimeType, parents: [parentID], modifiedTime: modifiedTime ?? now,
                                 createdTime: now, trashed: folder.trashed, version: 0,
                                 appProperties: appProperties?.isEmpty == false ? appProperties : nil)
            if let content { setContent(&file, content) } else { file.version = 1 }
            if file.isGoogleWorkspaceDocument { contents[fileID] = [] }
            files[fileID] = file
            created += 1
            record(fileID)
            return .created(file)
        }
        let outcome = try upload.map { try send($0, id: id, land) } ?? write(method, id: id, land)
        switch outcome {
        case .created(let file):
            return file
        case .taken(let id):
            let found = try getFile(id)
            var differences: [String] = []
            if found.name != name { differences.append("name \(found.name)") }
            if checkMimeType, found.mimeType != mimeType { differences.append("mimeType \(found.mimeType)") }
            if parent != "root", !found.parents.contains(parent) { differences.append("parents \(found.parents)") }
            if let content {
                if found.size != Int64(content.count) { differences.append("size \(found.size.map(String.init) ?? "none")") }
                if found.md5Checksum != Digest.hex(.md5, of: content) { differences.append("md5Checksum \(found.md5Checksum ?? "none")") }
            }
            guard differences.isEmpty else {
                throw DriveError.conflict(GoogleErrorInfo(
                    status: 409, reason: "fileIdInUse",
                    message: "the ID \(id) is taken by another file (\(differences.joined(separator: ", "))), not by this create's"))
            }
            return found
        }
    }

    /// New content: a new revision (version and headRevisionId), size and md5 of what is stored.
    private func setContent(_ file: inout DriveFile, _ bytes: [UInt8]) {
        var stored = bytes
        if corruptUploads > 0 {
            corruptUploads -= 1
            if stored.isEmpty { stored = [0] } else { stored[0] ^= 0xff }
        }
        file.size = Int64(stored.count)
        file.md5Checksum = Digest.hex(.md5, of: stored)
        file.version = (file.version ?? 0) + 1
        file.headRevisionId = "rev-\(file.id)-\(file.version!)"
        contents[file.id] = stored
        keepRevision(file)
    }

    /// Under `lock`: the file's head as a revision of its own.
    private func keepRevision(_ file: DriveFile) {
        guard let id = file.headRevisionId else { return }
        revisionContents[id] = contents[file.id]
        revisions[file.id, default: []].append(DriveRevision(id: id, modifiedTime: file.modifiedTime, size: file.size,
                                                             md5Checksum: file.md5Checksum))
    }

    /// The upload's check (outside the lock): Drive's md5 must be that of the bytes sent.
    private func verified(_ file: DriveFile, sent: Content) throws -> DriveFile {
        let md5 = Digest.hex(.md5, of: sent.bytes)
        guard let reported = file.md5Checksum else { throw DriveError.checksumMismatch(expected: md5, actual: "(none reported)") }
        guard reported == md5 else { throw DriveError.checksumMismatch(expected: md5, actual: reported) }
        return file
    }

    /// The bytes of a source (outside the lock), as the client reads them before sending.
    private func read(_ source: UploadSource) throws -> Content {
        switch source {
        case .bytes(let bytes): return Content(bytes: bytes, path: nil, modifiedNanos: nil)
        case .file(let path), .hashedFile(let path, _):
            let (_, mtime) = try PreparedSource.statFile(path)
            guard let data = FileManager.default.contents(atPath: path) else {
                throw DriveError.localFile(path: path, SystemCallError("read", errno: EIO))
            }
            return Content(bytes: Array(data), path: path, modifiedNanos: mtime)
        }
    }

    private func merged(_ old: [String: String]?, _ new: [String: String]?) -> [String: String]? {
        guard let new, !new.isEmpty else { return old }
        let result = (old ?? [:]).merging(new) { $1 }
        return result.isEmpty ? nil : result
    }

    private func setTrashed(_ id: String, _ trashed: Bool) throws -> DriveFile {
        try write("files.update", id: id) { () throws -> DriveFile in
            guard var file = files[id] else { throw notFound(id) }
            guard file.id != rootID else { throw cannotChangeRoot() }
            if trashed { explicitlyTrashed.insert(id); trashedTimes[id] = tick() } else { explicitlyTrashed.remove(id); trashedTimes[id] = nil }
            file.version = (file.version ?? 1) + 1
            files[id] = file
            propagateTrash(below: id, explicitly: trashed)
            record(id)
            return files[id]!
        }
    }

    /// Sets `trashed` on `id` (explicit, or inherited from its parent) and on everything below it.
    private func propagateTrash(below id: String, explicitly: Bool) {
        func apply(_ id: String) {
            guard var file = files[id] else { return }
            let inherited = file.parents.contains { files[$0]?.trashed ?? false }
            let trashed = explicitlyTrashed.contains(id) || inherited
            if file.trashed != trashed {
                file.trashed = trashed
                files[id] = file
                record(id)
            }
            for child in files.values where child.parents.contains(id) { apply(child.id) }
        }
        apply(id)
    }

    private func descendants(of id: String) -> [String] {
        var found: [String] = []
        var frontier = [id]
        while let next = frontier.popLast() {
            let children = files.values.filter { $0.parents.contains(next) }.map(\.id)
            found += children
            frontier += children
        }
        return found
    }

    /// Removes `id` and everything below it (each recorded as a removal in the change feed).
    private func removeTree(_ id: String) {
        for victim in [id] + descendants(of: id) {
            files[victim] = nil
            contents[victim] = nil
            explicitlyTrashed.remove(victim)
            trashedTimes[victim] = nil
            record(victim)
        }
    }

    /// The fake's clock for times Drive sets itself: one second further at each call.
    private func tick() -> Int64 {
        clock += 1000
        return clock
    }

    private func badRequest(_ message: String, reason: String = "invalid") -> DriveError {
        DriveError.invalidArgument(GoogleErrorInfo(status: 400, reason: reason, message: message))
    }

    private func cannotChangeRoot() -> DriveError {
        DriveError.permissionDenied(GoogleErrorInfo(status: 403, reason: "insufficientFilePermissions",
                                                    message: "The user does not have sufficient permissions for this file."))
    }

    private func notFound(_ id: String) -> DriveError {
        DriveError.notFound(GoogleErrorInfo(status: 404, reason: "notFound", message: "File not found: \(id)."))
    }
}

/// FakeDriveBackend's `StreamingCreate`: chunks of `chunkSize` read from the file as they are sent.
final class FakeStream: StreamingCreate, @unchecked Sendable {
    // @unchecked: used by one thread at a time (the protocol's contract).
    let fileID: String
    private(set) var confirmedBytes: Int64 = 0
    private var held: [UInt8] = []
    private let backend: FakeDriveBackend
    private let chunkSize: Int64
    private let land: ([UInt8]) throws -> DriveFile

    init(backend: FakeDriveBackend, fileID: String, chunkSize: Int64, land: @escaping ([UInt8]) throws -> DriveFile) {
        self.backend = backend
        self.fileID = fileID
        self.chunkSize = chunkSize
        self.land = land
    }

    func chunkLength(available: Int64) -> Int64 { available - confirmedBytes > chunkSize ? chunkSize : 0 }

    func send(path: String, length: Int64) throws {
        try backend.streamChunk()
        held += try Self.read(path, from: confirmedBytes, length: length)
        confirmedBytes += length
    }

    func finish(path: String, size: Int64) throws -> DriveFile {
        while size - confirmedBytes > chunkSize { try send(path: path, length: chunkSize) }
        let rest = try Self.read(path, from: confirmedBytes, length: size - confirmedBytes)
        return try land(held + rest)
    }

    private static func read(_ path: String, from offset: Int64, length: Int64) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw DriveError.localFile(path: path, SystemCallError("open", errno: errno)) }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: Int(length))
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, Int(length), off_t(offset)) }
        guard n == Int(length) else {
            throw DriveError.invalidArgument(GoogleErrorInfo(status: 0, reason: "uploadSourceChanged", message: "\(path) is short"))
        }
        return buffer
    }
}
