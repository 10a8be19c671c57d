import CFuse
import DriveFSCore
import DriveSupport
import Glibc

/// The Swift state behind a FUSE session, reached from C callbacks through `fuse_req_userdata`
/// (and the `userdata` of init/destroy) as an unretained `Unmanaged` pointer. `FuseMount` keeps it
/// alive for the whole session.
final class FuseSessionContext: Sendable {
    let filesystem: any FilesystemOperations
    /// Every open file bypasses the page cache: each read reaches the filesystem.
    let directIO: Bool
    /// The kernel's read-ahead, and the largest read request asked for, in bytes.
    let maxReadahead: UInt32
    let notifier = FuseKernelNotifier()
    let interrupts = InterruptRegistry()

    init(filesystem: any FilesystemOperations, directIO: Bool, maxReadahead: UInt32) {
        self.filesystem = filesystem
        self.directIO = directIO
        self.maxReadahead = maxReadahead
    }

    var opaquePointer: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    static func from(_ userdata: UnsafeMutableRawPointer?) -> FuseSessionContext? {
        guard let userdata else { return nil }
        return Unmanaged<FuseSessionContext>.fromOpaque(userdata).takeUnretainedValue()
    }

    static func from(request: fuse_req_t?) -> FuseSessionContext? { from(fuse_req_userdata(request)) }
}

/// Kernel cache invalidations through the live session. Before the session is set (and after it
/// ends) they are dropped: there is no kernel cache to invalidate then.
final class FuseKernelNotifier: KernelNotifier {
    /// `fuse_session *`, as a bit pattern (C pointers are not Sendable).
    private let session = Locked<UInt>(0)

    func attach(_ pointer: OpaquePointer?) {
        session.withLock { $0 = pointer.map { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer($0))) } ?? 0 }
    }

    private var current: OpaquePointer? {
        let bits = session.withLock { $0 }
        return bits == 0 ? nil : OpaquePointer(bitPattern: bits)
    }

    func invalidateEntry(parent: Inode, name: String) {
        guard let session = current else { return }
        let rc = name.withCString { fuse_lowlevel_notify_inval_entry(session, parent.rawValue, $0, strlen($0)) }
        // -ENOENT: the kernel had nothing cached under that name. Anything else is worth a line.
        if rc != 0 && rc != -ENOENT {
            Log.shared.debug("fuse", "invalidating '\(name)' in \(parent): \(String(cString: strerror(-rc)))")
        }
    }

    func invalidateInode(_ inode: Inode) {
        guard let session = current else { return }
        let rc = fuse_lowlevel_notify_inval_inode(session, inode.rawValue, 0, 0)
        if rc != 0 && rc != -ENOENT {
            Log.shared.debug("fuse", "invalidating \(inode): \(String(cString: strerror(-rc)))")
        }
    }
}

/// The cancellation flag of each request that may wait on the network, by a small integer that
/// travels to libfuse's interrupt callback as its `data` pointer. A number rather than a pointer to
/// Swift state: the callback may run while (or after) the request is answered, and a stale number
/// only finds nothing, where a freed pointer would crash.
final class InterruptRegistry: Sendable {
    private let state = Locked<(next: UInt, flags: [UInt: CancellationFlag])>((1, [:]))

    func register(_ flag: CancellationFlag) -> UInt {
        state.withLock { s in
            let id = s.next
            s.next += 1
            s.flags[id] = flag
            return id
        }
    }

    func remove(_ id: UInt) { state.withLock { _ = $0.flags.removeValue(forKey: id) } }

    func interrupt(_ id: UInt) { state.withLock { $0.flags[id] }?.cancel() }

    var count: Int { state.withLock { $0.flags.count } }
}
