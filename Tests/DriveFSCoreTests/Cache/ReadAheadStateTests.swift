@testable import DriveFSCore
import XCTest

/// Sequential-read detection and the read-ahead it asks for (`ReadAheadState`): pieces grow with
/// the window, so a long sequential read costs few range requests (each a download and 200 of
/// Google's quota units) while several still run side by side; a random reader asks for nothing.
final class ReadAheadStateTests: XCTestCase {
    private static let chunk: Int64 = 4 << 20
    private static let maximum: Int64 = 256 << 20
    private static let maxChunk: Int64 = 64 << 20

    /// The spans a reader reading `total` bytes from the start in `readSize` pieces is given.
    private func sequentialSpans(fileSize: Int64, total: Int64, readSize: Int64 = 128 << 10,
                                 maxChunk: Int64 = ReadAheadStateTests.maxChunk) -> [ReadAheadState.Span] {
        var state = ReadAheadState()
        var spans: [ReadAheadState.Span] = []
        var at: Int64 = 0
        while at < total {
            let size = min(readSize, fileSize - at)
            spans += state.advance(offset: at, size: size, fileSize: fileSize, maximum: Self.maximum, chunk: Self.chunk,
                                   maxChunk: maxChunk, streams: 4)
            at += size
        }
        return spans
    }

    func testASequentialReadOfAGibibyteTakesFewLargeContiguousRanges() {
        let size: Int64 = 1 << 30
        let spans = sequentialSpans(fileSize: size, total: size)
        XCTAssertLessThanOrEqual(spans.count, 32, "\(spans.count) range requests for 1 GiB")
        for (a, b) in zip(spans, spans.dropFirst()) { XCTAssertEqual(a.offset + a.length, b.offset, "contiguous, never twice") }
        XCTAssertEqual(spans.last.map { $0.offset + $0.length }, size, "read ahead to the end")
        XCTAssertTrue(spans.allSatisfy { $0.length <= Self.maxChunk })
        XCTAssertEqual(spans.map(\.length).max(), Self.maximum / 4, "at full window: a quarter of it, one per stream")
        // The pieces of fixed size that came before cost a request every 4 MiB.
        XCTAssertGreaterThanOrEqual(sequentialSpans(fileSize: size, total: size, maxChunk: Self.chunk).count, 250)
    }

    func testAReaderThatStopsEarlyIsReadAheadAtMostTheWindow() {
        let read: Int64 = 10 << 20
        let spans = sequentialSpans(fileSize: 1 << 30, total: read)
        let asked = spans.reduce(Int64(0)) { $0 + $1.length }
        XCTAssertLessThanOrEqual(asked, Self.maximum + Self.maximum / 4, "read ahead \(asked >> 20) MiB for 10 MiB read")
    }

    func testRandomReadsAskForNothing() {
        var state = ReadAheadState()
        let size: Int64 = 1 << 30
        for i: Int64 in 0..<200 {
            let offset = (i * 7_919 % 8_000) << 17
            XCTAssertEqual(state.advance(offset: offset, size: 4096, fileSize: size, maximum: Self.maximum, chunk: Self.chunk,
                                         maxChunk: Self.maxChunk, streams: 4), [])
        }
        XCTAssertFalse(state.isSequential)
    }

    func testASmallFileIsReadAheadToItsEndOnly() {
        let size: Int64 = 3 << 20
        let spans = sequentialSpans(fileSize: size, total: size)
        XCTAssertTrue(spans.allSatisfy { $0.offset + $0.length <= size })
        XCTAssertLessThanOrEqual(spans.count, 2)
    }
}
