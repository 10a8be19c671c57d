import DriveSupport

/// The mount's open handles: the number the kernel gets at `open` and `opendir`, and what each
/// stands for. One lock (a leaf but for `NodeTable.state`, which callers take around it, never
/// inside). Numbers are never reused while the mount lives, so a handle the kernel still holds
/// after a release cannot name another file.
final class HandleTable: Sendable {
    struct OpenFile {
        let inode: Inode
        /// Drive's content (nil when the handle reads and writes `local`).
        let content: BlockCache.Handle?
        var local: LocalContent? = nil
        var writable = false
    }

    struct OpenDirectory {
        let inode: Inode
        /// The entries as of the first read from offset 0: cookies index into it.
        var snapshot: [DirectoryEntry]?
    }

    private struct State {
        var next: UInt64 = 1
        var files: [UInt64: OpenFile] = [:]
        var directories: [UInt64: OpenDirectory] = [:]

        mutating func take() -> UInt64 {
            defer { next += 1 }
            return next
        }
    }

    private let state = RankedLocked(.handles, State())

    /// A new handle for `file`.
    func add(_ file: OpenFile) -> UInt64 {
        state.withLock { s in
            let handle = s.take()
            s.files[handle] = file
            return handle
        }
    }

    /// A new handle for the folder `inode` (its snapshot taken at the first read).
    func addDirectory(_ inode: Inode) -> UInt64 {
        state.withLock { s in
            let handle = s.take()
            s.directories[handle] = OpenDirectory(inode: inode, snapshot: nil)
            return handle
        }
    }

    /// The open file `handle` of `inode` (nil: no such handle, or another inode's).
    func file(_ handle: UInt64, of inode: Inode? = nil) -> OpenFile? {
        state.withLock { s in s.files[handle].flatMap { inode == nil || $0.inode == inode ? $0 : nil } }
    }

    func directory(_ handle: UInt64, of inode: Inode) -> OpenDirectory? {
        state.withLock { s in s.directories[handle].flatMap { $0.inode == inode ? $0 : nil } }
    }

    func setSnapshot(_ entries: [DirectoryEntry], of handle: UInt64) {
        state.withLock { $0.directories[handle]?.snapshot = entries }
    }

    /// Ends the file handle; what it was (nil: no such handle).
    func removeFile(_ handle: UInt64) -> OpenFile? {
        state.withLock { $0.files.removeValue(forKey: handle) }
    }

    func removeDirectory(_ handle: UInt64) -> OpenDirectory? {
        state.withLock { $0.directories.removeValue(forKey: handle) }
    }
}
