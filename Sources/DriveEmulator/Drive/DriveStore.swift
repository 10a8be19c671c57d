import DriveSupport
import Foundation
import Synchronization

/// The persisted part of My Drive's metadata.
struct DriveSnapshot: Codable {
    var format = 1
    var rootId: String
    var items: [String: DriveItem]
    /// The newest change per file id (tombstones included), and per `drive:` + drive id for
    /// changes of shared drives themselves (`ChangeRecord.key`).
    var changes: [String: ChangeRecord]
    /// The last change token handed out; the start page token is `changeCounter + 1`.
    var changeCounter: Int64
    var nextSeq: Int64
    /// Ids handed out by files.generateIds that files.create may still accept.
    var issuedIds: Set<String>
}

/// One line of the metadata journal: what a single mutation changed.
struct JournalRecord: Codable {
    var put: [DriveItem]?
    var del: [String]?
    var changes: [ChangeRecord]?
    var changeCounter: Int64?
    var nextSeq: Int64?
    var issue: [String]?
    var consume: [String]?

    var isEmpty: Bool { put == nil && del == nil && changes == nil && issue == nil && consume == nil && nextSeq == nil }
}

/// What the mutation in progress changed, keyed so that a mutation touching many items stays linear.
struct PendingJournal {
    var puts: [String: DriveItem] = [:]
    var dels: [String] = []
    var changes: [String: ChangeRecord] = [:]
    var changeCounter: Int64?
    var nextSeq: Int64?
    var issue: [String] = []
    var consume: [String] = []

    var record: JournalRecord {
        JournalRecord(put: puts.isEmpty ? nil : Array(puts.values), del: dels.isEmpty ? nil : dels,
                      changes: changes.isEmpty ? nil : changes.values.sorted { $0.token < $1.token }, changeCounter: changeCounter,
                      nextSeq: nextSeq, issue: issue.isEmpty ? nil : issue, consume: consume.isEmpty ? nil : consume)
    }
}

/// What the mutation in progress replaced, so that it can be put back when its journal line cannot
/// be written (or its body throws after a first change): memory never runs ahead of the journal.
struct UndoLog {
    /// id → the item before the mutation touched it (nil: it did not exist).
    var items: [String: DriveItem?] = [:]
    /// file id → its newest change record before the mutation (nil: none).
    var changes: [String: ChangeRecord?] = [:]
    /// Ids issued by this mutation that were not issued before.
    var issued: Set<String> = []
    /// Ids this mutation consumed.
    var consumed: [String] = []
    var changeCounter: Int64 = 0
    var nextSeq: Int64 = 0

    var isEmpty: Bool { items.isEmpty && changes.isEmpty && issued.isEmpty && consumed.isEmpty }
}

/// The metadata under the store's lock: the snapshot, a child index and the pending journal record.
struct MetadataState {
    var data: DriveSnapshot
    /// parent id → child ids in listing order. Derived; rebuilt on load.
    var children: [String: ChildList] = [:]
    /// Lowercased name → ids (Drive's `name =` compares case-insensitively). Derived; rebuilt on load.
    var names: [String: Set<String>] = [:]
    /// (token, file id) in token order; an entry is stale when `data.changes[id]` has a newer
    /// token. Lets changes.list start a page by binary search. Derived; rebuilt on load.
    var changeLog: [(token: Int64, id: String)] = []
    /// The ids of the shared drives (their root folders). Derived; rebuilt on load.
    var driveRoots: Set<String> = []
    /// Shared drive id → how many items it holds (its root left out). Derived; rebuilt on load.
    var driveItemCounts: [String: Int] = [:]
    var pending = PendingJournal()
    var undo = UndoLog()
    /// "Now" for the mutation in progress, in milliseconds.
    var now: Int64 = 0

    init(data: DriveSnapshot) {
        self.data = data
        for item in data.items.values { index(item) }
        rebuildChangeLog()
    }

