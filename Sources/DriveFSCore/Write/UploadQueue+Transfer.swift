import DriveClient
import DriveSupport
import Foundation
import Glibc

/// The transfer threads: each takes the first job that may run (the first of its file, ready, no
/// other job of the file running), runs it to its end, and takes the next.
///
/// An upload's steps (each decision journaled before it is acted on, see `UploadQueue`):
/// 0. A create whose content was streamed while it was written (`EarlyUpload`) finishes that
///    stream and goes to step 3; a failure there falls back to the steps below on the next attempt.
/// 1. Its content's size and md5 (one pass, kept for the job).
/// 2. A conflicted copy already decided: create it under its ID. A create: `createFile` under
///    `target` (one multipart request when small; a persisted resumable session continues first).
///    An update: `getFile(target)`: gone or trashed → a new ID (journaled), create; our content
///    already there → landed; Drive's head is not the base → a conflicted copy (its ID and name
///    journaled), create it; else `updateContent`.
/// 3. Metadata changed while it ran (or left from a landing before a crash): one files.update
///    (and a move when the parent changed).
/// 4. The `done` record, then `onFinished`, then the content file is removed.
extension UploadQueue {
    /// Why a job stopped short: to be tried again after a backoff, or ended for good.
    struct JobFailure: Error {
        var message: String
        var permanent: Bool
        var error: FilesystemError
        var retryAfter: Double?
        /// The backend's error, when the failure is one.
        var drive: DriveError?

        init(message: String, permanent: Bool, error: FilesystemError, retryAfter: Double? = nil, drive: DriveError? = nil) {
            self.message = message
            self.permanent = permanent
            self.error = error
            self.retryAfter = retryAfter
            self.drive = drive
        }

        init(_ drive: DriveError, in step: Step) {
            self.init(message: drive.description, permanent: UploadQueue.isPermanent(drive, in: step), error: FilesystemError(drive),
                      retryAfter: drive.info?.retryAfter, drive: drive)
        }

        var isNotFound: Bool {
            if case .notFound? = drive { return true }
            return false
        }
    }

    /// What a backend call was doing, which decides what a 404 means.
    enum Step {
        /// createFile: 404 is the parent gone (permanent).
        case create
        /// updateContent / updateMetadata: 404 is the file gone since it was read (tried again:
        /// the next attempt finds it gone and creates it anew).
        case update
        /// getFile, move, trash, delete, reserveFileID: 404 is permanent where it is not handled.
        case other
    }

    func transferLoop() {
        while let (job, running) = nextJob() {
            let waited = withLock { s in s.waiters.values.contains { s.state.currentID($0.fileID) == job.fileID } }
            let priority: RequestPriority = waited ? .interactive : .background
            RequestContext(priority: priority, cancellation: running.flag).scope {
                switch job.kind {
                case .upload: runUpload(job, running)
                case .removal: runRemoval(job, running)
                case .replacement: runReplacement(job, running)
                case .change: runChange(job, running)
                }
            }
            withLock { s in
                // Under its file's ID, and the new one when it made the file again (`finishLanded`).
                for key in [job.fileID, s.state.currentID(job.fileID)] where s.running[key] === running {
                    s.running[key] = nil
                    s.held[key] = nil
                }
                s.held[job.fileID] = nil
            }
            lock.broadcast()
            // However the job ended (landed, failed, cancelled, the queue crashed), its waiters hear it.
            resolveWaiters()
        }
        withLock { $0.threads -= 1 }
        lock.broadcast()
        resolveWaiters()
    }

    private func nextJob() -> (UploadJob, Running)? {
        lock.lock()
        defer { lock.unlock() }
        while true {
            if shared.stopping || shared.crashed { return nil }
            // A file someone waits for (fsync, --sync-close) goes first; then commit order. A job
            // whose folder is still to be made by a folder job (made offline) waits for it.
            // Changes and removals wait while Drive is unreachable (the poller's probe finds it
            // back): not tried and failed meanwhile, so a folder made and removed offline, or a
            // change merged into a queued one, costs no request at all.
            let folders = Set(shared.state.jobs.values.filter(\.makesFolder).map(\.target))
            let offline = backend.reachability?.isOffline == true
            let ready = shared.state.heads.filter { job in
                guard job.ready, shared.running[job.fileID] == nil else { return false }
                if offline && (job.kind == .change || job.kind == .removal) { return false }
                return job.kind == .removal || job.kind == .replacement || !folders.contains(job.request.parentID)
            }
            let waited = Set(shared.waiters.values.map { shared.state.currentID($0.fileID) })
            // The folders still to be made that a waited file's jobs go into (up to the first on
            // Drive): their creates wait for nothing either.
            var needed: Set<String> = []
            if !waited.isEmpty && !folders.isEmpty {
                var parents = Set(waited.flatMap { shared.state.jobs(of: $0).map(\.request.parentID) })
                while let parent = parents.popFirst() {
                    guard folders.contains(parent), needed.insert(parent).inserted else { continue }
                    parents.formUnion(shared.state.jobs(of: parent).map(\.request.parentID))
                }
            }
            // A new file just closed settles first (`newFileSettle`), as a folder made or a
            // change (`QueuedChange.settles`), unless someone waits for it.
            let now = Self.uptime
            let hurried = draining.withLock { $0 > 0 }
            let free = ready.filter { job in
                guard let until = shared.settling[job.seq], until > now, !hurried else { return true }
                return waited.contains(job.fileID) || job.makesFolder && needed.contains(job.target)
            }
            if let job = free.first(where: { waited.contains($0.fileID) }) ?? free.first {
                shared.settling[job.seq] = nil
                shared.settlingUntilClosed.remove(job.seq)
                if shared.settling.count > 256 { shared.settling = shared.settling.filter { shared.state.jobs[$0.key] != nil } }
                var info = stat()
                let size = job.kind == .upload && stat(job.contentPath, &info) == 0 ? Int64(info.st_size) : 0
                let running = Running(seq: job.seq, size: size, path: job.request.displayPath, countsUntilTold: job.kind != .upload)
                shared.running[job.fileID] = running
                return (job, running)
            }
            let settled = ready.compactMap { shared.settling[$0.seq] }.min().map { max(0.01, $0 - now) } ?? 1
            _ = lock.wait(until: Date(timeIntervalSinceNow: min(1, settled)))
        }
    }

    // MARK: Uploads

