/// Sequential-read detection for one open handle, and the read-ahead it asks for.
///
/// A read that starts where the last one ended (give or take what the kernel reorders: it sends
/// reads in parallel) is sequential; each sequential read doubles the window, from one chunk up to
/// `maximum`; any other read resets it. The window ahead of the reader is split into chunks, each
/// fetched as its own HTTP range stream, so that one large file reads faster than one stream.
struct ReadAheadState: Sendable {
    struct Span: Sendable, Equatable {
        var offset: Int64
        var length: Int64
    }

    /// Where the next sequential read would start.
    private(set) var expected: Int64 = 0
    private(set) var window: Int64 = 0
    /// Everything before this was already asked for.
    private(set) var scheduledUntil: Int64 = 0

    /// How far a read may stray from `expected` and still count as sequential (parallel kernel reads).
    static let slack: Int64 = 4 << 20

    mutating func advance(offset: Int64, size: Int64, fileSize: Int64, maximum: Int64, chunk: Int64) -> [Span] {
        let end = offset + size
        let sequential = offset >= expected - Self.slack && offset <= expected + Self.slack && (offset > 0 || expected == 0)
        if sequential {
            window = window == 0 ? min(maximum, chunk) : min(maximum, window * 2)
            expected = max(expected, end)
        } else {
            window = 0
            scheduledUntil = 0
            expected = end
            return []
        }
        let target = min(fileSize, end + window)
        let from = max(scheduledUntil, end)
        guard target > from, chunk > 0 else { return [] }
        var spans: [Span] = []
        var at = from
        while at < target {
            spans.append(Span(offset: at, length: min(chunk, target - at)))
            at += chunk
        }
        scheduledUntil = target
        return spans
    }
}
