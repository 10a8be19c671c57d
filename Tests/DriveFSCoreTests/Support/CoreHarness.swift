import DriveClient
import DriveFSCore
import DriveSupport
import Foundation
import XCTest

/// Kernel notifications, recorded.
/// @unchecked: every field is behind `lock`.
final class RecordingNotifier: KernelNotifier, @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [(Inode, String)] = []
    private var inodes: [Inode] = []

    func invalidateEntry(parent: Inode, name: String) { lock.lock(); entries.append((parent, name)); lock.unlock() }
    func invalidateInode(_ inode: Inode) { lock.lock(); inodes.append(inode); lock.unlock() }

    var entryNames: [String] { lock.lock(); defer { lock.unlock() }; return entries.map(\.1) }
    var inodeList: [Inode] { lock.lock(); defer { lock.unlock() }; return inodes }
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
    /// change token first. Their two requests are not counted (`resetCounters` after).
    @discardableResult
    func mount() throws -> DriveFilesystem {
        let root = try backend.getFile("root")
        let token = try backend.changesStartPageToken()
        fs = try DriveFilesystem(backend: backend, root: root, startPageToken: token, configuration: configuration, time: time)
        fs.start(notifier: notifier)
        // The poller reads the feed once at start: let that happen before a test counts requests.
        let deadline = Date().addingTimeInterval(60)
        while fs.completedPolls == 0 && Date() < deadline { usleep(2_000) }
        return fs
    }

    func unmount() {
        fs?.forgetAll()
        fs?.stop()
        fs = nil
    }

    func remove() {
        unmount()
        try? FileManager.default.removeItem(at: directory)
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

    static func bytes(_ data: ReadData) -> [UInt8] {
        switch data {
        case .bytes(let b): return b
        case .file(let fd, let offset, let length):
            var buffer = [UInt8](repeating: 0, count: length)
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, length, off_t(offset)) }
            return Array(buffer.prefix(max(0, n)))
        }
    }

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