    /// Adds `item` to the derived indexes.
    private mutating func index(_ item: DriveItem) {
        if let p = item.parent { children[p, default: []].insert(seq: item.seq, id: item.id) }
        names[item.name.lowercased(), default: []].insert(item.id)
        if item.isSharedDriveRoot { driveRoots.insert(item.id) }
        if let d = item.driveId, !item.isSharedDriveRoot { driveItemCounts[d, default: 0] += 1 }
    }

    /// Removes `item` (as it was indexed) from the derived indexes.
    private mutating func unindex(_ item: DriveItem) {
        if let p = item.parent { children[p]?.remove(seq: item.seq, id: item.id) }
        let key = item.name.lowercased()
        names[key]?.remove(item.id)
        if names[key]?.isEmpty == true { names.removeValue(forKey: key) }
        if item.isSharedDriveRoot { driveRoots.remove(item.id) }
        if let d = item.driveId, !item.isSharedDriveRoot {
            let n = (driveItemCounts[d] ?? 0) - 1
            driveItemCounts[d] = n > 0 ? n : nil
        }
    }

    /// Keeps the indexes right when `new` replaces `old`.
    private mutating func reindex(old: DriveItem?, new: DriveItem) {
        if let old {
            if old.parent == new.parent, old.seq == new.seq, old.name == new.name, old.isSharedDriveRoot == new.isSharedDriveRoot,
               old.driveId == new.driveId { return }
            unindex(old)
        }
        index(new)
    }

    /// Google's limit an item of the mutation in progress broke by arriving where it now is (created,
    /// moved, restored into a folder or a shared drive): a folder other than a root past
    /// `maxItemsPerFolder` direct children, a shared drive past `maxItemsPerSharedDrive` items.
    /// Items already there before the limit was set are not an error; only arrivals are refused.
    func itemLimitViolation(_ limits: DriveLimits) -> GoogleError? {
        guard limits.maxItemsPerFolder != nil || limits.maxItemsPerSharedDrive != nil else { return nil }
        for (id, item) in pending.puts {
            let old = undo.items[id] ?? nil
            if let max = limits.maxItemsPerFolder, let p = item.parent, old?.parent != p, p != data.rootId,
               !driveRoots.contains(p), (children[p]?.count ?? 0) > max {
                return .folderItemLimitExceeded
            }
            if let max = limits.maxItemsPerSharedDrive, let d = item.driveId, !item.isSharedDriveRoot,
               old?.driveId != d, (driveItemCounts[d] ?? 0) > max {
                return .sharedDriveItemLimitExceeded
            }
        }
        return nil
    }

    mutating func rebuildChangeLog() {
        changeLog = data.changes.values.map { (token: $0.token, id: $0.key) }.sorted { $0.token < $1.token }
    }

