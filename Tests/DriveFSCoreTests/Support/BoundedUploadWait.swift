@testable import DriveFSCore
import DriveSupport
import Foundation
import XCTest

extension UploadQueue {
    /// `waitUntilUploaded` with no deadline on the queue's clock (tests drive a manual one, which
    /// only moves when the queue sleeps), bounded in real time instead: after `seconds` the wait is
    /// cancelled (EINTR) and the test fails with that, rather than hang the suite.
    func waitUntilUploaded(_ fileID: String, within seconds: Double = 120, file: StaticString = #filePath,
                           line: UInt = #line) throws {
        let watchdog = CancellationFlag()
        let finished = Locked(false)
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
            if !finished.withLock({ $0 }) { watchdog.cancel() }
        }
        defer { finished.withLock { $0 = true } }
        do {
            try waitUntilUploaded(fileID, deadline: .infinity, cancellation: watchdog)
        } catch {
            if watchdog.isCancelled {
                XCTFail("no answer for \(fileID)'s uploads in \(seconds) s; the queue: \(status)", file: file, line: line)
            }
            throw error
        }
    }
}
