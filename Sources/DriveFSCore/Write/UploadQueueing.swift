import DriveClient
import DriveSupport

/// One file's content bound for Drive, as the filesystem core hands it to the upload queue and the
/// journal keeps it (Codable: it is what a record holds).
public struct UploadRequest: Codable, Sendable, Equatable {
    /// The file's Drive ID: an existing file's, or the pre-generated ID (`reserveFileID`) of a new one.
    public var fileID: String
    /// True: create the file under `fileID` (one multipart request when small); false: new content
    /// for the existing file.
    public var isNew: Bool
    /// Where it goes and under which name (Drive's name, not the shown one).
    public var parentID: String
    public var name: String
    public var mimeType: String?
    /// Kept as Drive's modifiedTime (milliseconds since the epoch).
    public var modifiedTime: Int64?
    /// Set on the file with its content (drivefs's mode and symbolic-link keys).
    public var appProperties: [String: String]
    /// What the local copy was based on: Drive's head revision and md5 when it was copied (nil for
    /// a new file). If Drive's head differs when the upload starts, the content is uploaded beside
    /// it as a conflicted copy instead of over it.
    public var baseRevision: String?
    public var baseMD5: String?
    /// The path in the mount, for logs and `drivefs status` (it may be out of date after renames).
    public var displayPath: String
    /// Spans of the content file that hold nothing yet: Drive's bytes of `baseRevision` go there
    /// before the upload (a close while Drive could not give them: what was written is kept, the
    /// rest is fetched later). nil: the content file is whole.
    public var missing: [ByteSpan]?

    public init(fileID: String, isNew: Bool, parentID: String, name: String, mimeType: String? = nil,
                modifiedTime: Int64? = nil, appProperties: [String: String] = [:], baseRevision: String? = nil,
                baseMD5: String? = nil, displayPath: String) {
        self.fileID = fileID
        self.isNew = isNew
        self.parentID = parentID
        self.name = name
        self.mimeType = mimeType
        self.modifiedTime = modifiedTime
        self.appProperties = appProperties
        self.baseRevision = baseRevision
        self.baseMD5 = baseMD5
        self.displayPath = displayPath
    }
}

/// A span of bytes of a file.
public struct ByteSpan: Codable, Sendable, Equatable {
    public var offset: Int64
    public var length: Int64

    public init(offset: Int64, length: Int64) {
        self.offset = offset
        self.length = length
    }
}

/// How one upload ended, told to the core once per finished job (never for a job that was
/// superseded, reclaimed or cancelled before it started).
public struct UploadOutcome: Sendable {
    /// The request as the job ended (metadata changes made while it ran included).
    public var request: UploadRequest
    /// The file that was written, when the job succeeded: normally `request.fileID` with its new
    /// revision; on a conflict, the conflicted copy (a new ID) while `request.fileID` keeps Drive's
    /// version; when the file had been deleted on Drive, the file recreated under a new ID.
    public var file: DriveFile?
    /// True when `file` is a conflicted copy beside the original (`name (conflicted copy …).ext`).
    public var wasConflict: Bool
    /// The content file the job sent (the core compares it with what it shows now).
    public var contentPath: String
    /// Set when the job failed for good (the content was moved aside: `preservedAt`); transient
    /// failures are retried by the queue and never reported.
    public var error: FilesystemError?
    public var preservedAt: String?

    public init(request: UploadRequest, file: DriveFile?, wasConflict: Bool, contentPath: String,
                error: FilesystemError? = nil, preservedAt: String? = nil) {
        self.request = request
        self.file = file
        self.wasConflict = wasConflict
        self.contentPath = contentPath
        self.error = error
        self.preservedAt = preservedAt
    }
}

/// What a running upload is doing.
public enum UploadPhase: String, Codable, Sendable, Equatable {
    /// Reading its content for its md5 before anything is sent (`bytesDone`: bytes hashed).
    case hashing
    /// Sending it (`bytesDone`: bytes Drive confirmed).
    case sending
}

/// One upload as `drivefs status` shows it.
public struct UploadProgress: Codable, Sendable, Equatable {
    public var path: String
    public var size: Int64
    public var bytesDone: Int64
    /// nil from a daemon that did not say (an older status file), or before the job's first step.
    public var phase: UploadPhase?

