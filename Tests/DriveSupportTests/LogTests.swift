import DriveSupport
import Foundation
import XCTest

/// The log's last problem (what `drivefs status` shows as the last error): every warning and
/// error counts, written or not; nothing below a warning does.
final class LogTests: XCTestCase {
    func testTheLastWarningOrErrorIsKeptWhateverTheThreshold() throws {
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let log = Log(level: .error, descriptor: devNull)
        XCTAssertNil(log.lastProblem)
        log.info("fs", "nothing wrong")
        log.debug("fs", "nothing at all")
        XCTAssertNil(log.lastProblem, "info and debug are not problems")

        log.warning("changes", "reading the change feed failed:\nHTTP 503")
        var problem = try XCTUnwrap(log.lastProblem)
        XCTAssertEqual(problem.level, .warning, "kept although the threshold (error) hides it")
        XCTAssertEqual(problem.area, "changes")
        XCTAssertEqual(problem.message, "reading the change feed failed: HTTP 503", "one line")

        log.error("cache", "disk full")
        XCTAssertEqual(log.lastProblem?.message, "disk full")

        // `once` writes a repeated message only once, but it is the last problem every time.
        log.once(.warning, "fs", "stat /a: EIO")
        log.warning("fs", "something else")
        log.once(.warning, "fs", "stat /a: EIO")
        problem = try XCTUnwrap(log.lastProblem)
        XCTAssertEqual(problem.message, "stat /a: EIO")
        XCTAssertLessThanOrEqual(abs(Double(problem.millis) / 1000 - Date().timeIntervalSince1970), 60)
    }
}
