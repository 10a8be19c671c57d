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
        XCTAssertEqual(problem.message, "reading the change feed failed:\\nHTTP 503", "one line, the break escaped")

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

    /// A message (a Drive name inside it) cannot forge a line or move the cursor: every control
    /// character is written escaped, and each message is exactly one line.
    func testControlCharactersAreEscaped() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("log-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("drivefs.log").path
        let log = Log(level: .info, descriptor: 2)
        try log.configure(level: .info, path: path)
        let name = "report\n2026-12-01T00:00:00.000Z ERROR auth: token revoked\r\u{1B}[2K\t\u{7F}\u{85}\u{2028}end"
        log.info("write", "uploaded '\(name)'")
        log.warning("write", "conflict on '\(name)'")
        try log.configure(level: .info, path: nil)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        XCTAssertEqual(lines.count, 3, text)
        XCTAssertTrue(lines[0].hasSuffix(#" INFO  write: uploaded 'report\n2026-12-01T00:00:00.000Z ERROR auth: token revoked\r\u{1B}[2K\t\u{7F}\u{85}\u{2028}end'"#), String(lines[0]))
        XCTAssertFalse(text.unicodeScalars.contains { $0.properties.generalCategory == .control && $0 != "\n" }, text)
        XCTAssertEqual(log.lastProblem?.message, #"conflict on 'report\n2026-12-01T00:00:00.000Z ERROR auth: token revoked\r\u{1B}[2K\t\u{7F}\u{85}\u{2028}end'"#)
    }

    /// The log file is never reached through a symbolic link (someone else's link in a shared directory).
    func testTheLogFileIsNotOpenedThroughASymbolicLink() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("log-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let victim = directory.appendingPathComponent("victim").path
        XCTAssertTrue(FileManager.default.createFile(atPath: victim, contents: Data("kept\n".utf8)))
        let link = directory.appendingPathComponent("drivefs.log").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: victim)
        let log = Log(level: .info, descriptor: 2)
        XCTAssertThrowsError(try log.configure(level: .info, path: link)) { error in
            XCTAssertEqual((error as? Log.LogFileError)?.errno, ELOOP, "\(error)")
        }
        log.error("fs", "must not reach the victim")
        XCTAssertEqual(try String(contentsOfFile: victim, encoding: .utf8), "kept\n")
    }
}