    private func runUpload(_ first: UploadJob, _ running: Running) {
        var failures = 0
        while true {
            do {
                // A try again: a waiter from now on waits for its outcome.
                if failures > 0 { withLock { $0.held[first.fileID] = nil } }
                try attempt(first.seq, running, announce: failures == 0)
                return
            } catch let interruption as Interruption {
                if case .cancelled = interruption { removeContent(first.contentPath) }
                return
            } catch {
                let failure = jobFailure(error, seq: first.seq)
                if let interruption = failure.interruption {
                    if case .cancelled = interruption { removeContent(first.contentPath) }
                    return
                }
                var job = failure.job
                if case .checksumMismatch(let sent, let stored)? = job.drive {
                    do {
                        let count = try noteCorruptLanding(first.seq, md5: stored)
                        if count >= Self.maximumChecksumMismatches {
                            job.permanent = true
                            job.message = "Drive stored other bytes than were sent, \(count) times in a row (md5 sent \(sent), "
                                + "Drive has \(stored)); the file on Drive may hold those wrong bytes"
                        }
                    } catch {
                        let again = jobFailure(error, seq: first.seq)
                        if again.interruption != nil { return }
                        job = again.job
                    }
                }
                if job.permanent {
                    do {
                        try failForGood(first.seq, job, running)
                        return
                    } catch {
                        let again = jobFailure(error, seq: first.seq)
                        if again.interruption != nil { return }
                        job = again.job
                    }
                }
                failures += 1
                let delay = backoff(after: failures, retryAfter: job.retryAfter)
                let text = "\(first.request.displayPath): \(job.message); trying again in \(Self.seconds(delay))"
                let holds = job.drive.map(Self.holdsForNow) ?? false
                withLock { s in
                    s.lastError = text
                    // No retry mends it until the user acts: whoever waits for the file hears it now.
                    if holds { s.held[first.fileID] = job.error }
                }
                log.warning("uploads", text)
                if holds { resolveWaiters() }
                do { try wait(delay, seq: first.seq, running) } catch {
                    if case .cancelled = error { removeContent(first.contentPath) }
                    return
                }
            }
        }
    }

    /// One try of an upload, from its current journaled state to its `done` record.
    private func attempt(_ seq: UInt64, _ running: Running, announce: Bool) throws {
        let job = try current(seq)
        if let (stream, size) = adoptEarly(job, running) {
            // Sent while it was written: only the rest goes now. A failure here falls back to the
            // ordinary upload on the next attempt (the stream is gone by then).
            if announce { try point(.starting(job.fileID)) }
            let file = try step(.create) { try stream.finish(path: job.contentPath, size: size) }
            try point(.landed(job.fileID))
            try finishLanded(seq, file: file, wasConflict: false, running)
            return
        }
        if let missing = job.request.missing, !missing.isEmpty { try fillMissing(seq, job, missing) }
        let digest = try contentDigest(try current(seq), running)
        running.progress.withLock { $0 = (.sending, 0) }
        if announce { try point(.starting(job.fileID)) }
        var file: DriveFile
        var wasConflict = false
        if let copy = job.conflictCopy {
            file = try createOurs(job, id: copy.id, name: copy.name, digest, running)
            wasConflict = true
        } else if job.creates {
            do {
                file = try createOurs(job, id: job.target, name: job.request.name, digest, running)
            } catch let taken as ChangedSinceOurCreate {
                (file, wasConflict) = try uploadBeside(seq, head: taken.head, digest, running)
            } catch let taken as NameTakenMeanwhile {
                (file, wasConflict) = try uploadBeside(seq, head: taken.head, digest, running, nameTaken: taken.wasTrashed)
            }
        } else {
            do {
                (file, wasConflict) = try updateExisting(seq, digest, running)
            } catch let taken as NameTakenMeanwhile {
                (file, wasConflict) = try uploadBeside(seq, head: taken.head, digest, running, nameTaken: taken.wasTrashed)
            }
            if job.landsBeside == true { wasConflict = true }
        }
        try point(.landed(job.fileID))
        try finishLanded(seq, file: file, wasConflict: wasConflict, running)
    }

    /// The content was committed with spans Drive could not give then (`UploadRequest.missing`):
    /// they are filled with Drive's bytes of the revision it was based on, made durable, and the
    /// job journaled as whole, before anything is sent. A revision Drive no longer has fails the
    /// job for good (its content is kept in `failed/`).
    private func fillMissing(_ seq: UInt64, _ job: UploadJob, _ missing: [ByteSpan]) throws {
        let fd: Int32
        do throws(SystemCallError) { fd = try SystemCall.open(job.contentPath, O_WRONLY | O_CLOEXEC) } catch {
            // A content file that is gone does not come back: failed for good, like at recovery.
            throw JobFailure(message: "cannot open its content \(job.contentPath): \(error.reason)",
                             permanent: error.errno == ENOENT, error: FilesystemError(local: error))
        }
        defer { Glibc.close(fd) }
        for span in missing where span.length > 0 {
            let got = try step(.other) {
                try backend.download(job.request.fileID, revision: job.request.baseRevision, offset: span.offset, length: span.length,
                                     to: .fileDescriptor(fd, offset: span.offset))
            }
            guard got == span.length else {
                throw JobFailure(message: "Drive gave \(got) of the \(span.length) bytes at \(span.offset) of its version",
                                 permanent: false, error: .ioError)
            }
        }
        do throws(SystemCallError) { try SystemCall.retrying("fdatasync") { fdatasync(fd) } } catch {
            throw JobFailure(message: "cannot make its content durable: \(error.reason)", permanent: false, error: FilesystemError(local: error))
        }
        try withLock { (s: inout Shared) throws in
            if s.crashed { throw Interruption.crashed }
            guard var request = s.state.jobs[seq]?.request else { throw Interruption.cancelled }
            request.missing = nil
            do throws(FilesystemError) { try Self.record(.metadata(seq: seq, request: request), &s) } catch {
                throw JobFailure(message: "cannot journal its filled content: \(error)", permanent: false, error: error)
            }
        }
        log.info("uploads", "\(job.request.displayPath): the bytes Drive could not give at its close are filled in")
    }

    /// Creates `id` with the job's content; an ID found taken is an earlier upload of this file
    /// (drivefs reserved it for this file alone), which is brought up to date instead.
    private func createOurs(_ job: UploadJob, id: String, name: String, _ digest: Digest3, _ running: Running) throws -> DriveFile {
        let file = try createOrFind(job, id: id, name: name, digest, running)
        if file.trashed, id == job.target, job.conflictCopy == nil {
            // Ours, landed before (a crash or a lost answer hid it) and trashed on Drive since:
            // made again, as a file gone from Drive is.
            return try recreate(job.seq, wasTrashed: true, digest, running)
        }
        return file
    }