    public init(path: String, size: Int64, bytesDone: Int64, phase: UploadPhase? = nil) {
        self.path = path
        self.size = size
        self.bytesDone = bytesDone
        self.phase = phase
    }
}

public struct UploadQueueStatus: Codable, Sendable, Equatable {
    /// Ready and waiting for a transfer slot.
    public var queued: Int
    public var running: [UploadProgress]
    /// Jobs that failed for good since the mount started (their content kept, see `UploadOutcome`).
    public var failed: Int
    public var lastError: String?

    public init(queued: Int = 0, running: [UploadProgress] = [], failed: Int = 0, lastError: String? = nil) {
        self.queued = queued
        self.running = running
        self.failed = failed
        self.lastError = lastError
    }

    public var isIdle: Bool { queued == 0 && running.isEmpty }

    /// What the uploads are doing, for `drivefs unmount`'s progress line:
    /// `1 queued, 1 running (hashing /big.bin: 300 of 1048576 MiB)`. The first two running uploads
    /// are named with their phase (`hashing`: read for their md5 before anything is sent;
    /// `sending`: bytes Drive confirmed), the others counted.
    public var progressSummary: String {
        var line = "\(queued) queued, \(running.count) running"
        let described = running.prefix(2).map { upload -> String in
            let doing = upload.phase == .hashing ? "hashing" : "sending"
            return "\(doing) \(upload.path): \(upload.bytesDone >> 20) of \(upload.size >> 20) MiB"
        }
        if !described.isEmpty {
            line += " (" + described.joined(separator: "; ") + (running.count > 2 ? "; \(running.count - 2) more" : "") + ")"
        }
        return line
    }
}

/// What the filesystem core asks of the upload queue (implemented by `UploadQueue`, over a
/// `DriveBackend` and the journal in the cache directory).
///
/// Contracts:
/// - Content files are files the core wrote, in the cache directory's `staging/` folder. Once a
///   `commit(ready: true)` returned, the queue owns that file: the core never writes it again
///   (to write the file anew it calls `reclaim`, or copies the content), and the queue deletes it
///   once the upload landed (or moves it aside if the job fails for good).
/// - `commit` returns only once the content and its journal record are durable (fdatasync on the
///   content file, then on the journal, one open descriptor): after that a crash or `kill -9` of
///   the daemon loses nothing; the next start's queue holds the job again (`recovered`). Commits
///   made at the same time by several threads may share the journal's fdatasync (group commit);
///   each still returns only after one that holds its record, and fails if that one failed.
/// - Per file (by `fileID`) jobs run in order, one at a time; a job committed while another of the
///   same file is queued replaces it (only the newest content is sent); one committed while
///   another runs waits for it, then runs with the first one's result as its base (so our own
///   earlier upload is never taken for a conflict, and a create is followed by an update).
/// - Every method but `drain` returns at once (no network): they are called on the kernel's
///   threads. Waiting for a file's upload (`whenUploaded`) holds no thread: the answer comes back
///   through a callback.
public protocol UploadQueueing: AnyObject, Sendable {
    /// Jobs the journal held when the queue was made (an earlier run's, not yet on Drive), in commit
    /// order: the core shows them as local files until they land. They run after `start`.
    var recovered: [(request: UploadRequest, contentPath: String)] { get }

    /// The Drive IDs of files whose removal the journal held when the queue was made (an earlier
    /// run's `rm`, or the replaced file of a rename over it that the start finished): the core
    /// hides them until Drive shows them gone.
    var recoveredRemovals: [String] { get }

    /// Of those, the removals (an `rm` of a plain file) whose wait (`queueRemoval(settling:)`) a
    /// restart cut short, with the seconds left of it: each keeps waiting that long, and a file
    /// made again under its name meanwhile may take its place (`takeRemovedPlace`).
    var recoveredWaitingRemovals: [(request: UploadRequest, seconds: Double)] { get }

    /// The queued renames and moves of files on Drive that the journal held when the queue was
    /// made (made offline; each request names the file, its new name and folder), in order: the
    /// core shows the files there until they land.
    var recoveredPlacings: [UploadRequest] { get }

    /// Decides, by asking Drive (each question bounded by `context`), the renames over a file that
    /// the last run's end cut short and the journal could not decide; before `start`. Returns the
    /// Drive IDs of the files that now go (their removal queued).
    func decideCutRenames(_ context: RequestContext) -> [String]

