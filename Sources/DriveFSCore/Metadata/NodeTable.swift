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
/// counts, behind one lock (`state`).
///
/// Lock order: `NodeTable.state` is a leaf: no other lock is taken while it is held, and nothing
/// blocks on I/O inside it. (The block cache's lock and the folder lister's lock are never taken
/// inside it, and it is never taken inside theirs.)
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

    // MARK: Listings

    /// The children to show for a listing: the ordered (shown name, inode) pairs.
    func entries(of folder: Inode) -> [(name: String, inode: Inode, kind: FileKind)]? {
        let now = time.now()
        return state.withLock { s in
            materialize(folder, &s)
            Self.noteUse(folder, at: now, &s)
            guard let listing = s.nodes[folder]?.listing else { return nil }
            return listing.children
                .sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }
                .compactMap { name, inode in s.nodes[inode].map { (name, inode, $0.kind) } }
        }
    }

    /// Subfolders of the folder `folderID` (materialized or packed) whose own listing is not fresh:
    /// what prefetching lists next, by Drive ID.
    func subfoldersNeedingListing(of folderID: String) -> [String] {
        let now = time.now()
        let ttl = configuration.directoryCacheTTL
        return state.withLock { s in
            let candidates: [String]
            if let inode = s.byID[folderID], let listing = s.nodes[inode]?.listing {
                candidates = listing.children.values.compactMap { child in
                    guard let node = s.nodes[child], node.kind == .directory else { return nil }
                    return node.file.id
                }
            } else if let packed = s.packed[folderID] {
                candidates = packed.subfolders
            } else {
                return []
            }
            return candidates.filter { !Self.isFresh($0, now: now, ttl: ttl, s) }.sorted()
        }
    }

    /// Every folder under `rootID` (itself included) without a fresh listing, found by walking down
    /// the fresh ones: what the whole-drive index lists first.
    func foldersNeedingListing(under rootID: String) -> [String] {
        let now = time.now()
        let ttl = configuration.directoryCacheTTL
        return state.withLock { s in
            var out: [String] = []
            var queue = [rootID]
            var seen = Set(queue)
            var head = 0
            while head < queue.count {
                let id = queue[head]
                head += 1
                guard Self.isFresh(id, now: now, ttl: ttl, s) else {
                    out.append(id)
                    continue
                }
                let below: [String]
                if let inode = s.byID[id], let listing = s.nodes[inode]?.listing {
                    below = listing.children.values.compactMap { s.nodes[$0].flatMap { $0.kind == .directory ? $0.file.id : nil } }
                } else {
                    below = s.packed[id]?.subfolders ?? []
                }
                for sub in below where seen.insert(sub).inserted { queue.append(sub) }
            }
            return out
        }
    }

    /// Whether the folder `id` has a trusted listing, materialized or packed, within the TTL.
    static func isFresh(_ id: String, now: Double, ttl: Double, _ s: State) -> Bool {
        if let inode = s.byID[id], let listing = s.nodes[inode]?.listing {
            return listing.trusted && now - listing.listedAt < ttl
        }
        if let packed = s.packed[id] { return packed.trusted && now - packed.listedAt < ttl }
        return false
    }

    /// Replaces the listing of the folder `folderID` with `files` (all its children, every page),
    /// listed from `generation` on. A folder whose listing is materialized is updated in place:
    /// children keep their inodes (matched by Drive ID), names are recomputed for the whole folder,
    /// and what moved, vanished or changed content is returned for the kernel. Any other folder's
    /// listing is kept packed until something asks for it.
    func applyListing(_ folderID: String, files: [DriveFile], startedAt generation: UInt64) -> Invalidations {
        changesHere.whenSettled { applyListingNow(folderID, files: files, startedAt: generation) }
    }

    private func applyListingNow(_ folderID: String, files: [DriveFile], startedAt generation: UInt64) -> Invalidations {
        let now = time.now()
        return state.withLock { s in
            var out = s.deferred
            s.deferred = Invalidations()
            // Removed here, on Drive until the removal lands: not shown again.
            var files = s.removedBeforeLanding.isEmpty ? files : files.filter { s.removedBeforeLanding[$0.id] == nil }
            var trusted = (s.touched[folderID] ?? 0) <= generation
            // Items changed here since the listing started (an upload that landed, a rename): the
            // listing shows them as they were before. A node's state is newer and replaces it (or
            // the item left the folder since); an item with no node (a recovered upload that landed
            // before anything asked for it) has no newer state here, so the listing is not trusted
            // and is listed again before it is used: applied as read, the file took the revision
            // before its edit, and the next append built on it wrote the older bytes over the edit
            // (chaos finding 28).
            if !s.itemsChangedHere.isEmpty {
                files = files.compactMap { file in
                    guard let changed = s.itemsChangedHere[file.id], changed > generation else { return file }
                    guard let inode = s.byID[file.id], let node = s.nodes[inode], let parent = node.parent else {
                        trusted = false
                        return file
                    }
                    return s.nodes[parent]?.file.id == folderID ? node.file : nil
                }
            }
            // Started before a change made here: it may not show it (a folder made, a file moved
            // in); the listing held already does (materialized, or packed again since), and the
            // change feed brings what else changed.
            if let folder = s.byID[folderID], let changed = s.changedHere[folder], changed > generation {
                if s.nodes[folder]?.listing != nil || s.packed[folderID] != nil {
                    Log.shared.debug("listing", "\(folderID): \(files.count) item(s) listed from generation \(generation), "
                                     + "not applied (changed here at \(changed))")
                    return out
                }
                // Nothing held to keep instead: applied, but listed again before it is used (it
                // may lack a file whose create landed since: the names model checker's seed
                // 943844102437 found a recovered new file missing from the root).
                trusted = false
            }
            // Read from Drive now: as current as the change feed would have made the restored one.
            s.unconfirmed.remove(folderID)
            Log.shared.debug("listing", "\(folderID): \(files.count) item(s) listed from generation \(generation), applied"
                             + (trusted ? "" : " untrusted (a change came in since)")
                             + (s.byID[folderID].flatMap { s.nodes[$0]?.listing } != nil ? "" : " (the folder had no listing)"))
            if let folder = s.byID[folderID], let node = s.nodes[folder], node.kind == .directory, node.listing != nil {
                out.merge(setChildren(folder, files, &s))
                s.nodes[folder]!.listing!.listedAt = now
                s.nodes[folder]!.listing!.trusted = trusted
            } else {
                out.merge(pack(folderID, files.map { PackedListing.Entry(file: $0) }, listedAt: now, trusted: trusted, &s))
            }
            assert(Self.invariantsHold(s))
            return out
        }
    }

    /// Sets the children of `folder` to `files` (creating its listing if needed), with every
    /// kernel invalidation the difference implies.
    /// `savedInodes`: the numbers a restored index gave new children (kept when free).
    func setChildren(_ folder: Inode, _ incoming: [DriveFile], _ s: inout State,
                     savedInodes: [String: UInt64] = [:]) -> Invalidations {
        var out = Invalidations()
        s.childrenRebuilt += incoming.count
        // What Drive shows of a file whose upload is still on its way is where the upload started
        // from: the name and folder given here since are what the queue brings to Drive.
        let folderID = s.nodes[folder]?.file.id
        var files = incoming.compactMap { Self.placedIn(folderID, $0, &s) }
        // Files made here and not on Drive yet stay: Drive cannot list them.
        let incomingIDs = Set(incoming.map(\.id))
        for inode in s.localNew {
            if let node = s.nodes[inode], node.local?.isNew == true, node.parent == folder, !incomingIDs.contains(node.file.id) {
                files.append(node.file)
            }
        }
        // And files a queued change of the last run moves here, while Drive lists them elsewhere.
        if let folderID { files += Self.queuedArrivals(in: folderID, listed: incomingIDs, s) }
        // And files on Drive shown here whose upload has not landed: a rename or move given to it
        // (while Drive was away, or cut by a crash and recovered) is what the queue brings to Drive,
        // which lists them where they were until then. Dropped, the name was free, and a program
        // made the file a second time (chaos finding 30).
        if let children = s.nodes[folder]!.listing?.children {
            let placed = Set(files.map(\.id))
            for inode in children.values {
                guard let node = s.nodes[inode], node.local != nil, node.local?.isNew != true, node.parent == folder,
                      !placed.contains(node.file.id), s.removedBeforeLanding[node.file.id] == nil else { continue }
                files.append(node.file)
            }
        }
        // So do those the journal held at start, waiting for this folder to be a node.
        var recovered: [String: LocalState] = [:]
        if let folderID, let pending = s.recoveredNew.removeValue(forKey: folderID) {
            for (id, entry) in pending {
                s.recoveredNewFolder[id] = nil
                guard s.byID[id] == nil else { continue }
                // On Drive already (its create landed before the crash, under the name and folder
                // it started with: `withPendingPlace` put it here): its node is made local all the
                // same, so that it keeps this place until the upload lands.
                if !incomingIDs.contains(id) { files.append(entry.file) }
                recovered[id] = entry.local
            }
        }
        // A folder never listed has nothing in the kernel's name cache to correct (drivefs answers
        // names, even "no such name", only from listings).
        let hadListing = s.nodes[folder]!.listing != nil
        // A packed folder's kept children are where the kernel saw them: they are its old entries.
        var old = s.nodes[folder]!.listing?.children ?? [:]
        if !hadListing, let kept = s.keptChildren.removeValue(forKey: folder) {
            for inode in kept { if let node = s.nodes[inode] { old[node.name] = inode } }
        }
        let names = NameMapper.shownNames(files.map { file in
            NameMapper.Child(id: file.id, name: file.name, createdTime: file.createdTime,
                             exportExtension: file.isGoogleWorkspaceDocument
                                 ? configuration.exportFormats.choice(for: file.mimeType)?.fileExtension : nil)
        })
        var children: [String: Inode] = [:]
        for file in files {
            guard let name = names[file.id], children[name] == nil else { continue }
            let inode: Inode
            if let existing = s.byID[file.id], var node = s.nodes[existing] {
                inode = existing
                if let oldParent = node.parent, oldParent != folder || node.name != name {
                    out.entries.append((oldParent, node.name))
                    if oldParent != folder, s.nodes[oldParent]?.listing?.children[node.name] == existing {
                        s.nodes[oldParent]!.listing!.children[node.name] = nil
                    }
                    if oldParent != folder { Self.unkeep(existing, from: oldParent, &s) }
                }
                if ContentKey(node.file, exportFormats: configuration.exportFormats)
                    != ContentKey(file, exportFormats: configuration.exportFormats) {
                    out.inodes.append(existing)
                    if let key = ContentKey(node.file, exportFormats: configuration.exportFormats) { out.staleContent.append(key) }
                    node.exportedSize = nil
                } else if node.file.modifiedTime != file.modifiedTime || node.file.size != file.size {
                    out.inodes.append(existing)
                }
                node.file = file
                node.parent = folder
                node.unlinked = false
                node.name = name
                s.nodes[existing] = node
            } else {
                if let saved = savedInodes[file.id], saved > Inode.root.rawValue, saved < s.nextInode,
                   s.nodes[Inode(saved)] == nil {
                    inode = Inode(saved)
                } else {
                    inode = Inode(s.nextInode)
                    s.nextInode += 1
                }
                var node = Node(inode: inode, file: file, parent: folder, name: name)
                node.local = s.recoveredLocal.removeValue(forKey: file.id) ?? recovered[file.id]
                s.nodes[inode] = node
                s.byID[file.id] = inode
                if node.local?.isNew == true { s.localNew.insert(inode) }
            }
            children[name] = inode
            if hadListing && old[name] != inode { out.entries.append((folder, name)) }
        }
        for (name, inode) in old where children[name] != inode {
            out.entries.append((folder, name))
            guard var node = s.nodes[inode], node.parent == folder, !children.values.contains(inode) else { continue }
            // Gone from this folder (deleted, trashed, or moved somewhere not listed).
            node.parent = nil
            s.nodes[inode] = node
            out.inodes.append(inode)
            if let key = ContentKey(node.file, exportFormats: configuration.exportFormats) { out.staleContent.append(key) }
            Self.dropIfUnreferenced(inode, &s)
        }
        if s.nodes[folder]!.listing == nil {
            let now = time.now()
            s.nodes[folder]!.listing = Listing(children: children, listedAt: now, trusted: true)
            s.materializedFolders += 1
            Self.noteUse(folder, at: now, &s)
        } else {
            s.nodes[folder]!.listing!.children = children
        }
        return out
    }

    /// `file` as Drive shows it, with the name and folder given here when its upload (or a
    /// metadata change carried by it) has not landed yet: the queue gives Drive those once it
    /// lands, and until then Drive may show the name the upload started with.
    ///
    /// A new file the journal held at start whose folder is not a node yet (`recoveredNew`) is
    /// placed where the journal has it: its create may have reached Drive before the crash under
    /// the name and folder it started with, and a rename made here since is in the job's request
    /// (chaos finding 12: shown under the old name, the new one answered ENOENT, and Drive ended
    /// with the file under a name renamed away after the queue sent the journaled one).
    ///
    /// A file whose rename or move the journal held at start as a queued change (`queuedPlaces`)
    /// is placed where that change puts it, likewise.
    static func withPendingPlace(_ file: DriveFile, _ s: inout State) -> DriveFile {
        var placed = file
        let node = s.byID[file.id].flatMap { s.nodes[$0] }
        if let node, node.local != nil {
            placed.name = node.file.name
            if let parent = node.parent, let parentID = s.nodes[parent]?.file.id { placed.parents = [parentID] }
        } else if let queued = s.queuedPlaces[file.id] {
            placed.name = queued.name
            placed.parents = [queued.parentID]
            s.queuedPlaces[file.id]!.file = placed
        } else if node != nil {
            return file
        } else if let folderID = s.recoveredNewFolder[file.id], let pending = s.recoveredNew[folderID]?[file.id] {
            placed.name = pending.file.name
            placed.parents = [folderID]
            // Drive's metadata from now on (the journal's request had only name, folder and time),
            // for the folder's listing to show when Drive lists the file elsewhere.
            s.recoveredNew[folderID]![file.id]!.file = placed
        }
        return placed
    }

    /// `file` as a listing of `folderID` shows it (`withPendingPlace`), or nil when its upload or a
    /// queued change puts it in another folder (it is shown there, not here).
    static func placedIn(_ folderID: String?, _ file: DriveFile, _ s: inout State) -> DriveFile? {
        let placed = withPendingPlace(file, &s)
        guard placed.parents.first == nil || placed.parents.first == folderID || placed.parents == file.parents else {
            // Shown in the folder its queued change or upload puts it in. That folder's listing,
            // made before the item's Drive metadata was known here (a restart before any listing
            // showed it), lacks it: listed again when next used, it shows it (`queuedArrivals`).
            // Without this the file was in no folder until then (NamespaceModelCheckTests, chaos
            // finding 27: renamed offline, then `kill -9`).
            if let target = placed.parents.first, let inode = s.byID[target], s.nodes[inode]?.listing != nil,
               s.byID[file.id].flatMap({ s.nodes[$0]?.parent }) != inode {
                s.nodes[inode]!.listing!.trusted = false
            } else if let target = placed.parents.first, s.packed[target] != nil {
                s.packed[target]!.trusted = false
            }
            return nil
        }
        return placed
    }

    /// Files a queued change of the last run moves into `folderID` (`queuedPlaces`) that its
    /// listing from Drive (`listed`, by ID) does not hold yet: a listing of the folder shows them.
    static func queuedArrivals(in folderID: String, listed: Set<String>, _ s: State) -> [DriveFile] {
        s.queuedPlaces.compactMap { id, queued in queued.parentID == folderID && !listed.contains(id) ? queued.file : nil }
    }

    /// The change feed was read to its end: the restored index is as current as a listing.
    func confirmRestoredListings() {
        state.withLock { s in if !s.unconfirmed.isEmpty { s.unconfirmed = [] } }
    }

    /// Every listing is listed again when next used (the change feed lost its position).
    func distrustAllListings() {
        state.withLock { s in
            for inode in Array(s.nodes.keys) where s.nodes[inode]?.listing != nil {
                s.nodes[inode]!.listing!.trusted = false
            }
            for id in Array(s.packed.keys) { s.packed[id]!.trusted = false }
        }
    }

    // MARK: Changes

    /// Applies one page of the change feed: each change is the item's current state (or its
    /// removal). Folders whose listing is held are updated in place (names recomputed), so they
    /// stay as current as a fresh listing; items under folders not listed are dropped from view.
    func apply(_ changes: [DriveChange], readFrom: UInt64 = .max) -> Invalidations {
        changesHere.whenSettled { applyNow(changes, readFrom: readFrom) }
    }

    private func applyNow(_ changes: [DriveChange], readFrom: UInt64) -> Invalidations {
        state.withLock { s in applyChanges(changes, readFrom: readFrom, &s) }
    }

    /// `apply`'s work, under the table's lock (and `changesHere` settled).
    func applyChanges(_ changes: [DriveChange], readFrom: UInt64, _ s: inout State) -> Invalidations {
        var out = s.deferred
        s.deferred = Invalidations()
        s.generation += 1
        let generation = s.generation
        // Packed listings this page changes, decoded once and packed again at its end; likewise
        // the materialized listings it changes, gathered once and rebuilt once at its end.
        var work = PackedWork()
        var moved = MaterializedWork()
        var detached: [Inode] = []
        for change in changes {
            // Read before a change made here to the same item: older than what the table shows
            // (the next poll brings the item's state after that change).
            if let changed = s.itemsChangedHere[change.fileId], changed > readFrom { continue }
            var visible = change.file.flatMap { $0.trashed ? nil : Self.withPendingPlace($0, &s) }
            if s.removedBeforeLanding[change.fileId] != nil {
                // Removed here: hidden while Drive still shows it; its removal seen, the mark ends.
                if visible == nil { s.removedBeforeLanding[change.fileId] = nil } else { visible = nil }
            }
            let oldInode = s.byID[change.fileId]
            let oldParent = moved.parent(of: change.fileId, inTable: oldInode.flatMap { s.nodes[$0]?.parent })
            let newParent = visible?.parents.first.flatMap { s.byID[$0] }
            var affected: [Inode] = []
            if let oldParent { affected.append(oldParent) }
            if let newParent, newParent != oldParent { affected.append(newParent) }
            if let oldInode, oldInode == .root, let visible {
                s.nodes[.root]!.file = visible
                continue
            }
            let newParentIsPacked = applyToPacked(change, visible: visible, generation: generation, &work, &s)
            // A folder kept under a packed listing (NodeTable+Repack.swift) that was renamed, moved or
            // removed: its entry goes, and a listing places it again (same inode) where Drive has it.
            if let oldInode, let node = s.nodes[oldInode], let kept = node.parent, s.keptChildren[kept]?.contains(oldInode) == true,
               visible?.parents.first != s.nodes[kept]?.file.id || visible?.name != node.file.name {
                Self.unkeep(oldInode, from: kept, &s)
                s.nodes[oldInode]!.parent = nil
                out.entries.append((kept, node.name))
                out.inodes.append(oldInode)
                detached.append(oldInode)
            }
            if newParentIsPacked, let visible, let newParent, s.nodes[newParent]?.listing == nil {
                // A folder packed again after the kernel saw it may have a negative entry for the name.
                out.entries.append((newParent, soleShownName(visible)))
            }
            for folder in affected {
                if let id = s.nodes[folder]?.file.id { s.touched[id] = generation }
                guard s.nodes[folder]?.listing != nil else { continue }
                moved.gather(folder, s)
                moved.place(change.fileId, visible, in: folder == newParent ? folder : nil, leaving: folder)
            }
            if let oldInode, let visible { moved.latest[oldInode] = visible }
            // A folder that moved out of view or was removed: its own listing can no longer be
            // kept current by its parent's, so it is listed again when used.
            if let oldInode, visible == nil || newParent == nil, s.nodes[oldInode]?.listing != nil {
                s.nodes[oldInode]!.listing!.trusted = false
            }
            if visible == nil || (newParent == nil && !newParentIsPacked) {
                distrustPacked(change.fileId, &work, &s)
            }
        }
        // In the order the page first touched them, as the changes would have one at a time. A
        // folder that an earlier rebuild let go (removed, nobody holding it) has nothing to show.
        for folder in moved.order where s.nodes[folder]?.listing != nil {
            out.merge(setChildren(folder, Array(moved.files[folder]!.values), &s, savedInodes: work.savedInodes))
        }
        // An item no listing held as a node shows (moved out of view, or into a folder not
        // materialized) may still be held by the kernel: its node shows the item's last state
        // all the same. (Nodes in a rebuilt folder have it already.)
        for (inode, visible) in moved.latest {
            guard var node = s.nodes[inode], node.file != visible else { continue }
            if ContentKey(node.file, exportFormats: configuration.exportFormats)
                != ContentKey(visible, exportFormats: configuration.exportFormats) {
                out.inodes.append(inode)
                node.exportedSize = nil
            }
            node.file = visible
            s.nodes[inode] = node
        }
        for inode in detached { Self.dropIfUnreferenced(inode, &s) }
        finish(&work, &s)
        assert(Self.invariantsHold(s))
        return out
    }

    /// A page of changes' edits to materialized listings: each folder the page touches is gathered
    /// once (its children's files by Drive ID), edited by every change, and rebuilt once at the end
    /// of the page (`setChildren`, which recomputes the folder's names). So a page costs the size of
    /// the folders it touches plus its changes, not their product: 1,000 changes in a folder of
    /// 100,000 items rebuild it once, not 1,000 times under the table's lock.
    struct MaterializedWork {
        var files: [Inode: [String: DriveFile]] = [:]
        /// The gathered folders, first touched first.
        var order: [Inode] = []
        /// Where this page has put each item it moved: the gathered folder that holds it now, or
        /// nil for none of them (removed, or gone to a folder not materialized). Items not here are
        /// where the table shows them.
        var holder: [String: Inode?] = [:]
        /// The last state the page gave each item that was a node when its change was read.
        var latest: [Inode: DriveFile] = [:]

        /// The folder holding `id` as of this page: where the page put it, else where the table has it.
        func parent(of id: String, inTable: Inode?) -> Inode? {
            switch holder[id] {
            case .some(let held): return held
            case .none: return inTable
            }
        }

        /// Gathers `folder`'s children (once a page), leaving out those this page moved elsewhere.
        mutating func gather(_ folder: Inode, _ s: State) {
            guard files[folder] == nil, let listing = s.nodes[folder]?.listing else { return }
            var children: [String: DriveFile] = [:]
            children.reserveCapacity(listing.children.count)
            for inode in listing.children.values {
                guard let file = s.nodes[inode]?.file else { continue }
                if let held = holder[file.id], held != folder { continue }
                children[file.id] = file
            }
            files[folder] = children
            order.append(folder)
        }

        /// `id` leaves the gathered `leaving` and, when `into` is given (a gathered folder), is
        /// there as `file`.
        mutating func place(_ id: String, _ file: DriveFile?, in into: Inode?, leaving: Inode) {
            if into != leaving { files[leaving]?[id] = nil }
            if let into, let file {
                files[into]?[id] = file
                holder[id] = into
            } else if parent(of: id, inTable: leaving) == leaving {
                holder[id] = .some(nil)
            }
        }
    }
}

