import DriveClient
import DriveSupport
import Foundation

/// Reads the change feed every `interval` seconds (and once at start), applies each page to the
/// node table, passes what changed to the kernel and the block cache, and saves the index when
/// something changed, at most once per `saveInterval` (the index of a large drive is hundreds of
/// MB; any save is consistent with its token, so a later one only means more changes to replay
/// after a crash), and always at unmount and when the whole-drive index is built.
///
/// A failed poll is logged and retried at the next interval from the same token: nothing is
/// skipped. Polls never overlap (`pollLock`).
final class ChangePoller: Sendable {
    private let backend: any DriveBackend
    private let table: NodeTable
    private let invalidator: Invalidator
    private let index: IndexStore
    private let interval: Double
    private let token: Locked<String>
    private let pollLock = NSLock()
    /// The polling thread (`start`, `stop`).
    private let loop: BackgroundLoop

    /// When the feed was last read in full (`time.now()`), and why the polls since failed: what
    /// `drivefs status` shows as the feed's lag.
    struct Health: Sendable {
        var lastSuccess: Double?
        var lastFailure: String?
    }
    private let health = Locked(Health())
    private let afterPoll = Locked<(@Sendable () -> Void)?>(nil)
    private let drivesChanged = Locked<(@Sendable ([String]) -> Void)?>(nil)
    private let time: any TimeSource

    init(backend: any DriveBackend, table: NodeTable, invalidator: Invalidator, index: IndexStore, token: String,
         interval: Double, time: any TimeSource = SystemTimeSource()) {
        self.time = time
        self.backend = backend
        self.table = table
        self.invalidator = invalidator
        self.index = index
        self.token = Locked(token)
        self.interval = max(0.1, interval)
        loop = BackgroundLoop(name: "drivefs-changes", interval: self.interval)
    }

    var currentToken: String { token.withLock { $0 } }
    var pollInterval: Double { interval }
    var currentHealth: Health { health.withLock { $0 } }
    /// Seconds since the last successful poll (nil before the first one).
    var lag: Double? { currentHealth.lastSuccess.map { max(0, time.now() - $0) } }
    private let completed = Locked(0)
    /// Seconds between two saves of the index after polls that changed something.
    static let saveInterval = 60.0
    /// When the index was last saved (nil: never in this run), and whether changes are unsaved.
    private let saved = Locked<(at: Double?, dirty: Bool)>((nil, false))
    /// Polls finished (successfully or not) since start.
    var completedPolls: Int { completed.withLock { $0 } }

    /// `pollFirst`: read the feed at once (false: the caller just did, `catchUp`), then every `interval`.
    func start(pollFirst: Bool = true) {
        // The first run only packs when the caller just read the feed.
        let skip = Locked(!pollFirst)
        loop.start(runFirst: true) { [self] in
            if !skip.withLock({ s in defer { s = false }; return s }) {
                do { try pollOnce() } catch {
                    // Offline, the reachability said so once; each poll is only its probe.
                    if backend.reachability?.isOffline == true {
                        Log.shared.debug("changes", "reading the change feed failed: \(error)")
                    } else {
                        Log.shared.warning("changes", "reading the change feed failed: \(error)")
                    }
                }
            }
            // Folders the last forgets queued and left: packed again between polls, a batch at a time.
            table.packUnneededFolders()
            completed.withLock { $0 += 1 }
        }
    }

    func stop() { loop.stop() }

    /// Reads the feed to its end before the mount serves (a start over a saved index: what changed
    /// since it was saved, by others or by this machine before a crash, must not be served from it),
    /// within `seconds`. False when Drive could not be read in time: the index is served as saved,
    /// and the next polls catch up (docs/semantics.md).
    func catchUp(within seconds: Double) -> Bool {
        do {
            try pollOnce(context: RequestContext(priority: .interactive, deadline: time.now() + seconds))
            return true
        } catch {
            Log.shared.warning("changes", "reading Drive's changes since the saved index failed (\(error)); serving the index as "
                               + "it was saved until the change feed can be read")
            return false
        }
    }

    /// Called after each poll that read the feed to its end (on the polling thread; it must not
    /// wait for a poll).
    func whenPolled(_ action: @escaping @Sendable () -> Void) { afterPoll.withLock { $0 = action } }

    /// Called with the shared drives of each page that carries `changeType: drive` changes (on the
    /// polling thread; it must not wait for a poll).
    func whenDrivesChange(_ action: @escaping @Sendable ([String]) -> Void) { drivesChanged.withLock { $0 = action } }

    /// Reads every page of changes since the current token.
    func pollOnce(context: RequestContext = RequestContext(priority: .background)) throws {
        pollLock.lock()
        defer { pollLock.unlock() }
        do {
            try readFeed(context)
            table.confirmRestoredListings()
            let now = time.now()
            health.withLock { $0 = Health(lastSuccess: now, lastFailure: nil) }
            afterPoll.withLock { $0 }?()
        } catch {
            health.withLock { $0.lastFailure = "\(error)" }
            throw error
        }
    }

    /// pollOnce's work, under `pollLock`.
    private func readFeed(_ context: RequestContext) throws {
        var changed = 0
        let firstRead = table.generation
        try context.scope {
            var pages = 0
            while pages < 10_000 {
                pages += 1
                let page: DriveChangePage
                let readFrom = table.generation
                do {
                    page = try backend.changes(pageToken: token.withLock { $0 }, pageSize: 1000)
                } catch let error as DriveError where Self.isTokenRefused(error) {
                    // The saved position is no longer valid (too old, another server): start the
                    // feed afresh and list every folder again when it is next used, since changes
                    // between the two positions can no longer be read.
                    let fresh = try backend.changesStartPageToken()
                    Log.shared.warning("changes", "the change feed refused its saved position (\(error)); "
                                       + "starting again from now and listing folders anew")
                    token.withLock { $0 = fresh }
                    table.distrustAllListings()
                    changed += 1
                    break
                }
                if !page.driveChanges.isEmpty {
                    Log.shared.info("changes", "the shared drives changed: \(page.driveChanges.joined(separator: ", "))")
                    drivesChanged.withLock { $0 }?(page.driveChanges)
                }
                if !page.changes.isEmpty {
                    changed += page.changes.count
                    invalidator.apply(table.apply(page.changes, readFrom: readFrom))
                }
                if let next = page.nextPageToken {
                    token.withLock { $0 = next }
                    continue
                }
                if let fresh = page.newStartPageToken { token.withLock { $0 = fresh } }
                break
            }
        }
        // Marks of changes made here before this poll began can no longer stop anything: every later
        // page is read after them.
        table.pruneChangesHere(before: firstRead)
        if changed > 0 {
            Log.shared.info("changes", "applied \(changed) change(s)")
            let now = time.now()
            let due = saved.withLock { s -> Bool in
                s.dirty = true
                return s.at.map { now - $0 >= Self.saveInterval } ?? true
            }
            if due { save() }
        }
    }

    /// Drive's answer to a page token it does not take (400 on `pageToken`, or 404).
    static func isTokenRefused(_ error: DriveError) -> Bool {
        switch error {
        case .invalidArgument, .notFound: return true
        default: return false
        }
    }

    /// Saves the index at the current token (unmount, the whole-drive index built).
    func saveIndex() {
        pollLock.lock()
        defer { pollLock.unlock() }
        save()
    }

    /// Under `pollLock`.
    private func save() {
        index.save(table, changeToken: token.withLock { $0 })
        let now = time.now()
        saved.withLock { $0 = (now, false) }
    }
}
