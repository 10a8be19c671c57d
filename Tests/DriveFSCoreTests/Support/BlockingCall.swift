import DriveClient
import DriveFSCore
import DriveSupport
import Foundation
import Glibc
import XCTest

/// `DriveFSCore.BlockingCall` for this target's tests (it shadows that one here): a reply that
/// never comes fails the test at the caller's line and throws ETIMEDOUT, and the rest of the run
/// goes on (the process is not brought down).
enum BlockingCall {
    static let defaultTimeout = DriveFSCore.BlockingCall.defaultTimeout

    static func wait<T: Sendable>(timeout: Double = defaultTimeout, cancellation: CancellationFlag? = nil,
                                  caller: RequestCaller? = nil, file: StaticString = #filePath, line: UInt = #line,
                                  _ call: (Reply<T>) -> Void) throws(FilesystemError) -> T {
        guard let result = DriveFSCore.BlockingCall.answer(timeout: timeout, cancellation: cancellation, caller: caller, call) else {
            XCTFail("a filesystem operation sent no reply within \(timeout) s", file: file, line: line)
            throw FilesystemError(errno: ETIMEDOUT)
        }
        return try result.get()
    }
}