    private func createOrFind(_ job: UploadJob, id: String, name: String, _ digest: Digest3, _ running: Running) throws -> DriveFile {
        // Moved into a folder made here since the job started (its create still queued): made first.
        try makeQueuedFolders(holding: job.request.parentID, running)
        let session = sessionPath(id)
        running.sessionFiles.withLock { if !$0.contains(session) { $0.append(session) } }
        if let resumed = try resume(session, job, id: id, isUpdate: false, digest) { return resumed }
        let request = job.request
        do {
            return try step(.create) {
                try backend.createFile(name: name, parent: request.parentID, mimeType: request.mimeType,
                                       source: .hashedFile(path: job.contentPath, md5: digest.md5), modifiedTime: request.modifiedTime,
                                       sessionFile: session, id: id, appProperties: Self.properties(request))
            }
        } catch let failure as JobFailure where failure.drive?.reason == "fileIdInUse" {
            let head = try step(.other) { try backend.getFile(id) }
            if head.trashed { return head }
            if Self.holds(head, digest) { return head }
            // The ID was reserved for this file alone, so Drive's file is our create that landed
            // (its answer lost). Unless its content is an earlier landing of ours, someone changed
            // it since: theirs stays, and ours goes beside it, as for any conflict.
            if id == job.target, job.conflictCopy == nil, !landedHere(job.fileID, head), !isOurCreate(head, request, digest),
               !Self.isCorruptLanding(head, of: job) {
                throw ChangedSinceOurCreate(head: head)
            }
            log.info("uploads", "\(request.displayPath): an earlier upload of it is on Drive under \(id); bringing that one up to date")
            return try step(.update) {
                try backend.updateContent(id, source: .hashedFile(path: job.contentPath, md5: digest.md5), mimeType: request.mimeType, name: name,
                                          modifiedTime: request.modifiedTime, sessionFile: session,
                                          appProperties: Self.properties(request))
            }
        }
    }

    /// A create that found its ID taken by a file someone changed after our create landed.
    struct ChangedSinceOurCreate: Error {
        var head: DriveFile
    }

    /// The file is gone from Drive and another file holds its name in its folder now.
    struct NameTakenMeanwhile: Error {
        var head: DriveFile
        var wasTrashed: Bool
    }

    /// Another file (not trashed) under the job's name in its folder, if there is one: one
    /// files.list, only when a file is found gone from Drive.
    private func nameHolder(of job: UploadJob) throws -> DriveFile? {
        let name = job.request.name.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'")
        let parent = job.request.parentID.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'")
        let query = "name = '\(name)' and '\(parent)' in parents and trashed = false"
        let found = try step(.other) { try backend.list(query: query, orderBy: nil, pageSize: 10) }
        return found.first { $0.id != job.target && $0.id != job.fileID && !$0.trashed && $0.name == job.request.name }
    }

    /// Whether Drive's file still has what our create gave it but for its bytes: the time we set
    /// and our size (a create whose stored bytes did not match the md5 we sent, to be sent again).
    /// Anyone else's change sets another time (Drive's, or theirs) or another size.
    private func isOurCreate(_ head: DriveFile, _ request: UploadRequest, _ digest: Digest3) -> Bool {
        guard let ours = request.modifiedTime, head.modifiedTime == ours else { return false }
        return head.size == digest.size
    }

    /// Whether `head` is the last landing of `fileID` the journal knows of.
    private func landedHere(_ fileID: String, _ head: DriveFile) -> Bool {
        guard let revision = head.headRevisionId else { return false }
        return withLock { $0.state.landed[fileID]?.landed.headRevisionId == revision }
    }

    /// Drive's `head` is not what this job's content was based on: it stays, and the content is
    /// uploaded beside it as a conflicted copy (journaled first, so a crash goes on with the copy).
    /// `nameTaken`: the file was gone from Drive (trashed: true, deleted: false) and `head` is the
    /// other file under its name now.
    private func uploadBeside(_ seq: UInt64, head: DriveFile, _ digest: Digest3, _ running: Running,
                              nameTaken: Bool? = nil) throws -> (DriveFile, Bool) {
        let job = try current(seq)
        let copyID = try step(.other) { try backend.reserveFileID() }
        let copy = UploadJob.ConflictCopy(id: copyID, name: Self.conflictName(job.request.name, at: time.now()))
        try decide(.conflict(seq: seq, copy: copy), seq: seq, point: .conflictDecided(job.fileID))
        if let trashed = nameTaken {
            log.warning("uploads", "\(job.request.displayPath): the file is gone from Drive (\(trashed ? "trashed" : "deleted")) and "
                        + "another file holds its name now (\(head.id), replaced elsewhere); that one is kept and this copy is "
                        + "uploaded beside it as '\(copy.name)'")
        } else {
            log.warning("uploads", "\(job.request.displayPath): changed on Drive since this copy was written (Drive has revision "
                        + "\(head.headRevisionId ?? "?"), this copy was based on \(job.request.baseRevision ?? job.request.baseMD5 ?? "its own create")); "
                        + "Drive's version is kept and this one is uploaded beside it as '\(copy.name)'")
        }
        let now = try current(seq)
        return (try createOurs(now, id: copy.id, name: copy.name, digest, running), true)
    }

    /// New content for an existing file, after checking what Drive holds (see the steps above).
    private func updateExisting(_ seq: UInt64, _ digest: Digest3, _ running: Running) throws -> (DriveFile, Bool) {
        let job = try current(seq)
        let head: DriveFile?
        do {
            head = try step(.other) { try backend.getFile(job.target) }
        } catch let failure as JobFailure where failure.isNotFound {
            head = nil
        }
        guard let head, !head.trashed else {
            return (try recreate(seq, wasTrashed: head != nil, digest, running), false)
        }
        if Self.holds(head, digest) { return (head, false) }
        if Self.conflicts(head, job.request), !Self.isCorruptLanding(head, of: job) {
            return try uploadBeside(seq, head: head, digest, running)
        }
        let session = sessionPath(job.target)
        running.sessionFiles.withLock { if !$0.contains(session) { $0.append(session) } }
        if let resumed = try resume(session, job, id: job.target, isUpdate: true, digest) { return (resumed, false) }
        let request = job.request
        let file = try step(.update) {
            try backend.updateContent(job.target, source: .hashedFile(path: job.contentPath, md5: digest.md5), mimeType: request.mimeType, name: request.name,
                                      modifiedTime: request.modifiedTime, sessionFile: session, appProperties: Self.properties(request))
        }
        return (file, false)
    }

    /// Journals that a try of the job landed with other bytes than were sent (Drive reported `md5`);
    /// returns how many tries of the job did so.
    ///
    /// Decision: a checksum mismatch is retried, never turned into a conflict. The revision Drive
    /// made of the wrong bytes is ours; without this record the next try would find Drive's head
    /// changed since the base and upload beside it as a conflicted copy, leaving the corrupt
    /// revision as the file. Journaled (not kept in memory) so that a restart in between still
    /// knows the revision for ours. Bounded: Drive that keeps storing other bytes fails the job
    /// for good after `maximumChecksumMismatches` tries, its content kept in `failed/`.
    /// (UploadQueueTests.testAChecksumMismatch…, testRepeatedChecksumMismatches….)
    private func noteCorruptLanding(_ seq: UInt64, md5: String) throws -> Int {
        try withLock { (s: inout Shared) throws -> Int in
            if s.crashed { throw Interruption.crashed }
            guard s.state.jobs[seq] != nil else { throw Interruption.cancelled }
            do throws(FilesystemError) { try Self.record(.corruptLanding(seq: seq, md5: md5), &s) } catch {
                throw JobFailure(message: "cannot journal a corrupt landing: \(error)", permanent: false, error: error)
            }
            return s.state.jobs[seq]?.corruptLandings?.count ?? 0
        }
    }

