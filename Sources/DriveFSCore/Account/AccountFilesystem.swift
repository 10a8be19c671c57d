import DriveClient
import DriveSupport
import Foundation
import Glibc

/// Where the account layout finds its shared drives: Drive's list of the drives the user can see
/// (drives.list, every page), and a started-on-demand member filesystem for one of them.
public struct SharedDriveCatalog: Sendable {
    /// Every shared drive the user can see, in Drive's order.
    public var list: @Sendable () throws -> [SharedDrive]
    /// A filesystem over the drive, constructed but not started (its own scoped client and cache
    /// directory). Runs on the account's own threads, never a kernel worker's: it may ask Drive
    /// for the drive's root and the feed's position, and wait for the cache directory.
    public var open: @Sendable (SharedDrive) throws -> DriveFilesystem

    public init(list: @escaping @Sendable () throws -> [SharedDrive], open: @escaping @Sendable (SharedDrive) throws -> DriveFilesystem) {
        self.list = list
        self.open = open
    }
}

/// The whole account in one mount (`drivefs mount --account`): a small synthetic top,
///
///     /My Drive/…              the My Drive member
///     /Shared drives/<name>/…  one member per shared drive the user can see
///     /Trash/…                 My Drive's trash (`AccountFilesystem+Trash.swift`)
///
/// and everything below a top folder delegated to that folder's **member**, a `DriveFilesystem`
/// of its own (its own scoped client, cache directory, index, change feed and threads), so the
/// single-drive core is used as it is.
///
/// Contracts (docs/architecture.md, "The account layout"):
/// - Inodes: member `m`'s inode `i` is `m << 48 | i` here (`AccountInodes`); member 0 is the
///   synthetic top, 1 is My Drive, 2… are shared drives in the order first listed (a number is
///   never reused in the life of the mount: the kernel may still hold a lost drive's inodes, which
///   then answer `ESTALE`). A member's root (`i == 1`) is its layout folder (`My Drive`,
///   `Shared drives/<name>`); `..` of it is the layout parent.
/// - Lookup counts: every lookup the kernel makes below a member root goes to the member and is
///   forgotten there. The synthetic folders and the members' roots live as long as the mount: a
///   lookup of them counts nothing and their forgets are dropped (a member's root is never freed,
///   so the counts the member made of it itself, through `..`, can stay).
/// - Handles belong to the member the inode belongs to (each call names its inode), so two
///   members' equal handle numbers never meet; the synthetic folders' handles are this type's.
/// - A shared drive's member is made on the first request that needs it (a lookup below its root,
///   opendir), on `work`, never on the kernel's thread; requests that come meanwhile wait in the
///   slot and are answered once it opened. Until then its folder's attributes are synthetic, so a
///   cold `ls -l "Shared drives"` costs one drives.list page and nothing per drive.
/// - `Shared drives` is Drive's list as of its last read: read again when older than the
///   directory TTL, or marked stale (`sharedDrivesChanged`, a `changeType: drive` change in the
///   user's feed). A drive no longer listed is gone: its member stops (its uploads drain), the
///   kernel forgets its name, its inodes answer `ESTALE`.
/// - Renames and hard links between two members answer `EXDEV` (`mv` then copies and removes, which
///   is what moving between drives is); writes into the synthetic folders answer `EACCES`.
/// - `statfs` is My Drive's (the user's quota).
///
/// Lock: `state`, a leaf (no other lock is taken while it is held, no member is called under it,
/// and nothing waits on Drive under it).
public final class AccountFilesystem: FilesystemOperations {
    public static let myDriveName = "My Drive"
    public static let sharedDrivesName = "Shared drives"

    public let myDrive: DriveFilesystem
    let catalog: SharedDriveCatalog
    /// Where members open and `Shared drives` is read (never a kernel worker).
    let work = WorkPool(name: "drivefs-account", threads: 2)
    /// Where the kernel is told what `Shared drives` lost or gained (never from a request's thread).
    let notifications = WorkPool(name: "drivefs-account-notify", threads: 1)
    let state = Locked(AccountState())
    let time: any TimeSource

    public var entryTimeout: Double { myDrive.entryTimeout }
    public var attributeTimeout: Double { myDrive.attributeTimeout }
    public var negativeEntryTimeout: Double { myDrive.negativeEntryTimeout }

