import DriveClient
import DriveSupport
import Foundation

/// What drivefs knows of one Drive item, under its own inode number.
struct Node: Sendable {
    let inode: Inode
    /// The item as the last listing or change showed it (the listing field mask).
    var file: DriveFile
    /// The folder it shows in; nil for the root, and for an item no longer in any listed folder
    /// that the kernel still holds (it is dropped once its lookups and handles reach zero).
    var parent: Inode?
    /// Its name in `parent` (NameMapper's shown name).
    var name: String
    /// libfuse's lookup count. INVARIANT: never below zero (a forget of more is a bug, trapped in debug).
    var lookups: UInt64 = 0
    var openHandles: Int = 0
    /// Folders, once listed: every child by shown name.
    var listing: Listing?
    /// An exported Workspace file's size, once it was exported (Drive reports none).
    var exportedSize: Int64?
    /// The content version and size of the last open: what the kernel's page cache and idea of
    /// the size may still hold (see `noteOpen`).
    var openedVersion: String?
    var openedSize: Int64?
    /// What was written here and is not on Drive yet (nil: Drive's state is the file's).
    var local: LocalState?

    /// When its metadata last changed here (chmod, chown, rename, utimens, a write, an entry added
    /// or removed): its ctime, in memory (under `--posix-metadata` also in `drivefs.ctime`).
    var changedMillis: Int64?
    /// Removed here (unlink, rmdir, renamed over) while the kernel or a handle still holds it: it
    /// shows no link (`st_nlink` 0, as an open file does after its unlink).
    var unlinked = false
    /// A folder's mtime moved by an entry added or removed here (Drive does not move a folder's
    /// `modifiedTime` for that); in memory only.
    var entriesChangedMillis: Int64?

    var kind: FileKind {
        if file.isFolder { return .directory }
        if file.isShortcut || file.appProperties?[AppPropertyKeys.link] != nil { return .symbolicLink }
        return AppPropertyKeys.specialKind(file.appProperties) ?? .regular
    }

    /// One of drivefs's appProperties as the node shows it: set here and not on Drive yet, else Drive's.
    func property(_ key: String) -> String? { local?.properties[key] ?? file.appProperties?[key] }
}

/// A file's state while what was written here is not yet on Drive: it overrides what listings and
/// the change feed say of its size, times and mode until its upload landed.
/// Where a queued change puts a file on Drive (`NodeTable.State.queuedPlaces`).
struct QueuedPlace: Sendable, Equatable {
    var name: String
    var parentID: String
    var file: DriveFile?
}

struct LocalState: Sendable, Equatable {
    /// Made here and not on Drive at all yet: `file.id` is its reserved ID; listings of its folder
    /// keep it although Drive does not list it.
    var isNew: Bool
    var size: Int64
    var modifiedMillis: Int64
    /// Set by chmod (nil: as Drive's appProperties say).
    var permissions: UInt32?
    /// Other appProperties of drivefs's set here and carried by the upload (`--posix-metadata`:
    /// owner, group, ctime), over what Drive's say.
    var properties: [String: String] = [:]
    /// A file made here (`isNew`) as a page of the change feed showed it on Drive (its create
    /// landed there, the landing not applied here yet). The feed's position is past its creation
    /// from then on: the saved index keeps the file while the node still shows this (chaos finding
    /// 36, `NodeTable.indexSnapshot`).
    var shownByFeed: DriveFile?
}

/// The appProperties drivefs keeps on files (private to the app; key and value together at most
/// 124 bytes, Drive's limit).
enum AppPropertyKeys {
    /// The permission bits, in octal (`755`), as chmod set them.
    static let mode = "drivefs.mode"
    /// A symbolic link's target; empty when it did not fit (the target is then the file's content).
    static let link = "drivefs.link"
    /// The longest target kept in the property itself.
    static let maximumInlineLinkBytes = 124 - link.utf8.count

