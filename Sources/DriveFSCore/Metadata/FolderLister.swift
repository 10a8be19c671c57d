import DriveClient
import DriveSupport
import Foundation

/// Lists folders: on demand for a user (interactive), and ahead of the user in the background, many
/// folders per query, breadth first, so that a walk (`ls -R`, `find`, `du`) pays per tree level,
/// not per folder.
///
/// Contracts:
/// - One listing per folder at a time: a second caller waits for the one in flight.
/// - A folder waiting in the prefetch queue that a user needs now is taken out of the queue and
///   listed at once, at the user's priority, with up to `groupSize - 1` other queued folders in the
///   same query (a walk one level ahead of the user pays per level); alone while the whole-drive
///   index is built (the queue is the crawl's, and the user never waits on its batch). A folder in
///   flight in a crawl group is listed again for the user, alone and at once (`overtaking`).
/// - Google's grouped-query bug (drive-behaviours.md §3.5a: a multi-parent query sometimes answers
///   nothing, or nothing for some parents): a folder that came back empty from a grouped query is
///   listed again on its own before it is believed empty.
/// - Failures of a user's listing reach the user (as an errno); failures of prefetching are logged
///   and forgotten (the folder is listed when it is used).
///
/// Lock order: `state` is a leaf (never held while calling the table, Drive or a waiter).
final class FolderLister: Sendable {
    private let backend: any DriveBackend
    private let table: NodeTable
    private let invalidator: Invalidator
    private let configuration: DriveFSConfiguration
    private let background: WorkPool
    private let time: any TimeSource
    private let state = RankedLocked(.leaf, State())
    /// Called once the whole-drive index is built (the filesystem saves it then).
    private let onIndexBuilt = Locked<(@Sendable () -> Void)?>(nil)

    func whenIndexBuilt(_ action: @escaping @Sendable () -> Void) { onIndexBuilt.withLock { $0 = action } }

    /// How many levels below a listed folder prefetching goes (the whole-drive index has no limit).
    static let prefetchDepth = 16

    /// Folders go by Drive ID: those listed ahead are packed (NodeTable+Packed.swift) and have no inode.
    private struct State {
        var inFlight: [String: Ticket] = [:]
        /// Folders a user waits on that are in flight in a group of the whole-drive crawl: listed
        /// again alone, at once, at the user's priority (the crawl's group waits on the share of the
        /// quota the crawl may spend while the user is active, and may be many pages long); later
        /// waiters wait on that listing. Prefetch groups (one level ahead of the user, `--no-index`)
        /// are waited for: they go at background priority, ahead of the crawl, and an extra listing
        /// would cost a request for nothing.
        var overtaking: [String: Ticket] = [:]
        /// FIFO of folders to prefetch, with how many levels below them prefetching may still go.
        var queue: [String] = []
        var head = 0
        /// The folders in `queue` still to list, with their depth (the deepest asked for wins).
        var queued: [String: Int] = [:]
        /// The whole-drive index is being built: when the queue runs dry, the tree is walked again
        /// for folders still unlisted (`sweep`).
        var indexing = false
        var sweeps = 0
        var indexStarted = 0.0
    }

    /// Walks of the tree for folders the index still lacks, before it settles for what it has
    /// (folders whose listing keeps failing are listed when used).
    static let maximumSweeps = 8

    /// One listing in flight; waiters block on it.
    final class Ticket: Sendable {
        /// A listing in a group of the whole-drive crawl.
        let crawl: Bool
        private let condition = NSCondition()

        init(crawl: Bool = false) { self.crawl = crawl }

        private nonisolated(unsafe) var outcome: FilesystemError?? = nil  // GUARDED_BY(condition)

        func finish(_ error: FilesystemError?) {
            condition.lock()
            outcome = .some(error)
            condition.broadcast()
            condition.unlock()
        }

        /// Waits for the listing; EINTR if `cancellation` fires first.
        func wait(cancellation: CancellationFlag?) throws(FilesystemError) {
            condition.lock()
            defer { condition.unlock() }
            if outcome == nil { cancellation?.wakes(condition) }
            while outcome == nil {
                if cancellation?.isCancelled == true { throw FilesystemError(errno: EINTR) }
                condition.wait()
            }
            if let error = outcome! { throw error }
        }
    }

    init(backend: any DriveBackend, table: NodeTable, invalidator: Invalidator, configuration: DriveFSConfiguration,
         background: WorkPool, time: any TimeSource) {
        self.backend = backend
        self.table = table
        self.invalidator = invalidator
        self.configuration = configuration
        self.background = background
        self.time = time
    }

    var queuedCount: Int { state.withLock { $0.queued.count } }
    var inFlightCount: Int { state.withLock { $0.inFlight.count } }

