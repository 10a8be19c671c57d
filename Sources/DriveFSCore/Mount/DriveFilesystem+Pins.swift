import DriveClient
import DriveSupport
import Foundation
import Glibc

/// Files kept offline (`PinKeeper`) and each file's sync state (`SyncState`), as the filesystem
/// answers them: `user.drivefs.pinned`, `user.drivefs.state`, `user.drivefs.error`, and the
/// background fills the keeper asks for.
extension DriveFilesystem {
    /// Starts a background fill of version `key` (`size` bytes) for a pinned file, unless one runs
    /// or it is whole: the random-read fill's streams, at `.background` priority, holding a handle
    /// of their own until the last stream ends.
    func fillPinned(_ key: ContentKey, size: Int64) {
        guard let content = try? cache.open(key, size: size) else { return }
        guard cache.beginFill(content) else { return cache.release(content) }
        let streams = max(1, configuration.randomReadFillStreams)
        let running = Locked(streams)
        let release: @Sendable () -> Void = { [cache] in cache.release(content) }
        for _ in 0..<streams { continueFill(content, running: running, then: release) }
    }

    /// Exports version `key` of a pinned Workspace document into the cache, at `.background`
    /// priority, and lets it go (kept: the keeper marked it before); a failure is logged and the
    /// next sweep tries again.
    func exportPinned(_ key: ContentKey) {
        guard let mimeType = key.exportMimeType else { return }
        let context = RequestContext(priority: .background, deadline: time.now() + configuration.requestDeadline)
        do {
            let content = try context.scope { () throws -> BlockCache.Handle in
                try cache.openExport(key, cancellation: nil) { try backend.export(key.fileID, mimeType: mimeType) }
            }
            cache.release(content)
            Log.shared.debug("pins", "exported \(key) to keep it offline")
        } catch {
            Log.shared.info("pins", "cannot export \(key.fileID) to keep it offline: \(error)")
        }
    }

    /// The state of `inode` (see `SyncState`), from the table, the local copies, the upload queue
    /// and the cache; never waits for a lock held across I/O (a copy busy filling or committing is
    /// `local`).
    func syncState(_ inode: Inode) -> (state: SyncState, error: String?) {
        guard let node = table.node(inode) else { return (.synced, nil) }
        guard node.kind == .regular else { return (.synced, nil) }
        let id = node.file.id
        // Bytes written here and not queued yet come first: an upload queued or running meanwhile
        // (a new file's early create, an earlier close) does not carry them. So does a file open
        // for writing: the kernel may hold its latest writes (writeback) until the close.
        let held = locals.withLock { $0[inode] }
        if let held {
            // The copy's lock is held for local work only (never across a fetch): a short wait.
            held.lock.lock()
            let written = held.isDirty || held.hasUnreadyCommit || held.writers > 0
            held.lock.unlock()
            if written { return (.local, nil) }
        }
        switch uploads.phase(of: id) {
        case .uploading: return (.uploading, nil)
        case .queued: return (.queued, nil)
        case .notReady: return (.local, nil)
        case .none: break
        }
        if held == nil, node.local != nil { return (.local, nil) }
        switch verdicts.verdict(of: id) {
        case .failed(let reason)?: return (.failed, reason)
        case .conflict?: return (.conflict, nil)
        case nil: break
        }
        let pinned = pins.isPinned(inode)
        // A copy held here (open, or landed and not let go yet) is the current content.
        if held != nil { return (pinned ? .offline : .synced, nil) }
        guard let key = ContentKey(node.file, exportFormats: configuration.exportFormats) else { return (.synced, nil) }
        if key.exportMimeType != nil {
            // A document: its export of the current version, whole or not there.
            let exported = cache.completeSize(key) != nil
            return (exported ? (pinned ? .offline : .synced) : .cloud, nil)
        }
        let size = max(0, node.file.size ?? 0)
        let present = cache.presentBytes(key, size: size)
        if pinned && present == size { return (.offline, nil) }
        return (size > 0 && present == 0 ? .cloud : .synced, nil)
    }

    /// The value of one of drivefs's own attributes, nil when `name` is not one of them.
    func pinAttribute(_ inode: Inode, named name: String) throws(FilesystemError) -> [UInt8]? {
        switch name {
        case ExtendedAttributes.pinned: return Array((pins.isPinned(inode) ? "1" : "0").utf8)
        case ExtendedAttributes.state: return Array(syncState(inode).state.rawValue.utf8)
        case ExtendedAttributes.error:
            guard let reason = syncState(inode).error else { throw .noAttribute }
            return Array(reason.utf8)
        default: return nil
        }
    }

    /// drivefs's own attribute names `inode` has, in `listxattr` order.
    func pinAttributeNames(_ inode: Inode) -> [String] {
        var names = [ExtendedAttributes.state]
        if pins.isPinned(inode) { names.insert(ExtendedAttributes.pinned, at: 0) }
        if syncState(inode).error != nil { names.append(ExtendedAttributes.error) }
        return names
    }

    /// `setfattr -n user.drivefs.pinned -v 1|0` (and `-x`: `value` nil): pins or unpins. Any
    /// other value is `EINVAL`.
    func setPinnedAttribute(_ inode: Inode, value: [UInt8]?) throws(FilesystemError) {
        let text = value.map { String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines.union(CharacterSet(charactersIn: "\0"))) }
        switch text {
        case "1"?, "true"?, "yes"?: try pins.setPinned(inode, true)
        case "0"?, "false"?, "no"?, nil: try pins.setPinned(inode, false)
        default: throw .invalidArgument
        }
    }

    /// The pins for `drivefs status` and `drivefs pin --list`.
    var pinStatus: [MountStatus.Pin] { pins.summary }

    // MARK: Introspection (tests)

    /// Sweeps of the pins finished since start.
    public var pinSweepsDone: Int { pins.sweepsDone }
    /// Every sweep asked for so far has ended.
    public var pinSweepsIdle: Bool { pins.isIdle }
    /// Asks the keeper for a sweep now (tests; the mount asks after each poll and landing).
    public func sweepPins() { pins.requestSweep() }
    public func isPinned(_ inode: Inode) -> Bool { pins.isPinned(inode) }
}
