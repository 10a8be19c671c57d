import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// Kernel notifications, recorded.
/// @unchecked: every field is behind `lock`.
final class RecordingNotifier: KernelNotifier, @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [(Inode, String)] = []
    private var inodes: [Inode] = []
    /// Waits until what the mount handed its notification thread so far was delivered (set by
    /// `CoreHarness.mount`): invalidations reach the kernel after the call that made them
    /// returned, so a test reading the record right after a poll or a shed would race that thread.
    var settle: (@Sendable () -> Void)? {
        get { lock.lock(); defer { lock.unlock() }; return settling }
        set { lock.lock(); settling = newValue; lock.unlock() }
    }
    private var settling: (@Sendable () -> Void)?

    func invalidateEntry(parent: Inode, name: String) { lock.lock(); entries.append((parent, name)); lock.unlock() }
    func invalidateInode(_ inode: Inode) { lock.lock(); inodes.append(inode); lock.unlock() }

    var entryNames: [String] { recorded { $0.entries.map(\.1) } }
    var entryList: [(parent: Inode, name: String)] { recorded { $0.entries.map { ($0.0, $0.1) } } }
    var inodeList: [Inode] { recorded { $0.inodes } }

    private func recorded<T>(_ read: (RecordingNotifier) -> T) -> T {
        settle?()
        lock.lock()
        defer { lock.unlock() }
        return read(self)
    }
}

/// A `DriveFilesystem` over a `FakeDriveBackend`, in a temporary cache directory, driven the way
/// the kernel would drive it (lookups, readdirplus, open/read/release), without a kernel.
final class CoreHarness {
    let backend: FakeDriveBackend
    let directory: URL
    let notifier = RecordingNotifier()
    let time: any TimeSource
    private(set) var fs: DriveFilesystem!
    var configuration: DriveFSConfiguration

    init(backend: FakeDriveBackend = FakeDriveBackend(), time: any TimeSource = SystemTimeSource(),
         configure: (inout DriveFSConfiguration) -> Void = { _ in }) throws {
        self.backend = backend
        self.time = time
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("drivefs-core-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        configuration = DriveFSConfiguration(userID: 1000, groupID: 1000, cacheDirectory: directory.appendingPathComponent("cache"),
                                             pollInterval: 3600)
        configure(&configuration)
    }

    /// Mounts (constructs and starts the filesystem) as `drivefs mount` does: the root and the
    /// change token first. Their two requests are not counted (`resetCounters` after). `uploads`:
    /// the upload queue to use (nil: the core makes its own in `uploadsDirectory`).
    /// `waitForFirstPoll`: false returns once `start` did (a test holding the poller's first read).
    @discardableResult
    func mount(uploads: (any UploadQueueing)? = nil, waitForFirstPoll: Bool = true, beforeStart: () -> Void = {}) throws -> DriveFilesystem {
        let root = try backend.getFile("root")
        let token = try backend.changesStartPageToken()
        // `beforeStart`: after the two requests a mount needs (a test may take Drive away there).
        beforeStart()
        fs = try DriveFilesystem(backend: backend, root: root, startPageToken: token, configuration: configuration, time: time,
                                 uploads: uploads)
        let pool = fs.notifications
        notifier.settle = { _ = pool.waitUntilIdle(timeout: 60) }
        fs.start(notifier: notifier)
        guard waitForFirstPoll else { return fs }
        // The poller reads the feed once at start: let that happen before a test counts requests.
        waitUntil("the first poll of the change feed") { fs.completedPolls > 0 }
        return fs
    }

    func unmount() {
        fs?.forgetAll()
        fs?.stop()
        fs = nil
        backend.forgetIDPool()
    }

    /// The process died: the filesystem is abandoned as `kill -9` leaves it (its upload queue must
    /// have crashed first, see `DriveFilesystem.abandonAsCrashed`). A `mount()` after it is the
    /// restart: a new core over the same cache directory and the same Drive.
    func crash() {
        fs?.abandonAsCrashed()
        fs = nil
        backend.forgetIDPool()
    }

