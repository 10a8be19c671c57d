import DriveClient
import Glibc

/// Extended attributes over the node table (ExtendedAttributes says which, and the contract):
/// answered on the kernel's thread, never from Drive, but `user.drive.revisions` and
/// `user.drive.trash` (asked by name only, read from Drive on an interactive thread). drivefs's own (`user.drivefs.*`) come from
/// `DriveFilesystem+Pins.swift`.
extension DriveFilesystem {
    public func extendedAttribute(_ inode: Inode, named name: String, reply: Reply<[UInt8]>) {
        guard let node = table.node(inode) else { return reply.fail(FilesystemError(errno: ESTALE)) }
        if name == ExtendedAttributes.revisions { return revisionsAttribute(node, reply: reply) }
        if name == ExtendedAttributes.trash { return trashAttribute(node, reply: reply) }
        reply.answer { () throws(FilesystemError) in
            if let own = try pinAttribute(inode, named: name) { return own }
            return try ExtendedAttributes.value(name, of: node.file)
        }
    }

    public func extendedAttributeNames(_ inode: Inode, reply: Reply<[String]>) {
        guard let node = table.node(inode) else { return reply.fail(FilesystemError(errno: ESTALE)) }
        reply.succeed(ExtendedAttributes.values(of: node.file).map(\.name) + pinAttributeNames(inode))
    }

    public func setExtendedAttribute(_ inode: Inode, named name: String, value: [UInt8], flags: Int32, reply: Reply<Void>) {
        guard table.node(inode) != nil else { return reply.fail(FilesystemError(errno: ESTALE)) }
        if name == ExtendedAttributes.restore { return restoreRevision(inode, value: value, reply: reply) }
        if name == ExtendedAttributes.untrash { return untrashAttribute(inode, value: value, reply: reply) }
        if name == ExtendedAttributes.emptyTrash { return emptyTrashAttribute(inode, value: value, reply: reply) }
        guard name == ExtendedAttributes.pinned else { return reply.fail(.notPermitted) }
        reply.answer { () throws(FilesystemError) in try setPinnedAttribute(inode, value: value) }
    }

    public func removeExtendedAttribute(_ inode: Inode, named name: String, reply: Reply<Void>) {
        guard table.node(inode) != nil else { return reply.fail(FilesystemError(errno: ESTALE)) }
        guard name == ExtendedAttributes.pinned else { return reply.fail(.notPermitted) }
        reply.answer { () throws(FilesystemError) in try setPinnedAttribute(inode, value: nil) }
    }
}