    /// Returns once `folder` has a fresh listing (listing it if needed), on the caller's thread.
    func ensureListed(_ folder: Inode, cancellation: CancellationFlag?) throws(FilesystemError) {
        for _ in 0..<4 {
            if table.freshListing(folder) != nil { return }
            guard let node = table.node(folder) else { throw FilesystemError(errno: ESTALE) }
            guard node.kind == .directory else { throw .notADirectory }
            let id = node.file.id
            enum Plan { case wait(Ticket), list([String], promoted: [(id: String, depth: Int)]), overtake(Ticket) }
            let plan = state.withLock { s -> Plan in
                if let ticket = s.inFlight[id] {
                    guard ticket.crawl else { return .wait(ticket) }
                    if let overtaking = s.overtaking[id] { return .wait(overtaking) }
                    let overtaking = Ticket()
                    s.overtaking[id] = overtaking
                    return .overtake(overtaking)
                }
                var group = [id]
                var promoted: [(id: String, depth: Int)] = []
                if let depth = s.queued.removeValue(forKey: id) {
                    // Promote: the user's folder and its neighbours in the queue, in one query; while
                    // the whole-drive index is built the queue is the crawl's, and the user's folder
                    // goes alone (its neighbours stay for the crawl's groups): a query of 50 folders
                    // is many pages long, and each member that came back empty is listed again on its
                    // own before the user is answered (§3.5a), all of it at the user's priority.
                    promoted.append((id, depth))
                    while !s.indexing, group.count < configuration.listingGroupSize, let next = Self.dequeue(&s) {
                        if s.inFlight[next.id] == nil {
                            group.append(next.id)
                            promoted.append(next)
                        }
                    }
                }
                for member in group { s.inFlight[member] = Ticket() }
                return .list(group, promoted: promoted)
            }
            switch plan {
            case .wait(let ticket):
                try ticket.wait(cancellation: cancellation)
            case .overtake(let ticket):
                // The crawl's listing stays in flight (it finishes its own ticket); this one costs
                // one more listing and answers the user now.
                let context = RequestContext(priority: .interactive, deadline: time.now() + configuration.requestDeadline,
                                             cancellation: cancellation)
                let result = list([id], context: context, ownsTickets: false)[id] ?? nil
                state.withLock { s in if s.overtaking[id] === ticket { s.overtaking[id] = nil } }
                ticket.finish(result)
                if let result { throw result }
            case .list(let group, let promoted):
                let context = RequestContext(priority: .interactive, deadline: time.now() + configuration.requestDeadline,
                                             cancellation: cancellation)
                let results = list(group, context: context)
                // Folders taken from the queue carry on what queued them (prefetching, the index).
                for item in promoted where (results[item.id] ?? nil) == nil { prefetch(below: item.id, depth: item.depth) }
                if !promoted.isEmpty { sweepIfIdle() }
                if let error = results[id] ?? nil { throw error }
            }
        }
        // Listed four times and still not fresh: changes keep racing the listing. Serve what we have.
        if !table.hasListing(folder) { throw .ioError }
    }

    /// Queues the subfolders of `folder` (and, as they are listed, theirs) for listing in the background.
    func prefetch(below folder: Inode) {
        guard let id = table.node(folder)?.file.id else { return }
        prefetch(below: id, depth: Self.prefetchDepth)
    }

    /// The whole-drive index: queues every folder without a fresh listing, however deep (walking
    /// down the listings held to find them), and, as each is listed, the folders below it.
    func indexWholeDrive() {
        state.withLock { s in
            s.indexing = true
            s.sweeps = 0
            s.indexStarted = time.now()
        }
        let unlisted = table.foldersNeedingListing(under: table.rootID)
        Log.shared.info("index", unlisted.isEmpty ? "the index restored is complete"
                                                  : "indexing the drive: \(unlisted.count) folder(s) to list first")
        if unlisted.isEmpty {
            finishIndexing(listed: false)
        } else {
            enqueue(unlisted, depth: Int.max)
        }
    }

    /// Whether the whole-drive index is still being built.
    var isIndexing: Bool { state.withLock { $0.indexing } }

    /// The queue ran dry while indexing: walk the tree again for folders still unlisted (listed by
    /// a user's lookup meanwhile, whose subfolders nobody queued; or a listing that failed).
    private func sweep() {
        let walk = state.withLock { s -> Bool? in
            guard s.indexing, s.queued.isEmpty, s.inFlight.isEmpty else { return nil }
            s.sweeps += 1
            return s.sweeps <= Self.maximumSweeps
        }
        guard let walk else { return }
        let unlisted = table.foldersNeedingListing(under: table.rootID)
        if unlisted.isEmpty || !walk {
            finishIndexing(left: unlisted.count)
        } else {
            enqueue(unlisted, depth: Int.max)
        }
    }

    /// `listed`: whether this run listed anything (a restored index found complete is not saved again).
    private func finishIndexing(left: Int = 0, listed: Bool = true) {
        let started = state.withLock { s -> Double? in
            guard s.indexing else { return nil }
            s.indexing = false
            return s.indexStarted
        }
        guard let started else { return }
        let (folders, items) = table.indexExtent
        Log.shared.info("index", "index built: \(items) items in \(folders) folders, "
                        + String(format: "%.1f s", max(0, time.now() - started))
                        + (left > 0 ? "; \(left) folder(s) could not be listed and are listed when used" : ""))
        if listed { onIndexBuilt.withLock { $0 }?() }
    }