    func remove() {
        unmount()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Where the core keeps its upload journal (`<cache>/uploads`).
    var uploadsDirectory: String { configuration.cacheDirectory.appendingPathComponent("uploads").path }

    // MARK: Writing, as the kernel asks for it

    func create(_ parent: Inode, _ name: String, mode: UInt32 = 0o644) throws -> CreatedFile {
        try BlockingCall.wait { fs.create(parent: parent, name: name, mode: mode, flags: O_WRONLY | O_CREAT, reply: $0) }
    }

    func open(_ inode: Inode, _ flags: Int32) throws -> UInt64 {
        try BlockingCall.wait { fs.open(inode, flags: flags, reply: $0) }.handle
    }

    @discardableResult
    func write(_ inode: Inode, _ handle: UInt64, _ bytes: [UInt8], at offset: Int64) throws -> Int {
        try BlockingCall.wait { fs.write(inode, handle: handle, offset: offset, data: bytes, reply: $0) }
    }

    /// close(2): flush, then release.
    func close(_ inode: Inode, _ handle: UInt64) throws {
        try BlockingCall.wait { fs.flush(inode, handle: handle, reply: $0) }
        fs.release(inode, handle: handle)
    }

    /// Writes a whole new file in `parent` and closes it; returns its inode.
    @discardableResult
    func writeFile(_ parent: Inode, _ name: String, _ bytes: [UInt8]) throws -> Inode {
        let created = try create(parent, name)
        var at = 0
        while at < bytes.count {
            let end = min(bytes.count, at + (1 << 20))
            try write(created.attributes.inode, created.opened.handle, Array(bytes[at..<end]), at: Int64(at))
            at = end
        }
        try close(created.attributes.inode, created.opened.handle)
        return created.attributes.inode
    }

    /// Opens an existing file with O_TRUNC, writes `bytes`, closes it.
    func rewrite(_ inode: Inode, _ bytes: [UInt8]) throws {
        let handle = try open(inode, O_WRONLY | O_TRUNC)
        try write(inode, handle, bytes, at: 0)
        try close(inode, handle)
    }

    func rename(_ parent: Inode, _ name: String, to newParent: Inode, _ newName: String, flags: UInt32 = 0) throws {
        try BlockingCall.wait { fs.rename(parent: parent, name: name, newParent: newParent, newName: newName, flags: flags, reply: $0) }
    }

    func makeDirectory(_ parent: Inode, _ name: String) throws -> FileAttributes {
        try BlockingCall.wait { fs.makeDirectory(parent: parent, name: name, mode: 0o755, reply: $0) }
    }

    func lookup(_ parent: Inode, _ name: String) throws -> FileAttributes {
        try BlockingCall.wait { fs.lookup(parent: parent, name: name, reply: $0) }
    }

    /// Resolves `a/b/c` from the root, one lookup per component.
    func resolve(_ path: String) throws -> FileAttributes {
        var attributes = try BlockingCall.wait { fs.attributes(of: .root, reply: $0) }
        for component in path.split(separator: "/") {
            attributes = try lookup(attributes.inode, String(component))
        }
        return attributes
    }

    /// readdirplus of a whole folder, as `ls -l` asks for it (buffers of `batch` entries).
    func listPlus(_ inode: Inode, batch: Int = 100) throws -> [DirectoryEntryPlus] {
        let handle = try BlockingCall.wait { fs.openDirectory(inode, reply: $0) }
        defer { fs.releaseDirectory(inode, handle: handle) }
        var all: [DirectoryEntryPlus] = []
        var offset: Int64 = 0
        while true {
            let page = try fs.listPlus(inode, handle: handle, after: offset, capacity: batch)
            if page.isEmpty { break }
            all += page
            offset = page.last!.entry.nextOffset
        }
        return all
    }

    /// `ls -lR`: every folder below `inode`, depth first in name order; returns path → attributes.
    func walk(_ inode: Inode = .root, prefix: String = "") throws -> [String: FileAttributes] {
        var result: [String: FileAttributes] = [:]
        for item in try listPlus(inode) where item.attributes != nil {
            let path = prefix + item.entry.name
            result[path] = item.attributes
            if item.entry.kind == .directory { result.merge(try walk(item.entry.inode, prefix: path + "/")) { a, _ in a } }
        }
        return result
    }

    func read(_ inode: Inode, offset: Int64 = 0, size: Int = Int.max / 2) throws -> [UInt8] {
        let opened = try BlockingCall.wait { fs.open(inode, flags: O_RDONLY, reply: $0) }
        defer { fs.release(inode, handle: opened.handle) }
        return try read(inode, handle: opened.handle, offset: offset, size: size)
    }

    func read(_ inode: Inode, handle: UInt64, offset: Int64, size: Int) throws -> [UInt8] {
        var out: [UInt8] = []
        var at = offset
        var left = size
        while left > 0 {
            let data = try BlockingCall.wait { fs.read(inode, handle: handle, offset: at, size: min(left, 1 << 20), reply: $0) }
            let bytes = Self.bytes(data)
            if bytes.isEmpty { break }
            out += bytes
            at += Int64(bytes.count)
            left -= bytes.count
        }
        return out
    }

    static func bytes(_ data: ReadData) -> [UInt8] { DriveFilesystem.bytes(data) }

    /// A deterministic tree: `top` folders under the root, `sub` folders in each, `files` files of
    /// `fileSize` bytes in each of those.
    @discardableResult
    static func buildTree(_ backend: FakeDriveBackend, top: Int, sub: Int, files: Int, fileSize: Int = 16) -> Int {
        var entries = 0
        for t in 0..<top {
            let a = backend.addFolder("dir\(t)")
            entries += 1
            for s in 0..<sub {
                let b = backend.addFolder("sub\(s)", in: a)
                entries += 1
                for f in 0..<files {
                    backend.addFile("file\(f).txt", in: b, content: Array("content \(t)/\(s)/\(f)\n".utf8.prefix(fileSize)))
                    entries += 1
                }
            }
        }
        return entries
    }

    static func pattern(_ count: Int, seed: UInt64) -> [UInt8] {
        var generator = SplitMix64(seed: seed)
        var out = [UInt8]()
        out.reserveCapacity(count + 8)
        while out.count < count {
            let z = generator.next()
            for shift in stride(from: 0, to: 64, by: 8) { out.append(UInt8(truncatingIfNeeded: z >> UInt64(shift))) }
        }
        return Array(out.prefix(count))
    }
}

/// An upload queue whose transfers wait for `release()` (the core's `start` is held back), so that
/// operations made before it meet no transfer: their commit points come in one order, every run.
final class HeldUploadQueue: UploadQueueing, @unchecked Sendable {
    // @unchecked: `onFinished` is behind its Locked box; `inner` is Sendable.
    let inner: UploadQueue
    private let onFinished = Locked<(@Sendable (UploadOutcome) -> Void)?>(nil)
    private let released = Locked(false)