    /// The newest change of each file with a token ≥ `token`, oldest first: at most `limit` of them
    /// that pass `include`, and whether more follow.
    func changes(from token: Int64, limit: Int, include: (ChangeRecord) -> Bool) -> (page: [ChangeRecord], more: Int64?) {
        var lo = 0, hi = changeLog.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if changeLog[mid].token < token { lo = mid + 1 } else { hi = mid }
        }
        var page: [ChangeRecord] = []
        for i in lo..<changeLog.count {
            let entry = changeLog[i]
            guard let record = data.changes[entry.id], record.token == entry.token, include(record) else { continue }
            if page.count == limit { return (page, record.token) }
            page.append(record)
        }
        return (page, nil)
    }

    var rootId: String { data.rootId }

    /// `root` is an alias for the My Drive folder id (in paths, queries and parents).
    func resolve(_ id: String) -> String { id == "root" ? data.rootId : id }

    /// The item as the user sees it: nil when unknown, or when the user cannot see it (another
    /// user's item not shared with them, an item of a shared drive they are not a member of): the
    /// same 404 either way, as at Google (drive-behaviours §2.2).
    func item(_ id: String) -> DriveItem? {
        guard let item = data.items[resolve(id)], isVisible(item) else { return nil }
        return item
    }

    /// The item as a request sees it: a shared-drive item is invisible (nil, a 404 for the caller)
    /// unless the request says `supportsAllDrives=true`, as at Google (drive-behaviours §2.2, §3.9).
    func item(_ id: String, allDrives: Bool) -> DriveItem? {
        guard let item = item(id), allDrives || item.driveId == nil else { return nil }
        return item
    }

    /// The root folders of the shared drives, in creation order.
    var sharedDriveRoots: [DriveItem] {
        driveRoots.compactMap { data.items[$0] }.sorted { $0.seq != $1.seq ? $0.seq < $1.seq : $0.id < $1.id }
    }

    func children(of id: String) -> [DriveItem] { (children[id] ?? []).compactMap { data.items[$0] } }

    /// Items named `name` (case-insensitively, as `name =` in a query).
    func items(named name: String) -> [DriveItem] { (names[name.lowercased()] ?? []).compactMap { data.items[$0] } }

    /// Every descendant of `id` (not `id` itself), parents before children.
    func descendants(of id: String) -> [String] {
        var out: [String] = []
        var queue = [id]
        while let next = queue.popLast() {
            for c in children[next] ?? [] { out.append(c); queue.append(c) }
        }
        return out
    }

    /// Stores `item` as it now is; `recordChange` adds it to the change feed (and bumps its version).
    mutating func put(_ item: DriveItem, recordChange: Bool = true) {
        var item = item
        let old = data.items[item.id]
        if recordChange, old != nil { item.version += 1 }
        reindex(old: old, new: item)
        if old?.parent != item.parent {
            if let p = old?.parent { bumpFolderVersion(p) }
            if let p = item.parent { bumpFolderVersion(p) }
        }
        rememberItem(item.id)
        data.items[item.id] = item
        pending.puts[item.id] = item
        if recordChange { change(item.id, removed: false, driveId: item.driveId) }
    }

    /// A folder's `version` also counts changes to its list of children (one added, removed, moved
    /// in or out), the root's too, as at Google; this is not a change-feed entry of the folder.
    private mutating func bumpFolderVersion(_ id: String) {
        guard var folder = data.items[id] else { return }
        rememberItem(id)
        folder.version += 1
        data.items[id] = folder
        pending.puts[id] = folder
    }

    /// Forgets `id` for good and leaves a tombstone in the change feed. Children are the caller's business.
    mutating func remove(_ id: String) {
        guard data.items[id] != nil else { return }
        rememberItem(id)
        guard let old = data.items.removeValue(forKey: id) else { return }
        unindex(old)
        if let p = old.parent { bumpFolderVersion(p) }
        children.removeValue(forKey: id)
        pending.puts[id] = nil
        pending.dels.append(id)
        change(id, removed: true, driveId: old.driveId)
    }

    mutating func change(_ id: String, removed: Bool, driveId: String?, isDrive: Bool = false) {
        data.changeCounter += 1
        let record = ChangeRecord(fileId: id, token: data.changeCounter, time: now, removed: removed, driveId: driveId,
                                  isDrive: isDrive ? true : nil)
        let key = record.key
        if undo.changes.index(forKey: key) == nil { undo.changes.updateValue(data.changes[key], forKey: key) }
        data.changes[key] = record
        changeLog.append((token: record.token, id: key))
        // Superseded entries are skipped when read; drop them once they outnumber the live ones.
        if changeLog.count > 2 * data.changes.count + 1024 { rebuildChangeLog() }
        pending.changes[key] = record
        pending.changeCounter = data.changeCounter
    }

    mutating func nextSeq() -> Int64 {
        data.nextSeq += 1
        pending.nextSeq = data.nextSeq
        return data.nextSeq
    }

    mutating func issue(_ ids: [String]) {
        for id in ids where !data.issuedIds.contains(id) { undo.issued.insert(id) }
        data.issuedIds.formUnion(ids)
        pending.issue += ids
    }

    mutating func consume(_ id: String) {
        guard data.issuedIds.remove(id) != nil else { return }
        undo.consumed.append(id)
        pending.consume.append(id)
    }

    /// Records the item's value before this mutation first touches it.
    private mutating func rememberItem(_ id: String) {
        if undo.items.index(forKey: id) == nil { undo.items.updateValue(data.items[id], forKey: id) }
    }

    /// Starts a mutation: nothing pending, nothing to undo.
    mutating func beginMutation(now: Int64) {
        self.now = now
        pending = PendingJournal()
        undo = UndoLog(changeCounter: data.changeCounter, nextSeq: data.nextSeq)
    }

    /// Puts back everything the mutation in progress changed and rebuilds the derived indexes
    /// (linear in the store's size: only on a failure).
    mutating func rollBackMutation() {
        let log = undo
        pending = PendingJournal()
        undo = UndoLog()
        guard !log.isEmpty || log.changeCounter != data.changeCounter || log.nextSeq != data.nextSeq else { return }
        for (id, old) in log.items {
            if let old { data.items[id] = old } else { data.items.removeValue(forKey: id) }
        }
        for (id, old) in log.changes {
            if let old { data.changes[id] = old } else { data.changes.removeValue(forKey: id) }
        }
        data.issuedIds.formUnion(log.consumed)
        data.issuedIds.subtract(log.issued)
        data.changeCounter = log.changeCounter
        data.nextSeq = log.nextSeq
        let now = self.now
        self = MetadataState(data: data)
        self.now = now
    }

    /// Re-derives `trashed` below `id` from the explicit flags (trash is inherited from the parent).
    mutating func propagateTrash(below id: String) {
        guard let top = data.items[id] else { return }
        var queue = [(id, top.trashed)]
        while let (parentId, parentTrashed) = queue.popLast() {
            for childId in children[parentId] ?? [] {
                guard var child = data.items[childId] else { continue }
                let trashed = child.explicitlyTrashed || parentTrashed
                if child.trashed != trashed {
                    child.trashed = trashed
                    put(child)
                }
                queue.append((childId, trashed))
            }
        }
    }

    mutating func apply(_ r: JournalRecord) {
        for id in r.del ?? [] {
            if let old = data.items.removeValue(forKey: id) { unindex(old) }
            children.removeValue(forKey: id)
        }
        for item in r.put ?? [] {
            reindex(old: data.items[item.id], new: item)
            data.items[item.id] = item
        }
        for c in r.changes ?? [] { data.changes[c.key] = c }
        if let c = r.changeCounter { data.changeCounter = max(data.changeCounter, c) }
        if let s = r.nextSeq { data.nextSeq = max(data.nextSeq, s) }
        data.issuedIds.formUnion(r.issue ?? [])
        data.issuedIds.subtract(r.consume ?? [])
    }
}

