import DriveClient
import Glibc

extension FilesystemError {
    /// The one place a `DriveError` becomes an errno: the contract table of docs/errors.md.
    ///
    /// Transient failures arrive here only after the client's retry budget is spent, so they are
    /// `EIO` (not `EAGAIN`, which makes some programs spin). Anything unforeseen is `EIO` as well.
    public init(_ error: DriveError) {
        switch error {
        case .notFound: self = .notFound
        case .permissionDenied, .unauthorized: self.init(errno: EACCES)
        case .quotaExceeded(let info):
            switch info.reason {
            case "storageQuotaExceeded": self.init(errno: ENOSPC)
            case "exportSizeLimitExceeded": self.init(errno: EFBIG)
            default: self.init(errno: EDQUOT)
            }
        case .invalidArgument: self = .invalidArgument
        case .conflict: self.init(errno: EEXIST)
        case .cancelled: self.init(errno: EINTR)
        case .rateLimited, .preconditionFailed, .rangeNotSatisfiable, .server, .unexpectedStatus, .transport,
             .checksumMismatch, .malformedResponse, .localFile:
            self = .ioError
        }
    }
}
