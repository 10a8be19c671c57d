import DriveClient
import DriveSupport
import Foundation
import Glibc

/// The upload queue (`UploadQueueing`): content the core committed goes to Drive in the
/// background, once, through crashes and restarts, over any `DriveBackend`.
///
/// Files in `directory` (the core passes `<cacheDir>/uploads`): `journal` (UploadJournal: the
/// durable truth of what is owed to Drive), `sessions/<fileID>.json` (resumable upload sessions,
/// mode 0600: a session URI is a credential), `failed/` (the content of jobs that failed for
/// good, each with a `.note` saying why).
///
/// Contracts (besides `UploadQueueing`'s):
/// - Every change of a job is a journal record, written (fdatasync) before it takes effect; the
///   state is the fold of the records (`UploadQueueState`), so a new queue over the same
///   directory continues exactly where the old one stopped, whenever it stopped.
/// - Creates carry the file's pre-generated ID (`UploadRequest.fileID`, or a new ID journaled
///   before it is used), so repeating any step after a crash or a lost answer never makes a second
///   file. An ID drivefs reserved names one file only: a create that finds its ID taken found an
///   earlier upload of the same file, and continues as an update of it.
/// - Before new content goes over an existing file, Drive's head is read: our own content there
///   already (same md5) counts as landed; a head that is not the content's base is a conflict, and
///   the content goes beside it as `name (conflicted copy YYYY-MM-DD HHMMSS).ext` (UTC); a file gone
///   or trashed on Drive is created again under a new ID. Each is logged. A head that an earlier
///   try of the job left with the wrong bytes (a checksum mismatch, journaled) is not a conflict:
///   it is written over; after `maximumChecksumMismatches` such tries the job fails for good.
/// - Transient failures are retried with capped exponential backoff for as long as the queue runs
///   (`status.lastError` says why it waits); so are answers no retry mends until the user acts (a
///   full Drive, a dead grant: `holdsForNow`), but the file's waiters hear those at once; permanent ones (permissions, a parent gone, a refused
///   request, unreadable content) end the job: content to `failed/`, `onFinished` with the error.
/// - A job cancelled while it runs is not reported to `onFinished` (the core removed the file).
/// - Waiters (`whenUploaded`) hold no thread; a file someone waits for goes before the others.
///   Crashes in `commit`, `reclaim` or `updateMetadata` (test seams) answer waiters from the
///   transfer threads as they end (or `stop`), never from those calls, which the core makes under
///   a file's `LocalContent.lock`.
/// - `cancel` returning true means the queue removes what Drive holds of the file: nothing for a
///   new file that never started, otherwise a trash (or delete) after the running upload ended.
///
/// Lock: `lock` (an NSCondition: the lock and the condition the transfer threads and waiters wait
/// on) guards `shared`, the journal included: a record is written and applied under it, so records
/// are in the file in the order they are applied. It is a leaf: no other lock is taken, no network
/// call is made and no callback is called while it is held; local I/O under it is the journal's
/// append (fdatasync) and compaction. `Running.progress` is a leaf lock of its own. `intake` (an
/// NSCondition, a leaf: nothing is taken under it; a group's leader lets it go before it takes
/// `lock`) guards `intakeState`, the commits waiting for a group's journal flush
/// (UploadQueue+GroupCommit.swift); a closer waits on it holding its file's `LocalContent.lock`
/// only, which no other closer's flush needs.
public final class UploadQueue: UploadQueueing, @unchecked Sendable {  // @unchecked: `shared` only with `lock` held
    // @unchecked: every mutable field is in `shared`, reached only under `lock`, or in
    // `intakeState`, reached only under `intake`.
    public let directory: String
    let backend: any DriveBackend
    let transfers: Int
    let deletePermanently: Bool
    let time: any TimeSource
    let log: Log
    public let recovered: [(request: UploadRequest, contentPath: String)]
    public let recoveredRemovals: [String]
    public let recoveredWaitingRemovals: [(request: UploadRequest, seconds: Double)]
    public let recoveredPlacings: [UploadRequest]

    /// Backoff between attempts of a job after a transient failure: `initialBackoff` doubling up to
    /// `maximumBackoff` seconds (or the server's Retry-After when longer).
    let initialBackoff: Double
    let maximumBackoff: Double
    /// Seconds a new file's upload waits after its last close before it may start (none when
    /// someone waits for it, or the queue drains): a rename over another file that follows at
    /// once (an editor's save) can still make it new content for that file (`retarget`).
    let newFileSettle: Double
    /// While `drain` waits (unmount), no backoff lasts longer than `drainingBackoff` seconds:
    /// the user is waiting, and the client's own retries already spaced the attempts.
    let draining = Locked(0)
    /// Run when a drain begins: they wake the backoffs it shortens.
    let drainStarts = WakeHandlers()
    static let drainingBackoff: Double = 3
    /// How many times Drive may store other bytes than a job sent (its md5 differs) before the
    /// job fails for good: each time the corrupt revision is written over by the next try.
    static let maximumChecksumMismatches = 3

    let lock = RankedCondition(.uploadQueue)
    var shared: Shared
    /// Commits waiting for the journal flush that covers them (UploadQueue+GroupCommit.swift): a
    /// leaf; closers wait on it.
    let intake = RankedCondition(.leaf)
    var intakeState = Intake()