    /// Under `--posix-metadata`: the owner and group (decimal), as chown (or the creating
    /// process) set them; a FIFO's, socket's or device node's type (`fifo`, `socket`, `char`,
    /// `block`) and a device's `rdev` (decimal); the ctime (milliseconds since the epoch) of the
    /// last metadata change here. Seven keys in all, far below Drive's 30 a file.
    static let owner = "drivefs.uid"
    static let group = "drivefs.gid"
    static let type = "drivefs.type"
    static let device = "drivefs.rdev"
    static let changed = "drivefs.ctime"
    /// Those drivefs sets that an upload carries as they are (`mode` and `link` have their own rules).
    static let carried = [owner, group, type, device, changed]

    static func permissions(_ file: DriveFile) -> UInt32? {
        guard let text = file.appProperties?[mode], let value = UInt32(text, radix: 8), value <= 0o7777 else { return nil }
        return value
    }

    static func typeName(_ kind: FileKind) -> String? {
        switch kind {
        case .fifo: return "fifo"
        case .socket: return "socket"
        case .characterDevice: return "char"
        case .blockDevice: return "block"
        case .regular, .directory, .symbolicLink: return nil
        }
    }

    static func specialKind(_ properties: [String: String]?) -> FileKind? {
        switch properties?[type] {
        case "fifo": return .fifo
        case "socket": return .socket
        case "char": return .characterDevice
        case "block": return .blockDevice
        default: return nil
        }
    }
}

/// A folder's children as of one listing, kept current by the change feed.
struct Listing: Sendable {
    var children: [String: Inode]
    /// When it was listed (the TTL runs from here), in the table's clock.
    var listedAt: Double
    /// False when a change touched the folder while this listing was in flight: it may have missed
    /// the change, so the next use lists again.
    var trusted: Bool
}

/// What the kernel must forget after a change to the table: told to it only after the table's
/// lock is released (see `KernelNotifier`).
struct Invalidations: Sendable {
    var entries: [(parent: Inode, name: String)] = []
    var inodes: [Inode] = []
    /// Content versions that no longer belong to any file (their cached blocks can go).
    var staleContent: [ContentKey] = []

    mutating func merge(_ other: Invalidations) {
        entries += other.entries
        inodes += other.inodes
        staleContent += other.staleContent
    }

    var isEmpty: Bool { entries.isEmpty && inodes.isEmpty && staleContent.isEmpty }
}