/// My Drive on disk: metadata as a JSON snapshot plus an append-only journal (one JSON line per
/// mutation, compacted into a new snapshot written to a temporary file and renamed), content as one
/// file per revision under `content/`.
///
/// Compaction runs off the metadata lock: under the lock the journal is renamed to
/// `metadata.journal.old`, a fresh journal is opened and the state is copied (copy-on-write); a
/// serial queue then encodes and renames the snapshot and deletes the old journal. A start replays
/// snapshot, old journal, journal, in that order: every record of the old journal is already in a
/// snapshot written after it, and replaying a record over a newer state of the same items ends in
/// that newer state (records are whole items, last one wins), so a crash at any step loses nothing.
///
/// Durability (`durable`, set when the state lives in a directory of the user's): every answer is
/// sent only after what it says is on disk, so an emulator killed (SIGKILL, a crash, a power cut)
/// after answering keeps what it answered. The commit points:
/// - content (`adoptContent`): the file's data is fdatasynced, renamed into `content/`, and
///   `content/` fsynced, all before the journal line that names it is written;
/// - the journal: a mutation's line is written under the lock; `makeDurable()`, which the service
///   calls before every answer, waits until an fdatasync covers every line written so far (group
///   commit, `JournalCommits`: concurrent requests share one sync);
/// - a journal rotation (compaction) fdatasyncs the old journal and fsyncs the directory under the
///   lock; snapshots are written by `AtomicFile` (fsync, rename, directory fsync).
/// Seeding (`bulkLoad`) defers all of it to one `sync()` at its end: nothing has been answered yet.
///
/// Lock order: `UploadSessions` locks may be held when taking the metadata lock, never the reverse.
/// The metadata lock is never held while content streams (only for journal appends and the
/// journal rotation); a task of the compaction queue may take it, so nothing waits for that queue
/// while holding it.
final class DriveStore: Sendable {
    let directory: URL
    let contentDirectory: URL
    let tempDirectory: URL
    let uploadsDirectory: URL
    private let snapshotURL: URL
    private let journalURL: URL
    private let oldJournalURL: URL
    private let clock: TimeSource
    /// `compacting`: a snapshot write is queued or running on `compaction`.
    private let metadata: Locked<Guarded>
    private typealias Guarded = (state: MetadataState, journalFD: Int32, journalLines: Int, compacting: Bool)

