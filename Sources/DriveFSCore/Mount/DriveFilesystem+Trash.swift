import DriveClient
import DriveSupport
import Foundation
import Glibc

/// The trash (docs/semantics.md, "The trash"), spoken through extended attributes as revisions
/// are: `user.drive.trash` lists it, `user.drivefs.untrash` brings an item back,
/// `user.drivefs.empty_trash` empties it. Each reads or writes Drive on an interactive thread,
/// with nothing of the table locked meanwhile. The work is in functions of their own
/// (`trashListing`, `untrash`, `emptyTrash`) so that another view of the trash (a `Trash/` folder)
/// can use them too.
///
/// What is listed is what Drive's web Trash view lists: the items trashed themselves
/// (`explicitlyTrashed`). The children of a trashed folder are in the trash too, but come back
/// with their folder; they are read only to say where a trashed folder was.
///
/// Offline (`Reachability`), none of them asks Drive: `ENETUNREACH`, nothing done; a request that
/// could not reach Drive answers the same.
extension DriveFilesystem {
    /// How many folders up a trashed item's folder path is followed through the trash.
    static let trashDepth = 256
    /// How many folders the mount does not know a trash listing may ask Drive for (files.get).
    static let trashFolderLookups = 64
    /// Seconds a trash command waits for the removals queued before it to reach Drive.
    static let removalsWait: Double = 30

    // MARK: Listing

    /// `user.drive.trash` on a folder: the items trashed themselves that were in it or below it
    /// (every one on the root), `ExtendedAttributes.trashLines`, sorted by path. One files.list a
    /// page of 1,000 trashed items, and one files.get for each folder the table does not know (not
    /// listed yet) on the way up from where an item was, at most `trashFolderLookups`. Files,
    /// links: ENODATA.
    func trashAttribute(_ node: Node, reply: Reply<[UInt8]>) {
        guard node.kind == .directory else { return reply.fail(.noAttribute) }
        let inode = node.inode
        onIOThread(reply, "listing the trash for", inode) { [self] () throws(FilesystemError) -> [UInt8] in
            Array(ExtendedAttributes.trashLines(try trashListing(under: inode)).utf8)
        }
    }

    /// The items trashed themselves that were in `folder` or below it, with where each was.
    func trashListing(under folder: Inode) throws(FilesystemError) -> [ExtendedAttributes.TrashLine] {
        sendQueuedRemovals()
        var trashed: [String: DriveTrashedItem] = [:]
        try askingDrive { () throws in
            try backend.listTrash { page in
                for item in page { trashed[item.file.id] = item }
                return true
            }
        }
        let folderID = table.node(folder)?.file.id
        let resolver = ShortcutResolver(backend: backend, table: table, lister: lister)
        // Where a folder is: on the mount (its names and inode), in the trash (through its own
        // folder), or unknown. Memoized: many items share a folder.
        struct Place { var path: [String]; var state: ExtendedAttributes.TrashedFolder; var anchor: Inode?; var chain: [String] }
        var places: [String: Place] = [:]
        var asked = 0
        func place(of id: String, depth: Int) -> Place {
            if let known = places[id] { return known }
            var found = Place(path: [], state: .unknown, anchor: nil, chain: [])
            if let inode = table.materializeItem(id), let names = resolver.path(of: inode) {
                found = Place(path: names, state: .present, anchor: inode, chain: [id])
            } else if let item = trashed[id], depth < Self.trashDepth {
                var above = item.file.parents.first.map { place(of: $0, depth: depth + 1) }
                    ?? Place(path: [], state: .unknown, anchor: nil, chain: [])
                if above.state == .unknown { above.path = [] }
                found = Place(path: above.path + [table.soleShownName(item.file)], state: .trashed, anchor: above.anchor,
                              chain: above.chain + [id])
            } else if depth < Self.trashDepth, asked < Self.trashFolderLookups,
                      let folder = try? { () throws -> DriveFile in asked += 1; return try backend.getFile(id) }(),
                      !folder.trashed, let parent = folder.parents.first {
                // A folder the mount has not listed yet (with --no-index, or before the index is
                // built): Drive is asked, up to a folder the mount knows.
                let above = place(of: parent, depth: depth + 1)
                if above.state == .present {
                    found = Place(path: above.path + [table.soleShownName(folder)], state: .present, anchor: above.anchor,
                                  chain: above.chain + [id])
                }
            }
            places[id] = found
            return found
        }
        var lines: [ExtendedAttributes.TrashLine] = []
        for item in trashed.values where item.explicitlyTrashed {
            let at = item.file.parents.first.map { place(of: $0, depth: 0) } ?? Place(path: [], state: .unknown, anchor: nil, chain: [])
            if folder != .root {
                let inside = folderID.map { at.chain.contains($0) } == true
                    || at.anchor.map { $0 == folder || table.isAncestor(folder, of: $0) } == true
                guard inside else { continue }
            }
            lines.append(ExtendedAttributes.TrashLine(
                id: item.file.id, trashedTime: item.trashedTime, size: item.file.isFolder ? nil : item.file.size,
                mimeType: item.file.mimeType, folder: at.state,
                path: (at.state == .unknown ? [] : at.path) + [table.soleShownName(item.file)]))
        }
        return lines.sorted { ($0.path.joined(separator: "/"), $0.id) < ($1.path.joined(separator: "/"), $1.id) }
    }

