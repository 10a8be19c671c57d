import DriveClient
import DriveSupport
import Foundation
import Glibc

/// The kernel's operations on the account layout: the synthetic top answered here, everything
/// else handed to the member the inode belongs to, in its own inode numbers, and its answers
/// mapped back (`AccountFilesystem`'s contracts).
extension AccountFilesystem {
    /// A reply for member `member` whose attributes come back in the account's numbers.
    func mapped(_ member: UInt64, _ reply: Reply<FileAttributes>) -> Reply<FileAttributes> {
        Reply(cancellation: reply.cancellation, caller: reply.caller) { result in
            reply.complete(result.map { AccountInodes.mapped($0, member) })
        }
    }

    /// Runs `body` with the member of `inode` and its own number for it; the synthetic top answers `synthetic`.
    func route<T>(_ inode: Inode, _ reply: Reply<T>, synthetic: FilesystemError = .accessDenied,
                  _ body: @escaping @Sendable (DriveFilesystem, UInt64, Inode) -> Void) {
        let inode = alias(inode)
        let (number, local) = AccountInodes.split(inode)
        if number == AccountInodes.synthetic { return reply.fail(isKnownSynthetic(inode) ? synthetic : .stale) }
        withMember(number, failed: { reply.fail($0) }) { member in body(member, number, local) }
    }

    /// The top folders and the items shown in `Trash/`.
    func isKnownSynthetic(_ inode: Inode) -> Bool {
        inode == .root || inode == AccountInodes.sharedDrives || inode == AccountInodes.trash || isTrashItem(inode)
    }

    /// A synthetic folder's or trashed item's attributes; nil when there is no such inode (any more).
    func syntheticAttributesIfKnown(_ inode: Inode) -> FileAttributes? {
        if inode == .root || inode == AccountInodes.sharedDrives { return syntheticAttributes(inode) }
        // Writable: the kernel lets no one rename or remove in a folder without write permission.
        if inode == AccountInodes.trash { return syntheticAttributes(inode, writable: true) }
        return trashItem(inode).map(trashAttributes)
    }

    /// A shared drive's root whose member is not open (yet).
    func notOpenedRoot(_ inode: Inode) -> Bool {
        let (number, local) = AccountInodes.split(inode)
        guard number != AccountInodes.synthetic, local == .root, case .success(nil) = openMember(number) else { return false }
        return true
    }

    /// The layout folder above member `number`'s root.
    func layoutParent(of number: UInt64) -> Inode {
        number == AccountInodes.myDrive ? .root : AccountInodes.sharedDrives
    }

    // MARK: Names

    public func lookup(parent: Inode, name: String, reply: Reply<FileAttributes>) {
        let (number, local) = AccountInodes.split(parent)
        if number == AccountInodes.synthetic { return lookupSynthetic(parent, name, reply) }
        if local == .root && name == "." { return reply.complete(rootAttributes(number)) }
        if local == .root && name == ".." { return reply.succeed(syntheticAttributes(layoutParent(of: number))) }
        withMember(number, failed: { reply.fail($0) }) { [self] member in
            member.lookup(parent: local, name: name, reply: mapped(number, reply))
        }
    }

