import DriveClient
import DriveSupport

/// What the FUSE bridge asks of a filesystem: libfuse's low-level operations, in Swift terms.
///
/// Contracts (libfuse's, see `fuse_lowlevel.h`):
/// - Inode numbers are the filesystem's own; `Inode.root` always exists.
/// - Every successful `lookup` adds one to the inode's lookup count; so does every entry that
///   `readDirectory(plus: true)` adds to the buffer with attributes. `forget` subtracts what the
///   kernel says; `forgetAll` (unmount) drops every count. An inode may be freed only when its
///   count is zero and no handle is open on it.
/// - Replies are asynchronous: each operation that takes a `Reply` answers it exactly once, from
///   any thread, now or later. A call never blocks its caller (a libfuse worker) on the network:
///   what needs Drive runs on the filesystem's own threads and replies from there, so a stalled
///   connection can never take the workers that `getattr`, `release` or `forget` need.
/// - Methods without a `Reply` (`forget`, `release`, `releaseDirectory`) return at once and cannot
///   fail: the kernel ignores their result.
/// - `start` is called once the session is live (after daemonizing: threads started before the
///   fork would not exist in the daemon); `stop` when it ends. Replies may be requested before
///   `start` only by tests.
public protocol FilesystemOperations: AnyObject, Sendable {
    /// How long the kernel may cache a name → inode answer, and an inode's attributes, in seconds.
    var entryTimeout: Double { get }
    var attributeTimeout: Double { get }
    /// How long the kernel may remember that a name does not exist (0: not at all).
    var negativeEntryTimeout: Double { get }

    func start(notifier: any KernelNotifier)
    func stop()

    /// Finds `name` in the directory `parent`; on success the lookup count of the result goes up by one.
    func lookup(parent: Inode, name: String, reply: Reply<FileAttributes>)
    /// The kernel dropped `count` references to `inode`.
    func forget(_ inode: Inode, count: UInt64)
    /// Unmount: every lookup count is now zero.
    func forgetAll()

    func attributes(of inode: Inode, reply: Reply<FileAttributes>)

    func openDirectory(_ inode: Inode, reply: Reply<UInt64>)
    /// Adds the entries after the cookie `offset` (0 = from the start, `.` and `..` first) to
    /// `buffer` until it is full (`add` returns false), then replies. With `plus`, each entry but
    /// `.` and `..` carries its attributes and counts as a lookup once it was added (never for an
    /// entry the buffer refused). Cookies are stable for the life of the handle.
    func readDirectory(_ inode: Inode, handle: UInt64, after offset: Int64, plus: Bool, into buffer: any DirectoryBuffer,
                       reply: Reply<Void>)
    func releaseDirectory(_ inode: Inode, handle: UInt64)

    /// `flags` are `open(2)`'s. A filesystem that cannot write rejects write access here.
    func open(_ inode: Inode, flags: Int32, reply: Reply<OpenedFile>)
    /// Up to `size` bytes at `offset`; fewer only at the end of the file.
    func read(_ inode: Inode, handle: UInt64, offset: Int64, size: Int, reply: Reply<ReadData>)
    /// The last close of a handle. The kernel ignores failures here, so nothing that can fail belongs in it.
    func release(_ inode: Inode, handle: UInt64)

    /// The target of a symbolic link.
    func readLink(_ inode: Inode, reply: Reply<String>)

    // Writes. Every operation that makes a name (`create`, `makeNode`, `makeDirectory`,
    // `symbolicLink`, `link`) counts one lookup of the result on success, like `lookup`. A
    // read-only filesystem answers `EROFS` (the defaults below).