    /// Test seam: called with the length of each journal line before it is appended (metadata lock
    /// held). An answer fails that append as a disk would: the first `written` bytes of the line
    /// are written for real (a torn line), then write(2) fails with `errno` (ENOSPC, EIO, ...).
    let journalFault = Locked<(@Sendable (_ length: Int) -> (written: Int, errno: Int32)?)?>(nil)
    private let compaction = DispatchQueue(label: "drivefs-emulator.snapshot")
    /// Whether commits are made durable (fdatasync); false for a temporary state directory.
    let durable: Bool
    /// Google's items limits (per folder, per shared drive), checked at the end of every mutation.
    let limits: DriveLimits
    /// Journal lines written so far, over every journal file (updated under the metadata lock).
    private let appended = Atomic<Int64>(0)
    let commits = JournalCommits()
    /// While seeding: no per-commit syncs (one `sync()` at the end).
    private let bulk = Atomic<Bool>(false)
    /// Test seam: told of each content file made durable (its name in `content/`), after the
    /// directory sync and before the journal line that names it.
    let onContentDurable = Locked<(@Sendable (_ name: String) -> Void)?>(nil)
    /// Test seam: told of each journal line written (its number, the content files its items name),
    /// under the metadata lock.
    let onJournalLine = Locked<(@Sendable (_ line: Int64, _ contentFiles: [String]) -> Void)?>(nil)

