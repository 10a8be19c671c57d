/// Sequential-read detection for one open handle, and the read-ahead it asks for.
///
/// A read that starts where the last one ended (give or take what the kernel reorders: it sends
/// reads in parallel, within its own 1 MiB read-ahead) is sequential. Read-ahead starts at the
/// third sequential read in a row, with an eighth of a chunk, (so that random readers, whose reads land near each other by
/// chance, do not pay for megabytes they never read); each further one doubles the window, from
/// one chunk up to `maximum`; any other read resets it. The window ahead of the reader is split into pieces, each
/// fetched as its own HTTP range stream, so that one large file reads faster than one stream. Pieces grow with
/// the window: a `streams`th of it, from `chunk` up to `maxChunk`, so a long sequential read costs few requests
/// (each one a download, and 200 of Google's quota units) while `streams` of them still run side by side.
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

    /// Sequential reads in a row.
    private(set) var streak = 0

    /// The reader looks sequential: a miss may fetch past what it asked for.
    var isSequential: Bool { streak >= 2 }

    /// How far a read may start before `expected` (parallel kernel reads arrive out of order) or
    /// after it (a reader that skips a little) and still count as sequential.
    static let behind: Int64 = 1 << 20
    static let ahead: Int64 = 256 << 10

    mutating func advance(offset: Int64, size: Int64, fileSize: Int64, maximum: Int64, chunk: Int64,
                          maxChunk: Int64? = nil, streams: Int = 1) -> [Span] {
        let end = offset + size
        let sequential = offset >= expected - Self.behind && offset <= expected + Self.ahead
        guard sequential else {
            window = 0
            streak = 1
            scheduledUntil = 0
            expected = end
            return []
        }
        streak += 1
        expected = max(expected, end)
        guard streak >= 3 else { return [] }
        window = window == 0 ? min(maximum, max(1, chunk / 8)) : min(maximum, window * 2)
        let target = min(fileSize, end + window)
        let from = max(scheduledUntil, end)
        let piece = min(max(chunk, maxChunk ?? chunk), max(chunk, window / Int64(max(1, streams))))
        // Whole pieces only (the last one may be short at the end of the file): a window that
        // slides by one kernel read must not turn into one small request per read.
        guard target > from, piece > 0, target - from >= piece || target == fileSize else { return [] }
        var spans: [Span] = []
        var at = from
        while at < target {
            spans.append(Span(offset: at, length: min(piece, target - at)))
            at += piece
        }
        scheduledUntil = target
        return spans
    }
}
