@testable import DriveFSCore
import XCTest

/// The index file's checksum: its value is part of the file format (an index saved by one build
/// loads in the next), and the running form over pieces gives the same value as the whole.
final class Checksum64Tests: XCTestCase {
    private let bytes = (0..<1001).map { UInt8($0 % 251) }

    func testTheValueIsTheFormatsOwn() {
        // Computed apart from this code (the word mix of ByteCoding.swift, in Python).
        XCTAssertEqual(bytes.withUnsafeBytes { Checksum64.of($0) }, 0x454e_ea25_89ed_5968)
    }

    func testPiecesOfWholeWordsGiveTheSameValue() {
        let whole = bytes.withUnsafeBytes { Checksum64.of($0) }
        for step in [8, 16, 512, 1000] {
            var running = Checksum64.Running(count: bytes.count)
            var at = 0
            bytes.withUnsafeBytes { all in
                while bytes.count - at >= 8 {
                    let end = min(bytes.count / 8 * 8, at + step)
                    running.add(UnsafeRawBufferPointer(rebasing: all[at..<end]))
                    at = end
                }
                XCTAssertEqual(running.finish(UnsafeRawBufferPointer(rebasing: all[at...])), whole, "pieces of \(step)")
            }
        }
    }
}
