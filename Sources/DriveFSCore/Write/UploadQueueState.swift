/// One job of the upload queue, as the journal keeps it: content owed to Drive, the removal of a
/// file that Drive may hold, a rename over a file to finish, or a change of an item's name, folder,
/// time or properties (or a new folder) made while Drive was unreachable.
struct UploadJob: Codable, Equatable, Sendable {
    enum Kind: String, Codable, Sendable {
        case upload
        case removal
        /// A rename over a file (`replacedBy`) was started: the file it replaces (`request.fileID`,
        /// on Drive as `target`) goes once the renamed file holds its name. Journaled before the
        /// rename's first step and ended after its last, so a crash in between is finished by the
        /// next start: never both files under the name (docs/architecture.md, "Renames over a file").
        case replacement
        /// A change made offline (`change`): the item `target` gets `request.name` in
        /// `request.parentID` (when `change.places`), `request.modifiedTime` (when set) and the
        /// drivefs properties `request.appProperties`; or, with `creates`, the folder `target` is
        /// made there with them. Queued in order with the item's other jobs; a job whose folder
        /// is made by an earlier folder job waits for it (parents before children).
        case change
    }

    /// What a `change` job changes besides time and properties.
    struct Change: Codable, Equatable, Sendable {
        /// The name and folder of the request are part of the change (a rename or move).
        var places: Bool
        /// The folder Drive had the item in when the change was made (a move takes it out of it).
        var leaves: String?
    }

    /// Where a rename puts a file: the file, its new (Drive) name and folder.
    struct Placement: Codable, Equatable, Sendable {
        var fileID: String
        var name: String
        var parentID: String
    }

    /// Where a conflicting upload goes instead: a new file beside the original.
    struct ConflictCopy: Codable, Equatable, Sendable {
        var id: String
        var name: String
    }

    /// What an upload left on Drive, as successors of the same file take it for their base.
    struct Landed: Codable, Equatable, Sendable {
        var id: String
        var headRevisionId: String?
        var md5: String?
        var wasConflict: Bool
    }

    /// The last upload of a file that landed, and what our landings replaced: a later commit
    /// based on one of those (the core had not heard of the landings yet, e.g. across a crash) is
    /// rebased on the last landing instead of being taken for a conflict with our own upload.
    struct LastLanded: Codable, Equatable, Sendable {
        /// An upload of ours created the file: a request that still says `isNew` is stale.
        var created: Bool
        /// Revisions our landings replaced, oldest first (at most `supersededKept`).
        var superseded: [String]
        var landed: Landed
        /// The seq of the job that landed (recency, for the snapshot's bound).
        var seq: UInt64

        static let supersededKept = 16

        /// Whether `request` was based on Drive's copy from before one of our landings.
        func isStale(_ request: UploadRequest) -> Bool {
            if request.isNew { return created }
            guard let base = request.baseRevision, base != landed.headRevisionId else { return false }
            return superseded.contains(base)
        }
    }

    var seq: UInt64
    var kind: Kind
    /// For a removal: the removed file's last request (its ID and path, for logs).
    var request: UploadRequest
    /// The content file ("" for a removal).
    var contentPath: String
    /// False while the core has the file open for writing (committed, not queued).
    var ready: Bool
    /// The Drive file this job writes or removes: `request.fileID`, unless Drive's copy was gone
    /// and the file is made again under a new ID, or an earlier job of the file made it there.
    var target: String
    /// Create `target` (with this content) rather than write new content to it.
    var creates: Bool
    var conflictCopy: ConflictCopy?
    /// For a removal: delete for good rather than trash.
    var deletes: Bool
    /// Its content goes to the conflicted copy an earlier job of the file made (the same local
    /// edits, written on the same base): it lands as a conflict, beside Drive's version.
    var landsBeside: Bool? = nil
    /// The md5s Drive reported for tries of this job whose bytes it stored wrongly (a checksum
    /// mismatch), lowercased, one per such try. A head with one of them is that corrupt revision
    /// of ours, to be written over, not a change made elsewhere (no conflicted copy); their count
    /// bounds the tries (`UploadQueue.maximumChecksumMismatches`). Nil when there was none (and
    /// in journals written before the field existed).
    var corruptLandings: [String]? = nil
    /// For a replacement: the rename that replaces the file.
    var replacedBy: Placement? = nil
    /// For a change: what it changes (nil in journals written before the kind existed).
    var change: Change? = nil
    /// For a removal that waits before it is sent (`queueRemoval(settling:)`,
    /// `cancel(_:removalSettles:)`): when its wait ends and how long it was. A restart before then
    /// keeps it waiting the rest (never longer than the wait itself, whatever the clock did), and
    /// takes it for not started: a file made again under its name may still take its place. Nil
    /// for a removal that goes at once (and in journals written before the field existed: a
    /// restart sends those at once).
    var wait: Wait? = nil