    init(directory: URL, clock: TimeSource, durable: Bool = false, limits: DriveLimits = .none) throws {
        self.limits = limits
        self.directory = directory
        self.clock = clock
        self.durable = durable
        contentDirectory = directory.appendingPathComponent("content")
        tempDirectory = directory.appendingPathComponent("tmp")
        uploadsDirectory = directory.appendingPathComponent("uploads")
        snapshotURL = directory.appendingPathComponent("metadata.json")
        journalURL = directory.appendingPathComponent("metadata.journal")
        oldJournalURL = directory.appendingPathComponent("metadata.journal.old")
        let fm = FileManager.default
        for d in [directory, contentDirectory, tempDirectory, uploadsDirectory] {
            try fm.createDirectory(at: d, withIntermediateDirectories: true)
        }
        // Leftovers of interrupted writes.
        for name in (try? fm.contentsOfDirectory(atPath: tempDirectory.path)) ?? [] {
            try? fm.removeItem(at: tempDirectory.appendingPathComponent(name))
        }
        var state: MetadataState
        // Whether the snapshot on disk already is the whole state (then it is not rewritten: that
        // took seconds at 100,000 items, on every start).
        var snapshotIsCurrent = false
        if let data = try? Data(contentsOf: snapshotURL) {
            state = MetadataState(data: try JSONDecoder().decode(DriveSnapshot.self, from: data))
            snapshotIsCurrent = true
        } else {
            let now = Int64((clock.now() * 1000).rounded(.down))
            let rootId = DriveIDs.newRootID()
            let root = DriveItem(id: rootId, name: "My Drive", mimeType: DriveMime.folder, parent: nil,
                                 createdTime: now, modifiedTime: now)
            state = MetadataState(data: DriveSnapshot(rootId: rootId, items: [rootId: root], changes: [:],
                                                      changeCounter: 0, nextSeq: 0, issuedIds: []))
        }
        // The journal of a compaction that did not finish, then the current one.
        for url in [oldJournalURL, journalURL] {
            guard let journal = try? Data(contentsOf: url) else { continue }
            let decoder = JSONDecoder()
            // A torn last line (crash during an append) is ignored.
            for line in journal.split(separator: UInt8(ascii: "\n")) {
                guard let record = try? decoder.decode(JournalRecord.self, from: line) else { continue }
                state.apply(record)
                snapshotIsCurrent = false
            }
            state.rebuildChangeLog()
        }
        if !snapshotIsCurrent { try DriveStore.writeSnapshot(state.data, to: snapshotURL) }
        unlink(oldJournalURL.path)
        let fd = open(journalURL.path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw StoreError.io("cannot open \(journalURL.path): errno \(errno)") }
        // The journal's directory entry (perhaps new) must be on disk before its lines count.
        if durable { DriveStore.syncDirectory(directory.path) }
        metadata = Locked((state, fd, 0, false))
        // Content no item refers to: a crash between writing content and journaling it.
        let referenced = Set(state.data.items.values.flatMap(\.allContentFiles))
        for name in (try? fm.contentsOfDirectory(atPath: contentDirectory.path)) ?? [] where !referenced.contains(name) {
            try? fm.removeItem(at: contentDirectory.appendingPathComponent(name))
        }
    }

    enum StoreError: Error {
        case io(String)
        /// A mutation's journal line could not be written; the mutation was undone.
        case journal(String)
    }

    func close() {
        unlinkReleased()
        // On the compaction queue: after any snapshot write already queued, never before it.
        compaction.sync {
            metadata.withLock { m in
                if m.journalFD >= 0 {
                    if (try? DriveStore.writeSnapshot(m.state.data, to: snapshotURL)) != nil {
                        unlink(oldJournalURL.path)
                        ftruncate(m.journalFD, 0)
                    }
                    Foundation.close(m.journalFD)
                    m.journalFD = -1
                }
            }
        }
    }

    /// Waits until no snapshot write is queued or running (tests).
    func waitForCompaction() { compaction.sync {} }

    var nowMillis: Int64 { Int64((clock.now() * 1000).rounded(.down)) }

    /// Reads the metadata under the lock.
    func read<R>(_ body: (MetadataState) throws -> R) rethrows -> R {
        try metadata.withLock { try body($0.state) }
    }