/// The inode table: every known Drive item, its shown name and place, folder listings, and lookup
/// counts, behind one lock (`state`). Its rooms: this file (nodes, attributes, lookups, handles),
/// `+Listings` (listings applied), `+Changes` (the change feed applied), `+Local` (what was written
/// here), `+Packed` and `+Repack` (folders kept packed), `+Shedding`, `+Pins`.
///
/// Lock order: `NodeTable.state` is a leaf: no other lock is taken while it is held, and nothing
/// blocks on I/O inside it. (The block cache's lock and the folder lister's lock are never taken
/// inside it, and it is never taken inside theirs: `LockRank.nodeTable`, asserted in debug builds.)
final class NodeTable: Sendable {
    struct State: Sendable {
        var nodes: [Inode: Node] = [:]
        /// INVARIANT: `byID[n.file.id] == n.inode` for every node n, and only for them.
        var byID: [String: Inode] = [:]
        var nextInode: UInt64 = Inode.root.rawValue + 1
        /// Counts applied changes; a listing remembers the generation it started at.
        var generation: UInt64 = 0
        /// The generation at which the change feed last touched each folder, by Drive ID (packed
        /// folders have no inode).
        var touched: [String: UInt64] = [:]
        /// The generation of the last change made here (a create, rename, removal) to each folder
        /// and to each item (by Drive ID): a listing or a page of changes read before it is older
        /// than the table and must not undo it.
        var changedHere: [Inode: UInt64] = [:]
        var itemsChangedHere: [String: UInt64] = [:]
        /// The generations listings in flight started at (with how many started at each): the
        /// marks above newer than the oldest are kept for them.
        var listingsInFlight: [UInt64: Int] = [:]
        /// Nodes made here and not on Drive yet (`local.isNew`): listings of their folder keep them.
        var localNew: Set<Inode> = []
        /// New files removed here whose create may be on Drive (it was on its way, or landed
        /// before the mount heard of it), by Drive ID, with the order they were removed in: until
        /// their removal lands Drive lists them, and neither a listing nor a change shows them
        /// again. A change showing one gone ends its mark; so does the core, when nothing of it
        /// reached Drive. At most `maximumRemovedBeforeLanding`, the oldest dropped first.
        var removedBeforeLanding: [String: UInt64] = [:]
        var removedBeforeLandingOrder: UInt64 = 0
        /// New content of files on Drive that the journal held at start, by Drive ID, for nodes not
        /// made yet: a node made for one shows it (size, time) until its upload ends.
        var recoveredLocal: [String: LocalState] = [:]
        /// Folders whose listing came from the restored index and that the change feed has not
        /// caught up yet (by Drive ID): the index may be older than Drive (a file made, moved in,
        /// replaced or written before the last run ended, by this machine or another), so while
        /// Drive answers such a folder is listed again before it is used, rather than answer
        /// ENOENT (a program then made the file a second time) or show the older revision, or the
        /// file a rename replaced (chaos finding 30). Offline, the index is served as saved. Each
        /// listing applied takes its folder out; the first poll that reads the feed to its end
        /// empties it.
        var unconfirmed: Set<String> = []
        /// New files the journal held at start (not on Drive yet) whose folder is not a node yet
        /// (known only from the packed index, or not at all), by folder Drive ID, then file ID:
        /// the folder's first listing shows them, as made here.
        var recoveredNew: [String: [String: (file: DriveFile, local: LocalState)]] = [:]
        /// Renames and moves of files on Drive that the journal held at start as queued changes
        /// (made offline, then a crash), by Drive ID: shown where they put the file, over what
        /// Drive and listings say, until the change lands or fails (`forgetQueuedPlace`). `file`:
        /// the item as last seen (the index, a listing, a change), placed there, for the
        /// destination's listing to show while Drive lists it elsewhere; nil until seen.
        var queuedPlaces: [String: QueuedPlace] = [:]
        /// The folder (Drive ID) each file of `recoveredNew` waits in, by file ID.
        /// INVARIANT: `recoveredNewFolder[f] == d` exactly when `recoveredNew[d]![f]` is there.
        var recoveredNewFolder: [String: String] = [:]
        /// Listings of folders that are not nodes' listings yet, by folder Drive ID (the compact part
        /// of the index; NodeTable+Packed.swift).
        /// INVARIANT: a folder's listing is packed or materialized (`listing` of its node), never both.
        var packed: [String: PackedListing] = [:]
        /// Which packed listing holds each packed item, by `PackedListing.hash` of its ID. A hash
        /// collision is caught where it is used (the folder is checked; a miss falls back to a scan).
        var packedLocation: [UInt64: String] = [:]
        /// Items in packed listings.
        var packedItems = 0
        /// Bytes of packed listings (`PackedListing.bytes`), for `drivefs status`.
        /// INVARIANT: the sum of `packed`'s bytes.
        var packedBytes = 0
        /// Folders whose listing is materialized (a node per child).
        /// INVARIANT: the number of nodes whose `listing` is set.
        var materializedFolders = 0
        /// Materialized folders that may no longer need their nodes, to be packed again when nothing
        /// does (NodeTable+Repack.swift). INVARIANT: `repackQueued` is exactly the set of `repackQueue`.
        var repackQueue: [Inode] = []
        var repackQueued: Set<Inode> = []
        /// Folders the kernel still holds, kept as nodes when their parent's listing was packed again
        /// (NodeTable+Repack.swift), by that parent: the packed listing has them too, with their
        /// inode numbers. INVARIANT: each is a node whose `parent` is the key, and the key's node
        /// has no materialized listing.
        var keptChildren: [Inode: Set<Inode>] = [:]
        /// The mapped listings (of the restored index file) of folders materialized from them, by
        /// Drive ID: packed back unchanged, a folder takes them again rather than bytes of its own
        /// on the heap (NodeTable+Repack.swift). A stale one is harmless: it is used only when it
        /// decodes to the entries being packed.
        var mappedOrigins: [String: PackedListing] = [:]
        /// Nodes packing dropped since `packUnneededFolders` last gave free memory back.
        var droppedSinceTrim = 0
        /// When each materialized folder not shed since was last used here (NodeTable+Shedding.swift).
        /// INVARIANT: only materialized folders have one.
        var folderUse: [Inode: FolderUse] = [:]
        /// Folders in the order they were used (at most one entry a second each), oldest first
        /// from `useQueueHead`: where shedding finds the idle ones without looking at the others.
        var useQueue: [(folder: Inode, at: Double)] = []
        var useQueueHead = 0
        /// What materializing a packed listing found for the kernel to forget (a node that had
        /// moved): handed out with the next listing or page of changes applied.
        var deferred = Invalidations()
        /// Children handed to `setChildren` so far: the work that listings and pages of changes
        /// cost under the lock (tests bound it).
        var childrenRebuilt = 0
    }