    struct Shared {
        var state: UploadQueueState
        var journal: UploadJournal
        /// The job running on a transfer thread, by file (at most one per file).
        var running: [String: Running] = [:]
        /// Jobs replayed from the journal: they may have started before the restart, so they
        /// are never superseded or reclaimed (a later job of the file waits for them).
        var pinned: Set<UInt64> = []
        /// The last job of each file that ended, for `whenUploaded`: a failure for good (what a
        /// later fsync of the file still hears; at most `settledKept`, the most recent), or a
        /// landing while someone waited for the file (dropped when the next waiter is answered).
        var settled: [String: (seq: UInt64, error: FilesystemError?)] = [:]
        /// Content files of jobs that landed, by file, from their `done` record until the core
        /// heard of the landing (`onFinished` returned): `contentPath(of:)` still gives them, so a
        /// reopen in that window reads what landed rather than the version the node shows yet.
        var landing: [String: (contentPath: String, progress: UploadProgress, base: (revision: String?, md5: String?))] = [:]
        /// Items whose change job (a folder's create, say) landed, from its `done` record until
        /// the core heard of it (`onFinished` returned): an rmdir in that window finds no job to
        /// cancel, and the table does not show the landing yet (`changeLanding(of:)`).
        var landingChanges: [String: Int] = [:]
        /// Who waits for a file's uploads (`whenUploaded`: an fsync, a `--sync-close`), by waiter:
        /// their files' jobs go first, at interactive priority. No thread waits for them.
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 1
        /// Files whose upload waits for a backoff after an answer no retry mends until the user
        /// acts (`holdsForNow`: a full Drive, a dead grant), with its errno: a waiter hears it at
        /// once. Cleared when the job tries again or ends.
        var held: [String: FilesystemError] = [:]
        var failedCount = 0
        var lastError: String?
        var onFinished: (@Sendable (UploadOutcome) -> Void)?
        var threads = 0
        var started = false
        var stopping = false
        /// Test seam: the queue was abandoned at a commit point (`crashHook`): it does nothing more.
        var crashed = false
        var crashHook: (@Sendable (CommitPoint) -> Bool)?
        /// Test seam: every journal record fails with this while set (a full or failing cache disk).
        var journalFault: FilesystemError?
        var hashingHook: (@Sendable (Int64) -> Void)?
        /// md5 of content files, by job (their content does not change while the queue owns them).
        var digests: [UInt64: (size: Int64, mtime: Int64, md5: String)] = [:]
        /// Uploads of new files still being written (`EarlyUpload`), by file; a job adopts its
        /// file's when their content files are the same.
        var earlies: [String: EarlyUpload] = [:]
        /// Jobs that may not start before this uptime (`newFileSettle`), by seq.
        var settling: [UInt64: Double] = [:]
        /// Of those, the ones a flush committed, which the file's last close lets go (`endSettle`);
        /// a new file's and an editor's save's settle for a rename, and keep waiting.
        var settlingUntilClosed: Set<UInt64> = []
    }

    static var uptime: Double { ProcessInfo.processInfo.systemUptime }

    /// One `whenUploaded`: answered once the file's jobs up to `awaited` ended (or see `answer`).
    struct Waiter {
        let fileID: String
        let awaited: UInt64
        let done: @Sendable (Result<Void, FilesystemError>) -> Void
    }

    /// At most this many early uploads at once (each is a stream beside the transfer threads').
    static let maximumEarlyUploads = 2

    /// A job on a transfer thread.
    final class Running: Sendable {
        // @unchecked: `progress` is a Locked box; the rest is immutable.
        let seq: UInt64
        let flag = CancellationFlag()
        let size: Int64
        /// The job's file as the log and the unmount's progress name it.
        let path: String
        /// Counted as running after its record ended, until its transfer thread told the core (a
        /// change's, removal's or decided rename's landing; an upload's is `Shared.landing`).
        let countsUntilTold: Bool
        let sessionFiles: Locked<[String]>
        /// What the job does now, and the bytes it hashed (`status`).
        let progress = Locked<(phase: UploadPhase?, hashed: Int64)>((nil, 0))
        init(seq: UInt64, size: Int64, path: String = "", countsUntilTold: Bool = false) {
            self.seq = seq
            self.size = size
            self.path = path
            self.countsUntilTold = countsUntilTold
            sessionFiles = Locked([])
        }
    }

    /// The steps after which a test may abandon the queue, as a crash would (`crashHook`).
    enum CommitPoint: Equatable, Sendable, CustomStringConvertible {
        /// After the record of a public call is durable.
        case committed(String), reclaimed(String), metadataChanged(String), cancelled(String)
        /// After a rename over a file was journaled as begun, and as ended (the replaced file's ID).
        case replacing(String), replaced(String)
        /// A job is about to send its first request.
        case starting(String)
        /// After the record of a decision is durable (a file made again; a conflicted copy).
        case retargeted(String), conflictDecided(String)
        /// The content reached Drive (the answer came back); no record yet.
        case landed(String)
        /// After the record that ends a job is durable.
        case done(String), failed(String), removed(String)

        public var description: String {
            switch self {
            case .committed(let f): return "committed \(f)"
            case .reclaimed(let f): return "reclaimed \(f)"
            case .metadataChanged(let f): return "metadata \(f)"
            case .cancelled(let f): return "cancelled \(f)"
            case .replacing(let f): return "replacing \(f)"
            case .replaced(let f): return "replaced \(f)"
            case .starting(let f): return "starting \(f)"
            case .retargeted(let f): return "retargeted \(f)"
            case .conflictDecided(let f): return "conflict \(f)"
            case .landed(let f): return "landed \(f)"
            case .done(let f): return "done \(f)"
            case .failed(let f): return "failed \(f)"
            case .removed(let f): return "removed \(f)"
            }
        }
    }

    /// Thrown out of a job when it must stop at once (the queue stops, crashed, or the job was cancelled).
    enum Interruption: Error { case stopped, crashed, cancelled }