    /// Mutates the metadata under the lock and journals what changed.
    ///
    /// Contract: the mutation happens whole or not at all. When `body` throws, or the journal line
    /// cannot be written (`StoreError.journal`: a full or failing disk), every change it made is
    /// undone and nothing of it is on disk, so the caller answers with an error (a 5xx for a journal
    /// failure) and the store stays as it was. A partly written line is cut off again.
    func mutate<R>(_ body: (inout MetadataState) throws -> R) throws -> R {
        try metadata.withLock { m in
            m.state.beginMutation(now: nowMillis)
            let result: R
            do { result = try body(&m.state) } catch {
                m.state.rollBackMutation()
                throw error
            }
            if let violation = m.state.itemLimitViolation(limits) {
                m.state.rollBackMutation()
                throw violation
            }
            let record = m.state.pending.record
            m.state.pending = PendingJournal()
            guard !record.isEmpty, m.journalFD >= 0 else { m.state.undo = UndoLog(); return result }
            do {
                try appendJournalLine(record, fd: m.journalFD)
            } catch {
                m.state.rollBackMutation()
                throw error
            }
            m.state.undo = UndoLog()
            m.journalLines += 1
            let line = appended.add(1, ordering: .releasing).newValue
            if let seam = onJournalLine.withLock({ $0 }) { seam(line, record.put?.flatMap(\.allContentFiles) ?? []) }
            if m.journalLines > max(2000, m.state.data.items.count), !m.compacting {
                compact(&m)
            }
            return result
        }
    }

    /// Appends one JSON line to the journal (metadata lock held). On failure the journal is cut back
    /// to where it was, so that a torn line cannot swallow the next record on replay.
    private func appendJournalLine(_ record: JournalRecord, fd: Int32) throws {
        var line: Data
        do { line = try JSONEncoder().encode(record) } catch { throw StoreError.journal("cannot encode a journal record: \(error)") }
        line.append(UInt8(ascii: "\n"))
        let start = lseek(fd, 0, SEEK_END)
        let fault = journalFault.withLock({ $0 })?(line.count)
        let failure: Int32? = line.withUnsafeBytes { raw -> Int32? in
            let end = fault.map { min(max(0, $0.written), raw.count) } ?? raw.count
            do throws(SystemCallError) { try SystemCall.writeAll(fd, UnsafeRawBufferPointer(rebasing: raw[0..<end])) } catch { return error.errno }
            return fault?.errno
        }
        guard let failure else { return }
        if start < 0 || ftruncate(fd, start) != 0 {
            // Cannot cut it off: end the torn line, which replay then skips as undecodable.
            _ = write(fd, "\n", 1)
        }
        throw StoreError.journal("cannot append to \(journalURL.path): \(String(cString: strerror(failure))) (errno \(failure))")
    }

    /// Starts a compaction (metadata lock held): rotates the journal and queues the snapshot write.
    /// If an old journal is still there (the last snapshot write failed), compacts in place instead.
    private func compact(_ m: inout Guarded) {
        if access(oldJournalURL.path, F_OK) == 0 {
            if (try? DriveStore.writeSnapshot(m.state.data, to: snapshotURL)) != nil {
                unlink(oldJournalURL.path)
                ftruncate(m.journalFD, 0)
                m.journalLines = 0
            }
            return
        }
        // Every line so far must be durable before its journal is renamed away (a waiter's sync
        // would otherwise cover only the new journal); one sync under the lock per compaction.
        if durable, !bulk.load(ordering: .relaxed) {
            guard fdatasync(m.journalFD) == 0 else { return }
        }
        let through = appended.load(ordering: .relaxed)
        guard rename(journalURL.path, oldJournalURL.path) == 0 else { return }
        let fd = open(journalURL.path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            // Put the journal back and keep appending to it; compaction is retried later.
            rename(oldJournalURL.path, journalURL.path)
            return
        }
        if durable, !bulk.load(ordering: .relaxed) {
            // The rename and the new journal's entry.
            DriveStore.syncDirectory(directory.path)
            commits.markDurable(through: through)
        }
        Foundation.close(m.journalFD)
        m.journalFD = fd
        m.journalLines = 0
        m.compacting = true
        let copy = m.state.data
        compaction.async { [self] in
            if (try? DriveStore.writeSnapshot(copy, to: snapshotURL)) != nil {
                unlink(oldJournalURL.path)
            }
            metadata.withLock { $0.compacting = false }
        }
    }