    /// Whether Drive's head is a revision an earlier try of this job left with the wrong bytes.
    static func isCorruptLanding(_ head: DriveFile, of job: UploadJob) -> Bool {
        guard let md5 = head.md5Checksum?.lowercased(), let corrupt = job.corruptLandings else { return false }
        return corrupt.contains(md5)
    }

    /// The file is gone from Drive (deleted, or trashed): it is created again under a new ID,
    /// journaled before the create.
    private func recreate(_ seq: UInt64, wasTrashed: Bool, _ digest: Digest3, _ running: Running) throws -> DriveFile {
        let job = try current(seq)
        // Gone because someone replaced it (another machine's save: a new file renamed over it,
        // which trashes it): the name is that file's now. Made again under the name, ours would be
        // a second file under it; it goes beside, as a conflicted copy, as for any conflict.
        if let holder = try nameHolder(of: job) { throw NameTakenMeanwhile(head: holder, wasTrashed: wasTrashed) }
        let newID = try step(.other) { try backend.reserveFileID() }
        try decide(.retarget(seq: seq, target: newID), seq: seq, point: .retargeted(job.fileID))
        log.warning("uploads", "\(job.request.displayPath): the file is gone from Drive (\(wasTrashed ? "trashed" : "deleted")); "
                    + "uploading it again as a new file (\(newID))")
        let now = try current(seq)
        return try createOurs(now, id: newID, name: now.request.name, digest, running)
    }

    /// Continues a persisted resumable session of this very content, if there is one; a session of
    /// other content (or one the client refuses) is removed and nil returned.
    private func resume(_ path: String, _ job: UploadJob, id: String, isUpdate: Bool, _ digest: Digest3) throws -> DriveFile? {
        guard LocalFiles.exists(path) else { return nil }
        guard let session = try? ResumableUploadSession.load(from: path), !session.sessionURI.isEmpty,
              session.sourcePath == job.contentPath, session.size == digest.size, session.md5 == digest.md5,
              session.fileId == id, session.isUpdate == isUpdate else {
            unlink(path)
            return nil
        }
        do {
            let file = try step(isUpdate ? .update : .create) { try backend.resumeUpload(from: path) }
            log.info("uploads", "\(job.request.displayPath): resumed its upload from byte \(session.confirmedBytes) of \(session.size)")
            return file
        } catch let failure as JobFailure where failure.drive?.status == 0 {
            unlink(path)
            return nil
        }
    }

    /// After landing: the metadata the job has now (it may have changed while it ran) is made
    /// Drive's, then the job ends with its `done` record.
    private func finishLanded(_ seq: UInt64, file landed: DriveFile, wasConflict: Bool, _ running: Running) throws {
        var file = landed
        while true {
            let job = try current(seq)
            let name = wasConflict ? (job.conflictCopy?.name ?? job.request.name) : job.request.name
            try makeQueuedFolders(holding: job.request.parentID, running)
            file = try syncMetadata(file, job.request, name: name)
            let outcome = try withLock { (s: inout Shared) throws -> UploadOutcome? in
                if s.crashed { throw Interruption.crashed }
                guard let now = s.state.jobs[seq] else { throw Interruption.cancelled }
                guard now.request == job.request else { return nil }
                let result = UploadJob.Landed(id: file.id, headRevisionId: file.headRevisionId, md5: file.md5Checksum, wasConflict: wasConflict)
                do throws(FilesystemError) { try Self.record(.done(seq: seq, landed: result), &s) } catch {
                    throw JobFailure(message: "cannot journal the upload's end: \(error)", permanent: false, error: error)
                }
                // Made again under a new ID: from this record on, the file's jobs are that ID's
                // (`UploadQueueState.movedTo`). This job still counts as running there, so that
                // none of them starts before the core heard of this landing.
                let key = s.state.currentID(now.fileID)
                if key != now.fileID { s.running[key] = running }
                // A success is kept only for a waiter of the file (answered below): anyone asking
                // later finds no job left, which means the same. One entry per file uploaded in the
                // process's life would only grow.
                if s.waiters.values.contains(where: { s.state.currentID($0.fileID) == key }) {
                    s.settled[key] = (seq, nil)
                } else {
                    s.settled[key] = nil
                }
                let size = running.size
                // A copy made from it now is written on what it landed as (a conflict: on what it was written on).
                let base = wasConflict ? (now.request.baseRevision, now.request.baseMD5) : (file.headRevisionId, file.md5Checksum)
                s.landing[key] = (now.contentPath, UploadProgress(path: now.request.displayPath, size: size, bytesDone: size), base)
                s.digests[seq] = nil
                if crashes(at: .done(now.fileID), &s) { throw Interruption.crashed }
                compactIfWanted(&s)
                lock.broadcast()
                return UploadOutcome(request: now.request, file: file, wasConflict: wasConflict, contentPath: now.contentPath)
            }
            guard let outcome else { continue }
            resolveWaiters()
            log.debug("uploads", "\(outcome.request.displayPath): job \(seq) landed as \(file.id) revision \(file.headRevisionId ?? "?")")
            withLock { $0.onFinished }?(outcome)
            withLock { s in
                let key = s.state.currentID(outcome.request.fileID)
                if s.landing[key]?.contentPath == outcome.contentPath { s.landing[key] = nil }
            }
            lock.broadcast()
            removeContent(outcome.contentPath)
            running.sessionFiles.withLock { $0 }.forEach { unlink($0) }
            return
        }
    }