    // MARK: Restoring

    /// `user.drivefs.untrash` on the mount's root, set to a Drive file ID: the item leaves the
    /// trash (one files.update `trashed=false`) and the table learns it at once, as a change
    /// from the feed would tell it (`NodeTable.applyLanded`): it is shown in its folder before the
    /// next poll, under the name the folder's rules give it (docs/semantics.md, "Names": the older
    /// of two items of one name keeps it). An item whose folder is still in the trash stays in
    /// it through that folder (Drive's answer says so): it is out of the trash itself, and shows
    /// once its folder is restored.
    func untrashAttribute(_ inode: Inode, value: [UInt8], reply: Reply<Void>) {
        guard canWrite else { return reply.fail(.readOnly) }
        guard inode == .root else { return reply.fail(.invalidArgument) }
        let words = String(decoding: value, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\0" })
        guard words.count == 1 else { return reply.fail(.invalidArgument) }
        let id = String(words[0])
        onIOThread(reply, "restoring from the trash into", inode) { [self] () throws(FilesystemError) in
            _ = try untrash(id)
        }
    }

    /// Brings `id` out of the trash and shows it; Drive's answer.
    @discardableResult
    func untrash(_ id: String) throws(FilesystemError) -> DriveFile {
        sendQueuedRemovals()
        let file = try askingDrive { () throws -> DriveFile in try backend.untrash(id) }
        // A new file removed here while its create was on its way is hidden until its removal is
        // seen (`noteRemovedBeforeLanding`); brought back, it is wanted again.
        table.forgetRemovedBeforeLanding(file.id)
        invalidator.apply(table.applyLanded(file))
        Log.shared.info("trash", "\(file.id) (\(file.name)) restored from the trash"
                        + (file.trashed ? "; its folder is still in the trash" : ""))
        return file
    }

    // MARK: Emptying

    /// `user.drivefs.empty_trash` on the mount's root, set to `all` or to the count of items the
    /// user was shown and agreed to delete: Drive's trash is emptied for good (one
    /// files.emptyTrash, with `driveId` on a shared drive: one write). With a count, the trash is
    /// read again first, and a trash that holds another count now is left as it is (`EAGAIN`):
    /// what was trashed since the question was not agreed to.
    func emptyTrashAttribute(_ inode: Inode, value: [UInt8], reply: Reply<Void>) {
        guard canWrite else { return reply.fail(.readOnly) }
        guard inode == .root else { return reply.fail(.invalidArgument) }
        let text = String(decoding: value, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines.union(CharacterSet(charactersIn: "\0")))
        let agreed: Int?
        if text == "all" {
            agreed = nil
        } else if let count = Int(text), count >= 0 {
            agreed = count
        } else {
            return reply.fail(.invalidArgument)
        }
        onIOThread(reply, "emptying the trash of", inode) { [self] () throws(FilesystemError) in
            try emptyTrash(expecting: agreed)
        }
    }

    /// Empties the trash; with `expecting`, only while it holds that many items trashed themselves.
    func emptyTrash(expecting agreed: Int?) throws(FilesystemError) {
        sendQueuedRemovals()
        if let agreed {
            var count = 0
            try askingDrive { () throws in
                try backend.listTrash { page in
                    count += page.filter(\.explicitlyTrashed).count
                    return true
                }
            }
            guard count == agreed else {
                Log.shared.info("trash", "not emptied: it holds \(count) items, \(agreed) were agreed to")
                throw FilesystemError(errno: EAGAIN)
            }
        }
        try askingDrive { () throws in try backend.emptyTrash() }
        Log.shared.info("trash", "emptied" + (agreed.map { " (\($0) items deleted for good)" } ?? ""))
    }

    // MARK: The account layout's Trash/ folder

    /// What Drive's web Trash view lists (the items trashed themselves), one files.list a page.
    /// Blocking: call on a thread of the caller's that may wait on Drive.
    public func trashedItems() throws(FilesystemError) -> [DriveTrashedItem] {
        sendQueuedRemovals()
        var items: [DriveTrashedItem] = []
        try askingDrive { () throws in
            try backend.listTrash { page in
                items += page.filter(\.explicitlyTrashed)
                return true
            }
        }
        return items
    }

    /// `mv Trash/x FOLDER/NAME`: `id` leaves the trash (files.update `trashed=false`), then, unless
    /// it already was in `folder` under `name`, moves there (a second files.update); the table
    /// learns each answer at once. A name the folder already shows answers `EEXIST` before anything
    /// is asked (restoring over a file is not a restore). Blocking. Answers the item's inode now
    /// (nil when the table does not hold it: its folder not known).
    @discardableResult
    public func restoreFromTrash(_ id: String, into folder: Inode, name: String) throws(FilesystemError) -> Inode? {
        guard canWrite else { throw .readOnly }
        guard let target = table.node(folder) else { throw .stale }
        guard target.kind == .directory else { throw .notADirectory }
        // The item itself may still show there: trashed since the mount's last read of the feed.
        if case .found(let node) = table.child(of: folder, named: name, countLookup: false), node.file.id != id { throw .exists }
        var file = try untrash(id)
        let driveName = NameMapper.driveName(forShown: name)
        guard file.parents.first != target.file.id || table.soleShownName(file) != name else { return table.materializeItem(id) }
        let parent = file.parents.first
        file = try askingDrive { () throws -> DriveFile in
            try backend.move(id, addParent: target.file.id, removeParent: parent, newName: driveName)
        }
        invalidator.apply(table.applyLanded(file))
        Log.shared.info("trash", "\(file.id) (\(file.name)) restored into \(describe(folder))")
        return table.materializeItem(id)
    }

    /// `rm Trash/x`: `id` is deleted for good (files.delete), as `--delete-permanently` deletes;
    /// only an item in the trash (asked first: an ID that left the trash meanwhile is not deleted,
    /// `ENOENT`). Blocking.
    public func deleteFromTrash(_ id: String) throws(FilesystemError) {
        guard canWrite else { throw .readOnly }
        let file = try askingDrive { () throws -> DriveFile in try backend.getFile(id) }
        guard file.trashed else { throw .notFound }
        try askingDrive { () throws in try backend.delete(id) }
        Log.shared.info("trash", "\(id) (\(file.name)) deleted for good from the trash")
    }

    // MARK: Helpers

    /// The removals queued before the command (an `rm` reaches the trash after the upload delay,
    /// in case the name is made again) are sent now and waited for (bounded): what is listed,
    /// restored or emptied includes every `rm` that returned. Offline nothing is sent (the command
    /// fails at its first request).
    private func sendQueuedRemovals() {
        guard backend.reachability?.isOffline != true else { return }
        if !uploads.sendRemovalsNow(timeout: Self.removalsWait) {
            Log.shared.info("trash", "some removals are not on Drive after \(Int(Self.removalsWait)) s; the trash is read without them")
        }
    }

    /// A request of the trash's: not tried offline; a failure mapped once, Drive going away as
    /// `ENETUNREACH`.
    private func askingDrive<T>(_ body: () throws -> T) throws(FilesystemError) -> T {
        if backend.reachability?.isOffline == true { throw FilesystemError(errno: ENETUNREACH) }
        do {
            return try body()
        } catch {
            if wentOffline(error) { throw FilesystemError(errno: ENETUNREACH) }
            throw FilesystemError.from(error)
        }
    }
}