    private func lookupSynthetic(_ parent: Inode, _ name: String, _ reply: Reply<FileAttributes>) {
        switch parent {
        case .root:
            switch name {
            case ".", "..": reply.succeed(syntheticAttributes(.root))
            case Self.myDriveName: reply.complete(rootAttributes(AccountInodes.myDrive))
            case Self.sharedDrivesName: reply.succeed(syntheticAttributes(AccountInodes.sharedDrives))
            case Self.trashName: reply.succeed(syntheticAttributes(AccountInodes.trash, writable: true))
            default: reply.fail(.notFound)
            }
        case AccountInodes.trash:
            if name == "." { return reply.succeed(syntheticAttributes(AccountInodes.trash, writable: true)) }
            if name == ".." { return reply.succeed(syntheticAttributes(.root)) }
            lookupInTrash(name, reply)
        case AccountInodes.sharedDrives:
            if name == "." { return reply.succeed(syntheticAttributes(AccountInodes.sharedDrives)) }
            if name == ".." { return reply.succeed(syntheticAttributes(.root)) }
            withCurrentDrives { [self] result in
                if case .failure(let error) = result { return reply.fail(error) }
                guard let drive = listedDrives().first(where: { $0.name == name }) else { return reply.fail(.notFound) }
                reply.complete(rootAttributes(drive.number))
            }
        default:
            guard let item = trashItem(parent) else { return reply.fail(.stale) }
            guard item.file.isFolder else { return reply.fail(.notADirectory) }
            // A trashed folder shows empty.
            if name == "." { return reply.succeed(trashAttributes(item)) }
            if name == ".." { return reply.succeed(syntheticAttributes(AccountInodes.trash, writable: true)) }
            reply.fail(.notFound)
        }
    }

    public func forget(_ inode: Inode, count: UInt64) {
        let (number, local) = AccountInodes.split(inode)
        // The synthetic folders and the members' roots are not counted (they live as long as the mount).
        guard number != AccountInodes.synthetic, local != .root, case .success(let member?) = openMember(number) else { return }
        member.forget(local, count: count)
    }

    public func attributes(of given: Inode, reply: Reply<FileAttributes>) {
        let inode = alias(given)
        let (number, local) = AccountInodes.split(inode)
        if number == AccountInodes.synthetic {
            guard let attributes = syntheticAttributesIfKnown(inode) else { return reply.fail(.stale) }
            return reply.succeed(attributes)
        }
        if local == .root { return reply.complete(rootAttributes(number)) }
        switch openMember(number) {
        case .failure(let error): reply.fail(error)
        case .success(nil): reply.fail(.stale)
        case .success(let member?):
            // A restored item asked for under the inode `Trash/` showed: answered as that inode.
            member.attributes(of: local, reply: Reply(cancellation: reply.cancellation, caller: reply.caller) { result in
                reply.complete(result.map { var a = AccountInodes.mapped($0, number); a.inode = given; return a })
            })
        }
    }

    // MARK: Directories

    public func openDirectory(_ inode: Inode, reply: Reply<UInt64>) {
        if AccountInodes.split(inode).member == AccountInodes.synthetic {
            guard let attributes = syntheticAttributesIfKnown(inode) else { return reply.fail(.stale) }
            guard attributes.kind == .directory else { return reply.fail(.notADirectory) }
            return reply.succeed(state.withLock { s in
                let handle = s.nextHandle
                s.nextHandle += 1
                s.handles[handle] = []
                return handle
            })
        }
        route(inode, reply) { member, _, local in member.openDirectory(local, reply: reply) }
    }