    let configuration: DriveFSConfiguration
    let time: any TimeSource
    /// Whether Drive is unreachable now (`Reachability`): listings held are then served as they
    /// are, whatever their age or trust, since no listing could replace them (docs/semantics.md,
    /// "Offline"); the change feed corrects them once Drive answers again.
    let offline: @Sendable () -> Bool
    private let state: RankedLocked<State>
    /// Operations in flight that change Drive first and the table after (NodeTable+Local.swift).
    let changesHere = ChangesInFlight()

    init(root: DriveFile, configuration: DriveFSConfiguration, time: any TimeSource,
         offline: @escaping @Sendable () -> Bool = { false }) {
        self.configuration = configuration
        self.time = time
        self.offline = offline
        var s = State()
        s.nodes[.root] = Node(inode: .root, file: root, parent: nil, name: "/")
        s.byID[root.id] = .root
        state = RankedLocked(.nodeTable, s)
    }

    init(restoring restored: State, configuration: DriveFSConfiguration, time: any TimeSource,
         offline: @escaping @Sendable () -> Bool = { false }) {
        self.configuration = configuration
        self.time = time
        self.offline = offline
        state = RankedLocked(.nodeTable, restored)
    }

    func withState<R>(_ body: (inout State) throws -> R) rethrows -> R { try state.withLock(body) }

    var rootID: String { state.withLock { $0.nodes[.root]!.file.id } }
    var generation: UInt64 { state.withLock { $0.generation } }
    var childrenRebuilt: Int { state.withLock { $0.childrenRebuilt } }
    /// Items known: nodes and packed entries (a kept folder is both, counted once).
    var count: Int { state.withLock { $0.nodes.count + $0.packedItems - $0.keptChildren.values.reduce(0) { $0 + $1.count } } }

    func node(_ inode: Inode) -> Node? { state.withLock { $0.nodes[inode] } }
    func inode(forID id: String) -> Inode? { state.withLock { $0.byID[id] } }

    // MARK: Attributes