    /// A job that started before its file was moved into a folder made here and not on Drive yet
    /// (its create a queued folder job, waiting its settle or a transfer thread): that folder,
    /// and the queued ones it goes in, are made first, outermost first, on this thread, as their
    /// jobs (journaled as they always are). Not waited for on another thread: every transfer
    /// thread could be such a job, and none would be left for the folders. One that runs on
    /// another thread already is waited for. Before, the move into a folder not made yet answered
    /// 404 and the upload failed for good, the file left under its old name (chaos, seed
    /// 480969916342, once a mkdir's create waits `changeSettle`).
    private func makeQueuedFolders(holding parentID: String, _ running: Running) throws {
        while true {
            lock.lock()
            if shared.crashed { lock.unlock(); throw Interruption.crashed }
            if shared.stopping { lock.unlock(); throw Interruption.stopped }
            if running.flag.isCancelled { lock.unlock(); throw Interruption.cancelled }
            // The outermost folder still to be made on the way up from `parentID` (a bound guards
            // against a cycle, which no journal makes).
            var id = parentID
            var outermost: UploadJob?
            for _ in 0..<256 {
                guard let folder = shared.state.jobs(of: id).first(where: \.makesFolder) else { break }
                outermost = folder
                id = folder.request.parentID
            }
            guard let folder = outermost else {
                lock.unlock()
                return
            }
            if shared.running[folder.fileID] != nil {
                _ = lock.wait(until: Date(timeIntervalSinceNow: 0.05))
                lock.unlock()
                continue
            }
            let made = Running(seq: folder.seq, size: 0, path: folder.request.displayPath, countsUntilTold: true)
            shared.running[folder.fileID] = made
            shared.settling[folder.seq] = nil
            lock.unlock()
            log.debug("uploads", "\(folder.request.displayPath): made now, before a file moved into it lands there")
            runChange(folder, made)
            withLock { s in
                for key in [folder.fileID, s.state.currentID(folder.fileID)] where s.running[key] === made {
                    s.running[key] = nil
                    s.held[key] = nil
                }
            }
            lock.broadcast()
            resolveWaiters()
            // A folder that could not be made (failed for good, or removed meanwhile) has no job
            // left: the move that follows says what Drive holds.
        }
    }

    /// One files.update (and a move when the parent differs) when Drive's metadata is not the request's.
    private func syncMetadata(_ file: DriveFile, _ request: UploadRequest, name: String) throws -> DriveFile {
        var file = file
        if request.parentID != "root", !file.parents.isEmpty, !file.parents.contains(request.parentID) {
            let id = file.id
            let old = file.parents.first
            let rename = file.name != name ? name : nil
            file = try step(.other) { try backend.move(id, addParent: request.parentID, removeParent: old, newName: rename, appProperties: nil) }
        }
        let missing = request.appProperties.filter { file.appProperties?[$0.key] != $0.value }
        let time = request.modifiedTime.flatMap { $0 != file.modifiedTime ? $0 : nil }
        if file.name != name || time != nil || !missing.isEmpty {
            let id = file.id
            let rename = file.name != name ? name : nil
            file = try step(.update) {
                try backend.updateMetadata(id, name: rename, mimeType: nil, modifiedTime: time, appProperties: missing.isEmpty ? nil : missing)
            }
        }
        return file
    }

    /// Ends a job that cannot succeed: the record first, then its content to `failed/` with a note
    /// (a crash in between is finished by the next start), then `onFinished` with the error.
    private func failForGood(_ seq: UInt64, _ failure: JobFailure, _ running: Running) throws {
        let ended = try withLock { (s: inout Shared) throws -> (UploadJob, String?)? in
            guard let job = s.state.jobs[seq], !s.crashed else { return nil }
            let preserve = LocalFiles.exists(job.contentPath) ? failedPath(for: job) : nil
            do throws(FilesystemError) {
                try Self.record(.failed(seq: seq, preservedAt: preserve, message: failure.message), &s)
            } catch {
                throw JobFailure(message: "cannot journal the failure: \(error)", permanent: false, error: error)
            }
            s.failedCount += 1
            s.lastError = "\(job.request.displayPath): \(failure.message)"
            s.settled[job.fileID] = (seq, failure.error)
            Self.boundSettled(&s)
            s.digests[seq] = nil
            if crashes(at: .failed(job.fileID), &s) { throw Interruption.crashed }
            compactIfWanted(&s)
            lock.broadcast()
            return (job, preserve)
        }
        guard let (job, preserved) = ended else { return }
        resolveWaiters()
        var kept = preserved
        if let preserved {
            do {
                try LocalFiles.move(job.contentPath, to: preserved)
                try LocalFiles.write("""
                    drivefs could not upload this file, and will not try again.
                    path: \(job.request.displayPath)
                    Drive file ID: \(job.request.fileID) (parent \(job.request.parentID), name \(job.request.name))
                    when: \(RFC3339.format(millis: Int64(time.now() * 1000)))
                    why: \(failure.message)

                    """, to: preserved + ".note")
            } catch {
                log.error("uploads", "\(job.request.displayPath): cannot keep its content in \(preserved) (\(error)); it stays at \(job.contentPath)")
                kept = LocalFiles.exists(job.contentPath) ? job.contentPath : nil
            }
        }
        log.error("uploads", "\(job.request.displayPath): upload failed for good: \(failure.message)"
                  + (kept.map { "; its content is kept in \($0)" } ?? ""))
        let outcome = UploadOutcome(request: job.request, file: nil, wasConflict: false, contentPath: job.contentPath,
                                    error: failure.error, preservedAt: kept)
        withLock { $0.onFinished }?(outcome)
        running.sessionFiles.withLock { $0 }.forEach { unlink($0) }
    }

    /// `failed/<seq>-<name>`, made unique (under the lock).
    private func failedPath(for job: UploadJob) -> String {
        let safe = String(job.request.name.map { $0 == "/" || $0 == "\0" ? "_" : $0 }.prefix(120))
        var path = "\(directory)/failed/\(job.seq)-\(safe)"
        var n = 2
        while LocalFiles.exists(path) || LocalFiles.exists(path + ".note") {
            path = "\(directory)/failed/\(job.seq)-\(n)-\(safe)"
            n += 1
        }
        return path
    }

    // MARK: Renames over a file, cut short

    /// A rename over a file that a crash cut short, where the queue held no job of the renamed
    /// file (`finishReplacements` took the others at opening): Drive says whether the renamed file
    /// holds the name. If it does, the replaced file goes (its jobs dropped, or Drive's copy
    /// trashed); if not (or the renamed file is gone), it stays. Then the job ends.
    private func runReplacement(_ first: UploadJob, _ running: Running) {
        var failures = 0
        while true {
            do {
                let job = try current(first.seq)
                guard let placement = job.replacedBy else { throw JobFailure(message: "no rename recorded", permanent: true, error: .ioError) }
                if failures == 0 { try point(.starting(job.fileID)) }
                var isPlaced = withLock { Self.placed(placement, $0.state) }
                if isPlaced == nil {
                    do {
                        let renamed = try step(.other) { try backend.getFile(placement.fileID) }
                        isPlaced = placement.isHeld(by: renamed)
                    } catch let failure as JobFailure where failure.isNotFound {
                        isPlaced = false
                    }
                }
                _ = try finishCutRename(job, isPlaced: isPlaced == true)
                return
            } catch {
                let failure = jobFailure(error, seq: first.seq)
                if failure.interruption != nil { return }
                failures += 1
                guard backOff(first, running, after: failures, failure.job, doing: "finishing a rename over it") else { return }
            }
        }
    }

