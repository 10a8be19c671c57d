import DriveFSCore
import Glibc
import XCTest

/// A reply that never comes is an answer the caller can act on (a failed test), never a trap that
/// takes the whole test process down.
final class BlockingCallTests: XCTestCase {
    func testAReplyThatNeverComesIsNilAndETIMEDOUTNotATrap() {
        let never: (Reply<Int>) -> Void = { _ in }
        XCTAssertNil(DriveFSCore.BlockingCall.answer(timeout: 0.05, never))
        XCTAssertThrowsError(try DriveFSCore.BlockingCall.wait(timeout: 0.05, never)) { error in
            XCTAssertEqual((error as? FilesystemError)?.errno, ETIMEDOUT)
        }
    }

    func testAnAnswerIsReturned() throws {
        XCTAssertEqual(try DriveFSCore.BlockingCall.wait { (reply: Reply<Int>) in reply.succeed(7) }, 7)
        let failed = DriveFSCore.BlockingCall.answer { (reply: Reply<Int>) in reply.fail(.notFound) }
        XCTAssertEqual(failed.map { if case .failure(let e) = $0 { e.errno } else { 0 } }, ENOENT)
    }
}
