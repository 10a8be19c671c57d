import DriveClient
import DriveSupport
import Foundation

/// The metadata index on disk (`<cache dir>/index.json`): every listed folder's children and the
/// change feed's position they are current at, so a remount lists at once and only reads the
/// changes since.
///
/// Contract: a saved index is always consistent with its `changeToken` (it is written by the
/// change poller between polls, or at unmount after the last one): replaying the feed from that
/// token brings it up to date, because each change carries the item's whole current state.
/// An index from another root, another format or other export settings is ignored.
final class IndexStore: Sendable {
    let path: String

    static let format = 1

    struct Restored: Sendable {
        var state: NodeTable.State
        var changeToken: String
    }

    private struct File: Codable {
        var format: Int
        var rootID: String
        var fingerprint: String
        var changeToken: String
        var nextInode: UInt64
        var items: [Item]
    }

    private struct Item: Codable {
        var inode: UInt64
        var file: DriveFile
        var parent: UInt64?
        var name: String
        var listed: Bool
        var exportedSize: Int64?
    }

    init(path: String) { self.path = path }

    static func fingerprint(_ configuration: DriveFSConfiguration) -> String {
        "exports=" + configuration.exportFormats.preference.joined(separator: ",")
    }

    func load(rootID: String, configuration: DriveFSConfiguration) -> Restored? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        guard let file = try? JSONDecoder().decode(File.self, from: data) else {
            Log.shared.warning("index", "ignoring the unreadable index \(path)")
            return nil
        }
        guard file.format == Self.format, file.rootID == rootID, file.fingerprint == Self.fingerprint(configuration) else {
            Log.shared.info("index", "ignoring the index \(path): made for another root, format or settings")
            return nil
        }
        var state = NodeTable.State()
        state.nextInode = file.nextInode
        // Restored listings count from now: the change feed from the saved token catches them up.
        let now = Date().timeIntervalSince1970
        var byParent: [UInt64: [String: Inode]] = [:]
        for item in file.items {
            let inode = Inode(item.inode)
            state.nodes[inode] = Node(inode: inode, file: item.file, parent: item.parent.map(Inode.init), name: item.name,
                                      listing: item.listed ? Listing(children: [:], listedAt: now, trusted: true) : nil,
                                      exportedSize: item.exportedSize)
            state.byID[item.file.id] = inode
            if let parent = item.parent { byParent[parent, default: [:]][item.name] = inode }
        }
        guard state.nodes[.root]?.file.id == rootID else { return nil }
        for (parent, children) in byParent where state.nodes[Inode(parent)]?.listing != nil {
            state.nodes[Inode(parent)]!.listing!.children = children
        }
        return Restored(state: state, changeToken: file.changeToken)
    }

    func save(_ table: NodeTable, changeToken: String) {
        let file = table.withState { s -> File in
            var items: [Item] = []
            items.reserveCapacity(s.nodes.count)
            // Files not on Drive yet are left out: the upload journal brings them back at the next
            // start, and an index must only hold what the change feed can correct.
            for node in s.nodes.values where (node.inode == .root || node.parent != nil) && node.local?.isNew != true {
                items.append(Item(inode: node.inode.rawValue, file: node.file, parent: node.parent?.rawValue, name: node.name,
                                  listed: node.listing?.trusted == true, exportedSize: node.exportedSize))
            }
            return File(format: Self.format, rootID: s.nodes[.root]!.file.id, fingerprint: Self.fingerprint(table.configuration),
                        changeToken: changeToken, nextInode: s.nextInode, items: items)
        }
        do {
            let data = try JSONEncoder().encode(file)
            try AtomicFile.write(Array(data), to: path, mode: 0o600)
        } catch {
            Log.shared.warning("index", "cannot save the index \(path): \(error)")
        }
    }
}