    public func readDirectory(_ inode: Inode, handle: UInt64, after offset: Int64, plus: Bool, into buffer: any DirectoryBuffer,
                              reply: Reply<Void>) {
        let (number, local) = AccountInodes.split(inode)
        guard number == AccountInodes.synthetic else {
            let parentOfRoot = local == .root ? layoutParent(of: number) : nil
            return route(inode, reply) { member, number, local in
                member.readDirectory(local, handle: handle, after: offset, plus: plus,
                                     into: MemberDirectoryBuffer(member: number, inner: buffer, parentOfRoot: parentOfRoot), reply: reply)
            }
        }
        guard offset >= 0 else { return reply.fail(.invalidArgument) }
        guard let snapshot = state.withLock({ $0.handles[handle] }) else { return reply.fail(.badHandle) }
        if offset > 0 && !snapshot.isEmpty { return reply.answer { emitSynthetic(snapshot, after: offset, plus: plus, into: buffer) } }
        // From the start: the entries as they are now (rewinddir sees changes).
        if inode == .root {
            let entries = [DirectoryEntry(name: ".", inode: .root, kind: .directory, nextOffset: 1),
                           DirectoryEntry(name: "..", inode: .root, kind: .directory, nextOffset: 2),
                           DirectoryEntry(name: Self.myDriveName, inode: AccountInodes.myDriveRoot, kind: .directory, nextOffset: 3),
                           DirectoryEntry(name: Self.sharedDrivesName, inode: AccountInodes.sharedDrives, kind: .directory, nextOffset: 4),
                           DirectoryEntry(name: Self.trashName, inode: AccountInodes.trash, kind: .directory, nextOffset: 5)]
            return reply.answer { keepAndEmit(entries, handle: handle, after: offset, plus: plus, into: buffer) }
        }
        if inode == AccountInodes.trash {
            return readTrash { [self] result in
                switch result {
                case .failure(let error): reply.fail(error)
                case .success(let items):
                    var entries = [DirectoryEntry(name: ".", inode: AccountInodes.trash, kind: .directory, nextOffset: 1),
                                   DirectoryEntry(name: "..", inode: .root, kind: .directory, nextOffset: 2)]
                    for item in items {
                        entries.append(DirectoryEntry(name: item.name, inode: item.inode, kind: item.file.isFolder ? .directory : .regular,
                                                      nextOffset: Int64(entries.count + 1)))
                    }
                    reply.answer { keepAndEmit(entries, handle: handle, after: offset, plus: plus, into: buffer) }
                }
            }
        }
        if isTrashItem(inode) {
            let entries = [DirectoryEntry(name: ".", inode: inode, kind: .directory, nextOffset: 1),
                           DirectoryEntry(name: "..", inode: AccountInodes.trash, kind: .directory, nextOffset: 2)]
            return reply.answer { keepAndEmit(entries, handle: handle, after: offset, plus: plus, into: buffer) }
        }
        withCurrentDrives { [self] result in
            if case .failure(let error) = result { return reply.fail(error) }
            var entries = [DirectoryEntry(name: ".", inode: AccountInodes.sharedDrives, kind: .directory, nextOffset: 1),
                           DirectoryEntry(name: "..", inode: .root, kind: .directory, nextOffset: 2)]
            for drive in listedDrives() {
                entries.append(DirectoryEntry(name: drive.name, inode: AccountInodes.global(drive.number, .root), kind: .directory,
                                              nextOffset: Int64(entries.count + 1)))
            }
            reply.answer { keepAndEmit(entries, handle: handle, after: offset, plus: plus, into: buffer) }
        }
    }

    private func keepAndEmit(_ entries: [DirectoryEntry], handle: UInt64, after offset: Int64, plus: Bool, into buffer: any DirectoryBuffer) {
        state.withLock { s in if s.handles[handle] != nil { s.handles[handle] = entries } }
        emitSynthetic(entries, after: offset, plus: plus, into: buffer)
    }

    /// The synthetic folders' entries are the top folders and the members' roots, none of which
    /// is counted: readdirplus adds their attributes and counts nothing.
    private func emitSynthetic(_ entries: [DirectoryEntry], after offset: Int64, plus: Bool, into buffer: any DirectoryBuffer) {
        for entry in entries.dropFirst(Int(min(offset, Int64(entries.count)))) {
            if !plus || DirectoryEntryPlus.isDotOrDotDot(entry.name) {
                guard buffer.add(entry, attributes: nil) else { return }
                continue
            }
            let attributes: FileAttributes
            if AccountInodes.split(entry.inode).member == AccountInodes.synthetic {
                // A trashed item restored or deleted since the snapshot is left out.
                guard let a = syntheticAttributesIfKnown(entry.inode) else { continue }
                attributes = a
            } else {
                // A drive lost since the snapshot is left out.
                guard case .success(let a) = rootAttributes(AccountInodes.split(entry.inode).member) else { continue }
                attributes = a
            }
            guard buffer.add(entry, attributes: attributes) else { return }
        }
    }