    /// Queues the subfolders of `folderID` that need listing, `depth` levels down at most.
    private func prefetch(below folderID: String, depth: Int) {
        guard depth > 0 else { return }
        enqueue(table.subfoldersNeedingListing(of: folderID), depth: depth - 1)
    }

    private func enqueue(_ candidates: [String], depth: Int) {
        guard !candidates.isEmpty else { return }
        let added = state.withLock { s -> Int in
            var added = 0
            for candidate in candidates where s.inFlight[candidate] == nil {
                if let queuedDepth = s.queued[candidate] {
                    s.queued[candidate] = max(queuedDepth, depth)
                    continue
                }
                s.queue.append(candidate)
                s.queued[candidate] = depth
                added += 1
            }
            return added
        }
        let jobs = (added + configuration.listingGroupSize - 1) / configuration.listingGroupSize
        for _ in 0..<jobs { background.submit { [self] in self.drainOneGroup() } }
    }

    private static func dequeue(_ s: inout State) -> (id: String, depth: Int)? {
        while s.head < s.queue.count {
            let next = s.queue[s.head]
            s.head += 1
            if s.head > 4096 && s.head * 2 > s.queue.count {
                s.queue.removeFirst(s.head)
                s.head = 0
            }
            if let depth = s.queued.removeValue(forKey: next) { return (next, depth) }
        }
        return nil
    }

    /// Lists up to one group of queued folders at background priority.
    private func drainOneGroup() {
        let (group, crawl) = state.withLock { s -> ([(id: String, depth: Int)], Bool) in
            var group: [(id: String, depth: Int)] = []
            while group.count < configuration.listingGroupSize, let next = Self.dequeue(&s) {
                guard s.inFlight[next.id] == nil else { continue }
                s.inFlight[next.id] = Ticket(crawl: s.indexing)
                group.append(next)
            }
            return (group, s.indexing)
        }
        guard !group.isEmpty else { return sweepIfIdle() }
        // The crawl spends the quota's crawl share while a user is active (docs/client.md, "Pacing").
        let results = list(group.map(\.id), context: RequestContext(priority: crawl ? .crawl : .background))
        for item in group where (results[item.id] ?? nil) == nil {
            prefetch(below: item.id, depth: item.depth)
        }
        sweepIfIdle()
    }

    /// While indexing, once nothing is queued or in flight: the next sweep.
    private func sweepIfIdle() {
        guard state.withLock({ $0.indexing && $0.queued.isEmpty && $0.inFlight.isEmpty }) else { return }
        sweep()
    }

    /// Lists `group` (folder IDs, each already marked in flight) in as few queries as Google allows,
    /// applies the listings, and finishes their tickets. Returns each folder's failure, if any.
    /// `ownsTickets`: false for a folder listed again over a crawl group's ticket (which that group
    /// finishes).
    private func list(_ group: [String], context: RequestContext, ownsTickets: Bool = true) -> [String: FilesystemError?] {
        var order: [String] = []  // the group's Drive IDs, in the group's order, once each
        var seen = Set<String>()
        for id in group where seen.insert(id).inserted { order.append(id) }
        let generation = table.startListing()
        defer { table.endListing(generation) }
        var results: [String: FilesystemError?] = [:]
        var children: [String: [DriveFile]] = [:]
        for id in order { children[id] = [] }
        let fields = DriveFile.listingFieldMask
        do {
            try context.scope {
                try backend.listChildren(ofAny: order, fields: fields, pageSize: 1000) { page in
                    for file in page.files {
                        for parent in file.parents where children[parent] != nil { children[parent]!.append(file) }
                    }
                    return true
                }
                if order.count > 1 {
                    for id in order where children[id]!.isEmpty {
                        try backend.listChildren(ofAny: [id], fields: fields, pageSize: 1000) { page in
                            children[id]!.append(contentsOf: page.files.filter { $0.parents.contains(id) })
                            return true
                        }
                    }
                }
            }
            for id in order {
                // A file seen twice (pages are not snapshots) is kept once.
                var seen = Set<String>()
                let files = children[id]!.filter { seen.insert($0.id).inserted }
                invalidator.apply(table.applyListing(id, files: files, startedAt: generation))
                results[id] = .some(nil)
            }
        } catch {
            let mapped = FilesystemError.from(error)
            Log.shared.warning("listing", "listing \(order.count) folder(s) failed (\(context.priority)): \(error)")
            for id in group { results[id] = .some(mapped) }
        }
        guard ownsTickets else { return results }
        let tickets = state.withLock { s in group.map { ($0, s.inFlight.removeValue(forKey: $0)) } }
        for (id, ticket) in tickets { ticket?.finish(results[id] ?? nil) }
        return results
    }
}

extension FilesystemError {
    /// Any error from the Drive side, as an errno (`DriveError`s through the one mapping).
    static func from(_ error: Error) -> FilesystemError {
        if let error = error as? FilesystemError { return error }
        if let error = error as? DriveError { return FilesystemError(error) }
        return .ioError
    }
}
