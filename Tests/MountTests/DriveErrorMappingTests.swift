import DriveClient
import DriveFSCore
import Glibc
import XCTest

/// `FilesystemError(DriveError)`: one row per mapping of the docs/errors.md contract.
final class DriveErrorMappingTests: XCTestCase {
    private func info(_ status: Int, _ reason: String? = nil) -> GoogleErrorInfo {
        GoogleErrorInfo(status: status, reason: reason, message: "m")
    }

    func testEveryDriveErrorMapsToItsErrno() {
        let rows: [(DriveError, Int32, String)] = [
            (.notFound(info(404, "notFound")), ENOENT, "404"),
            (.notFound(info(410)), ENOENT, "410"),
            (.permissionDenied(info(403, "insufficientFilePermissions")), EACCES, "no permission"),
            (.permissionDenied(info(403, "fileNotDownloadable")), EACCES, "not downloadable"),
            (.quotaExceeded(info(403, "storageQuotaExceeded")), ENOSPC, "storage full"),
            (.quotaExceeded(info(403, "exportSizeLimitExceeded")), EFBIG, "export too large"),
            (.quotaExceeded(info(403, "dailyLimitExceeded")), EDQUOT, "daily limit"),
            (.quotaExceeded(info(403, "uploadLimitExceeded")), EDQUOT, "upload limit"),
            (.quotaExceeded(info(403, "numChildrenInNonRootLimitExceeded")), EDQUOT, "folder limit"),
            (.rateLimited(info(429)), EIO, "rate limited after retries"),
            (.invalidArgument(info(400, "invalid")), EINVAL, "400"),
            (.conflict(info(409, "fileIdInUse")), EEXIST, "409"),
            (.unauthorized(info(401, "authError")), EACCES, "401"),
            (.unauthorized(info(400, "invalid_grant")), EACCES, "dead grant"),
            (.preconditionFailed(info(412, "conditionNotMet")), EIO, "412"),
            (.rangeNotSatisfiable(info(416)), EIO, "416"),
            (.server(info(503, "backendError")), EIO, "5xx after retries"),
            (.unexpectedStatus(info(405)), EIO, "405"),
            (.transport(.couldNotConnect("x")), EIO, "cannot connect"),
            (.transport(.timedOut("x")), EIO, "stalled"),
            (.transport(.connectionLost("x")), EIO, "reset"),
            (.transport(.tls("x")), EIO, "TLS"),
            (.checksumMismatch(expected: "a", actual: "b"), EIO, "md5 mismatch"),
            (.malformedResponse("x"), EIO, "bad JSON"),
            (.cancelled, EINTR, "interrupted"),
        ]
        for (error, errno, label) in rows {
            XCTAssertEqual(FilesystemError(error).errno, errno, "\(label): \(error)")
        }
    }
}
