import DriveClient
import DriveSupport
import Foundation

/// Keeps what is pinned (`PinSet`) local: finds the files the rules cover, has their content
/// fetched in the background, and tells the block cache never to evict it.
///
/// Contracts (docs/semantics.md, "Offline"):
/// - A sweep walks every pinned item down the table (listing folders that have no fresh listing,
///   at background priority; a restored index's packed folders are materialized on the way), and
///   for each file covered: counts it, marks it kept (`BlockCache.setKept`: the set replaces the
///   last one, so an unpinned file's content becomes evictable again), and starts a background fill
///   (`fill`) when its current version is not whole in the cache. A version Drive replaced is a
///   new content key, so a change the feed brings is fetched again by the next sweep.
/// - Sweeps run on one thread of their own (a `BackgroundLoop` with no timer), one at a time;
///   asking while one runs makes one more run after it (`requestSweep` never waits, so it may be
///   called from the kernel's threads and the queue's). They are asked for at start, when a rule
///   changes, after each successful read of the change feed and after each upload landed: never on
///   a timer, so an offline mount does not spin.
/// - Files written here and not yet on Drive are local already (their staging copy): counted,
///   never fetched.
/// - A Workspace document (Docs, Sheets, Slides, Drawings) is kept as its export in the format
///   the mount shows it in (`--export-formats`): a sweep exports each covered document whose
///   current version the cache does not hold whole (`export`, one at a time on the sweep's thread,
///   at background priority, after the kept set is given to the cache), so an open offline reads
///   that export. A document Drive cannot export is not counted. Its bytes count once exported
///   (Drive gives no size before); until then `drivefs pin --list` counts it as not local.
final class PinKeeper: Sendable {
    let set: PinSet
    private let table: NodeTable
    private let lister: FolderLister
    private let cache: BlockCache
    private let configuration: DriveFSConfiguration
    private let time: any TimeSource
    /// The sweeping thread: woken for each sweep asked for (`requestSweep`), no timer.
    private let loop = BackgroundLoop(name: "drivefs-pins", interval: nil)
    private let hooks = Locked<Hooks?>(nil)
    private let tracked = Locked<[Tracked]>([])

    struct Hooks {
        /// Starts a background fill of a version (`size` bytes) if none runs.
        let fill: @Sendable (ContentKey, Int64) -> Void
        /// Exports a Workspace document's version into the cache (returns once it is there or failed).
        let export: @Sendable (ContentKey) -> Void
        /// Where an inode shows in the mount, for `drivefs pin --list`.
        let describe: @Sendable (Inode) -> String
    }

    /// One pinned item as the last sweep found it.
    struct Tracked {
        var id: String
        var path: String
        var isFolder: Bool
        var files = 0
        /// Bytes of files written here and not on Drive yet (local whatever the cache holds).
        var localOnly: Int64 = 0
        var versions: [(key: ContentKey, size: Int64)] = []
        /// The Workspace documents' current export versions.
        var exports: [ContentKey] = []
        var found = true
    }

    init(set: PinSet, table: NodeTable, lister: FolderLister, cache: BlockCache, configuration: DriveFSConfiguration,
         time: any TimeSource) {
        self.set = set
        self.time = time
        self.table = table
        self.lister = lister
        self.cache = cache
        self.configuration = configuration
    }

    func start(fill: @escaping @Sendable (ContentKey, Int64) -> Void, export: @escaping @Sendable (ContentKey) -> Void,
               describe: @escaping @Sendable (Inode) -> String) {
        hooks.withLock { $0 = Hooks(fill: fill, export: export, describe: describe) }
        loop.start { [self] in sweep() }
        requestSweep()
    }

    func stop() {
        hooks.withLock { $0 = nil }
        loop.stop()
    }

    /// Whether the rules keep `inode` offline (its own rule or its nearest ancestor's).
    func isPinned(_ inode: Inode) -> Bool { table.pinRule(of: inode, rules: set.rules)?.pinned ?? false }

    /// Pins or unpins `inode` (a folder with everything in it), durably, then sweeps. Unpinning an
    /// item inside a pinned folder records a rule of its own; otherwise its rule goes.
    func setPinned(_ inode: Inode, _ pinned: Bool) throws(FilesystemError) {
        guard let node = table.node(inode) else { throw FilesystemError(errno: ESTALE) }
        let rules = set.rules
        let inherited = node.parent.flatMap { inode == .root ? nil : table.pinRule(of: $0, rules: rules)?.pinned } ?? false
        do {
            try set.setRule(node.file.id, pinned == inherited ? nil : pinned)
        } catch {
            Log.shared.error("pins", "cannot save the pins in \(set.path): \(error)")
            throw .ioError
        }
        Log.shared.info("pins", "\(pinned ? "pinned" : "unpinned") \(hooks.withLock { $0 }?.describe(inode) ?? node.name)")
        requestSweep()
    }

