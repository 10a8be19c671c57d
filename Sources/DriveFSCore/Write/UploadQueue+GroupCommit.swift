import DriveSupport
import Foundation

/// Group commit: closes that arrive together share one journal flush (docs/architecture.md,
/// "Uploads and the journal", "Group commit").
///
/// Contracts (`UploadQueueing.commit`'s, kept for each commit):
/// - A commit returns only once its content and its record are durable: the content file's
///   fdatasync (its own, never shared: made by the closer before it joins the group), its staging
///   directory's fsync, then the journal's fdatasync of a write that holds its record.
/// - Leader and followers: a commit joins the intake (`Intake.pending`); the first closer to find
///   no group being written becomes the leader and takes every commit waiting then, the others wait
///   on `intake` for the answer of the group that held theirs, never by sleeping. The leader fsyncs
///   each staging directory of its group once, then, under `lock`, makes the group's records
///   against the state as it is, writes them with one pwrite and one fdatasync
///   (`UploadJournal.append(frames:)`), and applies them in order: records are in the file in the
///   order they are applied, as every other record is. The leader flushes at once: there is no
///   timer and no wait for company; one closer alone pays what a commit always cost. Closers that
///   came while a group was written form the next group.
/// - A failed flush (or directory fsync) fails every commit whose record it was to make durable,
///   each with the errno; the journal is cut back to where it was before the group (its
///   contract) and nothing of the group is applied: each of those commits counts as never made.
/// - Two commits of one file in one group: the later waits for the next group (its record depends
///   on the earlier's), so records of a group are of distinct files and are made against the
///   same state, their seqs in order.
/// - Lock order: a closer holds its file's `LocalContent.lock` (the core's `commit`) and takes
///   `intake`, a leaf; a waiting closer holds nothing another closer's group needs. The leader
///   lets `intake` go before it takes `lock`.
extension UploadQueue {
    /// A commit waiting in the intake.
    struct PendingCommit {
        let ticket: UInt64
        let request: UploadRequest
        let contentPath: String
        let ready: Bool
        let settles: Bool

        var directory: String { (contentPath as NSString).deletingLastPathComponent }
    }

    /// Under `intake`.
    struct Intake {
        /// Commits no group has taken yet, in arrival order.
        var pending: [PendingCommit] = []
        /// A leader is writing a group.
        var leading = false
        /// Answers of commits whose group ended, until their closer takes them.
        var answers: [UInt64: Result<Void, FilesystemError>] = [:]
        var nextTicket: UInt64 = 1
        /// Flushes the commits made (tests): content files' fdatasyncs, staging directories' fsyncs.
        var contentSyncs = 0
        var directorySyncs = 0
    }

    /// What one group did.
    struct GroupOutcome {
        var answers: [UInt64: Result<Void, FilesystemError>] = [:]
        /// Commits left for the next group (a second commit of a file in this one).
        var deferred: [PendingCommit] = []
        var directorySyncs = 0
    }

    public func commit(_ asked: UploadRequest, contentPath: String, ready: Bool, settles: Bool) throws(FilesystemError) {
        // One per file, and before joining: the group's flush then covers content already durable.
        try LocalFiles.syncFile(contentPath)
        intake.lock()
        intakeState.contentSyncs += 1
        let ticket = intakeState.nextTicket
        intakeState.nextTicket += 1
        intakeState.pending.append(PendingCommit(ticket: ticket, request: asked, contentPath: contentPath, ready: ready,
                                                 settles: settles))
        while true {
            if let answer = intakeState.answers.removeValue(forKey: ticket) {
                intake.unlock()
                return try answer.get()
            }
            if !intakeState.leading {
                intakeState.leading = true
                let group = intakeState.pending
                intakeState.pending = []
                intake.unlock()
                let outcome = commitGroup(group)
                intake.lock()
                intakeState.leading = false
                intakeState.pending = outcome.deferred + intakeState.pending
                intakeState.answers.merge(outcome.answers) { $1 }
                intakeState.directorySyncs += outcome.directorySyncs
                intake.broadcast()
                continue
            }
            intake.wait()
        }
    }

