import DriveSupport

/// One file's sync state as `user.drivefs.state` shows it (docs/semantics.md, "Offline").
public enum SyncState: String, Sendable, CaseIterable {
    /// On Drive as shown; some or all of its bytes are local (or it has none).
    case synced
    /// Written here, not queued for upload yet (still open for writing, or journaled not ready).
    case local
    /// Closed and queued for upload.
    case queued
    /// Being sent.
    case uploading
    /// Its last upload found Drive's version changed meanwhile: a conflicted copy was made beside it.
    case conflict
    /// Its last upload failed for good (`user.drivefs.error` says why; the content is kept).
    case failed
    /// Pinned, and every byte of its current version is local.
    case offline
    /// Nothing of its content is local.
    case cloud
}

/// How each file's last upload ended, when that is worth showing (a conflict, a failure for
/// good), by Drive ID: what `SyncState` needs that the queue forgets once a job ended. An upload
/// that lands cleanly later clears it. Its lock is a leaf.
final class UploadVerdicts: Sendable {
    enum Verdict: Sendable, Equatable {
        case conflict
        case failed(String)
    }

    private let verdicts = Locked<[String: Verdict]>([:])

    func note(_ outcome: UploadOutcome) {
        let verdict: Verdict? = outcome.error.map { .failed("\($0)") } ?? (outcome.wasConflict ? .conflict : nil)
        verdicts.withLock { $0[outcome.request.fileID] = verdict }
    }

    func verdict(of fileID: String) -> Verdict? { verdicts.withLock { $0[fileID] } }
}