    private static func writeSnapshot(_ data: DriveSnapshot, to url: URL) throws {
        do {
            try AtomicFile.write(try JSONEncoder().encode(data), to: url.path, mode: 0o600)
        } catch let failure as AtomicFile.Failure {
            throw StoreError.io(failure.description)
        }
    }

    func contentPath(_ name: String) -> String { contentDirectory.appendingPathComponent(name).path }

    /// A fresh path under `tmp/` for content being written.
    func newTempPath() -> String { tempDirectory.appendingPathComponent(SecureRandom.token(length: 16)).path }

    /// Moves finished content into `content/` under a new revision-unique name. Durable: the data
    /// and the rename are on disk when this returns, before any journal line can name the file.
    func adoptContent(tempPath: String) throws -> String {
        let name = SecureRandom.token(length: 24)
        let syncing = durable && !bulk.load(ordering: .relaxed)
        if syncing { try DriveStore.syncData(path: tempPath) }
        guard rename(tempPath, contentPath(name)) == 0 else { throw StoreError.io("rename \(tempPath): errno \(errno)") }
        if syncing {
            DriveStore.syncDirectory(contentDirectory.path)
            onContentDurable.withLock { $0 }?(name)
        }
        return name
    }

    // MARK: Durability

    /// Returns once every journal line written so far is on disk (nothing to do when not durable).
    /// Called before each answer: whatever the answer says (a mutation of its own, or state another
    /// request changed and this one read) was journaled before, so it is covered. Throws
    /// `StoreError.journal` when the disk failed; the emulator then answers 500 to everything, as
    /// what is on disk is unknown.
    func makeDurable() throws {
        guard durable, !bulk.load(ordering: .relaxed) else { return }
        let line = appended.load(ordering: .acquiring)
        try commits.waitUntilDurable(line) {
            metadata.withLock { m in (m.journalFD >= 0 ? dup(m.journalFD) : -1, appended.load(ordering: .relaxed)) }
        }
    }

    /// Runs `body` (seeding) without per-commit syncs, then makes everything durable at once.
    func bulkLoad<R>(_ body: () throws -> R) throws -> R {
        bulk.store(true, ordering: .relaxed)
        defer { bulk.store(false, ordering: .relaxed) }
        let result = try body()
        if durable {
            sync()
            commits.markDurable(through: appended.load(ordering: .relaxed))
        }
        return result
    }

    /// fdatasync of a file's data, by path.
    static func syncData(path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw StoreError.io("open \(path): errno \(errno)") }
        defer { Foundation.close(fd) }
        do throws(SystemCallError) { try SystemCall.retrying("fdatasync") { fdatasync(fd) } } catch {
            throw StoreError.io("fdatasync \(path): \(error.reason) (errno \(error.errno))")
        }
    }

    /// fsync of a directory, so that renames and new entries in it survive a crash. Best effort: a
    /// directory that cannot be opened has bigger problems, which the next write reports.
    static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = try? SystemCall.retrying("fsync") { fsync(fd) }
        Foundation.close(fd)
    }

    /// Content that no item refers to any more, with the (wall-clock) time it was released.
    private let released = Locked<[(name: String, at: Double)]>([])
    /// How long released content stays on disk: a download answered just before an update or a
    /// delete names the old file, and the server opens it a moment later.
    static let releaseGrace: Double = 10

    /// Releases a content file; it is unlinked after `releaseGrace` seconds (or at close / next start).
    func removeContent(_ name: String?) {
        guard let name else { return }
        let now = Date().timeIntervalSince1970
        let due = released.withLock { list -> [String] in
            list.append((name, now))
            let due = list.filter { now - $0.at >= DriveStore.releaseGrace }.map(\.name)
            list.removeAll { now - $0.at >= DriveStore.releaseGrace }
            return due
        }
        due.forEach { unlink(contentPath($0)) }
    }

    private func unlinkReleased() {
        released.withLock { list in
            list.forEach { unlink(contentPath($0.name)) }
            list.removeAll()
        }
    }
}
