import DriveClient
import Glibc

/// Extended attributes over the node table (ExtendedAttributes says which, and the contract):
/// answered on the kernel's thread, never from Drive, but `user.drive.revisions` (asked by name
/// only, read from Drive on an interactive thread). drivefs's own (`user.drivefs.*`) come from
/// `DriveFilesystem+Pins.swift`.
extension DriveFilesystem {
    public func extendedAttribute(_ inode: Inode, named name: String, reply: Reply<[UInt8]>) {
        guard let node = table.node(inode) else { return reply.fail(FilesystemError(errno: ESTALE)) }
        if name == ExtendedAttributes.revisions { return revisionsAttribute(node, reply: reply) }
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
        guard name == ExtendedAttributes.pinned else { return reply.fail(.notPermitted) }
        reply.answer { () throws(FilesystemError) in try setPinnedAttribute(inode, value: value) }
    }

    public func removeExtendedAttribute(_ inode: Inode, named name: String, reply: Reply<Void>) {
        guard table.node(inode) != nil else { return reply.fail(FilesystemError(errno: ESTALE)) }
        guard name == ExtendedAttributes.pinned else { return reply.fail(.notPermitted) }
        reply.answer { () throws(FilesystemError) in try setPinnedAttribute(inode, value: nil) }
    }

    /// `user.drive.revisions`: the file's revisions on Drive (one revisions.list), a line each,
    /// oldest first (`ExtendedAttributes.revisionLines`). A file with no revision on Drive (a
    /// folder, a shortcut, a file not uploaded yet) has none: ENODATA.
    private func revisionsAttribute(_ node: Node, reply: Reply<[UInt8]>) {
        guard node.kind == .regular, node.local?.isNew != true, node.file.shortcutDetails == nil else {
            return reply.fail(.noAttribute)
        }
        let fileID = node.file.id
        onIOThread(reply, "listing the revisions of", node.inode) { [backend] () throws(FilesystemError) -> [UInt8] in
            let revisions: [DriveRevision]
            do { revisions = try backend.listRevisions(fileID) } catch { throw FilesystemError.from(error) }
            guard !revisions.isEmpty else { throw .noAttribute }
            return Array(ExtendedAttributes.revisionLines(revisions).utf8)
        }
    }
}