    /// Makes `contentPath` and `request` durable in the journal. `ready == false`: the file is
    /// still open for writing (a `flush` that is not the last close): not uploaded now, but
    /// recovered (and then uploaded) after a crash; a later commit of the same file replaces it.
    /// `ready == true`: queued for upload; the queue owns the file from now on. `settles`: the
    /// upload waits its settle time (`--upload-delay`) before it starts, or until `endSettle`: a
    /// `flush` that may not be the last close (a shell's `>` closes the descriptor it opened and
    /// writes through a duplicate) must not send the file before the writes through the other
    /// descriptor (new files always settle).
    func commit(_ request: UploadRequest, contentPath: String, ready: Bool, settles: Bool) throws(FilesystemError)

    /// The last handle of `fileID` was released: its upload need not settle any longer (a new
    /// file's still waits, for a rename over another file).
    func endSettle(of fileID: String)

    /// Takes back a queued job that has not started (the file is open for writing again): its
    /// content file and request are returned to the core, and the journal keeps it as not ready.
    /// nil when no job of the file is queued or its upload has started (the core then copies the
    /// content from `contentPath(of:)`).
    func reclaim(_ fileID: String) -> (request: UploadRequest, contentPath: String)?

    /// The newest content the queue holds for the file (queued or running), for reads and copies.
    func contentPath(of fileID: String) -> String?

    /// Whether a change job of the item (a folder's create) landed and the core has not heard of
    /// it yet: the queue holds no job of it any more, and its landing is still to be applied.
    func changeLanding(of fileID: String) -> Bool

    /// The Drive version that content was written on (its request's base; for a landing the core
    /// has not heard of yet, the revision it landed as): a copy made from it conflicts with what
    /// others wrote on Drive since, as the queued upload itself would.
    func queuedBase(of fileID: String) -> (revision: String?, md5: String?)

    /// Whether that content is whole: false while spans Drive could not give at its close are
    /// still to be filled (`UploadRequest.missing`; only a restart finds such a job without the
    /// core's copy, which knows its spans).
    func isWhole(_ fileID: String) -> Bool

    /// Changes the metadata of the file's queued or running job (a rename of a file not yet on
    /// Drive, a chmod, a utimens): a queued job is sent with the change; a running one is followed
    /// by a metadata update once it landed. False when the queue holds no job of the file (the
    /// core then makes the change on Drive itself).
    func updateMetadata(of fileID: String, _ change: @Sendable (inout UploadRequest) -> Void) throws(FilesystemError) -> Bool

    /// A change made while Drive was unreachable (or behind another such change of the item, or
    /// into a folder not on Drive yet), journaled before it returns and sent in order with the
    /// item's other jobs: a rename or move, a time, drivefs properties (mode, owners), or with
    /// `makesFolder` a new folder under its reserved ID. Merged into the item's change still
    /// queued (one request for a rename, chmod and touch made one after the other, or a folder's
    /// create and the time and mode tar gives it), in the same journal record form as the job it
    /// joins (`rewrite`). Throws when the journal cannot take it (nothing changed: the caller fails).
    func queueChange(_ change: QueuedChange) throws(FilesystemError)

    /// The removal (trash, or delete as the mount is configured) of a file the queue holds no job
    /// of, made while Drive was unreachable: journaled, sent once Drive answers. Throws as `queueChange`.
    func queueRemoval(_ request: UploadRequest) throws(FilesystemError)

    /// `queueRemoval` of a file on Drive removed while Drive answers, that waits `seconds` before
    /// it is sent (an unmount's drain does not wait): a file made again under its name meanwhile
    /// may take its place (`takeRemovedPlace`). The wait is journaled with the removal: a restart
    /// keeps waiting what is left of it (`recoveredWaitingRemovals`).
    func queueRemoval(_ request: UploadRequest, settling seconds: Double) throws(FilesystemError)

    /// Whether a change or removal of the item is still queued: what is done to it next is
    /// queued behind it (never sent around it).
    func holdsChanges(of fileID: String) -> Bool

    /// The file was removed: a queued job is dropped (a new file that never started costs no
    /// request at all); a running one is trashed (or deleted, as the mount is configured) once it
    /// landed. False when the queue holds no job of the file.
    func cancel(_ fileID: String) throws(FilesystemError) -> Bool

