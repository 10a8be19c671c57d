import DriveSupport
import Foundation
import Glibc

/// The upload queue's journal: one append-only file, `<directory>/journal`, that says which uploads
/// are owed to Drive. The queue's state is the fold of its records (`UploadQueueState.apply`), so
/// whatever a record says survives `kill -9` and a power cut once `append` returned.
///
/// Format (docs/architecture.md, "Uploads and the journal"): the header line
/// `drivefs upload journal 1\n`, then records, each `"DJ"`, a little-endian UInt32 payload length,
/// a little-endian UInt32 CRC-32 of the payload, and the payload: one `Record` as JSON.
///
/// Contracts:
/// - `append` writes one record with `pwrite` at the end of the file and `fdatasync`s it, on the
///   one descriptor the journal keeps open. It returns only when the record is durable. On any
///   failure (ENOSPC, EIO, a failed fdatasync) the file is cut back to where it was, the error
///   is thrown as a `FilesystemError` with the system's errno (ENOSPC stays ENOSPC), and the
///   record counts as never written: the caller must not act on it.
/// - `append(frames:)` is the same for several records at once (a group commit's, see
///   `UploadQueue+GroupCommit.swift`): one `pwrite` of them all in order, one `fdatasync`; all
///   durable when it returns, or, on any failure, the file cut back to where it was before the
///   first and every one of them counts as never written.
/// - Opening replays every record. A torn or corrupt tail (a record cut short by a crash, or
///   whose checksum or JSON does not hold, with no valid record after it) is logged and cut away.
///   Damage with valid records after it is skipped (logged as an error) and those records are
///   kept: an earlier record is never lost for a later one's damage.
/// - `compact(to:)` writes the given records (the live state) to `journal.compact`, fdatasyncs it,
///   renames it over `journal` and fsyncs the directory; a failure leaves the old journal in use.
/// - Not thread-safe: the queue calls it only under its own lock.
final class UploadJournal {
    /// One journal record. `seq` names a job (unique within a journal, increasing).
    enum Record: Codable, Equatable, Sendable {
        /// New content for a file. `replaces`: the job of the same file that this one supersedes
        /// (dropped, not started). Not `ready`: the file is still open for writing. `rebasedOn`:
        /// the request was based on Drive's copy before an upload of ours that landed since; the
        /// job writes over that upload instead (see `UploadJob.rebase`).
        case commit(seq: UInt64, request: UploadRequest, contentPath: String, ready: Bool, replaces: UInt64?,
                    rebasedOn: UploadJob.Landed?)
        /// The job went back to the core (not ready, not started).
        case reclaim(seq: UInt64)
        /// An editor's save: the job `from` (a new file's, not started) becomes job `seq` of
        /// another, existing file (`request`), with the same content file and readiness; that
        /// file's queued jobs `replacing` are dropped (the save supersedes them).
        case takeOver(seq: UInt64, request: UploadRequest, from: UInt64, replacing: [UInt64])
        /// New metadata for a queued or running job.
        case metadata(seq: UInt64, request: UploadRequest)
        /// The file was removed: its upload jobs are dropped; `removal`, when Drive may hold the
        /// file, is the job that trashes (or deletes) it once the running upload ended.
        case cancel(fileID: String, removal: UploadJob?)
        /// Drive's copy was gone (deleted or trashed): the job creates the file anew under `target`.
        case retarget(seq: UInt64, target: String)
        /// Drive's head had changed since the content's base: the content goes to a new file.
        case conflict(seq: UInt64, copy: UploadJob.ConflictCopy)
        /// A try of the job landed with other bytes than were sent: Drive reported `md5` for what
        /// it stored (`UploadJob.corruptLandings`).
        case corruptLanding(seq: UInt64, md5: String)
        /// The job landed (`landed`: the file written; nil for a removal).
        case done(seq: UInt64, landed: UploadJob.Landed?)
        /// The job failed for good; its content was moved to `preservedAt`.
        case failed(seq: UInt64, preservedAt: String?, message: String)
        /// A live job as compaction writes it; also a new job that is whole when queued (a change
        /// made offline, a removal of a file the queue held nothing of).
        case job(UploadJob)
        /// A queued job, not started, as it is now: a later change merged into it.
        case rewrite(UploadJob)
        /// A file's last landing as compaction writes it (`UploadJob.LastLanded`).
        case landedEarlier(fileID: String, UploadJob.LastLanded)
        /// A file made again under a new ID as compaction writes it (`UploadQueueState.movedTo`);
        /// `seq`: the job whose landing moved it.
        case movedEarlier(from: String, to: String, seq: UInt64)
    }