    /// A removal's wait: its end on the queue's clock (seconds since 1970) and its length.
    struct Wait: Codable, Equatable, Sendable {
        var until: Double
        var seconds: Double
    }

    /// A folder made offline, not on Drive until this job lands.
    var makesFolder: Bool { kind == .change && creates }

    /// The key jobs run in order under: the file's ID. A replacement has its own, so that it
    /// neither waits for the replaced file's uploads nor counts as one of them.
    var fileID: String { kind == .replacement ? "replacing " + request.fileID : request.fileID }

    static func upload(seq: UInt64, request: UploadRequest, contentPath: String, ready: Bool, target: String? = nil) -> UploadJob {
        UploadJob(seq: seq, kind: .upload, request: request, contentPath: contentPath, ready: ready,
                  target: target ?? request.fileID, creates: request.isNew, conflictCopy: nil, deletes: false)
    }

    static func removal(seq: UInt64, request: UploadRequest, target: String, deletes: Bool) -> UploadJob {
        UploadJob(seq: seq, kind: .removal, request: request, contentPath: "", ready: true, target: target, creates: false,
                  conflictCopy: nil, deletes: deletes)
    }

    /// The replacement of the file `request` describes (Drive's copy `target`) by `placement`; not
    /// ready: it runs only when a restart finds it (the rename was cut short).
    static func replacement(seq: UInt64, request: UploadRequest, target: String, by placement: Placement, deletes: Bool) -> UploadJob {
        UploadJob(seq: seq, kind: .replacement, request: request, contentPath: "", ready: false, target: target, creates: false,
                  conflictCopy: nil, deletes: deletes, replacedBy: placement)
    }

    /// A change of the item `request` names (Drive's copy `target`), or with `makesFolder` the
    /// folder it describes made under the ID `target` (see `Kind.change`).
    static func change(seq: UInt64, request: UploadRequest, target: String, places: Bool, leaves: String?,
                       makesFolder: Bool) -> UploadJob {
        UploadJob(seq: seq, kind: .change, request: request, contentPath: "", ready: true, target: target, creates: makesFolder,
                  conflictCopy: nil, deletes: false, change: Change(places: places || makesFolder, leaves: leaves))
    }

    /// An earlier job of the file, written on the same base, went to the conflicted copy `landed`
    /// (named `name`): this one carries the same local edits on, so it updates that copy.
    mutating func rebaseBeside(on landed: Landed, name: String?) {
        rebase(on: landed)
        if let name { request.name = name }
        landsBeside = true
    }

    /// This job, to run after `landed` (an earlier job of the same file that reached Drive).
    mutating func rebase(on landed: Landed) {
        target = landed.id
        guard kind == .upload else { return }
        creates = false
        conflictCopy = nil
        request.isNew = false
        request.baseRevision = landed.headRevisionId
        request.baseMD5 = landed.md5
    }
}

/// The queue's jobs: the fold of the journal's records. Pure (no I/O), so that the state after a
/// restart is exactly the state before it: the live queue writes a record, then applies it here;
/// replay applies the same records in the same order.
struct UploadQueueState: Equatable {
    /// INVARIANT: `byFile[f]` lists, in increasing order, exactly the seqs of `jobs` whose fileID is f;
    /// no list is empty.
    private(set) var jobs: [UInt64: UploadJob] = [:]
    private(set) var byFile: [String: [UInt64]] = [:]
    /// The next seq to hand out: above every seq applied so far.
    private(set) var nextSeq: UInt64 = 1