    /// Asks for a sweep (see the contract); returns at once.
    func requestSweep() { loop.wake() }

    /// Sweeps finished since start (tests wait on it).
    var sweepsDone: Int { loop.runs }
    /// No sweep runs or is asked for: every sweep asked for before has ended (tests).
    var isIdle: Bool { loop.isIdle }

    private func sweep() {
        guard let hooks = hooks.withLock({ $0 }) else { return }
        Log.shared.debug("pins", "sweeping \(set.rules.count) rule(s)")
        let rules = set.rules
        var kept = Set<String>()
        var found: [Tracked] = []
        var exportsDue: [ContentKey] = []
        for (id, pinned) in rules.sorted(by: { $0.key < $1.key }) where pinned {
            guard let inode = table.materializeItem(id), let node = table.node(inode) else {
                found.append(Tracked(id: id, path: "(not found: \(id))", isFolder: false, found: false))
                continue
            }
            // Inside another pinned item: counted there.
            if inode != .root, let parent = node.parent, table.pinRule(of: parent, rules: rules)?.pinned == true { continue }
            var item = Tracked(id: id, path: hooks.describe(inode), isFolder: node.kind == .directory)
            walk(inode, rules: rules, into: &item, kept: &kept, exportsDue: &exportsDue, fill: hooks.fill)
            found.append(item)
        }
        Log.shared.debug("pins", "swept \(found.count) pinned item(s): \(found.reduce(0) { $0 + $1.files }) file(s) kept")
        cache.setKept(kept)
        do { try set.setKept(kept) } catch { Log.shared.warning("pins", "cannot save the pins in \(set.path): \(error)") }
        tracked.withLock { $0 = found }
        // Kept before they are made, so that no eviction takes an export between the two.
        for key in exportsDue where self.hooks.withLock({ $0 }) != nil && cache.completeSize(key) == nil { hooks.export(key) }
    }

    private func walk(_ root: Inode, rules: [String: Bool], into item: inout Tracked, kept: inout Set<String>,
                      exportsDue: inout [ContentKey], fill: (ContentKey, Int64) -> Void) {
        var stack = [root]
        var seen: Set<Inode> = []
        while let inode = stack.popLast() {
            guard seen.insert(inode).inserted, let node = table.node(inode) else { continue }
            if inode != root, rules[node.file.id] == false { continue }
            switch node.kind {
            case .directory:
                let context = RequestContext(priority: .background, deadline: time.now() + configuration.requestDeadline)
                do {
                    try context.scope { () throws -> Void in try lister.ensureListed(inode, cancellation: nil) }
                } catch {
                    Log.shared.debug("pins", "cannot list \(node.file.id) for the pins: \(error)")
                }
                for child in table.entries(of: inode) ?? [] { stack.append(child.inode) }
            case .regular:
                if let local = node.local {
                    item.files += 1
                    item.localOnly += max(0, local.size)
                    kept.insert(node.file.id)
                    continue
                }
                guard let key = ContentKey(node.file, exportFormats: configuration.exportFormats),
                      node.file.capabilities?.canDownload != false else { continue }
                if key.exportMimeType != nil {
                    item.files += 1
                    item.exports.append(key)
                    kept.insert(node.file.id)
                    if cache.completeSize(key) == nil { exportsDue.append(key) }
                    continue
                }
                let size = max(0, node.file.size ?? 0)
                item.files += 1
                item.versions.append((key, size))
                kept.insert(node.file.id)
                if cache.presentBytes(key, size: size) < size { fill(key, size) }
            default:
                continue
            }
        }
    }

    /// What is pinned and how much of it is local, as of now (the last sweep's files, the cache's
    /// blocks now).
    var summary: [MountStatus.Pin] {
        tracked.withLock { $0 }.map { item in
            let exported = item.exports.map { cache.completeSize($0) }
            let exportedBytes = exported.reduce(Int64(0)) { $0 + ($1 ?? 0) }
            let bytes = item.versions.reduce(item.localOnly + exportedBytes) { $0 + $1.size }
            let local = item.versions.reduce(item.localOnly + exportedBytes) { $0 + cache.presentBytes($1.key, size: $1.size) }
            return MountStatus.Pin(path: item.path, id: item.id, folder: item.isFolder, files: item.files, bytes: bytes,
                                   localBytes: local, found: item.found, documentsNotExported: exported.count { $0 == nil })
        }
    }
}