    /// Makes and opens a regular file (`open(2)` with `O_CREAT`): `mode`'s permission bits, `flags` as `open`'s.
    func create(parent: Inode, name: String, mode: UInt32, flags: Int32, reply: Reply<CreatedFile>)
    /// `mknod(2)` (and `mkfifo(3)`, and `bind(2)` of a socket): `mode` with its type bits (0 is a
    /// regular file), `device` the `rdev` of a device node. A filesystem that keeps only regular
    /// files answers `EPERM` for the other types.
    func makeNode(parent: Inode, name: String, mode: UInt32, device: UInt64, reply: Reply<FileAttributes>)
    func makeDirectory(parent: Inode, name: String, mode: UInt32, reply: Reply<FileAttributes>)
    func symbolicLink(parent: Inode, name: String, target: String, reply: Reply<FileAttributes>)
    /// A hard link.
    func link(_ inode: Inode, newParent: Inode, newName: String, reply: Reply<FileAttributes>)
    /// `unlink(2)` and `rmdir(2)`.
    func removeFile(parent: Inode, name: String, reply: Reply<Void>)
    func removeDirectory(parent: Inode, name: String, reply: Reply<Void>)
    /// `renameat2(2)`: `flags` may hold `RENAME_NOREPLACE` (1) or `RENAME_EXCHANGE` (2).
    func rename(parent: Inode, name: String, newParent: Inode, newName: String, flags: UInt32, reply: Reply<Void>)
    /// truncate, chmod, chown, utimens; `handle` when the call came through an open file.
    func setAttributes(_ inode: Inode, _ changes: AttributeChanges, handle: UInt64?, reply: Reply<FileAttributes>)
    /// Writes `data` at `offset` (the whole of it, or fails); answers the count written.
    func write(_ inode: Inode, handle: UInt64, offset: Int64, data: [UInt8], reply: Reply<Int>)
    /// One `close(2)` of a descriptor of the handle (there may be several, and more writes after it).
    func flush(_ inode: Inode, handle: UInt64, reply: Reply<Void>)
    /// `fsync(2)` / `fdatasync(2)`.
    func synchronize(_ inode: Inode, handle: UInt64, dataOnly: Bool, reply: Reply<Void>)
    func synchronizeDirectory(_ inode: Inode, handle: UInt64, reply: Reply<Void>)

    func statistics(reply: Reply<FilesystemStatistics>)

    /// Extended attributes. `extendedAttribute` answers the value of `name` (`ENODATA` when the
    /// inode has no such attribute); `extendedAttributeNames` every name the inode has, each of
    /// which `extendedAttribute` answers. The bridge handles the kernel's size protocol (size 0
    /// asks for the length, `ERANGE` when the caller's buffer is too small).
    func extendedAttribute(_ inode: Inode, named name: String, reply: Reply<[UInt8]>)
    func extendedAttributeNames(_ inode: Inode, reply: Reply<[String]>)
    /// `flags` are `setxattr(2)`'s (`XATTR_CREATE`, `XATTR_REPLACE`).
    func setExtendedAttribute(_ inode: Inode, named name: String, value: [UInt8], flags: Int32, reply: Reply<Void>)
    func removeExtendedAttribute(_ inode: Inode, named name: String, reply: Reply<Void>)
}

extension FilesystemOperations {
    public var negativeEntryTimeout: Double { 0 }
    public func start(notifier: any KernelNotifier) {}
    public func stop() {}
    public func readLink(_ inode: Inode, reply: Reply<String>) { reply.fail(.invalidArgument) }
    /// A read-only filesystem: every write answers `EROFS`; flush and fsync have nothing to do.
    public func create(parent: Inode, name: String, mode: UInt32, flags: Int32, reply: Reply<CreatedFile>) { reply.fail(.readOnly) }
    public func makeNode(parent: Inode, name: String, mode: UInt32, device: UInt64, reply: Reply<FileAttributes>) {
        reply.fail(.readOnly)
    }
    public func makeDirectory(parent: Inode, name: String, mode: UInt32, reply: Reply<FileAttributes>) { reply.fail(.readOnly) }
    public func symbolicLink(parent: Inode, name: String, target: String, reply: Reply<FileAttributes>) { reply.fail(.readOnly) }
    public func link(_ inode: Inode, newParent: Inode, newName: String, reply: Reply<FileAttributes>) { reply.fail(.readOnly) }
    public func removeFile(parent: Inode, name: String, reply: Reply<Void>) { reply.fail(.readOnly) }
    public func removeDirectory(parent: Inode, name: String, reply: Reply<Void>) { reply.fail(.readOnly) }
    public func rename(parent: Inode, name: String, newParent: Inode, newName: String, flags: UInt32, reply: Reply<Void>) {
        reply.fail(.readOnly)
    }
    public func setAttributes(_ inode: Inode, _ changes: AttributeChanges, handle: UInt64?, reply: Reply<FileAttributes>) {
        reply.fail(.readOnly)
    }
    public func write(_ inode: Inode, handle: UInt64, offset: Int64, data: [UInt8], reply: Reply<Int>) { reply.fail(.readOnly) }
    public func flush(_ inode: Inode, handle: UInt64, reply: Reply<Void>) { reply.succeed() }
    public func synchronize(_ inode: Inode, handle: UInt64, dataOnly: Bool, reply: Reply<Void>) { reply.succeed() }
    public func synchronizeDirectory(_ inode: Inode, handle: UInt64, reply: Reply<Void>) { reply.succeed() }
    /// A filesystem without extended attributes: none to read or list, none may be written.
    public func extendedAttribute(_ inode: Inode, named name: String, reply: Reply<[UInt8]>) { reply.fail(.noAttribute) }
    public func extendedAttributeNames(_ inode: Inode, reply: Reply<[String]>) { reply.succeed([]) }
    public func setExtendedAttribute(_ inode: Inode, named name: String, value: [UInt8], flags: Int32, reply: Reply<Void>) {
        reply.fail(.notPermitted)
    }
    public func removeExtendedAttribute(_ inode: Inode, named name: String, reply: Reply<Void>) { reply.fail(.notPermitted) }
}