    public init(myDrive: DriveFilesystem, sharedDrives catalog: SharedDriveCatalog, time: any TimeSource = SystemTimeSource()) {
        self.myDrive = myDrive
        self.catalog = catalog
        self.time = time
        state.withLock { $0.started = time.now() }
        myDrive.whenSharedDrivesChange { [weak self] _ in self?.sharedDrivesChanged() }
    }

    var configuration: DriveFSConfiguration { myDrive.configuration }

    // MARK: Lifecycle

    public func start(notifier: any KernelNotifier) {
        state.withLock { $0.notifier = notifier }
        work.start()
        notifications.start()
        myDrive.start(notifier: MemberNotifier(member: AccountInodes.myDrive, target: notifier))
    }

    public func stop() {
        let open = state.withLock { s -> [DriveFilesystem] in
            s.stopped = true
            return s.slots.values.compactMap(\.member)
        }
        work.stop()
        notifications.stop()
        // Each member drains its own uploads; My Drive last (the longest queue, usually).
        for member in open { member.stop() }
        myDrive.stop()
    }

    public func forgetAll() {
        myDrive.forgetAll()
        for member in state.withLock({ $0.slots.values.compactMap(\.member) }) { member.forgetAll() }
    }

    // MARK: Members

    /// The open member `number`, or nil (`ESTALE` when it is gone; nil member with no error: not open yet).
    func openMember(_ number: UInt64) -> Result<DriveFilesystem?, FilesystemError> {
        if number == AccountInodes.myDrive { return .success(myDrive) }
        return state.withLock { s in
            guard let slot = s.slots[number] else { return .failure(.stale) }
            return .success(slot.member)
        }
    }

    /// Runs `body` with member `number`, opening it first if need be (on `work`); `failed` gets
    /// what stops that (the drive gone: `ESTALE`; its opening failed).
    func withMember(_ number: UInt64, failed: @escaping @Sendable (FilesystemError) -> Void,
                    _ body: @escaping @Sendable (DriveFilesystem) -> Void) {
        if number == AccountInodes.myDrive { return body(myDrive) }
        enum Next { case run(DriveFilesystem), fail(FilesystemError), wait, open(SharedDrive) }
        let waiter: @Sendable (Result<DriveFilesystem, FilesystemError>) -> Void = { result in
            switch result {
            case .success(let member): body(member)
            case .failure(let error): failed(error)
            }
        }
        let next = state.withLock { s -> Next in
            guard var slot = s.slots[number] else { return .fail(.stale) }
            if let member = slot.member { return .run(member) }
            if s.stopped { return .fail(.stale) }
            slot.waiters.append(waiter)
            let opening = slot.opening
            slot.opening = true
            s.slots[number] = slot
            return opening ? .wait : .open(slot.drive)
        }
        switch next {
        case .run(let member): body(member)
        case .fail(let error): failed(error)
        case .wait: break
        case .open(let drive): work.submit { [self] in open(number, drive) }
        }
    }

    /// Makes and starts the member of `drive` (on `work`), then answers the requests that waited.
    private func open(_ number: UInt64, _ drive: SharedDrive) {
        // The member of a drive lost a moment ago may still be stopping (its lock on the cache directory held).
        for stopping in state.withLock({ Array($0.stopping.values) }) {
            _ = stopping.wait(timeout: .now() + configuration.drainTimeout + 5)
        }
        let result: Result<DriveFilesystem, FilesystemError>
        do {
            result = .success(try catalog.open(drive))
        } catch let error as FilesystemError {
            Log.shared.warning("account", "cannot open the shared drive \(drive): \(error)")
            result = .failure(error)
        } catch {
            let mapped = FilesystemError.from(error)
            Log.shared.warning("account", "cannot open the shared drive \(drive): \(error)")
            result = .failure(mapped)
        }
        if case .success(let member) = result, let notifier = state.withLock({ $0.notifier }) {
            member.start(notifier: MemberNotifier(member: number, target: notifier))
            Log.shared.info("account", "opened the shared drive \(drive) as member \(number)")
        }
        // Kept only while the drive is still listed and the mount is still up; else stopped again.
        let (waiters, keep) = state.withLock { s -> ([@Sendable (Result<DriveFilesystem, FilesystemError>) -> Void], Bool) in
            guard var slot = s.slots[number] else { return ([], false) }
            let waiters = slot.waiters
            slot.waiters = []
            slot.opening = false
            if case .success(let member) = result, !s.stopped { slot.member = member }
            s.slots[number] = slot
            return (waiters, !s.stopped)
        }
        if case .success(let member) = result, !keep { member.stop() }
        let answer: Result<DriveFilesystem, FilesystemError> = keep ? result : .failure(.stale)
        for waiter in waiters { waiter(answer) }
        if case .success(let member) = result, keep, state.withLock({ $0.slots[number] == nil }) {
            // Lost while it opened (a refresh ran meanwhile): nobody can reach it any more.
            member.stop()
        }
    }