/// One version of one file's content: what the block cache keys on, so bytes of two versions can
/// never mix. Blobs: the head revision (or md5, or version) and size; exported Workspace files:
/// the export format and the file's version.
public struct ContentKey: Hashable, Sendable, CustomStringConvertible {
    public let fileID: String
    public let version: String
    /// The head revision to download from (pins the bytes), when Drive gave one.
    public let revision: String?
    /// The export MIME type, for Workspace files.
    public let exportMimeType: String?

    public init(fileID: String, version: String, revision: String? = nil, exportMimeType: String? = nil) {
        self.fileID = fileID
        self.version = version
        self.revision = revision
        self.exportMimeType = exportMimeType
    }

    /// nil for folders, shortcuts, and Workspace files that are not exported.
    init?(_ file: DriveFile, exportFormats: ExportFormats) {
        if file.isFolder || file.isShortcut { return nil }
        if file.isGoogleWorkspaceDocument {
            guard let choice = exportFormats.choice(for: file.mimeType) else { return nil }
            let stamp = file.version.map(String.init) ?? file.modifiedTime.map { "t\($0)" } ?? "0"
            self.init(fileID: file.id, version: "export-\(choice.fileExtension)-\(stamp)", exportMimeType: choice.mimeType)
            return
        }
        let base = file.headRevisionId ?? file.md5Checksum ?? file.version.map { "v\($0)" } ?? "t\(file.modifiedTime ?? 0)"
        self.init(fileID: file.id, version: "\(base)-\(file.size ?? 0)", revision: file.headRevisionId)
    }

    public var description: String { "\(fileID)@\(version)" }
}
