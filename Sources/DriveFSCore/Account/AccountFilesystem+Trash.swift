import DriveClient
import DriveSupport
import Foundation
import Glibc

/// The account layout's `Trash/`: My Drive's trash as Drive's web Trash view shows it (the items
/// trashed themselves), read-only. `mv Trash/x "My Drive/…/y"` restores (untrash, then a move when
/// the place or the name differs), `rm Trash/x` (`rmdir` for a folder) deletes for good; anything
/// else answers `EACCES`. A trashed folder shows empty (what was in it comes back with it), a
/// trashed file's content is not served.
///
/// Fresh: `ls Trash` reads the trash (one files.list a page) every time it starts from the top;
/// a lookup answers from the last read, read again for a name it does not hold. Each item keeps
/// its inode number for the life of the mount (member 0, from `AccountInodes.firstTrashItem`).
extension AccountFilesystem {
    /// One trashed item as `Trash/` shows it.
    struct TrashItem: Sendable {
        var inode: Inode
        var name: String
        var file: DriveFile
        var trashedTime: Int64?
    }

    static let trashName = "Trash"

    func isTrashItem(_ inode: Inode) -> Bool {
        AccountInodes.split(inode).member == AccountInodes.synthetic && inode.rawValue >= AccountInodes.firstTrashItem
    }

    /// Reads the trash (on `work`) and hands the items, by shown name, to `then`.
    func readTrash(_ then: @escaping @Sendable (Result<[TrashItem], FilesystemError>) -> Void) {
        work.submit { [self] in
            let items: [DriveTrashedItem]
            do throws(FilesystemError) {
                items = try myDrive.trashedItems()
            } catch {
                return then(.failure(error))
            }
            let single = items.map { NameMapper.Child(id: $0.file.id, name: myDrive.table.soleShownName($0.file),
                                                       createdTime: $0.file.createdTime) }
            let shown = NameMapper.shownNames(single)
            let listed = state.withLock { s -> [TrashItem] in
                var listed: [TrashItem] = []
                for item in items {
                    let number: UInt64
                    if let known = s.trashInodes[item.file.id] {
                        number = known
                    } else {
                        number = s.nextTrashInode
                        s.nextTrashInode += 1
                        s.trashInodes[item.file.id] = number
                    }
                    listed.append(TrashItem(inode: Inode(number), name: shown[item.file.id] ?? item.file.id, file: item.file,
                                            trashedTime: item.trashedTime))
                }
                s.trash = Dictionary(listed.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
                return listed.sorted { $0.name < $1.name }
            }
            then(.success(listed))
        }
    }

    /// A restored item's inode in My Drive, for the inode `Trash/` showed it under.
    func alias(_ inode: Inode) -> Inode {
        guard isTrashItem(inode) else { return inode }
        return state.withLock { $0.restoredAliases[inode.rawValue] } ?? inode
    }

    func trashItem(_ inode: Inode) -> TrashItem? { state.withLock { s in s.trash.values.first { $0.inode == inode } } }

    func trashAttributes(_ item: TrashItem) -> FileAttributes {
        let c = configuration
        let modified = item.file.modifiedTime ?? 0
        return FileAttributes(inode: item.inode, kind: item.file.isFolder ? .directory : .regular,
                              permissions: item.file.isFolder ? 0o555 : 0o444, size: item.file.isFolder ? 4096 : UInt64(max(0, item.file.size ?? 0)),
                              linkCount: 1, userID: c.userID, groupID: c.groupID, accessedMillis: modified, modifiedMillis: modified,
                              changedMillis: item.trashedTime ?? modified)
    }

    func lookupInTrash(_ name: String, _ reply: Reply<FileAttributes>) {
        if let item = state.withLock({ $0.trash[name] }) { return reply.succeed(trashAttributes(item)) }
        readTrash { [self] result in
            switch result {
            case .failure(let error): reply.fail(error)
            case .success(let items):
                guard let item = items.first(where: { $0.name == name }) else { return reply.fail(.notFound) }
                reply.succeed(trashAttributes(item))
            }
        }
    }

    /// `mv Trash/NAME` to `newParent`/`newName`: restored into My Drive only (another drive's
    /// folder: `EXDEV`, a synthetic one: `EACCES`).
    func restoreFromTrash(_ name: String, newParent: Inode, newName: String, flags: UInt32, reply: Reply<Void>) {
        let (number, local) = AccountInodes.split(newParent)
        guard number != AccountInodes.synthetic else { return reply.fail(.accessDenied) }
        guard number == AccountInodes.myDrive else { return reply.fail(FilesystemError(errno: EXDEV)) }
        guard flags == 0 || flags == 1 else { return reply.fail(.invalidArgument) }
        guard let item = state.withLock({ $0.trash[name] }) else { return reply.fail(.notFound) }
        work.submit { [self] in
            let restored: Inode?
            do throws(FilesystemError) {
                restored = try myDrive.restoreFromTrash(item.file.id, into: local, name: newName)
            } catch {
                Log.shared.warning("trash", "cannot restore '\(name)' from the trash: \(error)")
                return reply.fail(error)
            }
            // The kernel moves its entry with the trashed item's inode: until it forgets it (told
            // below, once the rename is over), that inode stands for the restored item.
            let notifier = state.withLock { s -> (any KernelNotifier)? in
                s.trash.removeValue(forKey: name)
                if let restored { s.restoredAliases[item.inode.rawValue] = AccountInodes.global(AccountInodes.myDrive, restored) }
                return s.notifier
            }
            reply.succeed()
            notifications.submit {
                notifier?.invalidateEntry(parent: newParent, name: newName)
                notifier?.invalidateInode(item.inode)
            }
        }
    }

    /// `rm Trash/NAME`, `rmdir Trash/NAME`: deleted for good.
    func deleteFromTrash(_ name: String, folder: Bool, reply: Reply<Void>) {
        guard let item = state.withLock({ $0.trash[name] }) else { return reply.fail(.notFound) }
        if item.file.isFolder != folder { return reply.fail(folder ? .notADirectory : .isADirectory) }
        work.submit { [self] in
            do throws(FilesystemError) {
                try myDrive.deleteFromTrash(item.file.id)
            } catch {
                Log.shared.warning("trash", "cannot delete '\(name)' from the trash: \(error)")
                return reply.fail(error)
            }
            state.withLock { _ = $0.trash.removeValue(forKey: name) }
            reply.succeed()
        }
    }
}