    /// What opening found.
    struct ReplayReport: Equatable {
        var records = 0
        /// Bytes of a torn or corrupt tail that were cut away.
        var truncatedBytes = 0
        /// Bytes of damage skipped between valid records.
        var skippedBytes = 0
    }

    static let header = Array("drivefs upload journal 1\n".utf8)
    static let magic: [UInt8] = [0x44, 0x4A]  // "DJ"
    static let frameHeaderSize = 10
    static let maxPayload = 16 << 20

    let path: String
    let directory: String
    private let log: Log
    private var fd: Int32
    /// The end of the last durable record (where the next one is written).
    private(set) var size: Int64
    /// Size right after the last compaction (or opening): the next compaction waits for growth.
    private var sizeAfterCompaction: Int64
    /// Compact when the file is past this many bytes and twice its size after the last compaction.
    let compactionBound: Int64
    /// True when a failed append could not be cut back: the next append cuts it first.
    private var tailDirty = false

    /// Test seam: the next write stops after `afterBytes` bytes of its frame (really written, so
    /// the tail is torn) and fails with `errno`; or the next fdatasync fails.
    struct Fault {
        var errno: Int32
        var afterBytes: Int = 0
        var atSync = false
    }
    var nextFault: Fault?
    /// Test seam: called before each append's fdatasync with the end offset of the bytes it makes
    /// durable (the records in the file when it runs); an errno returned fails that fdatasync.
    var syncHook: ((Int64) -> Int32?)?
    /// How many appends reached their fdatasync (tests count a group commit's flushes).
    private(set) var appendSyncs = 0

