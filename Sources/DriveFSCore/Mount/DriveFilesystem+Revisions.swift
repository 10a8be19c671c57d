import DriveClient
import DriveSupport
import Foundation
import Glibc

/// Revisions (docs/semantics.md, "Revisions"): `user.drive.revisions` lists a file's revisions
/// on Drive; `user.drivefs.restore` brings one back as a file's content. Both read Drive on an
/// interactive thread (the only extended attributes that do).
extension DriveFilesystem {
    /// `user.drive.revisions`: the file's revisions on Drive (one revisions.list), a line each,
    /// oldest first (`ExtendedAttributes.revisionLines`). A file with no revision on Drive (a
    /// folder, a shortcut, a file not uploaded yet) has none: ENODATA.
    func revisionsAttribute(_ node: Node, reply: Reply<[UInt8]>) {
        guard node.kind == .regular, node.local?.isNew != true, node.file.shortcutDetails == nil else {
            return reply.fail(.noAttribute)
        }
        let fileID = node.file.id
        // Drive keeps a Doc's revisions by its own rules (`keepForever` is for binary files only).
        let document = node.file.isGoogleWorkspaceDocument
        onIOThread(reply, "listing the revisions of", node.inode) { [backend] () throws(FilesystemError) -> [UInt8] in
            let revisions: [DriveRevision]
            do { revisions = try backend.listRevisions(fileID) } catch { throw FilesystemError.from(error) }
            guard !revisions.isEmpty else { throw .noAttribute }
            return Array(ExtendedAttributes.revisionLines(revisions, keepsForever: !document).utf8)
        }
    }

    /// `setfattr -n user.drivefs.restore -v "[FILE_ID ]REVISION_ID" FILE`: FILE's content becomes
    /// that revision of FILE_ID (FILE's own when it is left out), as a write of the whole file
    /// would make it: kept here at once (durable when this answers), a new revision on Drive once
    /// its upload lands, the revision restored left as it was. Refused (`EBUSY`) while FILE is open
    /// for writing.
    ///
    /// Google Docs (Docs, Sheets, Slides, Drawings): a revision has no bytes of its own, but Drive
    /// exports it (`DriveBackend.exportRevision`, through the revision's `exportLinks`). A Doc's
    /// revision restored into another file (FILE_ID a Doc's, FILE a regular file) is that export,
    /// in the format the mount shows the Doc in (`--export-formats`). FILE itself a Doc is refused
    /// (`EOPNOTSUPP`): Drive's API cannot make an old revision of a Doc its current one (there is no
    /// upload of a Doc's own content; only the Docs editors' version history can), and uploading
    /// the export over it would convert it back through an import, losing what the format does not
    /// carry.
    func restoreRevision(_ inode: Inode, value: [UInt8], reply: Reply<Void>) {
        let words = String(decoding: value, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\0" })
        guard let node = table.node(inode) else { return reply.fail(.stale) }
        guard (1...2).contains(words.count) else { return reply.fail(.invalidArgument) }
        let sourceID = words.count == 2 ? String(words[0]) : node.file.id
        let revision = String(words[words.count - 1])
        onIOThread(reply, "restoring a revision into", inode) { [self] () throws(FilesystemError) in
            guard let node = table.node(inode) else { throw .stale }
            try requireEditable(node)
            guard node.kind == .regular else { throw node.kind == .directory ? .isADirectory : .invalidArgument }
            if node.file.isGoogleWorkspaceDocument { throw FilesystemError(errno: EOPNOTSUPP) }
            // The source's kind from the table (FILE_ID is a file of this mount when the CLI names it).
            let source = sourceID == node.file.id ? node.file : table.node(forID: sourceID)?.file
            var export: String?
            if let source, source.isGoogleWorkspaceDocument {
                guard let choice = configuration.exportFormats.choice(for: source.mimeType) else { throw FilesystemError(errno: EOPNOTSUPP) }
                export = choice.mimeType
            }
            // Drive's bytes first, into a file of their own (nothing of the copy is held meanwhile).
            let downloaded = newStagingPath(for: node.file.id) + ".revision"
            let fd: Int32
            do throws(SystemCallError) { fd = try SystemCall.open(downloaded, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o600) } catch {
                throw FilesystemError(local: error.errno)
            }
            defer {
                Glibc.close(fd)
                unlink(downloaded)
            }
            let size: Int64
            do {
                if let export {
                    let bytes = try backend.exportRevision(sourceID, revision: revision, mimeType: export)
                    do throws(SystemCallError) { try SystemCall.writeAll(fd, bytes, at: 0) } catch { throw FilesystemError(local: error.errno) }
                    size = Int64(bytes.count)
                } else {
                    size = try backend.download(sourceID, revision: revision, offset: 0, length: nil, to: .fileDescriptor(fd, offset: 0))
                }
            } catch let error as FilesystemError {
                throw error
            } catch {
                throw FilesystemError.from(error)
            }
            if size > configuration.maximumFileSize { throw .fileTooLarge }
            var restored: LocalContent?
            let done = try withLocalContent(inode, create: true) { content throws(FilesystemError) -> Bool in
                guard content.writers == 0 else { throw FilesystemError(errno: EBUSY) }
                try content.makeWritable(reclaim: { uploads.reclaim(node.file.id)?.contentPath },
                                         newPath: { newStagingPath(for: node.file.id) })
                try content.truncate(to: 0)
                var at: Int64 = 0
                var buffer = [UInt8](repeating: 0, count: 1 << 20)
                while at < size {
                    let read = buffer.withUnsafeMutableBytes { b in Result { () throws(SystemCallError) in try SystemCall.readFully(fd, into: b, at: at) } }
                    let n: Int
                    switch read {
                    case .success(let count): n = count
                    case .failure(let error): throw FilesystemError(local: error.errno)
                    }
                    guard n > 0 else { throw .ioError }
                    try content.write(offset: at, data: Array(buffer.prefix(n)))  // past the end of an empty copy: nothing to fetch
                    at += Int64(n)
                }
                noteLocal(inode, size: content.size)
                restored = content
                return true
            }
            guard done != nil, let restored else { throw .ioError }
            try commit(inode, restored, ready: true, cancellation: reply.cancellation, when: { $0.writers == 0 })
            closeLocal(inode, restored)
            // The kernel's pages of the file are of the old content.
            invalidator.apply(Invalidations(inodes: [inode]))
            Log.shared.info("write", "\(describe(inode)): revision \(revision) of \(sourceID) restored (\(size) bytes"
                            + (export.map { ", exported as \($0))" } ?? ")"))
        }
    }
}