    /// Makes `group` durable and applies it (the leader, no lock held; see the contracts).
    private func commitGroup(_ group: [PendingCommit]) -> GroupOutcome {
        var outcome = GroupOutcome()
        // The staging directories' entries of the content files, once per directory.
        var failedDirectories: [String: FilesystemError] = [:]
        for directory in Set(group.map(\.directory)) {
            outcome.directorySyncs += 1
            do throws(FilesystemError) { try LocalFiles.syncDirectory(directory) } catch { failedDirectories[directory] = error }
        }
        var live: [PendingCommit] = []
        for commit in group {
            if let error = failedDirectories[commit.directory] { outcome.answers[commit.ticket] = .failure(error) } else { live.append(commit) }
        }
        guard !live.isEmpty else { return outcome }

        struct Planned {
            let commit: PendingCommit
            let request: UploadRequest
            let record: UploadJournal.Record
            let frame: [UInt8]
            let replaces: UploadJob?
            let rebasedOn: UploadJob.Landed?
            let seq: UInt64
        }
        var superseded: [String] = []
        lock.lock()
        defer {
            lock.unlock()
            superseded.forEach(removeContent)
        }
        let refusal: FilesystemError? = shared.crashed ? FilesystemError(errno: EIO) : shared.journalFault
        if let refusal {
            for commit in live { outcome.answers[commit.ticket] = .failure(refusal) }
            return outcome
        }
        var planned: [Planned] = []
        var files: Set<String> = []
        var seq = shared.state.nextSeq
        for commit in live {
            let request = Self.current(commit.request, shared.state)
            guard files.insert(request.fileID).inserted else {
                outcome.deferred.append(commit)
                continue
            }
            let jobs = shared.state.jobs(of: request.fileID)
            let runningSeq = shared.running[request.fileID]?.seq
            var replaces: UploadJob?
            if let last = jobs.last, last.kind == .upload, last.seq != runningSeq, !shared.pinned.contains(last.seq) {
                replaces = last
            }
            var rebasedOn: UploadJob.Landed?
            if let last = shared.state.landed[request.fileID], last.isStale(request), !jobs.contains(where: { $0.seq != replaces?.seq }) {
                // Based on what Drive held before our uploads of this file landed: write over ours.
                rebasedOn = last.landed
            }
            let record = UploadJournal.Record.commit(seq: seq, request: request, contentPath: commit.contentPath, ready: commit.ready,
                                                     replaces: replaces?.seq, rebasedOn: rebasedOn)
            let frame: [UInt8]
            do throws(FilesystemError) { frame = try UploadJournal.frame(record) } catch {
                outcome.answers[commit.ticket] = .failure(error)
                continue
            }
            planned.append(Planned(commit: commit, request: request, record: record, frame: frame, replaces: replaces,
                                   rebasedOn: rebasedOn, seq: seq))
            seq += 1
        }
        guard !planned.isEmpty else { return outcome }
        do throws(FilesystemError) { try shared.journal.append(frames: planned.map(\.frame)) } catch {
            // Cut back (the journal's contract): none of the group was made.
            for p in planned { outcome.answers[p.commit.ticket] = .failure(error) }
            return outcome
        }
        for p in planned {
            shared.state.apply(p.record)
            if let replaces = p.replaces, replaces.ready, replaces.contentPath != p.commit.contentPath { superseded.append(replaces.contentPath) }
            if let replaces = p.replaces { shared.settling[replaces.seq] = nil }
            if p.commit.ready && (p.request.isNew || p.commit.settles) && newFileSettle > 0 {
                shared.settling[p.seq] = Self.uptime + newFileSettle
                if !p.request.isNew { shared.settlingUntilClosed.insert(p.seq) }
            }
            log.debug("uploads", "\(p.request.displayPath): job \(p.seq) committed\(p.commit.ready ? "" : " (still open)"), content \(p.commit.contentPath)"
                      + (p.replaces.map { ", replacing job \($0.seq)" } ?? "")
                      + (p.rebasedOn.map { ", over our upload \($0.headRevisionId ?? "?")" } ?? "")
                      + (planned.count > 1 ? " (one flush for \(planned.count))" : ""))
        }
        if shared.settlingUntilClosed.count > 256 { shared.settlingUntilClosed.formIntersection(shared.settling.keys) }
        // The commit points, in record order: a crash at one ends the process before the later
        // closes return (their records are durable: the next start has them, as after any crash
        // after a record and before its close returned).
        for p in planned {
            outcome.answers[p.commit.ticket] = crashes(at: .committed(p.request.fileID), &shared) ? .failure(FilesystemError(errno: EIO)) : .success(())
        }
        compactIfWanted(&shared)
        lock.broadcast()
        return outcome
    }

    // MARK: Test seams

    /// Commits waiting for a group (not yet taken by a leader).
    var pendingCommits: Int {
        intake.lock()
        defer { intake.unlock() }
        return intakeState.pending.count
    }

    /// Flushes commits made so far: content files' fdatasyncs, staging directories' fsyncs, and
    /// the journal's fdatasyncs (every append's, commits' or not).
    var commitFlushes: (contents: Int, directories: Int, journal: Int) {
        let journal = withLock { $0.journal.appendSyncs }
        intake.lock()
        defer { intake.unlock() }
        return (intakeState.contentSyncs, intakeState.directorySyncs, journal)
    }

    /// Called under `lock` before each journal fdatasync (`UploadJournal.syncHook`).
    func setJournalSyncHook(_ hook: ((Int64) -> Int32?)?) { withLock { $0.journal.syncHook = hook } }
}
