import DriveClient
import DriveSupport
import Foundation

/// The upload of a new file that begins while the file is still being written: a large file
/// written from its start to its end (`cp`, `dd`, a download, a compiler's output) is sent chunk
/// by chunk behind its writer (`StreamingCreate`), so that when it is closed only the rest is
/// left to send. Without it a 1 GiB file reaches Drive a whole upload after its `close`.
///
/// It changes nothing that is promised: a file is still on Drive only once its upload job, after
/// the last `close`, finished the stream (the stream's session creates nothing before then), and
/// the job falls back to an ordinary upload of the whole file whenever the stream cannot be used.
///
/// Invariants (under `lock`):
/// - `claimed` is the end of the bytes handed to the network. A write below it, or a truncate
///   below it, abandons the stream (`noteWrite`, `noteTruncate`), because bytes already sent
///   would no longer be the file's; bytes at or past it may change freely.
/// - One thread uses the stream at a time: the streaming thread while `phase == .streaming`, the
///   upload job after `adopt` (which waits for the chunk on the wire).
/// - Once `.adopted` or `.abandoned`, the phase never changes again.
public final class EarlyUpload: @unchecked Sendable {  // @unchecked: its phase and counts only with `lock` held
    // @unchecked: every mutable field is behind `lock`.
    public let fileID: String
    /// The content file being written (the staging file the job will upload).
    public let path: String
    let request: UploadRequest
    private let lock = NSCondition()
    private var size: Int64
    private var claimed: Int64 = 0
    /// The session is starting, or a chunk is on the wire.
    private var busy = true
    private var phase: Phase = .streaming
    private var stream: (any StreamingCreate)?
    /// Cuts the chunk on the wire short when the stream is abandoned.
    let flag = CancellationFlag()

    enum Phase: Equatable { case streaming, adopted, abandoned }

    init(request: UploadRequest, path: String, size: Int64) {
        fileID = request.fileID
        self.path = path
        self.request = request
        self.size = size
    }

    /// Whether the stream may still be used (neither adopted nor abandoned).
    public var isLive: Bool { lock.lock(); defer { lock.unlock() }; return phase == .streaming }

    /// Bytes sent so far (for `drivefs status` and the tests).
    var claimedBytes: Int64 { lock.lock(); defer { lock.unlock() }; return claimed }

    // MARK: The writer's side (called under the content's lock: never blocks)

    /// `[offset, end)` was just written to the content file.
    public func noteWrite(offset: Int64, end: Int64) {
        lock.lock()
        defer { lock.unlock() }
        guard phase == .streaming else { return }
        if offset < claimed { return abandonLocked("written again below the \(claimed) bytes already sent") }
        size = max(size, end)
        lock.broadcast()
    }

    /// The content file was truncated (or extended with zeros) to `length`.
    public func noteTruncate(to length: Int64) {
        lock.lock()
        defer { lock.unlock() }
        guard phase == .streaming else { return }
        if length < claimed { return abandonLocked("truncated below the \(claimed) bytes already sent") }
        size = length
        lock.broadcast()
    }

    /// Gives the stream up (the file was removed, the mount stops, or it cannot be used).
    public func abandon(_ why: String) {
        lock.lock()
        defer { lock.unlock() }
        abandonLocked(why)
    }

    private func abandonLocked(_ why: String) {
        guard phase == .streaming else { return }
        phase = .abandoned
        flag.cancel()
        lock.broadcast()
        Log.shared.debug("uploads", "\(request.displayPath): early upload given up (\(why)); the whole file goes up after its close")
    }

    // MARK: The streaming thread

    /// Starts the session, then sends chunks as the writer gets ahead, until the job adopts the
    /// stream or it is abandoned. Runs on its own thread, at background priority.
    func run(_ backend: any DriveBackend) {
        RequestContext(priority: .background, cancellation: flag).scope {
            let started: any StreamingCreate
            do {
                started = try backend.beginStreamingCreate(name: request.name, parent: request.parentID, mimeType: request.mimeType,
                                                           id: fileID, appProperties: request.appProperties.isEmpty ? nil : request.appProperties)
            } catch {
                lock.lock()
                busy = false
                abandonLocked("its session could not start: \(error)")
                lock.unlock()
                return
            }
            lock.lock()
            stream = started
            busy = false
            lock.broadcast()
            lock.unlock()
            while true {
                lock.lock()
                var length: Int64 = 0
                while phase == .streaming {
                    length = started.chunkLength(available: size)
                    if length > 0 { break }
                    _ = lock.wait(until: Date(timeIntervalSinceNow: 1))
                }
                guard phase == .streaming else {
                    lock.unlock()
                    return
                }
                claimed = max(claimed, started.confirmedBytes + length)
                busy = true
                lock.unlock()
                var failure: (any Error)?
                do { try started.send(path: path, length: length) } catch { failure = error }
                lock.lock()
                busy = false
                lock.broadcast()
                lock.unlock()
                if let failure { return abandon("a chunk failed: \(failure)") }
            }
        }
    }

    // MARK: The upload job's side

    /// Hands the stream to the upload job of the closed file, `size` bytes in all: nil when it
    /// cannot finish it (abandoned, never started, or the file is shorter than what was sent).
    /// Waits for the chunk on the wire (bounded by the client's own timeouts; `cancellation` stops it).
    func adopt(size finalSize: Int64, cancellation: CancellationFlag?) -> (any StreamingCreate)? {
        lock.lock()
        defer { lock.unlock() }
        if busy && phase == .streaming { cancellation?.wakes(lock) }
        while busy && phase == .streaming {
            if cancellation?.isCancelled == true { return nil }
            lock.wait()
        }
        guard phase == .streaming, let stream else {
            abandonLocked("not usable when the file was closed")
            return nil
        }
        guard finalSize >= claimed, finalSize >= stream.confirmedBytes else {
            abandonLocked("the closed file is shorter than what was sent")
            return nil
        }
        phase = .adopted
        return stream
    }
}