    public func releaseDirectory(_ inode: Inode, handle: UInt64) {
        let (number, local) = AccountInodes.split(inode)
        if number == AccountInodes.synthetic {
            state.withLock { _ = $0.handles.removeValue(forKey: handle) }
            return
        }
        if case .success(let member?) = openMember(number) { member.releaseDirectory(local, handle: handle) }
    }

    // MARK: Files

    public func open(_ inode: Inode, flags: Int32, reply: Reply<OpenedFile>) {
        // A trashed file's content is not served (restore it first).
        if isTrashItem(alias(inode)) { return reply.fail(.accessDenied) }
        route(inode, reply, synthetic: .isADirectory) { member, _, local in member.open(local, flags: flags, reply: reply) }
    }

    public func read(_ inode: Inode, handle: UInt64, offset: Int64, size: Int, reply: Reply<ReadData>) {
        route(inode, reply, synthetic: .isADirectory) { member, _, local in
            member.read(local, handle: handle, offset: offset, size: size, reply: reply)
        }
    }

    public func release(_ inode: Inode, handle: UInt64) {
        let (number, local) = AccountInodes.split(alias(inode))
        guard number != AccountInodes.synthetic, case .success(let member?) = openMember(number) else { return }
        member.release(local, handle: handle)
    }

    public func readLink(_ inode: Inode, reply: Reply<String>) {
        route(inode, reply, synthetic: .invalidArgument) { member, _, local in member.readLink(local, reply: reply) }
    }

    // MARK: Writes

    public func create(parent: Inode, name: String, mode: UInt32, flags: Int32, reply: Reply<CreatedFile>) {
        route(parent, reply) { member, number, local in
            member.create(parent: local, name: name, mode: mode, flags: flags, reply: Reply(cancellation: reply.cancellation,
                                                                                           caller: reply.caller) { result in
                reply.complete(result.map { CreatedFile(attributes: AccountInodes.mapped($0.attributes, number), opened: $0.opened) })
            })
        }
    }

    public func makeNode(parent: Inode, name: String, mode: UInt32, device: UInt64, reply: Reply<FileAttributes>) {
        route(parent, reply) { [self] member, number, local in
            member.makeNode(parent: local, name: name, mode: mode, device: device, reply: mapped(number, reply))
        }
    }

    public func makeDirectory(parent: Inode, name: String, mode: UInt32, reply: Reply<FileAttributes>) {
        route(parent, reply) { [self] member, number, local in
            member.makeDirectory(parent: local, name: name, mode: mode, reply: mapped(number, reply))
        }
    }

    public func symbolicLink(parent: Inode, name: String, target: String, reply: Reply<FileAttributes>) {
        route(parent, reply) { [self] member, number, local in
            member.symbolicLink(parent: local, name: name, target: target, reply: mapped(number, reply))
        }
    }

    public func link(_ inode: Inode, newParent: Inode, newName: String, reply: Reply<FileAttributes>) {
        let (from, local) = AccountInodes.split(inode)
        let to = AccountInodes.split(newParent).member
        if to != AccountInodes.synthetic && from != to { return reply.fail(FilesystemError(errno: EXDEV)) }
        route(newParent, reply) { [self] member, number, localParent in
            member.link(local, newParent: localParent, newName: newName, reply: mapped(number, reply))
        }
    }

    public func removeFile(parent: Inode, name: String, reply: Reply<Void>) {
        if parent == AccountInodes.trash { return deleteFromTrash(name, folder: false, reply: reply) }
        route(parent, reply) { member, _, local in member.removeFile(parent: local, name: name, reply: reply) }
    }

    public func removeDirectory(parent: Inode, name: String, reply: Reply<Void>) {
        if parent == AccountInodes.trash { return deleteFromTrash(name, folder: true, reply: reply) }
        route(parent, reply) { member, _, local in member.removeDirectory(parent: local, name: name, reply: reply) }
    }