    /// Ends the replacement `job` (a rename over a file that the last run's end cut short) as
    /// Drive or the journal decided: when the renamed file holds the name the replaced file goes
    /// (its queued jobs dropped, its removal queued), else it stays. Returns the removal job.
    func finishCutRename(_ job: UploadJob, isPlaced: Bool) throws -> UploadJob? {
        var dropped: [String] = []
        var decidedElsewhere = false
        let removal: UploadJob? = try withLock { (s: inout Shared) throws -> UploadJob? in
            if s.crashed { throw Interruption.crashed }
            // Decided meanwhile by the other path (the job's own run, or the mount's decision
            // after a poll): nothing more to record.
            guard s.state.jobs[job.seq] != nil else {
                decidedElsewhere = true
                return nil
            }
            let replaced = s.state.currentID(job.request.fileID)
            let runningSeq = s.running[replaced]?.seq
            if isPlaced {
                dropped = s.state.jobs(of: replaced)
                    .filter { $0.kind == .upload && $0.ready && $0.seq != runningSeq }.map(\.contentPath)
            }
            var records: [UploadJournal.Record] = []
            if isPlaced { records.append(Self.removalRecord(of: job, s.state, deletes: job.deletes)) }
            records.append(.done(seq: job.seq, landed: nil))
            for record in records {
                do throws(FilesystemError) { try Self.record(record, &s) } catch {
                    throw JobFailure(message: "cannot journal the end of a rename: \(error)", permanent: false, error: error)
                }
            }
            if let running = s.running[replaced], isPlaced { running.flag.cancel() }
            if crashes(at: .replaced(job.request.fileID), &s) { throw Interruption.crashed }
            lock.broadcast()
            return isPlaced ? s.state.jobs(of: replaced).last : nil
        }
        if decidedElsewhere { return nil }
        dropped.forEach(removeContent)
        log.info("uploads", "\(job.request.displayPath): a rename over it was cut short (by the last run's end, or an answer lost); "
                 + (removal != nil ? "the renamed file holds the name, so this one goes" : "it was not done, so this one stays"))
        return removal
    }

    /// Decides, before the mount serves, the renames over a file that the last run's end cut short
    /// and the journal alone could not decide (`finishReplacements`): Drive is asked whether the
    /// renamed file holds the name. Left as jobs, they were decided after the mount had served
    /// both files under the name for a while, and a program that wrote the name could write the
    /// file that then went: its edit was uploaded beside as a conflicted copy, and the name held
    /// the other file's bytes (chaos finding 22). Each question is bounded by `context`'s deadline;
    /// one Drive does not answer in time stays a job, decided when Drive answers (the mount shows
    /// both files meanwhile). Returns the Drive IDs of the files that now go.
    public func decideCutRenames(_ context: RequestContext) -> [String] {
        // Not one a transfer runs now (`runReplacement` decides it).
        let cut = withLock { s in
            let running = Set(s.running.values.map(\.seq))
            return s.state.ordered.filter { $0.kind == .replacement && !running.contains($0.seq) }
        }
        var removed: [String] = []
        for job in cut {
            guard let placement = job.replacedBy else { continue }
            let isPlaced: Bool
            do {
                let renamed = try context.scope { try backend.getFile(withLock { $0.state.currentID(placement.fileID) }) }
                isPlaced = placement.isHeld(by: renamed)
            } catch DriveError.notFound {
                isPlaced = false
            } catch {
                log.warning("uploads", "\(job.request.displayPath): a rename over it was cut short (by the last run's end, or an "
                            + "answer lost), and Drive cannot say yet whether it was done (\(error)); decided when Drive answers")
                continue
            }
            do {
                if let removal = try finishCutRename(job, isPlaced: isPlaced) { removed.append(removal.target) }
            } catch {
                log.warning("uploads", "\(job.request.displayPath): cannot journal the end of a rename over it (\(error)); decided later")
            }
        }
        return removed
    }

    // MARK: Changes made offline

    /// A `change` job: the folder made (`createFolder` under its reserved ID: a retry, or a
    /// restart after a landing whose record a crash lost, finds it made), or the item's name,
    /// folder, time and properties set in one files.update (a move that also sets a time takes a
    /// second). Conflicts: an item gone from Drive meanwhile drops the change (Drive's removal
    /// stands); one moved elsewhere on Drive meanwhile is moved from where it is now (one
    /// files.get first); otherwise the change is applied over Drive's (the later one wins).
    private func runChange(_ first: UploadJob, _ running: Running) {
        var failures = 0
        while true {
            do {
                let job = try current(first.seq)
                if failures == 0 { try point(.starting(job.fileID)) }
                let file = try sendChange(job)
                try point(.landed(job.fileID))
                let outcome = try withLock { (s: inout Shared) throws -> UploadOutcome in
                    if s.crashed { throw Interruption.crashed }
                    do throws(FilesystemError) { try Self.record(.done(seq: first.seq, landed: nil), &s) } catch {
                        throw JobFailure(message: "cannot journal the change: \(error)", permanent: false, error: error)
                    }
                    if crashes(at: .done(job.fileID), &s) { throw Interruption.crashed }
                    s.landingChanges[job.fileID, default: 0] += 1
                    compactIfWanted(&s)
                    lock.broadcast()
                    return UploadOutcome(request: job.request, file: file, wasConflict: false, contentPath: "")
                }
                log.debug("uploads", "\(job.request.displayPath): change job \(first.seq) " + (file == nil ? "dropped" : "landed"))
                withLock { $0.onFinished }?(outcome)
                withLock { s in
                    if let n = s.landingChanges[job.fileID] { s.landingChanges[job.fileID] = n > 1 ? n - 1 : nil }
                }
                return
            } catch {
                let failure = jobFailure(error, seq: first.seq)
                if failure.interruption != nil { return }
                if failure.job.permanent && endForGood(first, failure.job, "cannot change it on Drive") {
                    log.error("uploads", "\(first.request.displayPath): what was changed offline cannot be made on Drive: \(failure.job.message)")
                    withLock { $0.onFinished }?(UploadOutcome(request: first.request, file: nil, wasConflict: false, contentPath: "",
                                                              error: failure.job.error))
                    return
                }
                failures += 1
                guard backOff(first, running, after: failures, failure.job, doing: "changing it on Drive") else { return }
            }
        }
    }

