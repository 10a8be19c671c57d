import DriveSupport

/// Entries the kernel holds and nobody uses, let go, so that their folders can be packed again
/// (NodeTable+Repack.swift packs a folder once the kernel forgot its children; the kernel itself
/// forgets only under memory pressure, so after a `find` it would hold every node for good).
///
/// The rule: a materialized folder is *idle* when nothing used it here for `idleFor` seconds: no
/// lookup in it, no readdir, no handle opened or closed on it or on a child, no listing made for
/// it. An idle folder is *shed* once: the kernel is asked to drop the entries (`invalidateEntry`)
/// of its children that it holds (lookups above 0) and that are not folders. The kernel then
/// drops each unused dentry, evicts its inode and sends the forget; the last forget of a folder's
/// children packs it. A folder shed is not shed again until it is used again.
///
/// Left alone:
/// - a folder open (opendir), or with a child open, with a write not on Drive yet or new here:
///   nothing is asked for it; a close or an upload landing makes it a candidate again;
/// - child folders' own entries: the kernel drops a directory's dentry even while it is a
///   process's working directory, whose `getcwd` then fails with ENOENT until the path is looked
///   up again. So folders' own nodes stay (one node each, kept under their packed parents:
///   NodeTable+Repack.swift); the files, which are nearly all of a drive, go, and every listing is
///   packed again.
///
/// Bounds: uses are queued in time order (`useQueue`, one entry a folder a second at most), so a
/// call pops the idle ones from its front and never looks at folders used since; it looks at
/// most at `budget` queue entries and children, under the table's lock, and what is left waits
/// for the next call. The notifications go out on the invalidator's own thread, never on a kernel
/// request's thread (`notify_inval_entry` waits for the folder's lock, which a lookup in it may
/// hold).
extension NodeTable {
    struct FolderUse: Sendable {
        /// `time.now()` of the last use.
        var at: Double
        /// When its latest `useQueue` entry was queued (an entry with another time is stale).
        var queuedAt: Double
    }

    /// Queue entries and children one `shedIdleFolders` looks at, at most.
    static let shedBudget = 50_000

    /// `folder` was used now (a no-op unless its listing is materialized).
    static func noteUse(_ folder: Inode, at now: Double, _ s: inout State) {
        guard s.nodes[folder]?.listing != nil else { return }
        if let use = s.folderUse[folder], now - use.queuedAt < 1 {
            s.folderUse[folder]!.at = max(use.at, now)
            return
        }
        s.folderUse[folder] = FolderUse(at: now, queuedAt: now)
        s.useQueue.append((folder, now))
    }

    /// A handle opened or closed on `inode`: its folder was used, and so was it if it is a folder
    /// (a folder with a child open is held, and looked at again after the close).
    static func noteHandleUse(_ inode: Inode, at now: Double, _ s: inout State) {
        guard let node = s.nodes[inode] else { return }
        if node.kind == .directory { noteUse(inode, at: now, &s) }
        if let parent = node.parent { noteUse(parent, at: now, &s) }
    }

    /// Sheds folders idle for `idleFor` seconds (the rule above): the entries for the kernel to
    /// drop, and how many folders were shed.
    func shedIdleFolders(idleFor: Double, budget: Int = NodeTable.shedBudget) -> (invalidations: Invalidations, folders: Int) {
        let cutoff = time.now() - idleFor
        return withState { s in
            var out = Invalidations()
            var left = budget
            var shed = 0
            while left > 0, s.useQueueHead < s.useQueue.count, s.useQueue[s.useQueueHead].at <= cutoff {
                let (folder, queuedAt) = s.useQueue[s.useQueueHead]
                s.useQueueHead += 1
                left -= 1
                // Stale: shed or packed since, or queued again later.
                guard let use = s.folderUse[folder], use.queuedAt == queuedAt else { continue }
                if use.at > cutoff {
                    s.folderUse[folder]!.queuedAt = use.at
                    s.useQueue.append((folder, use.at))
                    continue
                }
                // Shed, or held: either way looked at again only after its next use (a close and
                // an upload landing are uses).
                s.folderUse[folder] = nil
                guard let node = s.nodes[folder], let listing = node.listing, node.openHandles == 0 else { continue }
                left -= listing.children.count
                var names: [String] = []
                var held = false
                for (name, child) in listing.children {
                    guard let c = s.nodes[child] else { continue }
                    if c.openHandles > 0 || c.local != nil || s.localNew.contains(child) {
                        held = true
                        break
                    }
                    if c.kind != .directory && c.lookups > 0 { names.append(name) }
                }
                guard !held else { continue }
                out.entries += names.map { (parent: folder, name: $0) }
                shed += 1
                // Packed at once when the kernel holds none of its files (only folders, or nothing),
                // else by the forgets of those asked for.
                Self.noteUnneeded(folder, &s)
            }
            // The popped front goes once it is half the queue: the queue's work stays in proportion to its uses.
            if s.useQueueHead > 1_024, s.useQueueHead * 2 > s.useQueue.count {
                s.useQueue.removeFirst(s.useQueueHead)
                s.useQueueHead = 0
            }
            return (out, shed)
        }
    }
}