    func attributes(_ node: Node) -> FileAttributes {
        let c = configuration
        let onDrive = node.local?.modifiedMillis ?? node.file.modifiedTime ?? node.file.createdTime ?? 0
        let modified = max(onDrive, node.entriesChangedMillis ?? onDrive)
        let writable = !c.readOnly && node.file.capabilities?.canEdit != false
        let kept = node.local?.permissions ?? AppPropertyKeys.permissions(node.file)
        // A mode set here (chmod, or at creation) is shown as it was set; only items without one
        // (other clients' files, the default mode) are masked by --umask. No write bits where
        // writing cannot succeed.
        func shown(_ defaultBits: UInt32) -> UInt32 { (kept ?? defaultBits & ~c.umask) & (writable ? 0o7777 : 0o7555) }
        let permissions: UInt32
        let size: UInt64
        switch node.kind {
        case .directory:
            permissions = shown(0o755)
            size = 0
        case .symbolicLink:
            // A shortcut's target path is resolved only when read (readlink), so no length is
            // known; a link made here has its target's length.
            permissions = 0o777
            size = UInt64(max(0, node.local?.size ?? (node.file.isShortcut ? 0 : node.file.size ?? 0)))
        case .fifo, .socket, .characterDevice, .blockDevice:
            permissions = shown(0o644)
            size = 0
        case .regular:
            permissions = shown(0o644)
            if let local = node.local {
                size = UInt64(max(0, local.size))
            } else {
                size = UInt64(max(0, node.file.isGoogleWorkspaceDocument ? (node.exportedSize ?? 0) : (node.file.size ?? 0)))
            }
        }
        // Owners and ctime as kept (--posix-metadata); ctime is never older than mtime (a change on
        // Drive, or a time set here).
        let posix = c.posixMetadata
        let userID = posix ? node.property(AppPropertyKeys.owner).flatMap { UInt32($0) } ?? c.userID : c.userID
        let groupID = posix ? node.property(AppPropertyKeys.group).flatMap { UInt32($0) } ?? c.groupID : c.groupID
        let stored = posix ? node.property(AppPropertyKeys.changed).flatMap { Int64($0) } : nil
        let changed = max(node.changedMillis ?? stored ?? modified, modified)
        // Directories show one link: find(1) then never assumes it can count subdirectories.
        var attributes = FileAttributes(inode: node.inode, kind: node.kind, permissions: permissions, size: size,
                                        linkCount: node.unlinked ? 0 : 1,
                                        userID: userID, groupID: groupID, accessedMillis: modified, modifiedMillis: modified,
                                        changedMillis: changed)
        if node.kind == .characterDevice || node.kind == .blockDevice {
            attributes.deviceNumber = node.property(AppPropertyKeys.device).flatMap { UInt64($0) } ?? 0
        }
        return attributes
    }

    // MARK: Lookups

    enum ChildLookup {
        case found(Node)
        case missing
        /// The folder's listing is absent, expired or untrusted: list it first.
        case needsListing
        case notAFolder
        case unknownParent
    }

    func child(of parent: Inode, named name: String, countLookup: Bool) -> ChildLookup {
        let now = time.now()
        let ttl = configuration.directoryCacheTTL
        let offline = self.offline()
        return state.withLock { s in
            guard s.nodes[parent] != nil else { return .unknownParent }
            if let kept = Self.keptChild(of: parent, named: name, now: now, ttl: ttl, offline: offline, s) {
                if countLookup { s.nodes[kept]!.lookups += 1 }
                return .found(s.nodes[kept]!)
            }
            materialize(parent, &s)
            Self.noteUse(parent, at: now, &s)
            let folder = s.nodes[parent]!
            guard folder.kind == .directory else { return .notAFolder }
            guard let listing = folder.listing, offline || (listing.trusted && now - listing.listedAt < ttl && !s.unconfirmed.contains(folder.file.id))
            else { return .needsListing }
            guard let inode = listing.children[name], var child = s.nodes[inode] else { return .missing }
            if countLookup {
                child.lookups += 1
                s.nodes[inode] = child
            }
            return .found(child)
        }
    }

