import DriveClient
import DriveSupport
import Foundation

/// Calling a `FilesystemOperations` and waiting for its reply: for tests and tools that drive a
/// filesystem without a kernel. Never used on the bridge's path (its callbacks must not wait).
public enum BlockingCall {
    /// Waits at most this long for a reply (generous: a test on a loaded machine).
    public static let defaultTimeout: Double = 120

    /// Runs `call` with a fresh `Reply` and waits at most `timeout` seconds for its answer; nil
    /// when none came (a bug in the filesystem: every request gets exactly one reply). The caller
    /// says what that means (a test fails, see its target's `BlockingCall`); nothing traps.
    public static func answer<T: Sendable>(timeout: Double = defaultTimeout, cancellation: CancellationFlag? = nil,
                                           caller: RequestCaller? = nil,
                                           _ call: (Reply<T>) -> Void) -> Result<T, FilesystemError>? {
        let done = DispatchSemaphore(value: 0)
        let box = Locked<Result<T, FilesystemError>?>(nil)
        call(Reply(cancellation: cancellation, caller: caller) { result in
            box.withLock { $0 = result }
            done.signal()
        })
        guard done.wait(timeout: .now() + timeout) == .success else { return nil }
        return box.withLock { $0 }
    }

    /// `answer`, unwrapped: the reply's value, or its error thrown. A reply that never comes is
    /// logged and thrown as ETIMEDOUT (an errno no operation answers), never a hang or a trap.
    public static func wait<T: Sendable>(timeout: Double = defaultTimeout, cancellation: CancellationFlag? = nil,
                                         caller: RequestCaller? = nil,
                                         _ call: (Reply<T>) -> Void) throws(FilesystemError) -> T {
        guard let result = answer(timeout: timeout, cancellation: cancellation, caller: caller, call) else {
            Log.shared.error("blocking", "a filesystem operation sent no reply within \(timeout) s")
            throw FilesystemError(errno: ETIMEDOUT)
        }
        return try result.get()
    }
}

/// A `DirectoryBuffer` that keeps entries in memory, with room for `capacity` of them.
public final class CollectingDirectoryBuffer: DirectoryBuffer, Sendable {
    private let state = Locked<[DirectoryEntryPlus]>([])
    public let capacity: Int

    public init(capacity: Int = Int.max) { self.capacity = capacity }

    public func add(_ entry: DirectoryEntry, attributes: FileAttributes?) -> Bool {
        state.withLock { entries in
            guard entries.count < capacity else { return false }
            entries.append(DirectoryEntryPlus(entry: entry, attributes: attributes))
            return true
        }
    }

    public var entries: [DirectoryEntryPlus] { state.withLock { $0 } }
}

extension FilesystemOperations {
    /// readdirplus into a buffer of `capacity` entries, waiting for the reply.
    public func listPlus(_ inode: Inode, handle: UInt64, after offset: Int64 = 0, capacity: Int = Int.max)
        throws(FilesystemError) -> [DirectoryEntryPlus]
    {
        let buffer = CollectingDirectoryBuffer(capacity: capacity)
        try BlockingCall.wait { (reply: Reply<Void>) in
            readDirectory(inode, handle: handle, after: offset, plus: true, into: buffer, reply: reply)
        }
        return buffer.entries
    }

    /// Plain readdir into a buffer of `capacity` entries, waiting for the reply.
    public func list(_ inode: Inode, handle: UInt64, after offset: Int64 = 0, capacity: Int = Int.max)
        throws(FilesystemError) -> [DirectoryEntry]
    {
        let buffer = CollectingDirectoryBuffer(capacity: capacity)
        try BlockingCall.wait { (reply: Reply<Void>) in
            readDirectory(inode, handle: handle, after: offset, plus: false, into: buffer, reply: reply)
        }
        return buffer.entries.map(\.entry)
    }
}