    // MARK: Shared drives

    /// Marks `Shared drives` stale: the next use reads drives.list again (a `changeType: drive`
    /// change: the user joined or left a drive, or its name or role changed).
    /// Read again at once (once started), so that a drive that went is forgotten by the kernel
    /// without waiting for someone to list the folder.
    public func sharedDrivesChanged() {
        let started = state.withLock { s -> Bool in
            s.drivesListedAt = nil
            s.drivesGeneration += 1
            return s.notifier != nil && !s.stopped
        }
        if started { withCurrentDrives { _ in } }
    }

    /// Runs `then` once `Shared drives` is current (read again on `work` when it is not; one
    /// read at a time, whoever asks meanwhile waits for it).
    func withCurrentDrives(_ then: @escaping @Sendable (Result<Void, FilesystemError>) -> Void) {
        let now = time.now()
        let ttl = configuration.directoryCacheTTL
        enum Next { case current, wait, read }
        let next = state.withLock { s -> Next in
            if let at = s.drivesListedAt, now - at < ttl { return .current }
            s.drivesWaiters.append(then)
            if s.readingDrives { return .wait }
            s.readingDrives = true
            return .read
        }
        switch next {
        case .current: then(.success(()))
        case .wait: break
        case .read: work.submit { [self] in readDrives() }
        }
    }

    /// One read of drives.list (every page), applied to the slots; on `work`.
    func readDrives() {
        let generation = state.withLock { $0.drivesGeneration }
        let outcome: Result<[SharedDrive], FilesystemError>
        do {
            let listed = try RequestContext(priority: .interactive).scope { try catalog.list() }
            outcome = .success(listed)
        } catch {
            outcome = .failure(FilesystemError.from(error))
            Log.shared.warning("account", "cannot list the shared drives: \(error)")
        }
        let now = time.now()
        var lost: [(number: UInt64, name: String, member: DriveFilesystem?)] = []
        var renamed: [String] = []
        var addedNames: [String] = []
        let (waiters, notifier) = state.withLock { s -> ([@Sendable (Result<Void, FilesystemError>) -> Void], (any KernelNotifier)?) in
            let waiters = s.drivesWaiters
            s.drivesWaiters = []
            s.readingDrives = false
            guard case .success(let drives) = outcome else {
                // Served as last read, if it ever was (offline): the error only when there is nothing.
                return (waiters, s.notifier)
            }
            // A change marked while this read was under way may not be in it: read again next time.
            s.drivesListedAt = s.drivesGeneration == generation ? now : nil
            let listedIDs = Set(drives.map(\.id))
            for (number, slot) in s.slots where !listedIDs.contains(slot.drive.id) {
                lost.append((number, slot.shownName, slot.member))
                if let member = slot.member {
                    let stopping = DispatchGroup()
                    stopping.enter()
                    s.stopping[member.configuration.cacheDirectory.path] = stopping
                }
                s.slots[number] = nil
                s.numbers[slot.drive.id] = nil
            }
            let shown = NameMapper.shownNames(drives.map { NameMapper.Child(id: $0.id, name: $0.name) })
            for drive in drives {
                let name = shown[drive.id] ?? drive.id
                if let number = s.numbers[drive.id] {
                    if s.slots[number]!.shownName != name { renamed.append(s.slots[number]!.shownName) }
                    s.slots[number]!.drive = drive
                    s.slots[number]!.shownName = name
                } else {
                    let number = s.nextNumber
                    s.nextNumber += 1
                    s.numbers[drive.id] = number
                    s.slots[number] = DriveSlot(drive: drive, shownName: name)
                    addedNames.append(name)
                }
            }
            return (waiters, s.notifier)
        }
        // The kernel is told on its own thread: a readdir of `Shared drives` may be waiting for this
        // read, and the kernel takes that folder's lock to forget a name in it (a deadlock here).
        let forgotten = lost.map { ($0.number, $0.name) }
        let names = renamed + addedNames
        if let notifier, !(forgotten.isEmpty && names.isEmpty) {
            notifications.submit {
                for gone in forgotten {
                    notifier.invalidateEntry(parent: AccountInodes.sharedDrives, name: gone.1)
                    notifier.invalidateInode(AccountInodes.global(gone.0, .root))
                }
                // A name that now exists, or no longer: the kernel may remember it was missing.
                for name in names { notifier.invalidateEntry(parent: AccountInodes.sharedDrives, name: name) }
            }
        }
        let answer: Result<Void, FilesystemError>
        switch outcome {
        case .success: answer = .success(())
        case .failure(let error): answer = state.withLock({ $0.slots.isEmpty && $0.drivesListedAt == nil }) ? .failure(error) : .success(())
        }
        for waiter in waiters { waiter(answer) }
        for gone in lost {
            Log.shared.info("account", "the shared drive '\(gone.name)' is no longer visible to this account: its folder goes")
            // After the answers (its uploads may take a while to give up), on `work`; a new member
            // of the same drive (back at once) waits for it to let the cache directory go.
            guard let member = gone.member else { continue }
            member.stop()
            let stopped = state.withLock { $0.stopping.removeValue(forKey: member.configuration.cacheDirectory.path) }
            stopped?.leave()
        }
    }