    /// The requests of one change job; nil when the item was gone from Drive (the change dropped).
    private func sendChange(_ job: UploadJob) throws -> DriveFile? {
        let request = job.request
        let properties = request.appProperties.isEmpty ? nil : request.appProperties
        if job.makesFolder {
            return try step(.create) {
                try backend.createFolder(name: request.name, parent: request.parentID, modifiedTime: request.modifiedTime,
                                         id: job.target, appProperties: properties)
            }
        }
        let places = job.change?.places ?? false
        do {
            if places, let leaves = job.change?.leaves, leaves != request.parentID {
                var file: DriveFile
                do {
                    file = try step(.other) {
                        try backend.move(job.target, addParent: request.parentID, removeParent: leaves, newName: request.name,
                                         appProperties: properties)
                    }
                } catch let failure as JobFailure where failure.drive?.reason == "cannotAddParent" {
                    // Moved elsewhere on Drive meanwhile: taken from where it is now.
                    let head = try step(.other) { try backend.getFile(job.target) }
                    log.warning("uploads", "\(request.displayPath): moved on Drive since it was moved here offline; "
                                + "the move made here wins")
                    file = try step(.other) {
                        try backend.move(job.target, addParent: request.parentID, removeParent: head.parents.first,
                                         newName: request.name, appProperties: properties)
                    }
                }
                if let time = request.modifiedTime {
                    file = try step(.other) { try backend.updateMetadata(job.target, name: nil, mimeType: nil, modifiedTime: time, appProperties: nil) }
                }
                return file
            }
            return try step(.other) {
                try backend.updateMetadata(job.target, name: places ? request.name : nil, mimeType: nil, modifiedTime: request.modifiedTime,
                                           appProperties: properties)
            }
        } catch let failure as JobFailure where failure.isNotFound {
            log.warning("uploads", "\(request.displayPath): removed from Drive since it was changed here offline; the change is dropped")
            return nil
        }
    }

    // MARK: Removals

    private func runRemoval(_ first: UploadJob, _ running: Running) {
        var failures = 0
        while true {
            do {
                let job = try current(first.seq)
                if failures == 0 { try point(.starting(job.fileID)) }
                do {
                    if job.deletes {
                        try step(.other) { try backend.delete(job.target) }
                    } else {
                        _ = try step(.other) { try backend.trash(job.target) }
                    }
                } catch let failure as JobFailure where failure.isNotFound {
                    // Nothing there: the upload never landed, or the file went already.
                }
                try withLock { (s: inout Shared) throws in
                    if s.crashed { throw Interruption.crashed }
                    do throws(FilesystemError) { try Self.record(.done(seq: first.seq, landed: nil), &s) } catch {
                        throw JobFailure(message: "cannot journal the removal: \(error)", permanent: false, error: error)
                    }
                    if crashes(at: .removed(job.fileID), &s) { throw Interruption.crashed }
                    lock.broadcast()
                }
                return
            } catch {
                let failure = jobFailure(error, seq: first.seq)
                if failure.interruption != nil { return }
                if failure.job.permanent && endForGood(first, failure.job, "cannot remove it from Drive") {
                    log.error("uploads", "\(first.request.displayPath): cannot remove it from Drive: \(failure.job.message)")
                    return
                }
                failures += 1
                guard backOff(first, running, after: failures, failure.job, doing: "removing it from Drive") else { return }
            }
        }
    }

    // MARK: Helpers

    typealias Digest3 = (size: Int64, mtime: Int64, md5: String)

    /// The job as journaled now; throws when it must stop (the queue stops or crashed, or the job was cancelled).
    func current(_ seq: UInt64) throws(Interruption) -> UploadJob {
        try withLock { s throws(Interruption) in
            if s.crashed { throw .crashed }
            if s.stopping { throw .stopped }
            guard let job = s.state.jobs[seq] else { throw .cancelled }
            return job
        }
    }

    private func point(_ point: CommitPoint) throws(Interruption) {
        try withLock { s throws(Interruption) in if crashes(at: point, &s) { throw .crashed } }
    }

    /// Journals a decision about a running job, if it still runs.
    private func decide(_ record: UploadJournal.Record, seq: UInt64, point: CommitPoint) throws {
        try withLock { (s: inout Shared) throws in
            if s.crashed { throw Interruption.crashed }
            guard s.state.jobs[seq] != nil else { throw Interruption.cancelled }
            do throws(FilesystemError) { try Self.record(record, &s) } catch {
                throw JobFailure(message: "cannot journal a decision: \(error)", permanent: false, error: error)
            }
            if crashes(at: point, &s) { throw Interruption.crashed }
        }
    }

    /// The content's size, mtime and md5, measured once per job (a job's content does not change
    /// while the queue owns it). Hashing a large file takes a while (minutes for a sparse
    /// terabyte: its holes are not read, but md5 takes every zero): `status` shows the phase and
    /// the bytes hashed, and a stop, a crash or a cancel (the job's flag) cuts it short.
    private func contentDigest(_ job: UploadJob, _ running: Running) throws -> Digest3 {
        var info = stat()
        guard stat(job.contentPath, &info) == 0 else {
            let e = errno
            throw JobFailure(message: "its content file \(job.contentPath) cannot be read (\(String(cString: strerror(e))))",
                             permanent: true, error: FilesystemError(errno: e))
        }
        let mtime = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        if let known = withLock({ $0.digests[job.seq] }), known.size == Int64(info.st_size), known.mtime == mtime { return known }
        let hook = withLock { $0.hashingHook }
        running.progress.withLock { $0 = (.hashing, 0) }
        do {
            let measured = try LocalFiles.digest(job.contentPath) { hashed in
                running.progress.withLock { $0.hashed = hashed }
                hook?(hashed)
                return !running.flag.isCancelled
            }
            let digest: Digest3 = (measured.size, measured.mtimeNanos, measured.md5)
            withLock { $0.digests[job.seq] = digest }
            return digest
        } catch where error.errno == EINTR && running.flag.isCancelled {
            // Stopped while hashing: the queue stops or crashed, or the job was cancelled.
            _ = try current(job.seq)
            throw JobFailure(message: "hashing its content was interrupted", permanent: false, error: error)
        } catch {
            throw JobFailure(message: "its content file \(job.contentPath) cannot be read (\(error))", permanent: error.errno == ENOENT,
                             error: error)
        }
    }

    /// Runs a backend call, turning its failure into a `JobFailure` (or an `Interruption` when the
    /// call was cut short because the job must stop).
    private func step<T>(_ step: Step, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as DriveError {
            throw JobFailure(error, in: step)
        }
    }

    /// Failures that another try cannot mend (docs/errors.md): Drive's refusals
    /// (`DriveError.isRefusal`), but a 404 of an update (the file gone since it was read: the next
    /// attempt finds it gone and makes it again), and a local copy that cannot be read.
    static func isPermanent(_ error: DriveError, in step: Step) -> Bool {
        switch error {
        case .localFile: return true
        case .notFound: return step != .update
        default: return error.isRefusal
        }
    }