    /// The folder's listing, when it can be served without asking Drive.
    func freshListing(_ folder: Inode) -> Listing? {
        let now = time.now()
        let ttl = configuration.directoryCacheTTL
        let offline = self.offline()
        return state.withLock { s in
            materialize(folder, &s)
            Self.noteUse(folder, at: now, &s)
            guard let listing = s.nodes[folder]?.listing, offline || (listing.trusted && now - listing.listedAt < ttl),
                  offline || s.nodes[folder].map({ !s.unconfirmed.contains($0.file.id) }) ?? true else { return nil }
            return listing
        }
    }

    func countLookup(_ inode: Inode) -> Node? {
        state.withLock { s in
            guard var node = s.nodes[inode] else { return nil }
            node.lookups += 1
            s.nodes[inode] = node
            return node
        }
    }

    /// Subtracts what the kernel forgot. A child's last lookup going queues its folder to be
    /// packed again, and a bounded batch of queued folders is packed here (NodeTable+Repack.swift).
    func forget(_ inode: Inode, count: UInt64) {
        state.withLock { s in
            guard var node = s.nodes[inode] else {
                assertionFailure("forget of unknown \(inode)")
                return
            }
            assert(node.lookups >= count, "forget \(count) of \(inode) with only \(node.lookups) lookups")
            node.lookups -= min(count, node.lookups)
            s.nodes[inode] = node
            if node.lookups == 0, let parent = node.parent {
                Self.noteUnneeded(parent, &s)
                packUnneeded(budget: Self.repackBudget, &s)
            }
            Self.dropIfUnreferenced(inode, &s)
        }
    }

    func forgetAll() {
        state.withLock { s in
            for inode in Array(s.nodes.keys) { s.nodes[inode]!.lookups = 0 }
            for inode in Array(s.nodes.keys) { Self.dropIfUnreferenced(inode, &s) }
        }
    }

    /// An open handle marks its folder (and a folder opened, itself) used: a folder with a file
    /// open in it is not shed, and is looked at again once closed (NodeTable+Shedding.swift).
    func openHandle(_ inode: Inode) {
        let now = time.now()
        state.withLock { s in
            s.nodes[inode]?.openHandles += 1
            Self.noteHandleUse(inode, at: now, &s)
        }
    }

    func closeHandle(_ inode: Inode) {
        let now = time.now()
        state.withLock { s in
            guard s.nodes[inode] != nil else { return }
            Self.noteHandleUse(inode, at: now, &s)
            assert(s.nodes[inode]!.openHandles > 0, "close of \(inode) with no open handle")
            s.nodes[inode]!.openHandles -= 1
            if s.nodes[inode]!.openHandles == 0 {
                // A folder's own handle (opendir) or a child's last one: either may have kept it.
                if s.nodes[inode]!.lookups == 0, let parent = s.nodes[inode]!.parent { Self.noteUnneeded(parent, &s) }
                Self.noteUnneeded(inode, &s)
                packUnneeded(budget: Self.repackBudget, &s)
            }
            Self.dropIfUnreferenced(inode, &s)
        }
    }

    /// Records an open of `version` (of `size` bytes) and says how the kernel may cache it:
    /// `keepCache` only when the last open was of the same version (so pages of an older version
    /// are dropped even if a change notification never reached the kernel), and `directIO` when
    /// the size changed since the last open (the kernel may still believe the old size for up to
    /// its attribute timeout, and would cut reads there).
    func noteOpen(_ inode: Inode, version: String, size: Int64) -> (keepCache: Bool, directIO: Bool) {
        state.withLock { s in
            guard var node = s.nodes[inode] else { return (false, false) }
            defer { s.nodes[inode] = node }
            let previous = (node.openedVersion, node.openedSize)
            node.openedVersion = version
            node.openedSize = size
            guard let lastVersion = previous.0 else { return (true, false) }
            if lastVersion == version { return (true, false) }
            return (false, previous.1 != size)
        }
    }

    func setExportedSize(_ inode: Inode, _ size: Int64) {
        state.withLock { $0.nodes[inode]?.exportedSize = size }
    }