    /// The drives as last read, by shown name.
    func listedDrives() -> [(name: String, number: UInt64, member: DriveFilesystem?)] {
        state.withLock { s in s.slots.map { ($0.value.shownName, $0.key, $0.value.member) } }.sorted { $0.name < $1.name }
    }

    /// The shared drives known to the mount now (`drivefs status`).
    public var sharedDriveMembers: [(drive: SharedDrive, member: DriveFilesystem?)] {
        state.withLock { s in s.slots.values.map { ($0.drive, $0.member) } }.sorted { $0.drive.name < $1.drive.name }
    }

    // MARK: Synthetic attributes

    /// The synthetic folders (the top, `Shared drives`, a drive not opened yet): read-only
    /// folders owned by the mount's user, dated at the mount's start.
    func syntheticAttributes(_ inode: Inode, writable: Bool = false) -> FileAttributes {
        let c = configuration
        let millis = Int64(state.withLock { $0.started } * 1000)
        return FileAttributes(inode: inode, kind: .directory, permissions: (writable ? 0o755 : 0o555) & ~c.umask | 0o500,
                              size: 4096, linkCount: 2, userID: c.userID, groupID: c.groupID,
                              accessedMillis: millis, modifiedMillis: millis, changedMillis: millis)
    }

    /// A member root's attributes: the member's (mapped) when it is open, synthetic before.
    func rootAttributes(_ number: UInt64) -> Result<FileAttributes, FilesystemError> {
        switch openMember(number) {
        case .failure(let error): return .failure(error)
        case .success(nil): return .success(syntheticAttributes(AccountInodes.global(number, .root), writable: true))
        case .success(let member?):
            guard let attributes = Self.now(member, .root) else { return .failure(.stale) }
            return .success(AccountInodes.mapped(attributes, number))
        }
    }

    /// A member's attributes answered from memory (DriveFilesystem.attributes replies at once).
    static func now(_ member: DriveFilesystem, _ inode: Inode) -> FileAttributes? {
        let answer = Locked<FileAttributes?>(nil)
        member.attributes(of: inode, reply: Reply { result in answer.withLock { $0 = try? result.get() } })
        return answer.withLock { $0 }
    }
}

