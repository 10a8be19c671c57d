import DriveClient
import DriveSupport
import Foundation

/// The read path of Drive's content (a handle with no local copy): reads answered from the block
/// cache, misses fetched on an I/O thread, read-ahead for sequential readers, and the background
/// fill of a file read at random (docs/architecture.md, "The read path").
///
/// Its state is each handle's stream (the read-ahead window, the misses counted), under its own
/// leaf lock; the blocks and their claims are the block cache's (its leaf lock). Runs on the
/// kernel's thread only to count, claim and answer what is cached; downloads run on the I/O
/// threads (a reader's miss) or on `pool`, the read-ahead threads (read-ahead and fills).
final class ContentReader: Sendable {
    let cache: BlockCache
    private let backend: any DriveBackend
    private let configuration: DriveFSConfiguration
    private let time: any TimeSource
    /// The read-ahead threads: read-ahead streams and background fills.
    let pool: WorkPool
    /// Runs a reader's miss on an I/O thread and answers it (`DriveFilesystem.onIOThread`).
    private let onIOThread: @Sendable (Reply<ReadData>, Inode, @escaping @Sendable () throws(FilesystemError) -> ReadData) -> Void
    private let describe: @Sendable (Inode) -> String
    private let streams = RankedLocked<[UInt64: Stream]>(.leaf, [:])

    /// How one handle reads.
    private struct Stream {
        var readAhead = ReadAheadState()
        /// Reads of this handle that missed the cache and were not sequential.
        var randomMisses = 0
    }

    init(cache: BlockCache, backend: any DriveBackend, configuration: DriveFSConfiguration, time: any TimeSource,
         pool: WorkPool, describe: @escaping @Sendable (Inode) -> String,
         onIOThread: @escaping @Sendable (Reply<ReadData>, Inode, @escaping @Sendable () throws(FilesystemError) -> ReadData) -> Void) {
        self.cache = cache
        self.backend = backend
        self.configuration = configuration
        self.time = time
        self.pool = pool
        self.describe = describe
        self.onIOThread = onIOThread
    }

    /// A handle reading Drive's content was opened: its reads are followed from now on.
    func opened(_ handle: UInt64) { streams.withLock { $0[handle] = Stream() } }

    /// The handle was released.
    func released(_ handle: UInt64) { _ = streams.withLock { $0.removeValue(forKey: handle) } }

    func read(_ inode: Inode, handle: UInt64, content: BlockCache.Handle, offset: Int64, size: Int, reply: Reply<ReadData>) {
        guard let (spans, sequential) = streams.withLock({ s -> ([ReadAheadState.Span], Bool)? in
            guard var stream = s[handle] else { return nil }
            let spans = stream.readAhead.advance(offset: offset, size: Int64(size), fileSize: content.size,
                                                 maximum: readAheadMaximum, chunk: configuration.readAheadChunk,
                                                 maxChunk: configuration.maxReadAheadChunk, streams: configuration.readAheadStreams)
            s[handle] = stream
            return (spans, stream.readAhead.isSequential)
        }) else { return reply.fail(.badHandle) }
        // Read-ahead claims its blocks now, before this read looks for them: a reader never
        // fetches on its own what a read-ahead stream is about to fetch.
        for span in spans { scheduleReadAhead(content, span) }
        let length = Int(max(0, min(Int64(size), content.size - offset)))
        guard length > 0 else { return reply.succeed(.bytes([])) }
        if cache.isPresent(content, offset: offset, length: length) {
            return reply.succeed(.file(descriptor: content.descriptor, offset: offset, length: length))
        }
        // A sequential reader's miss streams on past the read (one chunk), so the next reads
        // find their blocks arriving instead of each paying a request; so does a random reader's
        // once its file is being filled (`randomRange`).
        let extend = sequential ? configuration.readAheadChunk : noteRandomMiss(inode, handle: handle, content)
        let data = ReadData.file(descriptor: content.descriptor, offset: offset, length: length)
        // The reader is answered as soon as its blocks are in (`ensure`'s `ready`), not when the
        // range it started ends; `once` keeps that and the runner's answer to one.
        let answer = OnceReply(reply)
        var ready: (@Sendable () -> Void)?
        if extend > 0 { ready = { answer.complete(.success(data)) } }
        let proxy = Reply<ReadData>(cancellation: reply.cancellation, caller: reply.caller) { answer.complete($0) }
        onIOThread(proxy, inode) { [self, ready] () throws(FilesystemError) -> ReadData in
            do throws(FilesystemError) {
                try cache.ensure(content, offset: offset, length: length, extend: extend,
                                 cancellation: reply.cancellation, fetch: fetcher(for: content.key), ready: ready)
            } catch {
                guard answer.isAnswered else { throw error }
                // The reader has its bytes; what failed is the range after them (as read-ahead's).
                Log.shared.debug("readahead", "\(content.key) past \(offset): \(error)")
            }
            return data
        }
    }

    /// The read-ahead window's cap: `maxReadAhead`, but never more than a quarter of the cache (open
    /// content is not evicted, so a window past the cap would hold the cache over it).
    private var readAheadMaximum: Int64 { max(configuration.readAheadChunk, min(configuration.maxReadAhead, configuration.cacheSize / 4)) }

    /// Downloads of one content version: pinned to its revision when Drive gave one.
    func fetcher(for key: ContentKey) -> BlockCache.Fetcher {
        { [backend] offset, length, sink in
            try backend.download(key.fileID, revision: key.revision, offset: offset, length: length, to: sink)
        }
    }

