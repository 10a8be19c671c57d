import DriveSupport
import Glibc

extension FilesystemError {
    /// The one place a local file's errno (the staging copies, the block cache, the journal's
    /// neighbours) becomes what the writer sees: a full disk or a full quota is `ENOSPC` (the
    /// writer's disk is full either way), an interrupt `EINTR`, anything else `EIO` (the local
    /// disk's trouble is never the caller's bad argument).
    public init(local code: Int32) {
        switch code {
        case ENOSPC, EDQUOT: self = .noSpace
        case EINTR: self.init(errno: EINTR)
        default: self = .ioError
        }
    }

    /// `init(local:)` of the call's errno.
    public init(local failure: SystemCallError) {
        self.init(local: failure.errno)
    }
}
