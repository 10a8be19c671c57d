import DriveClient
import DriveSupport
import Foundation
import Glibc

/// Fetching into the block map: reads that find their blocks present, downloads shared by
/// per-block claims (a block is fetched by one caller while the others wait for it), read-ahead's
/// and background fills' runs. No Drive request runs under `condition`: a claim is taken under it,
/// the download runs outside it, and each block is marked present as its last byte arrives.
extension BlockCache {
    /// True when `[offset, offset + length)` is all present (and marks it used).
    public func isPresent(_ handle: Handle, offset: Int64, length: Int) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let entry = handle.entry.value
        guard let range = entry.blocks(offset, Int64(length)) else { return true }
        tick += 1
        for b in range {
            guard entry.isPresent(b) else { return false }
            entry.lastUse[b] = tick
        }
        return true
    }

    /// The first block in `[offset, offset + length)` that is neither present nor being fetched,
    /// claimed for the caller with the run of such blocks after it (at most `maxBytes`), or nil.
    /// Used by read-ahead, which fetches only what nobody fetches yet. A run returned must be passed
    /// to `download` (it holds a pin on the version until then); nil once every handle of the
    /// version was released.
    func claim(_ handle: Handle, offset: Int64, length: Int64, maxBytes: Int64) -> ClosedRange<Int>? {
        condition.lock()
        defer { condition.unlock() }
        let entry = handle.entry.value
        guard let range = entry.blocks(offset, length) else { return nil }
        return claimRun(entry, in: range, maxBlocks: max(1, Int(maxBytes / Int64(blockSize))))
    }

    /// The first block of `range` that is neither present nor fetched, and the run of such blocks
    /// after it (at most `maxBlocks`, and up to `through` when that is past the range), claimed.
    /// The claim pins the version (its descriptor stays open) until `download` of the run ends;
    /// nothing is claimed on a version nobody holds (its descriptor is closed, or about to be).
    private func claimRun(_ entry: Entry, in range: ClosedRange<Int>, maxBlocks: Int, through: Int? = nil) -> ClosedRange<Int>? {
        guard entry.pins > 0, entry.descriptor >= 0 else { return nil }
        guard let start = range.first(where: { !entry.isPresent($0) && !entry.fetching.contains($0) }) else { return nil }
        let last = min(entry.blockCount - 1, max(range.upperBound, through ?? range.upperBound))
        var end = start
        while end + 1 <= last, end - start + 1 < maxBlocks, !entry.isPresent(end + 1),
              !entry.fetching.contains(end + 1) {
            end += 1
        }
        for b in start...end { entry.fetching.insert(b) }
        entry.pins += 1
        return start...end
    }

    /// Marks the start of a background fill of the version (one at a time per version): false
    /// when one runs already, the version is complete, or nobody holds it.
    func beginFill(_ handle: Handle) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let entry = handle.entry.value
        guard entry.pins > 0, !entry.filling, !entry.isComplete else { return false }
        entry.filling = true
        return true
    }

    func endFill(_ handle: Handle) {
        condition.lock()
        handle.entry.value.filling = false
        condition.unlock()
    }

    /// Makes `[offset, offset + length)` present: fetches what nobody fetches (with `fetch`, on
    /// this thread), waits for what others fetch. Throws the caller's own fetch failure, EINTR
    /// when `cancellation` fires while it waits, or EBADF when every handle of the version was
    /// released (a late call through a released handle fetches nothing).
    /// `extend`: how many bytes past the range a download this call starts may run on (a
    /// sequential reader's next reads, a random reader's neighbourhood), where nobody fetches
    /// them yet. `ready`: called once, on the downloading thread, as soon as the whole range is
    /// present while a download this call started is still streaming on past it, so that the
    /// caller can answer its reader without waiting for the bytes after (the call itself returns
    /// when that download ends).
    public func ensure(_ handle: Handle, offset: Int64, length: Int, extend: Int64 = 0, cancellation: CancellationFlag?,
                       fetch: Fetcher, ready: (@Sendable () -> Void)? = nil) throws(FilesystemError) {
        let entry = handle.entry.value
        let through = Int(min(entry.size - 1, offset + Int64(length) + max(0, extend) - 1) / Int64(blockSize))
        var progress: (@Sendable () -> Void)?
        if let ready { progress = once(ready, whenPresent: handle, offset: offset, length: length) }
        // Waits for blocks others fetch end when their fetch lands or gives up (`markPresent` and
        // `download` broadcast) or when the caller's request is cancelled (woken once registered).
        var wokenByCancel = false
        while true {
            condition.lock()
            guard let range = entry.blocks(offset, Int64(length)) else { condition.unlock(); return }
            guard entry.pins > 0 else { condition.unlock(); throw .badHandle }
            tick += 1
            var missing = false
            for b in range {
                entry.lastUse[b] = tick
                if !entry.isPresent(b) { missing = true }
            }
            guard missing else { condition.unlock(); return }
            if let run = claimRun(entry, in: range, maxBlocks: Int.max, through: through) {
                condition.unlock()
                try download(handle, blocks: run, fetch: fetch, progress: progress)
                continue
            }
            if cancellation?.isCancelled == true { condition.unlock(); throw FilesystemError(errno: EINTR) }
            if !wokenByCancel, let cancellation {
                cancellation.wakes(condition)
                wokenByCancel = true
            }
            condition.wait()
            condition.unlock()
        }
    }

    /// Downloads `[offset, offset + length)` of a content version into `sink`; returns the count.
    public typealias Fetcher = (_ offset: Int64, _ length: Int64, _ sink: ResponseSink) throws -> Int64

    /// Fetches the claimed blocks `run` (they are marked as being fetched by the caller, and the
    /// claim pinned the version), marking each present as its last byte arrives. Unclaims what did
    /// not arrive and lets go of the claim's pin, whatever happens. Writes go through the
    /// descriptor the pin keeps open, never through one a handle saw: the handle may be released
    /// (and its number reused by the process) while the download runs.
    /// `progress`: called (no lock held) after each step of blocks was marked present.
    func download(_ handle: Handle, blocks run: ClosedRange<Int>, fetch: Fetcher,
                  progress notify: (@Sendable () -> Void)? = nil) throws(FilesystemError) {
        let entry = handle.entry.value
        let start = Int64(run.lowerBound) * Int64(blockSize)
        let length = min(entry.size, Int64(run.upperBound + 1) * Int64(blockSize)) - start
        condition.lock()
        assert(entry.pins > 0 && entry.descriptor >= 0 && run.allSatisfy { entry.fetching.contains($0) },
               "download of a run that was not claimed")
        let fd = entry.descriptor
        condition.unlock()
        let progress = Locked<(written: Int64, marked: Int, writeError: Int32)>((0, run.lowerBound, 0))
        let blockSize = Int64(self.blockSize)
        let size = entry.size
        let shared = handle.entry
        let sink = ResponseSink.callback { [self] chunk in
            let entry = shared.value
            var (written, failed) = progress.withLock { ($0.written, $0.writeError) }
            guard failed == 0 else { return false }
            let room = Int(length - written)
            let count = min(chunk.count, room)
            do throws(SystemCallError) {
                try SystemCall.writeAll(fd, UnsafeRawBufferPointer(rebasing: chunk[0..<count]), at: start + written)
            } catch {
                failed = error.errno
                progress.withLock { $0.writeError = failed }
                return false
            }
            written += Int64(count)
            let complete = Int((start + written) / blockSize) - 1
            let last = start + written == min(size, start + length) ? run.upperBound : min(run.upperBound, complete)
            let from = progress.withLock { p -> Int in
                p.written = written
                defer { p.marked = max(p.marked, last + 1) }
                return p.marked
            }
            if last >= from {
                self.markPresent(entry, from...last)
                notify?()
            }
            return count == chunk.count
        }
        var failure: FilesystemError?
        do {
            let received = try fetch(start, length, sink)
            if received < length && progress.withLock({ $0.written }) < length {
                Log.shared.warning("cache", "\(entry.key): asked for \(length) bytes at \(start), got \(received): "
                                   + "the file is shorter than listed (it changed?)")
                failure = .ioError
            }
        } catch let error as DriveError where error == .cancelled && progress.withLock({ $0.written }) >= length {
            // The sink stopped a server that sent more than was asked: what was asked arrived.
        } catch {
            let code = progress.withLock { $0.writeError }
            if code != 0 {
                Log.shared.error("cache", "cannot write to the cache file of \(entry.key): \(String(cString: strerror(code)))")
                failure = FilesystemError(local: code)
            } else {
                failure = FilesystemError.from(error)
            }
        }
        condition.lock()
        for b in run { entry.fetching.remove(b) }
        counters.fetches += 1
        counters.bytesFetched += progress.withLock { $0.written }
        condition.broadcast()
        // The claim's pin: the last one closes the descriptor (or removes a discarded version).
        unpin(entry)
        condition.unlock()
        if let failure { throw failure }
    }

    /// A progress callback that calls `ready` the first time it finds `[offset, offset + length)`
    /// of the handle's version present.
    private func once(_ ready: @escaping @Sendable () -> Void, whenPresent handle: Handle, offset: Int64,
                      length: Int) -> @Sendable () -> Void {
        let told = Locked(false)
        return { [self] in
            guard !told.withLock({ $0 }), allPresent(handle.entry.value, offset: offset, length: length) else { return }
            let first = told.withLock { (told: inout Bool) -> Bool in
                defer { told = true }
                return !told
            }
            if first { ready() }
        }
    }

    /// True when every block of `[offset, offset + length)` of `entry` is present.
    private func allPresent(_ entry: Entry, offset: Int64, length: Int) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard let range = entry.blocks(offset, Int64(length)) else { return true }
        return range.allSatisfy { entry.isPresent($0) }
    }

    private func markPresent(_ entry: Entry, _ range: ClosedRange<Int>) {
        condition.lock()
        defer { condition.unlock() }
        for b in range {
            entry.fetching.remove(b)
            if entry.setPresent(b) { usage += entry.blockBytes(b) }
        }
        entry.dirty = true
        indexDirty = true
        condition.broadcast()
        evictIfNeeded()
    }
}