    /// `cancel`, and the removal it queues (if any) waits `seconds` before it is sent, as
    /// `queueRemoval(_:settling:)`'s (set with the record, before any transfer thread can take it).
    func cancel(_ fileID: String, removalSettles seconds: Double) throws(FilesystemError) -> Bool

    /// The new file `fileID`, not on Drive yet, becomes new content for the existing file
    /// `request.fileID` (an editor's save: a temporary written, then renamed over the original):
    /// its job, not started, is replaced by a job of that file with the same content file and
    /// `request`, in one journal record. True when done, or when the queue holds nothing of
    /// `fileID` yet (its next commit is to name the other file); false, with nothing changed,
    /// when its upload started or streams, or it has more than one job, or the other file's
    /// queued jobs are not plain uploads of new content. An upload of the other file already on
    /// its way stays: the new job goes after it (and is based on its landing).
    func retarget(_ fileID: String, to request: UploadRequest) throws(FilesystemError) -> Bool

    /// The new file `fileID`, closed and not on Drive yet, takes the place of the file
    /// `request.fileID` that was removed (`rm f; create f; write; close`, as some tools save):
    /// as `retarget`, but the removed file's queued removal, which must not have started, is
    /// dropped in the same journal record (a crash sees the removal and the create, or the
    /// update alone). False, with nothing changed, when the removal was sent or is on its way, or
    /// the file has other jobs, or `retarget`'s conditions for the new file do not hold.
    func takeRemovedPlace(_ fileID: String, of request: UploadRequest) throws(FilesystemError) -> Bool

    /// Whether the new file `fileID`'s upload waits its settle time (`--upload-delay`), not
    /// started: a rename over another file may still make its content that file's (`retarget`).
    /// An fsync of such a file answers once its content is kept here, rather than sending it as
    /// a new file that the editor's rename right after would trash.
    func awaitsRename(of fileID: String) -> Bool

    /// A rename of the file `fileID` to `name` in `parentID` over the file `replaced` (a request
    /// naming it: its ID, folder, name, path) begins: journaled before the rename's first step, so
    /// that a crash before `endReplacement` is finished by the next start (the replaced file goes
    /// if the renamed one holds the name, and stays if not). Throws when the journal cannot take
    /// it (nothing changed: the rename fails). Returns the number `endReplacement` takes.
    func beginReplacement(of replaced: UploadRequest, by fileID: String, name: String, parentID: String) throws(FilesystemError) -> UInt64

    /// The rename begun as `number` ended, done or undone (never throws: a record that cannot be
    /// written leaves the next start to check it, which finds it done or undone).
    func endReplacement(_ number: UInt64)

    /// Calls `done` once every job of the file committed so far has landed (fsync, `--sync-close`),
    /// with `.success`, or with a failure: the error of a job that failed for good; at once, the
    /// errno of an answer Drive gave the file's upload that no retry mends until the user acts (a
    /// full Drive `ENOSPC`, a quota `EDQUOT`, a dead grant `EACCES`: the upload stays queued and is
    /// tried again with backoff); `EINTR` when `cancellation` is cancelled; `EIO` when the queue
    /// stops or crashed first. Returns at once and holds no thread meanwhile: `done` is called
    /// exactly once, on this thread when the answer is known now, otherwise on a queue thread (or
    /// the cancelling one). The file's waiting upload goes before the rest of the queue.
    /// `done` must not block on the queue.
    func whenUploaded(_ fileID: String, cancellation: CancellationFlag?,
                      _ done: @escaping @Sendable (Result<Void, FilesystemError>) -> Void)

    /// Waits until no job is queued or running (unmount), calling `progress` about once a second;
    /// false at `timeout` seconds with jobs left (they stay in the journal for the next start).
    func drain(timeout: Double, progress: @Sendable (UploadQueueStatus) -> Void) -> Bool

    /// Sends the removals queued now without waiting for their window (an `rm` waits the upload
    /// delay, in case the name is made again: a save) and waits until none of them is left, at most
    /// `timeout` seconds of real time: for what asks Drive's trash (`drivefs trash`), which should
    /// see every `rm` that returned. True when none is left.
    func sendRemovalsNow(timeout: Double) -> Bool

