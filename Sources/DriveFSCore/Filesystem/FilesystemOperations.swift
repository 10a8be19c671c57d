/// What the FUSE bridge asks of a filesystem: libfuse's low-level operations, in Swift terms.
///
/// Contracts (libfuse's, see `fuse_lowlevel.h`):
/// - Inode numbers are the filesystem's own; `Inode.root` always exists.
/// - Every successful `lookup` adds one to the inode's lookup count; `forget` subtracts what the
///   kernel says; `forgetAll` (unmount) drops every count. An inode may be freed only when its
///   count is zero and no handle is open on it.
/// - Methods are called concurrently from libfuse's worker threads: implementations guard their
///   state themselves and never block one call on another.
/// - Errors are `FilesystemError`s; the bridge turns each into exactly one errno reply.
public protocol FilesystemOperations: AnyObject, Sendable {
    /// How long the kernel may cache a name → inode answer, and an inode's attributes, in seconds.
    var entryTimeout: Double { get }
    var attributeTimeout: Double { get }

    /// Finds `name` in the directory `parent`; on success the lookup count of the result goes up by one.
    func lookup(parent: Inode, name: String) throws(FilesystemError) -> FileAttributes
    /// The kernel dropped `count` references to `inode`.
    func forget(_ inode: Inode, count: UInt64)
    /// Unmount: every lookup count is now zero.
    func forgetAll()

    func attributes(of inode: Inode) throws(FilesystemError) -> FileAttributes

    func openDirectory(_ inode: Inode) throws(FilesystemError) -> UInt64
    /// The entries after the cookie `offset` (0 = from the start), including `.` and `..`.
    /// The bridge sends as many as fit and calls again with the last one's `nextOffset`.
    func readDirectory(_ inode: Inode, handle: UInt64, after offset: Int64) throws(FilesystemError) -> [DirectoryEntry]
    /// `readDirectory` with each entry's attributes (readdirplus: `ls -l` without a lookup per name).
    /// Every returned entry except `.` and `..` has had its lookup count raised by one, exactly as
    /// `lookup` would; `attributes` is nil for `.` and `..`.
    func readDirectoryPlus(_ inode: Inode, handle: UInt64, after offset: Int64) throws(FilesystemError) -> [DirectoryEntryPlus]
    func releaseDirectory(_ inode: Inode, handle: UInt64)

    /// `flags` are `open(2)`'s. A filesystem that cannot write rejects write access here.
    func open(_ inode: Inode, flags: Int32) throws(FilesystemError) -> OpenedFile
    /// Up to `size` bytes at `offset`; fewer only at the end of the file.
    func read(_ inode: Inode, handle: UInt64, offset: Int64, size: Int) throws(FilesystemError) -> [UInt8]
    /// The last close of a handle. The kernel ignores failures here, so nothing that can fail belongs in it.
    func release(_ inode: Inode, handle: UInt64)

    func statistics() -> FilesystemStatistics
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

extension FilesystemOperations {
    /// Built from `readDirectory` and `lookup` (which does the counting). A filesystem with the
    /// attributes at hand should answer in one pass instead.
    public func readDirectoryPlus(_ inode: Inode, handle: UInt64, after offset: Int64) throws(FilesystemError)
        -> [DirectoryEntryPlus]
    {
        var result: [DirectoryEntryPlus] = []
        for entry in try readDirectory(inode, handle: handle, after: offset) {
            if DirectoryEntryPlus.isDotOrDotDot(entry.name) {
                result.append(DirectoryEntryPlus(entry: entry, attributes: nil))
                continue
            }
            do throws(FilesystemError) {
                result.append(DirectoryEntryPlus(entry: entry, attributes: try lookup(parent: inode, name: entry.name)))
            } catch where error == .notFound {
                // Removed since the listing was taken: leave it out.
            } catch {
                for counted in result { if let a = counted.attributes { forget(a.inode, count: 1) } }
                throw error
            }
        }
        return result
    }
}
