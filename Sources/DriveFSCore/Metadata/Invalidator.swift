import DriveSupport

/// Carries table changes to the kernel's caches and the block cache.
///
/// Kernel notifications go out on a thread of their own, never on the thread that applied the
/// change: that thread may be about to answer a lookup that the kernel holds the folder's lock for,
/// and `notify_inval_entry` waits for that lock (a deadlock if the same thread were to wait for it).
final class Invalidator: Sendable {
    private let notifier = RankedLocked<any KernelNotifier>(.leaf, SilentNotifier())
    private let cache: BlockCache
    private let queue: WorkPool

    init(cache: BlockCache, queue: WorkPool) {
        self.cache = cache
        self.queue = queue
    }

    func attach(_ notifier: any KernelNotifier) { self.notifier.withLock { $0 = notifier } }

    func apply(_ invalidations: Invalidations) {
        guard !invalidations.isEmpty else { return }
        for key in invalidations.staleContent { cache.discard(key) }
        guard !invalidations.entries.isEmpty || !invalidations.inodes.isEmpty else { return }
        let notifier = self.notifier.withLock { $0 }
        let entries = invalidations.entries.map { EntryName(parent: $0.parent, name: $0.name) }
        let inodes = invalidations.inodes
        queue.submit {
            for entry in entries { notifier.invalidateEntry(parent: entry.parent, name: entry.name) }
            for inode in inodes { notifier.invalidateInode(inode) }
        }
    }

    private struct EntryName: Sendable {
        let parent: Inode
        let name: String
    }
}