    /// Claims the missing blocks of `span` (on the caller's thread) and downloads each run of
    /// them, one range stream per run, on the read-ahead threads.
    private func scheduleReadAhead(_ content: BlockCache.Handle, _ span: ReadAheadState.Span) {
        while let run = cache.claim(content, offset: span.offset, length: span.length, maxBytes: span.length) {
            pool.submit { [self] in
                do {
                    try download(content, run, priority: .readAhead)
                } catch {
                    Log.shared.debug("readahead", "\(content.key) at block \(run.lowerBound): \(error)")
                }
            }
        }
    }

    /// Downloads a claimed run of `content` at `priority`, with a user request's deadline (on a
    /// read-ahead thread: read-ahead and background fills).
    private func download(_ content: BlockCache.Handle, _ run: ClosedRange<Int>, priority: RequestPriority) throws {
        let context = RequestContext(priority: priority, deadline: time.now() + configuration.requestDeadline)
        try context.scope { () throws -> Void in
            try cache.download(content, blocks: run, fetch: fetcher(for: content.key))
        }
    }

    /// Counts a handle's miss that was not sequential. At the `randomReadFillAfter`th, a file no
    /// larger than `randomReadFillLimit` (nor a quarter of the cache) is filled in the background,
    /// once per version at a time: a reader at random then pays a request per miss only until the
    /// fill reaches its blocks, and the whole file costs size / `randomReadFillChunk` requests
    /// (1 GiB: 128 downloads, 25,600 of Google's quota units, where 1,000 misses cost 1,000 and
    /// 200,000). Runs on the kernel's thread: it only counts and claims (leaf locks).
    ///
    /// Returns how far this miss's download may run on past the read (`randomRange`): 0 before
    /// the file counts as read at random, or when it is not to be filled (its other bytes may
    /// never be wanted: a large database read here and there costs a block a miss).
    private func noteRandomMiss(_ inode: Inode, handle: UInt64, _ content: BlockCache.Handle) -> Int64 {
        let limit = min(configuration.randomReadFillLimit, configuration.cacheSize / 4)
        guard configuration.randomReadFillAfter > 0, content.size > 0, content.size <= limit else { return 0 }
        let misses = streams.withLock { s -> Int in
            guard var stream = s[handle] else { return 0 }
            stream.randomMisses += 1
            s[handle] = stream
            return stream.randomMisses
        }
        let extend = randomRange(misses: misses)
        guard misses == configuration.randomReadFillAfter, cache.beginFill(content) else { return extend }
        Log.shared.info("readahead", "\(describe(inode)): read at random; filling its \(content.size) bytes in the background")
        let streams = max(1, configuration.randomReadFillStreams)
        let running = Locked(streams)
        for _ in 0..<streams { continueFill(content, running: running, then: nil) }
        return extend
    }

    /// The bytes past a read that a random reader's `misses`th miss may fetch in the same request:
    /// from the `randomReadFillAfter`th miss on (the file is being filled: its bytes come anyway),
    /// a block, doubling with each miss after, up to `randomReadRange`. Runs stop at the first
    /// block present or being fetched, so a miss never fetches a byte twice; fewer, larger runs
    /// cut the requests (and quota) a random reader spends, while its own block comes first.
    private func randomRange(misses: Int) -> Int64 {
        let after = configuration.randomReadFillAfter
        guard after > 0, misses >= after, configuration.randomReadRange > 0 else { return 0 }
        let doublings = min(misses - after, 40)
        return min(configuration.randomReadRange, Int64(configuration.blockSize) << doublings)
    }

    /// One stream of a background fill: claims the next run of missing blocks (at most a fill
    /// chunk; blocks a reader is fetching are skipped), downloads it on a read-ahead thread at
    /// `.background` priority (behind what users wait on and read-ahead, in the pacer's order),
    /// then goes on with the next. A stream ends when nothing is left to claim (the version is
    /// complete, or no handle holds it any more) or a download fails (a failing Drive is not
    /// pressed further); the last stream to end ends the fill, then calls `then`.
    func continueFill(_ content: BlockCache.Handle, running: Locked<Int>, then: (@Sendable () -> Void)?) {
        @Sendable func endStream() {
            guard running.withLock({ n -> Bool in n -= 1; return n == 0 }) else { return }
            cache.endFill(content)
            then?()
        }
        guard let run = cache.claim(content, offset: 0, length: content.size, maxBytes: configuration.randomReadFillChunk) else {
            return endStream()
        }
        pool.submit { [self] in
            do {
                try download(content, run, priority: .background)
            } catch {
                Log.shared.debug("readahead", "background fill of \(content.key) stopped at block \(run.lowerBound): \(error)")
                return endStream()
            }
            continueFill(content, running: running, then: then)
        }
    }
}

/// A reader's answer that may come twice, from the download as soon as the reader's blocks are in
/// and from the I/O thread when the download ends: the first one is sent, the second dropped.
private final class OnceReply: Sendable {
    private let reply: Reply<ReadData>
    private let sent = Locked(false)

    init(_ reply: Reply<ReadData>) { self.reply = reply }

    var isAnswered: Bool { sent.withLock { $0 } }

    func complete(_ result: Result<ReadData, FilesystemError>) {
        let first = sent.withLock { (sent: inout Bool) -> Bool in
            defer { sent = true }
            return !sent
        }
        if first { reply.complete(result) }
    }
}
