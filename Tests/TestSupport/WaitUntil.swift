import Foundation
// A library only the test targets depend on, but `swift build` (the release build with a static
// standard library too) compiles every target, and XCTest is there only for tests.
#if canImport(XCTest)
import XCTest
#endif

/// The one bounded wait of the test targets, for what another thread or process does that no
/// signal announces: checks `condition` every 2 ms for at most `timeout` seconds (a hang guard,
/// never a timing assertion). When it never holds, the test fails at the caller's line, saying
/// what it waited for (`what` is read then), and the answer is false.
@discardableResult
public func waitUntil(_ what: @autoclosure () -> String, timeout: Double = 60, file: StaticString = #filePath, line: UInt = #line,
                      _ condition: () throws -> Bool) rethrows -> Bool {
    if try poll(timeout: timeout, interval: 0.002, condition) { return true }
    #if canImport(XCTest)
    XCTFail("gave up waiting (\(Int(timeout)) s): \(what())", file: file, line: line)
    #else
    fatalError("gave up waiting (\(Int(timeout)) s): \(what())", file: file, line: line)
    #endif
    return false
}

/// The same wait without failing the test: whether `condition` held within `timeout` seconds
/// (checked every `interval`), for callers that say themselves what a false answer means.
public func poll(timeout: Double, interval: Double = 0.02, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        if try condition() { return true }
        if Date() > deadline { return false }
        usleep(useconds_t(max(0.001, interval) * 1_000_000))
    }
}