    /// The INVARIANTs of `State`, checked after every change in debug builds (`assert`): the ID
    /// index matches the nodes both ways, every listed child exists with that folder as its
    /// parent and that name, no inode is at or past `nextInode`, and no folder's listing is both
    /// packed and materialized.
    static func invariantsHold(_ s: State) -> Bool {
        for (inode, node) in s.nodes {
            guard node.inode == inode, s.byID[node.file.id] == inode, inode.rawValue < s.nextInode || inode == .root else {
                assertionFailure("node \(inode) (\(node.file.id)) is not indexed by its ID")
                return false
            }
            for (name, child) in node.listing?.children ?? [:] {
                guard let c = s.nodes[child], c.parent == inode, c.name == name else {
                    assertionFailure("\(inode)'s listing names \(name) → \(child), which is not its child by that name")
                    return false
                }
            }
        }
        for (id, inode) in s.byID where s.nodes[inode]?.file.id != id {
            assertionFailure("the ID index maps \(id) to \(inode), which is another item")
            return false
        }
        for id in s.packed.keys {
            if let inode = s.byID[id], s.nodes[inode]?.listing != nil {
                assertionFailure("\(id)'s listing is both packed and materialized")
                return false
            }
        }
        let recoveredCount = s.recoveredNew.values.reduce(0) { $0 + $1.count }
        guard recoveredCount == s.recoveredNewFolder.count,
              s.recoveredNewFolder.allSatisfy({ s.recoveredNew[$0.value]?[$0.key] != nil }) else {
            assertionFailure("the recovered new files' folder index does not match them")
            return false
        }
        let materialized = s.nodes.values.reduce(0) { $0 + ($1.listing != nil ? 1 : 0) }
        guard s.materializedFolders == materialized else {
            assertionFailure("\(s.materializedFolders) materialized folders counted, \(materialized) held")
            return false
        }
        guard s.packedBytes == s.packed.values.reduce(0, { $0 + $1.byteCount }),
              s.packedItems == s.packed.values.reduce(0, { $0 + $1.count }) else {
            assertionFailure("the packed listings' byte or item count is off")
            return false
        }
        guard s.repackQueued.count == s.repackQueue.count, Set(s.repackQueue) == s.repackQueued else {
            assertionFailure("the repack queue and its set differ")
            return false
        }
        for (parent, kept) in s.keptChildren {
            guard !kept.isEmpty, let folder = s.nodes[parent], folder.listing == nil,
                  kept.allSatisfy({ s.nodes[$0]?.parent == parent }) else {
                assertionFailure("\(parent)'s kept children are not nodes under its packed listing")
                return false
            }
        }
        for inode in s.folderUse.keys where s.nodes[inode]?.listing == nil {
            assertionFailure("\(inode) has a use time but no materialized listing")
            return false
        }
        return true
    }

    /// A detached node nobody holds is forgotten (its inode number is never reused), and so is a
    /// kept folder nobody holds (its packed entry keeps its number: NodeTable+Repack.swift).
    static func dropIfUnreferenced(_ inode: Inode, _ s: inout State) {
        guard inode != .root, let node = s.nodes[inode], node.lookups == 0, node.openHandles == 0,
              s.keptChildren[inode] == nil else { return }
        if let parent = node.parent {
            dropIfKept(inode, node, under: parent, &s)
            return
        }
        s.nodes[inode] = nil
        if node.listing != nil {
            s.materializedFolders -= 1
            s.mappedOrigins[node.file.id] = nil
        }
        s.folderUse[inode] = nil
        s.localNew.remove(inode)
        if s.byID[node.file.id] == inode { s.byID[node.file.id] = nil }
        // Its children lose their place too.
        if let listing = node.listing {
            for child in listing.children.values where s.nodes[child]?.parent == inode {
                s.nodes[child]!.parent = nil
                dropIfUnreferenced(child, &s)
            }
        }
    }
}