    /// Opens (creating it, and the directory, when missing) and replays the journal.
    init(directory: String, compactionBound: Int64 = 4 << 20, log: Log = .shared) throws(FilesystemError) {
        self.directory = directory
        self.path = directory + "/journal"
        self.log = log
        self.compactionBound = compactionBound
        try LocalFiles.makeDirectories(directory)
        let created = access(path, F_OK) != 0
        let path = self.path
        fd = try LocalFiles.call { try SystemCall.open(path, O_RDWR | O_CREAT | O_CLOEXEC, mode: 0o600) }
        size = 0
        sizeAfterCompaction = 0
        if created { try LocalFiles.syncDirectory(directory) }
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    func close() {
        if fd >= 0 { Glibc.close(fd); fd = -1 }
    }

    /// Reads every record, cuts a torn tail away, and writes the header into an empty file.
    func replay() throws(FilesystemError) -> (records: [Record], report: ReplayReport) {
        let data = try readAll()
        var report = ReplayReport()
        if data.count < Self.header.count {
            guard Array(Self.header.prefix(data.count)) == data else { throw notAJournal() }
            // Empty, or a header cut short by a crash: start the file over.
            try cut(to: 0)
            try writeAll(Self.header, at: 0)
            try sync()
            size = Int64(Self.header.count)
            sizeAfterCompaction = size
            if !data.isEmpty { report.truncatedBytes = data.count }
            return ([], report)
        }
        guard Array(data[0..<Self.header.count]) == Self.header else { throw notAJournal() }
        var records: [Record] = []
        var offset = Self.header.count
        while offset < data.count {
            if let (record, next) = Self.parse(data, at: offset) {
                records.append(record)
                offset = next
                continue
            }
            if let resume = Self.nextValidRecord(data, after: offset) {
                log.error("uploads", "journal \(path): \(resume - offset) damaged bytes at offset \(offset) skipped; the records after them are kept")
                report.skippedBytes += resume - offset
                offset = resume
                continue
            }
            log.warning("uploads", "journal \(path): a torn or corrupt last record (\(data.count - offset) bytes at offset \(offset)) was cut away")
            report.truncatedBytes = data.count - offset
            try cut(to: Int64(offset))
            try sync()
            break
        }
        size = Int64(min(offset, data.count))
        sizeAfterCompaction = size
        report.records = records.count
        return (records, report)
    }

    /// Writes `record` at the end and makes it durable (see the type's contracts).
    func append(_ record: Record) throws(FilesystemError) {
        try append(frames: [try Self.frame(record)])
    }

    /// Writes records framed by `frame`, in order, at the end with one pwrite and makes them all
    /// durable with one fdatasync, or none of them (see the type's contracts).
    func append(frames: [[UInt8]]) throws(FilesystemError) {
        guard fd >= 0 else { throw FilesystemError(errno: EBADF) }
        guard !frames.isEmpty else { return }
        if tailDirty {
            try cut(to: size)
            tailDirty = false
        }
        let bytes = frames.count == 1 ? frames[0] : Array(frames.joined())
        do throws(FilesystemError) {
            try writeAll(bytes, at: size)
            appendSyncs += 1
            if let errno = syncHook?(size + Int64(bytes.count)) { throw FilesystemError(errno: errno) }
            try sync()
        } catch {
            if (try? cut(to: size)) == nil { tailDirty = true }
            throw error
        }
        size += Int64(bytes.count)
    }

    /// Whether the file grew enough since the last compaction to be worth rewriting.
    var wantsCompaction: Bool { size > compactionBound && size > 2 * sizeAfterCompaction }

    /// Replaces the journal by one holding exactly `records` (see the type's contracts).
    func compact(to records: [Record]) throws(FilesystemError) {
        let temp = directory + "/journal.compact"
        let newFD = try LocalFiles.call { try SystemCall.open(temp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o600) }
        var bytes = Self.header
        for record in records { bytes += try Self.frame(record) }
        let previous = fd
        fd = newFD
        do {
            try writeAll(bytes, at: 0)
            try sync()
        } catch {
            fd = previous
            Glibc.close(newFD)
            unlink(temp)
            throw error
        }
        guard rename(temp, path) == 0 else {
            let e = errno
            fd = previous
            Glibc.close(newFD)
            unlink(temp)
            throw FilesystemError(errno: e)
        }
        Glibc.close(previous)
        size = Int64(bytes.count)
        sizeAfterCompaction = size
        tailDirty = false
        try LocalFiles.syncDirectory(directory)
    }

    // MARK: Framing

    static func frame(_ record: Record) throws(FilesystemError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let payload: [UInt8]
        do { payload = Array(try encoder.encode(record)) } catch { throw FilesystemError(errno: EINVAL) }
        var out = magic
        out.reserveCapacity(frameHeaderSize + payload.count)
        appendLE(UInt32(payload.count), to: &out)
        appendLE(CRC32.checksum(payload), to: &out)
        out += payload
        return out
    }

    /// The record at `offset` and the offset after it, when it is whole and its checksum and JSON hold.
    static func parse(_ data: [UInt8], at offset: Int) -> (Record, Int)? {
        guard offset + frameHeaderSize <= data.count, data[offset] == magic[0], data[offset + 1] == magic[1] else { return nil }
        let length = Int(readLE(data, offset + 2))
        let crc = readLE(data, offset + 6)
        let start = offset + frameHeaderSize
        guard length <= maxPayload, start + length <= data.count else { return nil }
        let ok = data.withUnsafeBytes { raw in CRC32.checksum(UnsafeRawBufferPointer(rebasing: raw[start..<start + length])) == crc }
        guard ok, let record = try? JSONDecoder().decode(Record.self, from: Data(data[start..<start + length])) else { return nil }
        return (record, start + length)
    }

    static func nextValidRecord(_ data: [UInt8], after offset: Int) -> Int? {
        var at = offset + 1
        while at + frameHeaderSize <= data.count {
            if data[at] == magic[0], data[at + 1] == magic[1], parse(data, at: at) != nil { return at }
            at += 1
        }
        return nil
    }

    private static func appendLE(_ value: UInt32, to out: inout [UInt8]) {
        for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8((value >> UInt32(shift)) & 0xff)) }
    }

    private static func readLE(_ data: [UInt8], _ at: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(data[at + $1]) << UInt32(8 * $1) }
    }

    // MARK: System calls

    private func notAJournal() -> FilesystemError {
        log.error("uploads", "\(path) is not a drivefs upload journal (or of a newer version); it is left as it is")
        return FilesystemError(errno: EIO)
    }

    private func readAll() throws(FilesystemError) -> [UInt8] {
        let size = try LocalFiles.call { try SystemCall.size(fd) }
        var data = [UInt8](repeating: 0, count: Int(size))
        let done = try LocalFiles.call { try data.withUnsafeMutableBytes { try SystemCall.readFully(fd, into: $0, at: 0) } }
        return Array(data.prefix(done))
    }

    private func writeAll(_ bytes: [UInt8], at offset: Int64) throws(FilesystemError) {
        var limit = bytes.count
        var injected: Int32?
        if let fault = nextFault, !fault.atSync {
            nextFault = nil
            limit = min(fault.afterBytes, bytes.count)
            injected = fault.errno
        }
        try LocalFiles.call { try SystemCall.writeAll(fd, bytes[0..<limit], at: offset) }
        if let injected { throw FilesystemError(errno: injected) }
    }

    private func sync() throws(FilesystemError) {
        if let fault = nextFault, fault.atSync {
            nextFault = nil
            throw FilesystemError(errno: fault.errno)
        }
        try LocalFiles.call { try SystemCall.retrying("fdatasync") { fdatasync(fd) } }
    }

    private func cut(to length: Int64) throws(FilesystemError) {
        try LocalFiles.call { try SystemCall.retrying("ftruncate") { ftruncate(fd, off_t(length)) } }
    }
}