    /// The last landing of each file (see `UploadJob.LastLanded`).
    private(set) var landed: [String: UploadJob.LastLanded] = [:]
    /// Files made again under a new ID because Drive's copy was gone (a job's `retarget`): the
    /// old ID → the new one, and the seq of the landing that made it. From that landing on, the
    /// file's jobs are the new ID's: the ones queued behind it move there (their request names the
    /// new ID), and a call naming the old ID (the core may not have heard of the landing yet)
    /// means the new one (`currentID`). Without this the file's later edits ran as another file's
    /// jobs, beside the earlier ones and in no order (chaos finding 13).
    private(set) var movedTo: [String: (to: String, seq: UInt64)] = [:]
    /// How many moves a snapshot keeps (the most recent), as for `landed`.
    static let movedKept = 1024
    /// How many landings a snapshot keeps (the most recent).
    static let landedKept = 1024

    /// Content files the queue owned whose jobs ended (landed, superseded, cancelled): removed
    /// after their record; a new queue removes those a crash left behind (`leftoverContent`).
    private(set) var endedContent: [String] = []

    /// Ended jobs' content files that no live job uses.
    var leftoverContent: [String] {
        let live = Set(jobs.values.map(\.contentPath))
        return Array(Set(endedContent.filter { !$0.isEmpty && !live.contains($0) })).sorted()
    }

    /// Content files of jobs that ended as failed: (where the content was, where it went), for
    /// the moves a crash may have left undone.
    private(set) var failedMoves: [(from: String, to: String)] = []

    static func == (a: UploadQueueState, b: UploadQueueState) -> Bool {
        a.jobs == b.jobs && a.byFile == b.byFile && a.nextSeq == b.nextSeq && a.landed == b.landed
            && a.movedTo.mapValues(\.to) == b.movedTo.mapValues(\.to) && a.movedTo.mapValues(\.seq) == b.movedTo.mapValues(\.seq)
    }

    /// The ID the file `fileID` has now: itself, or where it was made again (followed through
    /// repeated moves; a bound guards against a cycle, which no journal makes).
    func currentID(_ fileID: String) -> String {
        var id = fileID
        for _ in 0..<16 {
            guard let next = movedTo[id]?.to, next != id else { return id }
            id = next
        }
        return id
    }

    init() {}

    init(replaying records: [UploadJournal.Record]) {
        for record in records { apply(record) }
    }

    /// The jobs of one file, in order (the first runs first).
    func jobs(of fileID: String) -> [UploadJob] { (byFile[fileID] ?? []).compactMap { jobs[$0] } }

    /// Every job in seq order.
    var ordered: [UploadJob] { jobs.keys.sorted().map { jobs[$0]! } }

    /// The first job of each file, in seq order: the ones that may run now.
    var heads: [UploadJob] { byFile.values.compactMap { $0.first.flatMap { jobs[$0] } }.sorted { $0.seq < $1.seq } }

    /// Records whose replay gives this state (compaction).
    var snapshot: [UploadJournal.Record] {
        let recent = landed.sorted { $0.value.seq > $1.value.seq }.prefix(Self.landedKept).sorted { $0.value.seq < $1.value.seq }
        let moves = movedTo.sorted { $0.value.seq > $1.value.seq }.prefix(Self.movedKept).sorted { $0.value.seq < $1.value.seq }
        return recent.map { .landedEarlier(fileID: $0.key, $0.value) }
            + moves.map { .movedEarlier(from: $0.key, to: $0.value.to, seq: $0.value.seq) } + ordered.map { .job($0) }
    }