/// The answer to one kernel request, sent exactly once from whichever thread has it.
///
/// The bridge makes one per request; `cancellation` is set when the kernel interrupts the request
/// (Ctrl-C on the process that waits), and the work done for the request should stop and answer
/// `EINTR`. A second answer is a bug: it is dropped (and trips an assertion in debug builds),
/// because libfuse would free the request twice.
public final class Reply<Value: Sendable>: Sendable {
    private let send: @Sendable (Result<Value, FilesystemError>) -> Void
    private let sent = Locked(false)
    public let cancellation: CancellationFlag?
    /// Who asked (libfuse's `fuse_req_ctx`): the owner of what the request makes, under
    /// `--posix-metadata`. Nil when not known (tests, internal calls): the mount's owner then.
    public let caller: RequestCaller?

    public init(cancellation: CancellationFlag? = nil, caller: RequestCaller? = nil,
                _ send: @escaping @Sendable (Result<Value, FilesystemError>) -> Void) {
        self.cancellation = cancellation
        self.caller = caller
        self.send = send
    }

    public func succeed(_ value: Value) { complete(.success(value)) }
    public func fail(_ error: FilesystemError) { complete(.failure(error)) }

    public func complete(_ result: Result<Value, FilesystemError>) {
        let first = sent.withLock { sent -> Bool in
            defer { sent = true }
            return !sent
        }
        assert(first, "a request was answered twice")
        if first { send(result) }
    }

    /// Runs `body` and answers with its value or error.
    public func answer(_ body: () throws(FilesystemError) -> Value) {
        do throws(FilesystemError) { succeed(try body()) } catch { fail(error) }
    }

    public var isAnswered: Bool { sent.withLock { $0 } }
}

/// The process a request came from, as the kernel saw it: its effective user and group.
public struct RequestCaller: Sendable, Equatable {
    public var userID: UInt32
    public var groupID: UInt32
    public init(userID: UInt32, groupID: UInt32) {
        self.userID = userID
        self.groupID = groupID
    }
}

extension Reply where Value == Void {
    public func succeed() { succeed(()) }
}

/// Where `readDirectory` puts entries: the reply buffer of one readdir request, with room for what
/// the kernel asked. Used by one thread at a time (the one that fills it, then the one that replies).
public protocol DirectoryBuffer: AnyObject, Sendable {
    /// Adds one entry (with `attributes` for readdirplus, nil for `.` and `..` or plain readdir);
    /// false when it does not fit, in which case nothing was added and nothing may be counted.
    func add(_ entry: DirectoryEntry, attributes: FileAttributes?) -> Bool
}

/// What a read answers: bytes in memory, or a range of an open file that the bridge hands to the
/// kernel without copying it through Swift (`fuse_reply_data` from the descriptor). The descriptor
/// stays open at least until the reply returns.
public enum ReadData: Sendable, Equatable {
    case bytes([UInt8])
    case file(descriptor: Int32, offset: Int64, length: Int)

    public var count: Int {
        switch self {
        case .bytes(let b): return b.count
        case .file(_, _, let length): return length
        }
    }
}

/// The kernel caches the filesystem tells to forget: libfuse's `notify_inval_entry` / `_inode`.
/// Never call these while holding a lock that an operation's reply path needs, nor from inside an
/// operation on the same inode (the kernel may wait for that operation: a deadlock).
public protocol KernelNotifier: Sendable {
    /// Forget the name `name` in `parent` (a rename, a removal, or a name that now exists).
    func invalidateEntry(parent: Inode, name: String)
    /// Forget the attributes and the cached pages of `inode` (its content changed).
    func invalidateInode(_ inode: Inode)
}

/// A notifier that tells nobody: for tests, and before a session exists.
public struct SilentNotifier: KernelNotifier {
    public init() {}
    public func invalidateEntry(parent: Inode, name: String) {}
    public func invalidateInode(_ inode: Inode) {}
}

/// A directory entry with the attributes readdirplus hands the kernel.
public struct DirectoryEntryPlus: Sendable, Equatable {
    public var entry: DirectoryEntry
    /// Nil for `.` and `..`, which readdirplus does not count as lookups.
    public var attributes: FileAttributes?

    public init(entry: DirectoryEntry, attributes: FileAttributes?) {
        self.entry = entry
        self.attributes = attributes
    }

    public static func isDotOrDotDot(_ name: String) -> Bool { name == "." || name == ".." }
}
