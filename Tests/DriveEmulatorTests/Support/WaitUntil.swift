import Foundation
import XCTest

/// The one bounded wait of this target's tests, for what another thread does that no signal
/// announces: checks `condition` every 2 ms for at most `timeout` seconds (a hang guard, never a
/// timing assertion). When it never holds, the test fails at the caller's line, saying what it
/// waited for (`what` is read then), and the answer is false.
@discardableResult
func waitUntil(_ what: @autoclosure () -> String, timeout: Double = 60, file: StaticString = #filePath, line: UInt = #line,
               _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while try !condition() {
        if Date() > deadline {
            XCTFail("gave up waiting (\(Int(timeout)) s): \(what())", file: file, line: line)
            return false
        }
        usleep(2_000)
    }
    return true
}