    mutating func apply(_ record: UploadJournal.Record) {
        switch record {
        case .commit(let seq, let request, let contentPath, let ready, let replaces, let rebasedOn):
            if let replaces, let old = remove(replaces), old.ready { endedContent.append(old.contentPath) }
            var job = UploadJob.upload(seq: seq, request: request, contentPath: contentPath, ready: ready)
            if let rebasedOn { job.rebase(on: rebasedOn) }
            insert(job)
        case .reclaim(let seq):
            jobs[seq]?.ready = false
        case .takeOver(let seq, let request, let from, let replacing):
            guard let source = remove(from) else { return }
            for old in replacing {
                if let job = remove(old), job.ready { endedContent.append(job.contentPath) }
            }
            insert(.upload(seq: seq, request: request, contentPath: source.contentPath, ready: source.ready))
        case .metadata(let seq, let request):
            guard var job = jobs[seq] else { return }
            var changed = request
            changed.fileID = job.request.fileID
            job.request = changed
            jobs[seq] = job
        case .cancel(let fileID, let removal):
            for job in jobs(of: fileID) where job.kind == .upload || job.kind == .change {
                remove(job.seq)
                if job.ready { endedContent.append(job.contentPath) }
            }
            if let removal { insert(removal) }
        case .retarget(let seq, let target):
            jobs[seq]?.target = target
            jobs[seq]?.creates = true
            jobs[seq]?.conflictCopy = nil
        case .conflict(let seq, let copy):
            jobs[seq]?.conflictCopy = copy
        case .corruptLanding(let seq, let md5):
            guard var job = jobs[seq] else { return }
            job.corruptLandings = (job.corruptLandings ?? []) + [md5.lowercased()]
            jobs[seq] = job
        case .done(let seq, let landed):
            guard let job = remove(seq) else { return }
            endedContent.append(job.contentPath)
            guard let landed else { return }
            if landed.wasConflict {
                // The later jobs written on the same base are the same local edits carried on:
                // they update the conflicted copy rather than make one each.
                for later in byFile[job.fileID] ?? [] where later > seq {
                    guard let next = jobs[later], next.kind == .upload, next.conflictCopy == nil, next.landsBeside != true,
                          next.request.baseRevision == job.request.baseRevision, next.request.baseMD5 == job.request.baseMD5
                    else { continue }
                    jobs[later]?.rebaseBeside(on: landed, name: job.conflictCopy?.name)
                }
                return
            }
            if job.kind == .upload {
                let previous = self.landed[job.fileID]
                var superseded = previous?.superseded ?? []
                for revision in [previous?.landed.headRevisionId, job.request.baseRevision] {
                    if let revision, revision != landed.headRevisionId, !superseded.contains(revision) { superseded.append(revision) }
                }
                self.landed[job.fileID] = UploadJob.LastLanded(
                    created: job.creates || job.request.isNew || (previous?.created ?? false),
                    superseded: Array(superseded.suffix(UploadJob.LastLanded.supersededKept)), landed: landed, seq: seq)
            }
            for later in byFile[job.fileID] ?? [] where later > seq { jobs[later]?.rebase(on: landed) }
            if job.kind == .upload, !landed.wasConflict, job.landsBeside != true, landed.id != job.fileID {
                move(job.fileID, to: landed.id, at: seq)
            }
        case .failed(let seq, let preservedAt, _):
            if let job = remove(seq), let preservedAt, !job.contentPath.isEmpty {
                failedMoves.append((job.contentPath, preservedAt))
            }
        case .job(let job):
            insert(job)
        case .rewrite(let job):
            guard jobs[job.seq] != nil else { return }
            remove(job.seq)
            insert(job)
        case .landedEarlier(let fileID, let last):
            landed[fileID] = last
            nextSeq = max(nextSeq, last.seq + 1)
        case .movedEarlier(let from, let to, let seq):
            movedTo[from] = (to, seq)
            nextSeq = max(nextSeq, seq + 1)
        }
    }

    /// The file `from` was made again as `to` by the landing of job `seq`: its queued jobs
    /// (rebased on that landing already) and its last landing become `to`'s.
    private mutating func move(_ from: String, to: String, at seq: UInt64) {
        movedTo[from] = (to, seq)
        for later in byFile[from] ?? [] {
            guard var job = remove(later) else { continue }
            if job.kind != .replacement { job.request.fileID = to }
            insert(job)
        }
        if let last = landed.removeValue(forKey: from) { landed[to] = last }
    }

    /// Marks every job ready (a restart: no file is open for writing any more).
    mutating func readyAll() {
        for seq in jobs.keys { jobs[seq]!.ready = true }
    }

    private mutating func insert(_ job: UploadJob) {
        jobs[job.seq] = job
        var seqs = byFile[job.fileID] ?? []
        let at = seqs.firstIndex { $0 > job.seq } ?? seqs.endIndex
        seqs.insert(job.seq, at: at)
        byFile[job.fileID] = seqs
        nextSeq = max(nextSeq, job.seq + 1)
    }

    @discardableResult
    private mutating func remove(_ seq: UInt64) -> UploadJob? {
        guard let job = jobs.removeValue(forKey: seq) else { return nil }
        var seqs = byFile[job.fileID] ?? []
        seqs.removeAll { $0 == seq }
        byFile[job.fileID] = seqs.isEmpty ? nil : seqs
        return job
    }
}