    /// Replays the journal in `directory` (created when missing) into `recovered`. Nothing runs
    /// before `start`.
    public init(directory: String, backend: any DriveBackend, transfers: Int = 4, deletePermanently: Bool = false,
                time: any TimeSource = SystemTimeSource(), log: Log = .shared, compactionBound: Int64 = 4 << 20,
                initialBackoff: Double = 2, maximumBackoff: Double = 300, newFileSettle: Double = 0) throws(FilesystemError) {
        self.newFileSettle = max(0, newFileSettle)
        self.directory = directory
        self.backend = backend
        self.transfers = max(1, transfers)
        self.deletePermanently = deletePermanently
        self.time = time
        self.log = log
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
        try LocalFiles.makeDirectories(directory + "/sessions")
        try LocalFiles.makeDirectories(directory + "/failed")
        let journal = try UploadJournal(directory: directory, compactionBound: compactionBound, log: log)
        let (records, report) = try journal.replay()
        var state = UploadQueueState(replaying: records)
        // Files open for writing when the last run ended are nobody's now: queued, and the queue's
        // (compacted below, so that a later replay agrees).
        let wereOpen = state.jobs.values.contains { !$0.ready }
        state.readyAll()
        // Renames over a file that a crash cut short: finished now where the journal alone says
        // whether the renamed file took the name (it has a job); the others run as jobs (Drive says).
        var finishing: [UploadJournal.Record] = []
        let finished = Self.finishReplacements(&state, deletePermanently: deletePermanently, records: &finishing)
        let live = Set(state.jobs.values.map(\.contentPath))
        for move in state.failedMoves where !live.contains(move.from) && LocalFiles.exists(move.from) && !LocalFiles.exists(move.to) {
            try? LocalFiles.move(move.from, to: move.to)
        }
        for path in state.leftoverContent where LocalFiles.exists(path) {
            // Content of jobs that ended just before a crash, which the queue had not removed yet.
            if unlink(path) == 0 { log.debug("uploads", "removed \(path), left by a job that ended before a restart") }
        }
        if report.skippedBytes > 0 || wereOpen || finished > 0 || journal.wantsCompaction {
            do throws(FilesystemError) {
                try journal.compact(to: state.snapshot)
            } catch {
                // A full cache disk (the chaos run's: staging of queued uploads filled it) has no
                // room for a second copy of the journal, and refusing to start would keep those
                // uploads from ever draining. The journal stays as it is, which the next start reads
                // the same way (files open at the end made ready, damage skipped); only the
                // replacements finished now are new, and their few records are appended.
                for record in finishing { try journal.append(record) }
                log.warning("uploads", "cannot compact the journal \(journal.path) at start (\(error)); going on with it as it is")
            }
        }
        if finished > 0 { log.info("uploads", "\(finished) renames over a file, cut short by the last run's end, finished from the journal") }
        let uploads = state.ordered.filter { $0.kind == .upload }
        // Folders made offline are shown, as new files are, until they land (contentPath "").
        recovered = state.ordered.filter { $0.kind == .upload || $0.makesFolder }.map { ($0.request, $0.contentPath) }
        recoveredRemovals = state.ordered.filter { $0.kind == .removal }.map(\.target)
        recoveredPlacings = state.ordered.filter { $0.kind == .change && !$0.makesFolder && $0.change?.places == true }.map(\.request)
        // Removals whose journaled wait a restart cut short keep waiting the rest: not sent before
        // their wait ended (or a drain, or `drivefs trash`, hurried them), so not started; not
        // pinned, so a file made again under the name in time still takes their place.
        let wallNow = time.now()
        let waiting = state.ordered.compactMap { job -> (UploadJob, Double)? in
            guard job.kind == .removal, let wait = job.wait, wait.until > wallNow else { return nil }
            return (job, min(wait.seconds, wait.until - wallNow))
        }
        recoveredWaitingRemovals = waiting.map { ($0.0.request, $0.1) }
        shared = Shared(state: state, journal: journal, pinned: Set(state.jobs.keys))
        let uptime = Self.uptime
        for (job, seconds) in waiting {
            shared.pinned.remove(job.seq)
            shared.settling[job.seq] = uptime + seconds
        }
        if !state.jobs.isEmpty {
            log.info("uploads", "\(uploads.count) uploads and \(state.jobs.count - uploads.count) removals recovered from \(journal.path)")
        }
    }

    /// Whether the rename `placement` took effect, as the queue's own jobs of the renamed file say
    /// (their request is what Drive will be told); nil when the queue holds none (Drive says).
    static func placed(_ placement: UploadJob.Placement, _ state: UploadQueueState) -> Bool? {
        let jobs = state.jobs(of: state.currentID(placement.fileID))
        guard let last = jobs.last(where: { $0.kind == .upload || $0.kind == .change && $0.change?.places == true }) else { return nil }
        return last.request.name == placement.name && last.request.parentID == placement.parentID
    }

    /// The records that remove the replaced file of `replacement`: its jobs dropped (and Drive's
    /// copy trashed after a running one), or Drive's copy trashed when the queue holds none. A
    /// recovered job may have sent its request before the crash: Drive may hold the file.
    static func removalRecord(of replacement: UploadJob, _ state: UploadQueueState, deletes: Bool) -> UploadJournal.Record {
        let fileID = state.currentID(replacement.request.fileID)
        let jobs = state.jobs(of: fileID).filter { $0.kind == .upload }
        let target = jobs.first?.target ?? (fileID != replacement.request.fileID ? fileID : replacement.target)
        return .cancel(fileID: fileID,
                       removal: .removal(seq: state.nextSeq, request: jobs.last?.request ?? replacement.request, target: target, deletes: deletes))
    }

    /// Finishes, in `state` (at opening, before anything runs), the replacements whose rename the
    /// journal alone decides; the others stay, ready, to be decided by Drive. How many it finished.
    /// `records`: those applied, in order (what a journal that could not be compacted appends).
    static func finishReplacements(_ state: inout UploadQueueState, deletePermanently: Bool,
                                   records: inout [UploadJournal.Record]) -> Int {
        var finished = 0
        for job in state.ordered where job.kind == .replacement {
            guard let placement = job.replacedBy, let isPlaced = placed(placement, state) else { continue }
            var applied: [UploadJournal.Record] = []
            if isPlaced { applied.append(removalRecord(of: job, state, deletes: deletePermanently)) }
            applied.append(.done(seq: job.seq, landed: nil))
            for record in applied { state.apply(record) }
            records += applied
            finished += 1
        }
        return finished
    }

    /// Journals a rename over a file as begun, before its first step: the file `replaced` (a
    /// request that names it) is to go once the file `fileID` holds `name` in `parentID`. Until
    /// `endReplacement`, a crash leaves it to the next start to finish. Throws (nothing changed)
    /// when the journal cannot take it: the rename must then fail.
    public func beginReplacement(of asked: UploadRequest, by source: String, name: String, parentID: String) throws(FilesystemError) -> UInt64 {
        return try withLock { (s: inout Shared) throws(FilesystemError) -> UInt64 in
            guard !s.crashed else { throw FilesystemError(errno: EIO) }
            let replaced = Self.current(asked, s.state)
            let placement = UploadJob.Placement(fileID: s.state.currentID(source), name: name, parentID: parentID)
            let job = UploadJob.replacement(seq: s.state.nextSeq, request: replaced, target: replaced.fileID, by: placement,
                                            deletes: deletePermanently)
            do throws(FilesystemError) { try Self.record(.job(job), &s) } catch {
                log.error("uploads", "\(replaced.displayPath): cannot journal a rename over it (\(error)); it is refused")
                throw error
            }
            if crashes(at: .replacing(replaced.fileID), &s) { throw FilesystemError(errno: EIO) }
            return job.seq
        }
    }

