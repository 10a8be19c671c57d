import DriveSupport
import Foundation
import XCTest

final class AtomicFileTests: XCTestCase {
    private var dir: URL!

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("atomicfile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: dir) }

    func testReplacesWholeFileWithExactModeAndLeavesNoTemporary() throws {
        let path = dir.appendingPathComponent("secret.json").path
        try AtomicFile.write(Array("old".utf8), to: path, mode: 0o644)
        let previous = umask(0o077)
        defer { umask(previous) }
        try AtomicFile.write(Array("new contents".utf8), to: path, mode: 0o640)
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), "new contents")
        var st = stat()
        XCTAssertEqual(stat(path, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o640, "the mode asked for, whatever the umask")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), ["secret.json"])
    }

    /// A file written in pieces is the pieces in order; a producer that fails leaves the old file
    /// and no temporary.
    func testAFileWrittenInPiecesAndAProducerThatFailsKeepsTheOldOne() throws {
        struct Stop: Error {}
        let path = dir.appendingPathComponent("index.bin").path
        try AtomicFile.write(to: path) { emit in
            for piece in ["one ", "two ", "three"] { try Array(piece.utf8).withUnsafeBytes { try emit($0) } }
        }
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), "one two three")
        XCTAssertThrowsError(try AtomicFile.write(to: path) { emit in
            try Array("half".utf8).withUnsafeBytes { try emit($0) }
            throw Stop()
        }) { XCTAssertTrue($0 is Stop, "\($0)") }
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), "one two three")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), ["index.bin"])
    }

    func testFailureNamesThePathAndKeepsTheOldFile() throws {
        let path = dir.appendingPathComponent("kept").path
        try AtomicFile.write(Array("kept".utf8), to: path)
        chmod(dir.path, 0o500)
        defer { chmod(dir.path, 0o700) }
        guard getuid() != 0 else {
            // root ignores directory permissions: make the target a directory instead.
            let blocked = dir.appendingPathComponent("blocked").path
            try FileManager.default.createDirectory(atPath: blocked + "/inner", withIntermediateDirectories: true)
            chmod(dir.path, 0o700)
            XCTAssertThrowsError(try AtomicFile.write(Array("x".utf8), to: blocked)) { error in
                XCTAssertTrue("\(error)".contains(blocked), "\(error)")
            }
            XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), "kept")
            XCTAssertFalse(try FileManager.default.contentsOfDirectory(atPath: dir.path).contains { $0.contains(".tmp-") },
                           "no temporary left behind")
            return
        }
        XCTAssertThrowsError(try AtomicFile.write(Array("x".utf8), to: path)) { error in
            XCTAssertTrue("\(error)".contains(self.dir.path), "\(error)")
        }
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), "kept")
    }

    func testAppendAddsToTheEnd() throws {
        let path = dir.appendingPathComponent("journal").path
        try AtomicFile.append(Array("a\n".utf8), to: path)
        try AtomicFile.append(Array("b\n".utf8), to: path)
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), "a\nb\n")
    }
}
