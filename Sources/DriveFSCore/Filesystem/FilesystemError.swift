import Glibc

/// A failed filesystem operation, as the errno the kernel passes on to the caller.
///
/// The core throws these; the FUSE bridge replies with `errno` unchanged. A `DriveError` becomes
/// one in a single place, `FilesystemError.init(_: DriveError)` (FilesystemError+DriveError.swift).
public struct FilesystemError: Error, Equatable, Sendable, CustomStringConvertible {
    public let errno: Int32
    public init(errno: Int32) { self.errno = errno }

    public static let notFound = FilesystemError(errno: ENOENT)
    public static let notADirectory = FilesystemError(errno: ENOTDIR)
    public static let isADirectory = FilesystemError(errno: EISDIR)
    public static let readOnly = FilesystemError(errno: EROFS)
    public static let invalidArgument = FilesystemError(errno: EINVAL)
    public static let badHandle = FilesystemError(errno: EBADF)
    public static let nameTooLong = FilesystemError(errno: ENAMETOOLONG)
    public static let ioError = FilesystemError(errno: EIO)
    /// An extended attribute the inode does not have (`getxattr`, `removexattr`).
    public static let noAttribute = FilesystemError(errno: ENODATA)
    public static let notPermitted = FilesystemError(errno: EPERM)
    public static let exists = FilesystemError(errno: EEXIST)
    public static let notEmpty = FilesystemError(errno: ENOTEMPTY)
    public static let noSpace = FilesystemError(errno: ENOSPC)
    public static let fileTooLarge = FilesystemError(errno: EFBIG)
    public static let accessDenied = FilesystemError(errno: EACCES)
    public static let stale = FilesystemError(errno: ESTALE)

    public var description: String { String(cString: strerror(errno)) }
}