    /// The rename begun as `seq` ended (done or undone): its record is dropped. A failure only
    /// logs: the next start decides it again, and whatever it decides was done already.
    public func endReplacement(_ seq: UInt64) {
        withLock { s in
            guard let job = s.state.jobs[seq], job.kind == .replacement, !s.crashed else { return }
            do throws(FilesystemError) { try Self.record(.done(seq: seq, landed: nil), &s) } catch {
                log.warning("uploads", "\(job.request.displayPath): cannot journal the end of a rename over it (\(error)); the next start checks it")
                return
            }
            _ = crashes(at: .replaced(job.request.fileID), &s)
            compactIfWanted(&s)
        }
    }

    deinit { shared.journal.close() }

    /// `request` naming the file by the ID it has now (`UploadQueueState.currentID`): a file made
    /// again under a new ID is on Drive, so no longer new.
    static func current(_ request: UploadRequest, _ state: UploadQueueState) -> UploadRequest {
        let id = state.currentID(request.fileID)
        guard id != request.fileID else { return request }
        var moved = request
        moved.fileID = id
        moved.isNew = false
        return moved
    }

    // MARK: Under the lock

    func withLock<R, E: Error>(_ body: (inout Shared) throws(E) -> R) throws(E) -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&shared)
    }

    /// Writes `record` and applies it (under the lock).
    static func record(_ record: UploadJournal.Record, _ s: inout Shared) throws(FilesystemError) {
        guard !s.crashed else { throw FilesystemError(errno: EIO) }
        if let fault = s.journalFault { throw fault }
        try s.journal.append(record)
        s.state.apply(record)
    }

    /// Compacts when the journal grew enough (under the lock); a failure only logs (the old journal stays good).
    func compactIfWanted(_ s: inout Shared) {
        guard s.journal.wantsCompaction, !s.crashed else { return }
        do { try s.journal.compact(to: s.state.snapshot) } catch {
            log.warning("uploads", "journal compaction failed (\(error)); the journal stays as it is")
        }
    }

    /// The test seam at each commit point (under the lock): true when the queue was abandoned there.
    func crashes(at point: CommitPoint, _ s: inout Shared) -> Bool {
        if s.crashed { return true }
        guard let hook = s.crashHook, hook(point) else { return false }
        s.crashed = true
        s.journal.close()
        for running in s.running.values { running.flag.cancel() }
        for early in s.earlies.values { early.abandon("the queue crashed") }
        lock.broadcast()
        return true
    }

    /// Whether a content file is still used by a job (or a transfer) of the queue.
    static func isReferenced(_ path: String, _ s: Shared) -> Bool {
        s.state.jobs.values.contains { $0.contentPath == path } || s.landing.values.contains { $0.contentPath == path }
    }

    func removeContent(_ path: String) {
        guard !path.isEmpty, !withLock({ Self.isReferenced(path, $0) }) else { return }
        if unlink(path) == 0 { log.debug("uploads", "removed \(path)") }
    }

    // MARK: UploadQueueing

    public func currentID(of fileID: String) -> String { withLock { $0.state.currentID(fileID) } }

    public func retarget(_ newFile: String, to asked: UploadRequest) throws(FilesystemError) -> Bool {
        try retarget(newFile, to: asked, overRemoval: false)
    }

    public func takeRemovedPlace(_ newFile: String, of asked: UploadRequest) throws(FilesystemError) -> Bool {
        try retarget(newFile, to: asked, overRemoval: true)
    }

    /// `retarget`; with `overRemoval` (`takeRemovedPlace`), the other file's one job is its
    /// removal, not started (the record that drops it makes the new file's job its update).
    private func retarget(_ newFile: String, to asked: UploadRequest, overRemoval: Bool) throws(FilesystemError) -> Bool {
        var superseded: [String] = []
        defer { superseded.forEach(removeContent) }
        return try withLock { (s: inout Shared) throws(FilesystemError) -> Bool in
            let fileID = s.state.currentID(newFile)
            let request = Self.current(asked, s.state)
            let target = request.fileID
            guard !s.crashed, !request.isNew, target != fileID, s.running[fileID] == nil, s.landing[fileID] == nil,
                  s.earlies[fileID] == nil, s.earlies[target] == nil
            else { return false }
            // An upload of the other file on its way (an edit, or the last save) stays: the save
            // goes after it, rebased on its landing (`done`), as any later commit of the file is.
            let running = s.running[target].flatMap { r in s.state.jobs[r.seq] }
            if let running, running.kind != .upload && running.kind != .change || overRemoval { return false }
            // The other file's queued uploads, superseded by the save: none started, none from
            // before a restart (it may have started), none a removal or a conflict decided. Over a
            // removal: that removal alone, not started (a restart sends it at once: it is pinned).
            let others = s.state.jobs(of: target).filter { $0.seq != running?.seq }
            if overRemoval {
                guard others.count == 1, let removal = others.first, removal.kind == .removal, !s.pinned.contains(removal.seq)
                else { return false }
            } else {
                guard others.allSatisfy({ $0.kind == .upload && !s.pinned.contains($0.seq) && $0.conflictCopy == nil && !$0.creates })
                else { return false }
            }
            let jobs = s.state.jobs(of: fileID)
            guard jobs.count <= 1 else { return false }
            guard let job = jobs.first else { return others.isEmpty }  // nothing committed yet: the next commit names the other file
            guard job.kind == .upload, job.creates, job.request.isNew, !s.pinned.contains(job.seq), job.request.missing == nil
            else { return false }
            var taking = request
            if let last = s.state.landed[target], last.isStale(taking) {
                // Written on the version an upload of ours replaced since the caller read it (it
                // landed in between): the new content is whole, so it goes over that landing.
                taking.baseRevision = last.landed.headRevisionId
                taking.baseMD5 = last.landed.md5
            }
            let seq = s.state.nextSeq
            // One record: the new file's job is gone and the other file's stands in its place,
            // with the same content file (a crash sees one or the other, never both or neither).
            try Self.record(.takeOver(seq: seq, request: taking, from: job.seq, replacing: others.map(\.seq)), &s)
            // Saved just now: another save may follow as quickly (it supersedes this one).
            s.settling[job.seq] = nil
            for other in others { s.settling[other.seq] = nil }
            if newFileSettle > 0 { s.settling[seq] = Self.uptime + newFileSettle }
            superseded = others.filter { $0.ready && !$0.contentPath.isEmpty && $0.contentPath != job.contentPath }.map(\.contentPath)
            log.debug("uploads", "\(job.request.displayPath): job \(job.seq) becomes job \(seq), new content for \(request.displayPath) "
                      + "(\(target)), content \(job.contentPath)" + (others.isEmpty ? "" : ", superseding jobs \(others.map(\.seq))"))
            if crashes(at: .committed(target), &s) { throw FilesystemError(errno: EIO) }
            compactIfWanted(&s)
            lock.broadcast()
            return true
        }
    }

    /// Whether a queued job of `fileID` waits its settle time (tests, status).
    func isSettling(_ asked: String) -> Bool {
        withLock { s in
            let now = Self.uptime
            return s.state.jobs(of: s.state.currentID(asked)).contains { job in s.settling[job.seq].map { $0 > now } ?? false }
        }
    }

    /// Seconds left of the longest wait of a queued job of `fileID` (tests), nil when none waits.
    func settlingLeft(_ asked: String) -> Double? {
        withLock { s in
            let now = Self.uptime
            return s.state.jobs(of: s.state.currentID(asked)).compactMap { s.settling[$0.seq].map { $0 - now } }.filter { $0 > 0 }.max()
        }
    }

    public func endSettle(of asked: String) {
        withLock { s in
            let fileID = s.state.currentID(asked)
            var ended = false
            for job in s.state.jobs(of: fileID) where s.settlingUntilClosed.remove(job.seq) != nil {
                s.settling[job.seq] = nil
                ended = true
            }
            if ended { lock.broadcast() }
        }
    }

    public func awaitsRename(of asked: String) -> Bool {
        guard newFileSettle > 0 else { return false }
        return withLock { s in
            let fileID = s.state.currentID(asked)
            guard s.running[fileID] == nil, s.landing[fileID] == nil, s.earlies[fileID] == nil else { return false }
            let jobs = s.state.jobs(of: fileID)
            return !jobs.isEmpty && jobs.allSatisfy { $0.kind == .upload && $0.creates && $0.request.isNew && !s.pinned.contains($0.seq) }
        }
    }

    public func reclaim(_ asked: String) -> (request: UploadRequest, contentPath: String)? {
        withLock { s in
            let fileID = s.state.currentID(asked)
            guard let last = s.state.jobs(of: fileID).last, last.kind == .upload, last.ready,
                  s.running[fileID]?.seq != last.seq, !s.pinned.contains(last.seq) else { return nil }
            do { try Self.record(.reclaim(seq: last.seq), &s) } catch {
                log.warning("uploads", "\(last.request.displayPath): cannot take the upload back (\(error)); it stays queued")
                return nil
            }
            if crashes(at: .reclaimed(fileID), &s) { return nil }
            return (last.request, last.contentPath)
        }
    }

    public func isWhole(_ fileID: String) -> Bool {
        withLock { s in s.state.jobs(of: s.state.currentID(fileID)).last { $0.kind == .upload && $0.ready }?.request.missing?.isEmpty ?? true }
    }

    public func queuedBase(of asked: String) -> (revision: String?, md5: String?) {
        withLock { s in
            let fileID = s.state.currentID(asked)
            if let job = s.state.jobs(of: fileID).last(where: { $0.kind == .upload && $0.ready }) {
                return (job.request.baseRevision, job.request.baseMD5)
            }
            return s.landing[fileID].map { ($0.base.revision, $0.base.md5) } ?? (nil, nil)
        }
    }

    public func changeLanding(of asked: String) -> Bool {
        withLock { s in s.landingChanges[s.state.currentID(asked)] != nil }
    }

    public func contentPath(of asked: String) -> String? {
        withLock { s in
            let fileID = s.state.currentID(asked)
            return s.state.jobs(of: fileID).last { $0.kind == .upload && $0.ready }?.contentPath ?? s.landing[fileID]?.contentPath }
    }

    public func updateMetadata(of asked: String, _ change: @Sendable (inout UploadRequest) -> Void) throws(FilesystemError) -> Bool {
        try withLock { (s: inout Shared) throws(FilesystemError) -> Bool in
            let fileID = s.state.currentID(asked)
            let jobs = s.state.jobs(of: fileID).filter { $0.kind == .upload }
            guard !jobs.isEmpty, !s.crashed else { return false }
            for job in jobs {
                var request = job.request
                change(&request)
                request.fileID = job.request.fileID
                guard request != job.request else { continue }
                let record = UploadJournal.Record.metadata(seq: job.seq, request: request)
                do throws(FilesystemError) { try Self.record(record, &s) } catch {
                    // Not applied: a change the journal does not hold would be forgotten by a crash
                    // (a rename undone, a file uploaded under its old name). The caller fails.
                    log.error("uploads", "\(job.request.displayPath): cannot journal a metadata change (\(error)); it is refused")
                    throw error
                }
            }
            _ = crashes(at: .metadataChanged(fileID), &s)
            compactIfWanted(&s)
            return true
        }
    }

    public func queueChange(_ change: QueuedChange) throws(FilesystemError) {
        try withLock { (s: inout Shared) throws(FilesystemError) in
            guard !s.crashed else { throw FilesystemError(errno: EIO) }
            let request = Self.current(change.request, s.state)
            let fileID = request.fileID
            let jobs = s.state.jobs(of: fileID)
            let record: UploadJournal.Record
            var settles: (seq: UInt64, seconds: Double)?
            if !change.makesFolder, let last = jobs.last, last.kind == .change, s.running[fileID]?.seq != last.seq,
               !s.pinned.contains(last.seq) {
                // Merged into the change (or the folder's create) still queued: one job, one request.
                var merged = last
                if change.places {
                    merged.request.name = request.name
                    merged.request.parentID = request.parentID
                    if merged.change?.places != true { merged.change = UploadJob.Change(places: true, leaves: change.leaves) }
                }
                if let time = request.modifiedTime { merged.request.modifiedTime = time }
                merged.request.appProperties.merge(request.appProperties) { $1 }
                merged.request.displayPath = request.displayPath
                record = .rewrite(merged)
            } else {
                let job = UploadJob.change(seq: s.state.nextSeq, request: request, target: jobs.last?.target ?? fileID,
                                           places: change.places, leaves: change.leaves, makesFolder: change.makesFolder)
                record = .job(job)
                if change.settles > 0 { settles = (job.seq, change.settles) }
                // Drive may hold what it makes already: never dropped or merged as if unsent (a
                // restart pins every recovered job the same way).
                if change.mayHaveLanded { s.pinned.insert(job.seq) }
            }
            do throws(FilesystemError) { try Self.record(record, &s) } catch {
                // Not applied: the change fails, nothing changed (a crash would forget it).
                log.error("uploads", "\(request.displayPath): cannot journal a change made offline (\(error)); it is refused")
                throw error
            }
            // Set with the record, before a transfer thread can take the job (it keeps waiting
            // when a change merged into it: the merged change rides along).
            if let settles { s.settling[settles.seq] = Self.uptime + settles.seconds }
            log.debug("uploads", "\(request.displayPath): change queued (\(record))")
            if crashes(at: .metadataChanged(fileID), &s) { throw FilesystemError(errno: EIO) }
            compactIfWanted(&s)
        }
        lock.broadcast()
    }

    public func queueRemoval(_ asked: UploadRequest) throws(FilesystemError) {
        try queueRemoval(asked, settling: 0)
    }

    public func queueRemoval(_ asked: UploadRequest, settling seconds: Double) throws(FilesystemError) {
        try withLock { (s: inout Shared) throws(FilesystemError) in
            guard !s.crashed else { throw FilesystemError(errno: EIO) }
            let request = Self.current(asked, s.state)
            var job = UploadJob.removal(seq: s.state.nextSeq, request: request, target: request.fileID, deletes: deletePermanently)
            if seconds > 0 { job.wait = UploadJob.Wait(until: time.now() + seconds, seconds: seconds) }
            do throws(FilesystemError) { try Self.record(.job(job), &s) } catch {
                log.error("uploads", "\(request.displayPath): cannot journal a removal (\(error)); it is refused")
                throw error
            }
            if seconds > 0 { s.settling[job.seq] = Self.uptime + seconds }
            if crashes(at: .cancelled(request.fileID), &s) { throw FilesystemError(errno: EIO) }
            compactIfWanted(&s)
        }
        lock.broadcast()
    }

    public func holdsChanges(of asked: String) -> Bool {
        withLock { s in s.state.jobs(of: s.state.currentID(asked)).contains { $0.kind == .change || $0.kind == .removal } }
    }

    public func cancel(_ asked: String) throws(FilesystemError) -> Bool {
        try cancel(asked, removalSettles: 0)
    }

    public func cancel(_ asked: String, removalSettles seconds: Double) throws(FilesystemError) -> Bool {
        var dropped: [String] = []
        defer {
            dropped.forEach(removeContent)
            // Whoever waits for a file removed before its upload ran has nothing left to wait for.
            // (The core calls this holding at most the file's copy lock; an answer takes no lock of the core.)
            resolveWaiters()
        }
        return try withLock { (s: inout Shared) throws(FilesystemError) -> Bool in
            let fileID = s.state.currentID(asked)
            let jobs = s.state.jobs(of: fileID).filter { $0.kind == .upload || $0.kind == .change }
            guard let first = jobs.first, !s.crashed else {
                s.earlies.removeValue(forKey: fileID)?.abandon("the file was removed")
                return false
            }
            let running = s.running[fileID].flatMap { r in jobs.first { $0.seq == r.seq } }
            // Drive may hold the file unless every job is a create that has not started.
            let mayExist = running != nil || jobs.contains { !$0.creates || s.pinned.contains($0.seq) }
            var removal: UploadJob?
            if mayExist {
                let target = (running ?? first).target
                removal = .removal(seq: s.state.nextSeq, request: jobs.last!.request, target: target, deletes: deletePermanently)
                if seconds > 0 { removal?.wait = UploadJob.Wait(until: time.now() + seconds, seconds: seconds) }
            }
            let record = UploadJournal.Record.cancel(fileID: fileID, removal: removal)
            do throws(FilesystemError) { try Self.record(record, &s) } catch {
                // Not applied: a removal the journal does not hold would be undone by a crash (the
                // file uploaded again, or its job retried forever once its content is gone). The
                // removal fails; the file and its upload stay as they were.
                log.error("uploads", "\(first.request.displayPath): cannot journal a removal (\(error)); it is refused")
                throw error
            }
            s.earlies.removeValue(forKey: fileID)?.abandon("the file was removed")
            if let removal, seconds > 0 { s.settling[removal.seq] = Self.uptime + seconds }
            if running != nil { s.running[fileID]?.flag.cancel() }
            dropped = jobs.filter { $0.ready && $0.seq != running?.seq }.map(\.contentPath)
            log.debug("uploads", "\(first.request.displayPath): cancelled \(jobs.map(\.seq))" + (removal.map { ", removal job \($0.seq) of \($0.target)" } ?? ""))
            _ = crashes(at: .cancelled(fileID), &s)
            compactIfWanted(&s)
            lock.broadcast()
            return true
        }
    }

    public func whenUploaded(_ fileID: String, cancellation: CancellationFlag?,
                             _ done: @escaping @Sendable (Result<Void, FilesystemError>) -> Void) {
        addWaiter(fileID, cancellation: cancellation, done)
    }

    /// Registers a waiter (or answers it at once); its number while it waits.
    @discardableResult
    func addWaiter(_ asked: String, cancellation: CancellationFlag?,
                   _ done: @escaping @Sendable (Result<Void, FilesystemError>) -> Void) -> UInt64? {
        var now: Result<Void, FilesystemError>?
        let number: UInt64? = withLock { s in
            let fileID = s.state.currentID(asked)
            if s.crashed {
                now = .failure(.ioError)
                return nil
            }
            guard let awaited = s.state.jobs(of: fileID).last(where: { $0.kind == .upload && $0.ready })?.seq else {
                // Nothing in flight: the file's last upload, if it failed for good, still says so.
                now = s.settled[fileID]?.error.map { .failure($0) } ?? .success(())
                return nil
            }
            if let held = s.held[fileID] {
                now = .failure(held)
                return nil
            }
            let number = s.nextWaiter
            s.nextWaiter += 1
            s.waiters[number] = Waiter(fileID: fileID, awaited: awaited, done: done)
            return number
        }
        if let now {
            done(now)
            return nil
        }
        // A transfer thread waiting for work may take this file's job now.
        lock.broadcast()
        if let cancellation, let number {
            cancellation.whenCancelled { [weak self] in self?.answerWaiter(number, .failure(FilesystemError(errno: EINTR))) }
        }
        return number
    }

    /// Answers one waiter with `result`, if it still waits.
    func answerWaiter(_ number: UInt64, _ result: Result<Void, FilesystemError>) {
        guard let waiter = withLock({ $0.waiters.removeValue(forKey: number) }) else { return }
        waiter.done(result)
    }

    /// What a waiter is answered now, if it is (under the lock): EIO after a crash; the end of
    /// the file's jobs it waits for (an error when the last of them failed for good); success when
    /// the file has no upload left (cancelled: removed); an answer Drive gave that holds the upload.
    static func answer(for waiter: Waiter, _ s: Shared) -> Result<Void, FilesystemError>? {
        if s.crashed { return .failure(.ioError) }
        // The file may have been made again under a new ID since the waiter came: its jobs are there.
        let fileID = s.state.currentID(waiter.fileID)
        if let settled = s.settled[fileID], settled.seq >= waiter.awaited {
            return settled.error.map { .failure($0) } ?? .success(())
        }
        if !s.state.jobs(of: fileID).contains(where: { $0.kind == .upload }) { return .success(()) }
        if let held = s.held[fileID] { return .failure(held) }
        return nil
    }

    /// Answers every waiter whose answer is known now (never under the lock: the callbacks reply).
    /// How many failures for good `settled` keeps (the most recent).
    static let settledKept = 1024

    /// Keeps `settled` within twice `settledKept` entries (under the lock): the oldest go.
    static func boundSettled(_ s: inout Shared) {
        guard s.settled.count > settledKept * 2 else { return }
        let kept = s.settled.sorted { $0.value.seq > $1.value.seq }.prefix(settledKept)
        s.settled = Dictionary(uniqueKeysWithValues: kept.map { ($0.key, $0.value) })
    }

    func resolveWaiters() {
        let answered: [(Waiter, Result<Void, FilesystemError>)] = withLock { s in
            guard !s.waiters.isEmpty else { return [] }
            var answered: [(UInt64, Waiter, Result<Void, FilesystemError>)] = []
            for (number, waiter) in s.waiters {
                if let result = Self.answer(for: waiter, s) { answered.append((number, waiter, result)) }
            }
            for (number, _, _) in answered { s.waiters[number] = nil }
            // Landings kept for the waiters just answered: nobody else needs them.
            for (_, waiter, _) in answered {
                let key = s.state.currentID(waiter.fileID)
                if let kept = s.settled[key], kept.error == nil,
                   !s.waiters.values.contains(where: { s.state.currentID($0.fileID) == key }) {
                    s.settled[key] = nil
                }
            }
            return answered.sorted { $0.0 < $1.0 }.map { ($0.1, $0.2) }
        }
        for (waiter, result) in answered { waiter.done(result) }
    }

    /// Blocks the calling thread until `whenUploaded` answers (tests, tools; the core never waits
    /// this way). Stops at `deadline` (the queue's clock) with `EIO`, on `cancellation` with `EINTR`.
    public func waitUntilUploaded(_ fileID: String, deadline: Double, cancellation: CancellationFlag?) throws(FilesystemError) {
        let answer = Locked<Result<Void, FilesystemError>?>(nil)
        let number = addWaiter(fileID, cancellation: cancellation) { [lock] result in
            answer.withLock { $0 = result }
            lock.broadcast()
        }
        while true {
            if let result = answer.withLock({ $0 }) { return try result.get() }
            if time.now() >= deadline {
                if let number, withLock({ $0.waiters.removeValue(forKey: number) }) != nil { throw .ioError }
                continue
            }
            lock.lock()
            if answer.withLock({ $0 }) == nil { _ = lock.wait(until: Date(timeIntervalSinceNow: 0.05)) }
            lock.unlock()
        }
    }

    public func drain(timeout: Double, progress: @Sendable (UploadQueueStatus) -> Void) -> Bool {
        // Someone waits for the queue now (an unmount): backoffs are cut short.
        draining.withLock { $0 += 1 }
        defer { draining.withLock { $0 -= 1 } }
        drainStarts.notify()
        let start = time.now()
        var lastReport = -Double.infinity
        while true {
            let current = status
            if current.isIdle { return true }
            let now = time.now()
            if now - start >= timeout { return false }
            if now - lastReport >= 1 {
                lastReport = now
                progress(current)
            }
            lock.lock()
            _ = lock.wait(until: Date(timeIntervalSinceNow: 0.05))
            lock.unlock()
        }
    }

    public func sendRemovalsNow(timeout: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        let queued = withLock { s -> Set<UInt64> in
            let removals = Set(s.state.jobs.values.filter { $0.kind == .removal }.map(\.seq))
            for seq in removals { s.settling[seq] = nil }
            return removals
        }
        guard !queued.isEmpty else { return true }
        lock.broadcast()
        while true {
            if withLock({ s in !queued.contains { s.state.jobs[$0] != nil } }) { return true }
            if Date() >= deadline { return false }
            lock.lock()
            _ = lock.wait(until: min(deadline, Date(timeIntervalSinceNow: 0.05)))
            lock.unlock()
        }
    }

    public func beginEarlyUpload(_ request: UploadRequest, contentPath: String, size: Int64) -> EarlyUpload? {
        let early: EarlyUpload? = withLock { s in
            guard s.started, !s.stopping, !s.crashed else { return nil }
            s.earlies = s.earlies.filter { $0.value.isLive }
            // Drive may hold the file already, or a job will send other content first.
            guard s.earlies.count < Self.maximumEarlyUploads, s.earlies[request.fileID] == nil,
                  s.state.jobs(of: request.fileID).isEmpty, s.state.landed[request.fileID] == nil else { return nil }
            // Its folder not on Drive yet (a folder job: made offline, or waiting `changeSettle`):
            // the create could not go there; the file's job goes after the folder's.
            if s.state.jobs(of: request.parentID).contains(where: \.makesFolder) { return nil }
            let early = EarlyUpload(request: request, path: contentPath, size: size)
            s.earlies[request.fileID] = early
            return early
        }
        guard let early else { return nil }
        log.debug("uploads", "\(request.displayPath): early upload starts at \(size) bytes written")
        let thread = Thread { [backend] in early.run(backend) }
        thread.name = "drivefs-early-upload"
        thread.start()
        return early
    }

    /// The early upload of the job's content, if one can finish it. Any early upload of the file is
    /// taken out of the registry here: one this job cannot finish (another content file, a job
    /// that is not a plain create) is abandoned, so no stream waits for a job that never comes.
    func adoptEarly(_ job: UploadJob, _ running: Running) -> (stream: any StreamingCreate, size: Int64)? {
        guard let early = withLock({ $0.earlies.removeValue(forKey: job.fileID) }) else { return nil }
        guard job.kind == .upload, job.creates, job.conflictCopy == nil, job.target == job.fileID, early.path == job.contentPath,
              !LocalFiles.exists(sessionPath(job.target)) else {
            early.abandon("its file is uploaded another way")
            return nil
        }
        var info = stat()
        guard stat(job.contentPath, &info) == 0 else {
            early.abandon("its content file cannot be read")
            return nil
        }
        let size = Int64(info.st_size)
        return early.adopt(size: size, cancellation: running.flag).map { ($0, size) }
    }

    public func phase(of asked: String) -> UploadFilePhase {
        withLock { s -> UploadFilePhase in
            let fileID = s.state.currentID(asked)
            if s.running[fileID] != nil || s.landing[fileID] != nil { return .uploading }
            let all = s.state.jobs(of: fileID)
            let jobs = all.filter { $0.kind == .upload }
            // A change made offline (a rename, a mode, a time) waits to be sent: queued too.
            if jobs.isEmpty { return all.contains { $0.kind == .change } ? .queued : .none }
            return jobs.contains(where: \.ready) ? .queued : .notReady
        }
    }

    public var status: UploadQueueStatus {
        let (queued, running, landing, failed, lastError) = withLock { s -> (Int, [(UploadJob, Running)], [UploadProgress], Int, String?) in
            let running = s.running.values.compactMap { r in s.state.jobs[r.seq].map { ($0, r) } }.sorted { $0.0.seq < $1.0.seq }
            let busy = Set(running.map(\.0.seq))
            let queued = s.state.jobs.values.filter { $0.ready && !busy.contains($0.seq) }.count
            // A change, removal or decided rename that ended (its record written) whose transfer
            // thread is still telling the core: running until that returned.
            var ending: [UInt64: UploadProgress] = [:]
            for r in s.running.values where r.countsUntilTold && s.state.jobs[r.seq] == nil {
                ending[r.seq] = UploadProgress(path: r.path, size: r.size, bytesDone: r.size)
            }
            return (queued, running, s.landing.values.map(\.progress) + ending.values, s.failedCount, s.lastError)
        }
        // A landing the core has not heard of yet still counts as running: a drain returns once
        // the mount shows every upload's outcome.
        return UploadQueueStatus(queued: queued, running: running.map { job, r in
            let (phase, hashed) = r.progress.withLock { $0 }
            return UploadProgress(path: job.request.displayPath, size: r.size,
                                  bytesDone: phase == .hashing ? min(hashed, r.size) : Self.bytesDone(r), phase: phase)
        } + landing, failed: failed, lastError: lastError)
    }

    /// Bytes Drive confirmed of a running upload: the resumable session's confirmed bytes (a
    /// multipart upload shows 0 until it landed). While a job hashes its content, `status` shows
    /// the bytes hashed instead.
    static func bytesDone(_ running: Running) -> Int64 {
        for path in running.sessionFiles.withLock({ $0 }) {
            if let session = try? ResumableUploadSession.load(from: path) { return min(session.confirmedBytes, running.size) }
        }
        return 0
    }

    public func start(onFinished: @escaping @Sendable (UploadOutcome) -> Void) {
        let count: Int = withLock { s in
            guard !s.started, !s.crashed else { return 0 }
            s.started = true
            s.onFinished = onFinished
            s.threads = transfers
            return transfers
        }
        for n in 0..<count {
            let thread = Thread { [self] in transferLoop() }
            thread.name = "drivefs-upload-\(n)"
            thread.start()
        }
    }

    public func stop() {
        withLock { s in
            s.stopping = true
            for running in s.running.values { running.flag.cancel() }
            for early in s.earlies.values { early.abandon("the mount stops") }
            s.earlies = [:]
        }
        lock.broadcast()
        lock.lock()
        while shared.threads > 0 { _ = lock.wait(until: Date(timeIntervalSinceNow: 0.05)) }
        lock.unlock()
        // Nobody uploads any more: whoever still waits hears EIO (the jobs stay in the journal).
        resolveWaiters()
        let left = withLock { s in
            defer { s.waiters = [:] }
            return s.waiters.sorted { $0.key < $1.key }.map(\.value)
        }
        for waiter in left { waiter.done(.failure(.ioError)) }
    }

    // MARK: Test seams

    /// Abandons the queue when `hook` answers true at a commit point: no record, request or
    /// callback follows, as if the process had died there.
    func setCrashHook(_ hook: (@Sendable (CommitPoint) -> Bool)?) { withLock { $0.crashHook = hook } }

    /// Test seam: every journal record fails with `error` until it is set back to nil.
    func setJournalFault(_ error: FilesystemError?) { withLock { $0.journalFault = error } }

    /// Test seam: called on the transfer thread, with no lock held, after each piece of a content
    /// file was hashed, with the bytes hashed so far.
    func setHashingHook(_ hook: (@Sendable (Int64) -> Void)?) { withLock { $0.hashingHook = hook } }

    var hasCrashed: Bool { withLock { $0.crashed } }

    /// Files someone waits for now (`whenUploaded`).
    var waitingFiles: Set<String> { withLock { Set($0.waiters.values.map(\.fileID)) } }

    /// Waits (bounded) until every transfer thread has ended (after a crash or `stop`).
    @discardableResult
    func waitForThreadsToEnd(timeout: Double = 60) -> Bool {
        let end = Date(timeIntervalSinceNow: timeout)
        lock.lock()
        defer { lock.unlock() }
        while shared.threads > 0 {
            if Date() >= end { return false }
            _ = lock.wait(until: Date(timeIntervalSinceNow: 0.05))
        }
        return true
    }

    /// Journal faults (ENOSPC, EIO) for the next append.
    func injectJournalFault(_ fault: UploadJournal.Fault) { withLock { $0.journal.nextFault = fault } }

    var journalState: UploadQueueState { withLock { $0.state } }

    /// Abandons the queue now, between two commit points, as `kill -9` would.
    func crashNow() {
        withLock { s in
            s.crashed = true
            s.journal.close()
            for running in s.running.values { running.flag.cancel() }
            for early in s.earlies.values { early.abandon("the queue crashed") }
        }
        lock.broadcast()
        resolveWaiters()
    }
}