    public func rename(parent: Inode, name: String, newParent: Inode, newName: String, flags: UInt32, reply: Reply<Void>) {
        if parent == AccountInodes.trash {
            return restoreFromTrash(name, newParent: newParent, newName: newName, flags: flags, reply: reply)
        }
        let from = AccountInodes.split(parent).member
        let (to, localNewParent) = AccountInodes.split(newParent)
        if from != AccountInodes.synthetic && to != AccountInodes.synthetic && from != to {
            return reply.fail(FilesystemError(errno: EXDEV))
        }
        if to == AccountInodes.synthetic { return reply.fail(.accessDenied) }
        route(parent, reply) { member, _, local in
            member.rename(parent: local, name: name, newParent: localNewParent, newName: newName, flags: flags, reply: reply)
        }
    }

    public func setAttributes(_ inode: Inode, _ changes: AttributeChanges, handle: UInt64?, reply: Reply<FileAttributes>) {
        route(inode, reply, synthetic: .notPermitted) { [self] member, number, local in
            member.setAttributes(local, changes, handle: handle, reply: mapped(number, reply))
        }
    }

    public func write(_ inode: Inode, handle: UInt64, offset: Int64, data: [UInt8], reply: Reply<Int>) {
        route(inode, reply, synthetic: .badHandle) { member, _, local in
            member.write(local, handle: handle, offset: offset, data: data, reply: reply)
        }
    }

    public func flush(_ inode: Inode, handle: UInt64, reply: Reply<Void>) {
        route(inode, reply, synthetic: .badHandle) { member, _, local in member.flush(local, handle: handle, reply: reply) }
    }

    public func synchronize(_ inode: Inode, handle: UInt64, dataOnly: Bool, reply: Reply<Void>) {
        route(inode, reply, synthetic: .badHandle) { member, _, local in
            member.synchronize(local, handle: handle, dataOnly: dataOnly, reply: reply)
        }
    }

    public func synchronizeDirectory(_ inode: Inode, handle: UInt64, reply: Reply<Void>) {
        if AccountInodes.split(inode).member == AccountInodes.synthetic { return reply.succeed() }
        route(inode, reply) { member, _, local in member.synchronizeDirectory(local, handle: handle, reply: reply) }
    }

    /// The account's: My Drive's numbers (the user's storage quota covers it; shared drives have their own).
    public func statistics(reply: Reply<FilesystemStatistics>) { myDrive.statistics(reply: reply) }

    // MARK: Extended attributes

    public func extendedAttribute(_ inode: Inode, named name: String, reply: Reply<[UInt8]>) {
        // `ls -l` asks every entry for its ACL: a drive not opened yet has none, and is not opened for it.
        if notOpenedRoot(inode) { return reply.fail(.noAttribute) }
        route(inode, reply, synthetic: .noAttribute) { member, _, local in member.extendedAttribute(local, named: name, reply: reply) }
    }

    public func extendedAttributeNames(_ inode: Inode, reply: Reply<[String]>) {
        if AccountInodes.split(inode).member == AccountInodes.synthetic || notOpenedRoot(inode) { return reply.succeed([]) }
        route(inode, reply) { member, _, local in member.extendedAttributeNames(local, reply: reply) }
    }

    public func setExtendedAttribute(_ inode: Inode, named name: String, value: [UInt8], flags: Int32, reply: Reply<Void>) {
        route(inode, reply, synthetic: .notPermitted) { member, _, local in
            member.setExtendedAttribute(local, named: name, value: value, flags: flags, reply: reply)
        }
    }

    public func removeExtendedAttribute(_ inode: Inode, named name: String, reply: Reply<Void>) {
        route(inode, reply, synthetic: .notPermitted) { member, _, local in
            member.removeExtendedAttribute(local, named: name, reply: reply)
        }
    }
}