    /// Starts sending a new file that is still being written, from its first byte (`EarlyUpload`):
    /// the core calls it for a file written from its start that grew past its threshold, and tells
    /// the returned object about every later write and truncate. nil when the queue will not (it
    /// holds a job of the file already, enough early uploads run, or the backend cannot).
    func beginEarlyUpload(_ request: UploadRequest, contentPath: String, size: Int64) -> EarlyUpload?

    /// The Drive ID the file `fileID` has now: `fileID`, unless an upload of it found Drive's copy
    /// gone and made the file again under a new ID, which it then is (also before the core heard
    /// of that landing). Every call of this protocol that names a file takes either ID; a request
    /// the core sends Drive itself (a rename, a trash) goes to this one.
    func currentID(of fileID: String) -> String

    var status: UploadQueueStatus { get }

    /// Where the file's content stands in the queue now (`user.drivefs.state`): never waits.
    func phase(of fileID: String) -> UploadFilePhase

    /// Starts the transfer threads (after daemonizing). `onFinished` is called on a queue thread
    /// for each job that ended (see `UploadOutcome`); it must not block on the queue.
    func start(onFinished: @escaping @Sendable (UploadOutcome) -> Void)
    /// Stops after the transfers in flight end or are interrupted; what is left stays in the journal.
    func stop()
}

/// A change of an item's metadata to queue (`UploadQueueing.queueChange`). `request` names the
/// item (`fileID`, `displayPath`) and carries the change: its Drive `name` and folder `parentID`
/// (when `places`), `modifiedTime` (nil: unchanged), `appProperties` to set (drivefs's: mode,
/// owners, ctime). `leaves`: the folder Drive has it in now (a move takes it out of it).
public struct QueuedChange: Sendable {
    public var request: UploadRequest
    public var places: Bool
    public var leaves: String?
    public var makesFolder: Bool
    /// The core sent this change itself (a folder's create) and cannot tell whether Drive carried
    /// it out (its answer lost, Drive gone before it could be asked): the job is treated as one that
    /// may have run, as a job recovered at a start is. Cancelled, it leaves a removal of what Drive
    /// may hold, instead of nothing.
    public var mayHaveLanded: Bool
    /// Seconds the change waits before it is sent (`DriveFSConfiguration.changeSettle`; an
    /// unmount's drain, and an fsync of something that needs it, do not wait): a change of the
    /// same item that follows meanwhile is merged into it (one request). A restart sends it at once.
    public var settles: Double

    public init(request: UploadRequest, places: Bool, leaves: String? = nil, makesFolder: Bool = false, mayHaveLanded: Bool = false,
                settles: Double = 0) {
        self.request = request
        self.places = places
        self.leaves = leaves
        self.makesFolder = makesFolder
        self.mayHaveLanded = mayHaveLanded
        self.settles = settles
    }
}

/// One file's place in the upload queue.
public enum UploadFilePhase: String, Sendable, Equatable {
    /// The queue holds nothing of the file.
    case none
    /// Journaled while still open for writing (a `flush` that was not the last close): not sent yet.
    case notReady
    /// Ready, waiting for a transfer slot (or for a retry's backoff).
    case queued
    /// Being sent (hashed, uploaded, or landed and not yet heard of by the core).
    case uploading
}

extension UploadQueueing {
    /// A commit whose upload settles only if the file is new.
    public func commit(_ request: UploadRequest, contentPath: String, ready: Bool) throws(FilesystemError) {
        try commit(request, contentPath: contentPath, ready: ready, settles: false)
    }
    public func endSettle(of fileID: String) {}
    public func phase(of fileID: String) -> UploadFilePhase { .none }
    public func currentID(of fileID: String) -> String { fileID }
    public func retarget(_ fileID: String, to request: UploadRequest) throws(FilesystemError) -> Bool { false }
    public func queueRemoval(_ request: UploadRequest, settling seconds: Double) throws(FilesystemError) {
        try queueRemoval(request)
    }
    public func takeRemovedPlace(_ fileID: String, of request: UploadRequest) throws(FilesystemError) -> Bool { false }
    public var recoveredWaitingRemovals: [(request: UploadRequest, seconds: Double)] { [] }
    public func cancel(_ fileID: String, removalSettles seconds: Double) throws(FilesystemError) -> Bool {
        try cancel(fileID)
    }
    public func awaitsRename(of fileID: String) -> Bool { false }
    public func beginEarlyUpload(_ request: UploadRequest, contentPath: String, size: Int64) -> EarlyUpload? { nil }
}
