import DriveClient
import DriveSupport
import Foundation

/// Where a shortcut points, as a relative path inside the mount (so the link works wherever the
/// Drive is mounted). A target outside the mounted tree, trashed or deleted gives a path that does
/// not exist: the link dangles, as a symbolic link to a removed file does.
struct ShortcutResolver {
    let backend: any DriveBackend
    let table: NodeTable
    let lister: FolderLister

    /// Folders walked up from a target before giving up (Drive trees are not that deep).
    static let maximumDepth = 256

    func relativeTarget(of link: Node, targetID: String, cancellation: CancellationFlag?) throws(FilesystemError) -> String {
        guard let linkFolder = link.parent, let from = path(of: linkFolder) else { throw FilesystemError(errno: ESTALE) }
        let up = String(repeating: "../", count: from.count)
        guard let to = try targetPath(targetID, cancellation: cancellation) else {
            return up + ".drivefs-shortcut-target-not-found/" + targetID
        }
        var common = 0
        while common < from.count, common < to.count - 1, from[common] == to[common] { common += 1 }
        let climbs = String(repeating: "../", count: from.count - common)
        let rest = to[common...].joined(separator: "/")
        return climbs.isEmpty && rest.isEmpty ? "." : climbs + rest
    }

    /// Shown names from the root down to `inode` (empty for the root); nil when it is not reachable.
    func path(of inode: Inode) -> [String]? {
        var names: [String] = []
        var current = inode
        for _ in 0..<Self.maximumDepth {
            if current == .root { return names.reversed() }
            guard let node = table.node(current), let parent = node.parent else { return nil }
            names.append(node.name)
            current = parent
        }
        return nil
    }

    /// The target's path, listing the folders on the way down when they are not listed yet.
    private func targetPath(_ id: String, cancellation: CancellationFlag?) throws(FilesystemError) -> [String]? {
        if let inode = table.inode(forID: id), let known = path(of: inode) { return known }
        // Walk up with files.get until a folder we know, then list down from it.
        var chain: [String] = [id]
        var current = id
        for _ in 0..<Self.maximumDepth {
            let file: DriveFile
            do {
                file = try backend.getFile(current)
            } catch let error as DriveError {
                if case .notFound = error { return nil }
                throw FilesystemError(error)
            } catch {
                throw .ioError
            }
            if file.trashed { return nil }
            guard let parent = file.parents.first else { return nil }
            if let known = table.inode(forID: parent), path(of: known) != nil {
                var folder = known
                for childID in chain.reversed() {
                    try lister.ensureListed(folder, cancellation: cancellation)
                    guard let child = table.inode(forID: childID), table.node(child)?.parent == folder else { return nil }
                    folder = child
                }
                return path(of: folder)
            }
            chain.append(parent)
            current = parent
        }
        return nil
    }
}
