/// The kinds of file drivefs serves.
public enum FileKind: Sendable, Equatable {
    case regular
    case directory
    case symbolicLink
    /// Special files, kept as empty Drive files that say what they are (`--posix-metadata`); the
    /// kernel opens them itself (a FIFO's pipe, a device's driver), never through drivefs.
    case fifo
    case socket
    case characterDevice
    case blockDevice

    /// The `S_IFMT` bits of `st_mode`.
    public var modeTypeBits: UInt32 {
        switch self {
        case .regular: return 0o100000
        case .directory: return 0o040000
        case .symbolicLink: return 0o120000
        case .fifo: return 0o010000
        case .socket: return 0o140000
        case .characterDevice: return 0o020000
        case .blockDevice: return 0o060000
        }
    }

    /// The kind `st_mode`'s type bits name (0, as `mknod(2)` allows, is a regular file); nil for none.
    public init?(modeTypeBits bits: UInt32) {
        switch bits & 0o170000 {
        case 0, 0o100000: self = .regular
        case 0o040000: self = .directory
        case 0o120000: self = .symbolicLink
        case 0o010000: self = .fifo
        case 0o140000: self = .socket
        case 0o020000: self = .characterDevice
        case 0o060000: self = .blockDevice
        default: return nil
        }
    }

    /// A FIFO, a socket or a device node.
    public var isSpecial: Bool { self == .fifo || self == .socket || self == .characterDevice || self == .blockDevice }
}

/// What `stat(2)` shows for an inode. Times are integer milliseconds since the epoch (as Drive keeps them).
public struct FileAttributes: Sendable, Equatable {
    public var inode: Inode
    public var kind: FileKind
    /// Permission bits only (`0o7777`); the type bits come from `kind`.
    public var permissions: UInt32
    public var size: UInt64
    public var linkCount: UInt32
    public var userID: UInt32
    public var groupID: UInt32
    public var accessedMillis: Int64
    public var modifiedMillis: Int64
    public var changedMillis: Int64
    /// `st_rdev` of a device node (0 for everything else).
    public var deviceNumber: UInt64 = 0

    public init(inode: Inode, kind: FileKind, permissions: UInt32, size: UInt64, linkCount: UInt32,
                userID: UInt32, groupID: UInt32, accessedMillis: Int64, modifiedMillis: Int64, changedMillis: Int64) {
        self.inode = inode
        self.kind = kind
        self.permissions = permissions
        self.size = size
        self.linkCount = linkCount
        self.userID = userID
        self.groupID = groupID
        self.accessedMillis = accessedMillis
        self.modifiedMillis = modifiedMillis
        self.changedMillis = changedMillis
    }

    /// `st_mode`: type bits and permission bits.
    public var mode: UInt32 { kind.modeTypeBits | (permissions & 0o7777) }
}

/// One entry of a directory listing. `nextOffset` is the cookie that resumes the listing right
/// after this entry (it must be unique and non-zero within one open directory handle).
public struct DirectoryEntry: Sendable, Equatable {
    public var name: String
    public var inode: Inode
    public var kind: FileKind
    public var nextOffset: Int64

    public init(name: String, inode: Inode, kind: FileKind, nextOffset: Int64) {
        self.name = name
        self.inode = inode
        self.kind = kind
        self.nextOffset = nextOffset
    }
}

/// What an open returns: the handle the later calls receive, and how the kernel may cache.
public struct OpenedFile: Sendable, Equatable {
    public var handle: UInt64
    /// The content has not changed since the last open: keep the page cache.
    public var keepCache: Bool
    /// Bypass the page cache (and the kernel's idea of the file's size): for content whose size is
    /// known only once it is read, such as an exported Google Doc.
    public var directIO: Bool
    public init(handle: UInt64, keepCache: Bool, directIO: Bool = false) {
        self.handle = handle
        self.keepCache = keepCache
        self.directIO = directIO
    }
}

/// `statfs(2)` numbers, in blocks of `blockSize` bytes.
public struct FilesystemStatistics: Sendable, Equatable {
    public var blockSize: UInt64
    public var totalBlocks: UInt64
    public var freeBlocks: UInt64
    public var totalFiles: UInt64
    public var freeFiles: UInt64
    public var maximumNameLength: UInt64

    public init(blockSize: UInt64, totalBlocks: UInt64, freeBlocks: UInt64, totalFiles: UInt64, freeFiles: UInt64,
                maximumNameLength: UInt64) {
        self.blockSize = blockSize
        self.totalBlocks = totalBlocks
        self.freeBlocks = freeBlocks
        self.totalFiles = totalFiles
        self.freeFiles = freeFiles
        self.maximumNameLength = maximumNameLength
    }
}

/// What `setattr` changes (each field nil when unchanged): truncate, chmod, chown, utimens.
public struct AttributeChanges: Sendable, Equatable {
    public enum Time: Sendable, Equatable {
        /// `UTIME_NOW`: the filesystem's clock.
        case now
        case millis(Int64)
    }

    public var size: Int64?
    /// Permission bits (`0o7777`).
    public var permissions: UInt32?
    public var userID: UInt32?
    public var groupID: UInt32?
    public var accessed: Time?
    public var modified: Time?

    public init(size: Int64? = nil, permissions: UInt32? = nil, userID: UInt32? = nil, groupID: UInt32? = nil,
                accessed: Time? = nil, modified: Time? = nil) {
        self.size = size
        self.permissions = permissions
        self.userID = userID
        self.groupID = groupID
        self.accessed = accessed
        self.modified = modified
    }
}

/// What `create` answers: the new file's attributes (counted as one lookup) and its open handle.
public struct CreatedFile: Sendable, Equatable {
    public var attributes: FileAttributes
    public var opened: OpenedFile

    public init(attributes: FileAttributes, opened: OpenedFile) {
        self.attributes = attributes
        self.opened = opened
    }
}