/// The account's own state, behind `AccountFilesystem.state`.
struct AccountState: Sendable {
    var notifier: (any KernelNotifier)?
    var stopped = false
    /// When the mount started (the synthetic folders' times).
    var started: Double = 0
    /// INVARIANT: `numbers[slots[n].drive.id] == n` for every slot, and the reverse.
    var slots: [UInt64: DriveSlot] = [:]
    var numbers: [String: UInt64] = [:]
    var nextNumber: UInt64 = AccountInodes.firstSharedDrive
    /// When drives.list was last read in full (nil: never, or marked stale).
    var drivesListedAt: Double?
    var readingDrives = false
    /// Counts `sharedDrivesChanged` calls (a read under way when one comes is not current).
    var drivesGeneration = 0
    var drivesWaiters: [@Sendable (Result<Void, FilesystemError>) -> Void] = []
    /// `Trash/` as last read, by shown name; each trashed item's inode, by Drive ID (kept for the mount's life).
    var trash: [String: AccountFilesystem.TrashItem] = [:]
    var trashInodes: [String: UInt64] = [:]
    var nextTrashInode: UInt64 = AccountInodes.firstTrashItem
    /// Restored items: the inode `Trash/` showed → the item's inode in My Drive.
    var restoredAliases: [UInt64: Inode] = [:]
    /// Members of lost drives being stopped, by cache directory (left when stopped).
    var stopping: [String: DispatchGroup] = [:]
    /// The synthetic folders' open handles: their snapshots.
    var handles: [UInt64: [DirectoryEntry]] = [:]
    var nextHandle: UInt64 = 1
}

/// One shared drive of the layout: its member once opened, the requests waiting for that.
struct DriveSlot: Sendable {
    var drive: SharedDrive
    var shownName: String
    var member: DriveFilesystem?
    var opening = false
    var waiters: [@Sendable (Result<DriveFilesystem, FilesystemError>) -> Void] = []
}

/// The account's inode numbers: member number in the high 16 bits, the member's inode below.
enum AccountInodes {
    static let shift: UInt64 = 48
    static let localMask: UInt64 = (1 << 48) - 1
    /// Member 0: the synthetic top.
    static let synthetic: UInt64 = 0
    static let myDrive: UInt64 = 1
    static let firstSharedDrive: UInt64 = 2
    static let root = Inode.root
    static let sharedDrives = Inode(2)
    static let trash = Inode(3)
    /// Trashed items shown in `Trash/`, numbered from here (member 0).
    static let firstTrashItem: UInt64 = 1 << 20
    static let myDriveRoot = global(myDrive, .root)

    static func global(_ member: UInt64, _ local: Inode) -> Inode {
        assert(local.rawValue <= localMask, "\(local) of member \(member) does not fit in 48 bits")
        return Inode(member << shift | local.rawValue)
    }

    static func split(_ inode: Inode) -> (member: UInt64, local: Inode) {
        (inode.rawValue >> shift, Inode(inode.rawValue & localMask))
    }

    static func mapped(_ attributes: FileAttributes, _ member: UInt64) -> FileAttributes {
        var a = attributes
        a.inode = global(member, a.inode)
        return a
    }
}

/// A member's kernel notifications, in the account's inode numbers.
struct MemberNotifier: KernelNotifier {
    let member: UInt64
    let target: any KernelNotifier
    func invalidateEntry(parent: Inode, name: String) {
        target.invalidateEntry(parent: AccountInodes.global(member, parent), name: name)
    }
    func invalidateInode(_ inode: Inode) { target.invalidateInode(AccountInodes.global(member, inode)) }
}

/// A member's directory entries, in the account's inode numbers; `..` of a member root is its
/// layout parent.
final class MemberDirectoryBuffer: DirectoryBuffer {
    let member: UInt64
    let inner: any DirectoryBuffer
    let parentOfRoot: Inode?

    init(member: UInt64, inner: any DirectoryBuffer, parentOfRoot: Inode?) {
        self.member = member
        self.inner = inner
        self.parentOfRoot = parentOfRoot
    }

    func add(_ entry: DirectoryEntry, attributes: FileAttributes?) -> Bool {
        var e = entry
        if e.name == "..", let parentOfRoot {
            e.inode = parentOfRoot
        } else {
            e.inode = AccountInodes.global(member, e.inode)
        }
        return inner.add(e, attributes: attributes.map { AccountInodes.mapped($0, member) })
    }
}