    /// Answers no retry mends until the user acts (docs/errors.md): a full Drive
    /// (`storageQuotaExceeded`, ENOSPC) or another quota of the account (EDQUOT), a grant that is
    /// revoked or otherwise refused after a refresh (`unauthorized`, EACCES). Not permanent either:
    /// the user may free space or run `drivefs auth login`, so the job stays queued and is tried
    /// again with backoff, while whoever waits for the file (`whenUploaded`) hears the errno at once.
    static func holdsForNow(_ error: DriveError) -> Bool {
        switch error {
        case .quotaExceeded: return true
        // A revoked or invalid grant (no token refresh mends it); a plain 401 (an access token that
        // expired) is mended by the next refresh and is not the user's to act on.
        case .unauthorized(let info): return info.reason == "invalid_grant"
        default: return false
        }
    }

    private struct Classified {
        var job: JobFailure
        var interruption: Interruption?
    }

    private func jobFailure(_ error: any Error, seq: UInt64) -> Classified {
        if let interruption = error as? Interruption {
            return Classified(job: JobFailure(message: "", permanent: false, error: .ioError), interruption: interruption)
        }
        var failure: JobFailure?
        if let error = error as? JobFailure { failure = error }
        if let error = error as? DriveError { failure = JobFailure(error, in: .other) }
        if let failure {
            // A call cut short by the job's flag: the queue stops or crashed, or the job was cancelled.
            if case .cancelled? = failure.drive {
                do { _ = try current(seq) } catch { return Classified(job: failure, interruption: error) }
            }
            return Classified(job: failure)
        }
        if let error = error as? FilesystemError {
            return Classified(job: JobFailure(message: "local failure: \(error)", permanent: false, error: error))
        }
        return Classified(job: JobFailure(message: "\(error)", permanent: false, error: .ioError))
    }

    /// Journals the end of a change, removal or replacement job that no retry mends (`what`: the
    /// status's words for it); false when the journal cannot take it (the job is tried again).
    private func endForGood(_ first: UploadJob, _ failure: JobFailure, _ what: String) -> Bool {
        withLock { s -> Bool in
            guard (try? Self.record(.failed(seq: first.seq, preservedAt: nil, message: failure.message), &s)) != nil else {
                return false
            }
            s.failedCount += 1
            s.lastError = "\(first.request.displayPath): \(what): \(failure.message)"
            _ = crashes(at: .failed(first.fileID), &s)
            lock.broadcast()
            return true
        }
    }

    /// After the `failures`th failed try of a job (`doing`: the log's words for it), says so and
    /// waits out the backoff; false when the job must stop meanwhile.
    private func backOff(_ first: UploadJob, _ running: Running, after failures: Int, _ failure: JobFailure, doing: String) -> Bool {
        let delay = backoff(after: failures, retryAfter: failure.retryAfter)
        let text = "\(first.request.displayPath): \(doing): \(failure.message); trying again in \(Self.seconds(delay))"
        withLock { $0.lastError = text }
        log.warning("uploads", text)
        do { try wait(delay, seq: first.seq, running) } catch { return false }
        return true
    }

    func backoff(after failures: Int, retryAfter: Double?) -> Double {
        let exponential = min(maximumBackoff, initialBackoff * pow(2, Double(min(failures - 1, 30))))
        return max(exponential, min(retryAfter ?? 0, maximumBackoff))
    }

    /// Waits `seconds` on the queue's clock, stopping when the job must stop. No polling: the
    /// sleep is woken by what ends or shortens it, and looks again at each wake.
    /// - the job's flag: the queue stops or crashed, or the job was cancelled (`current` throws);
    /// - Drive coming back (the poller's probe got an answer) ends a backoff at once: what was
    ///   held while offline goes now, not up to `maximumBackoff` later;
    /// - a drain beginning (an unmount): no backoff lasts longer than `drainingBackoff`.
    private func wait(_ seconds: Double, seq: UInt64, _ running: Running) throws(Interruption) {
        let wakeup = Wakeup()
        let reachability = backend.reachability
        let cancelled = running.flag.onCancel { wakeup.wake() }
        let back = reachability?.comeback.add { wakeup.wake() }
        let drain = drainStarts.add { wakeup.wake() }
        defer {
            running.flag.remove(cancelled)
            reachability?.comeback.remove(back)
            drainStarts.remove(drain)
        }
        let comebacks = reachability?.comebacks
        let started = time.now()
        while true {
            _ = try current(seq)
            if let reachability, reachability.comebacks != comebacks { break }
            var end = started + seconds
            if draining.withLock({ $0 > 0 }) { end = min(end, started + Self.drainingBackoff) }
            // A millisecond's tolerance: a clock's rounding never leaves a sleep too short to move it.
            let left = end - time.now()
            if left <= 0.001 { break }
            time.sleep(left, until: wakeup)
        }
        _ = try current(seq)
    }

    func sessionPath(_ id: String) -> String { "\(directory)/sessions/\(id).json" }

    static func properties(_ request: UploadRequest) -> [String: String]? {
        request.appProperties.isEmpty ? nil : request.appProperties
    }

    /// Whether Drive's file already holds exactly this content.
    static func holds(_ file: DriveFile, _ digest: Digest3) -> Bool {
        guard let md5 = file.md5Checksum else { return false }
        return md5.lowercased() == digest.md5 && (file.size == nil || file.size == digest.size)
    }

    /// Whether Drive's head is not what the local copy was based on (and differs from it in content).
    static func conflicts(_ head: DriveFile, _ request: UploadRequest) -> Bool {
        if let base = request.baseRevision, let revision = head.headRevisionId, revision != base {
            if let baseMD5 = request.baseMD5, let md5 = head.md5Checksum, md5.lowercased() == baseMD5.lowercased() { return false }
            return true
        }
        if request.baseRevision == nil, let baseMD5 = request.baseMD5, let md5 = head.md5Checksum {
            return md5.lowercased() != baseMD5.lowercased()
        }
        return false
    }

    /// `name (conflicted copy YYYY-MM-DD HHMMSS).ext`: the time in UTC, the last extension kept
    /// (none for a name that starts with its only dot, like `.bashrc`).
    public static func conflictName(_ name: String, at seconds: Double) -> String {
        var t = time_t(seconds.rounded(.down))
        var parts = tm()
        gmtime_r(&t, &parts)
        let stamp = String(format: "%04d-%02d-%02d %02d%02d%02d", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                           Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
        let tag = " (conflicted copy \(stamp))"
        if let dot = name.lastIndex(of: "."), dot != name.startIndex, name.index(after: dot) != name.endIndex {
            return String(name[..<dot]) + tag + String(name[dot...])
        }
        return name + tag
    }

    static func seconds(_ value: Double) -> String { String(format: "%.0f s", value) }
}

extension UploadJob.Placement {
    /// Whether Drive's `file` (the renamed one) holds this place.
    func isHeld(by file: DriveFile) -> Bool { !file.trashed && file.name == name && file.parents.contains(parentID) }
}