    init(_ inner: UploadQueue) { self.inner = inner }

    /// Starts the transfers (with the core's callback, once the core started).
    func release() {
        guard let callback = onFinished.withLock({ $0 }), !released.withLock({ r in defer { r = true }; return r }) else { return }
        inner.start(onFinished: callback)
    }

    var recovered: [(request: UploadRequest, contentPath: String)] { inner.recovered }
    var recoveredRemovals: [String] { inner.recoveredRemovals }
    var recoveredWaitingRemovals: [(request: UploadRequest, seconds: Double)] { inner.recoveredWaitingRemovals }
    var recoveredPlacings: [UploadRequest] { inner.recoveredPlacings }
    func decideCutRenames(_ context: RequestContext) -> [String] { inner.decideCutRenames(context) }
    func commit(_ request: UploadRequest, contentPath: String, ready: Bool, settles: Bool) throws(FilesystemError) {
        try inner.commit(request, contentPath: contentPath, ready: ready, settles: settles)
    }
    func endSettle(of fileID: String) { inner.endSettle(of: fileID) }
    func reclaim(_ fileID: String) -> (request: UploadRequest, contentPath: String)? { inner.reclaim(fileID) }
    func contentPath(of fileID: String) -> String? { inner.contentPath(of: fileID) }
    func changeLanding(of fileID: String) -> Bool { inner.changeLanding(of: fileID) }
    func currentID(of fileID: String) -> String { inner.currentID(of: fileID) }
    func queuedBase(of fileID: String) -> (revision: String?, md5: String?) { inner.queuedBase(of: fileID) }
    func isWhole(_ fileID: String) -> Bool { inner.isWhole(fileID) }
    func updateMetadata(of fileID: String, _ change: @Sendable (inout UploadRequest) -> Void) throws(FilesystemError) -> Bool {
        try inner.updateMetadata(of: fileID, change)
    }
    func cancel(_ fileID: String) throws(FilesystemError) -> Bool { try inner.cancel(fileID) }
    func queueChange(_ change: QueuedChange) throws(FilesystemError) { try inner.queueChange(change) }
    func queueRemoval(_ request: UploadRequest) throws(FilesystemError) { try inner.queueRemoval(request) }
    func queueRemoval(_ request: UploadRequest, settling seconds: Double) throws(FilesystemError) {
        try inner.queueRemoval(request, settling: seconds)
    }
    func takeRemovedPlace(_ fileID: String, of request: UploadRequest) throws(FilesystemError) -> Bool {
        try inner.takeRemovedPlace(fileID, of: request)
    }
    func cancel(_ fileID: String, removalSettles seconds: Double) throws(FilesystemError) -> Bool {
        try inner.cancel(fileID, removalSettles: seconds)
    }
    func holdsChanges(of fileID: String) -> Bool { inner.holdsChanges(of: fileID) }
    func awaitsRename(of fileID: String) -> Bool { inner.awaitsRename(of: fileID) }
    func retarget(_ fileID: String, to request: UploadRequest) throws(FilesystemError) -> Bool {
        try inner.retarget(fileID, to: request)
    }
    func beginReplacement(of replaced: UploadRequest, by fileID: String, name: String, parentID: String) throws(FilesystemError) -> UInt64 {
        try inner.beginReplacement(of: replaced, by: fileID, name: name, parentID: parentID)
    }
    func endReplacement(_ number: UInt64) { inner.endReplacement(number) }
    func waitUntilUploaded(_ fileID: String, deadline: Double, cancellation: CancellationFlag?) throws(FilesystemError) {
        try inner.waitUntilUploaded(fileID, deadline: deadline, cancellation: cancellation)
    }
    func whenUploaded(_ fileID: String, cancellation: CancellationFlag?,
                      _ done: @escaping @Sendable (Result<Void, FilesystemError>) -> Void) {
        inner.whenUploaded(fileID, cancellation: cancellation, done)
    }
    func drain(timeout: Double, progress: @Sendable (UploadQueueStatus) -> Void) -> Bool { inner.drain(timeout: timeout, progress: progress) }
    func sendRemovalsNow(timeout: Double) -> Bool { inner.sendRemovalsNow(timeout: timeout) }
    var status: UploadQueueStatus { inner.status }
    func phase(of fileID: String) -> UploadFilePhase { inner.phase(of: fileID) }
    func start(onFinished: @escaping @Sendable (UploadOutcome) -> Void) { self.onFinished.withLock { $0 = onFinished } }
    func stop() { inner.stop() }
}
