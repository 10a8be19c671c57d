import DriveSupport
import Glibc

/// A fixed, read-only, in-memory tree served through `FilesystemOperations`: what the smoke mount
/// serves, and a second implementation that keeps the protocol honest. Nothing here waits, so
/// every reply is sent before the call returns; the synchronous methods are the same operations
/// for tests.
///
/// The nodes never change; only lookup counts and open handles do, behind one lock (`state`; no
/// other lock is taken while it is held). Inodes are numbered from `Inode.root` in path order.
public final class StaticTree: FilesystemOperations {
    /// A node of the tree, given by its absolute path (`/docs/readme.md`). Parent directories are
    /// created as needed.
    public enum Entry: Sendable {
        case file(String, [UInt8])
        case directory(String)
    }

    struct Node: Sendable {
        let inode: Inode
        let parent: Inode
        let name: String
        let kind: FileKind
        let permissions: UInt32
        let content: [UInt8]
        /// Children in listing order (byte order of their names).
        var children: [(name: String, inode: Inode)]
    }

    private struct State {
        /// INVARIANT: no entry is zero (a count that reaches zero is removed).
        var lookupCounts: [Inode: UInt64] = [:]
        var openFiles: [UInt64: Inode] = [:]
        var openDirectories: [UInt64: Inode] = [:]
        var nextHandle: UInt64 = 1
    }

    private let nodes: [Inode: Node]
    private let userID: UInt32
    private let groupID: UInt32
    private let modifiedMillis: Int64
    private let state = Locked(State())

    public let entryTimeout: Double = 1
    public let attributeTimeout: Double = 1

    /// - Parameter modifiedMillis: the time every node shows as modified, changed and accessed.
    public init(entries: [Entry], userID: UInt32, groupID: UInt32, modifiedMillis: Int64) {
        var nodes: [Inode: Node] = [:]
        var byPath: [String: Inode] = ["/": .root]
        nodes[.root] = Node(inode: .root, parent: .root, name: "/", kind: .directory, permissions: 0o555, content: [], children: [])
        var next: UInt64 = Inode.root.rawValue + 1

        func ensureDirectory(_ components: ArraySlice<Substring>) -> Inode {
            var current = Inode.root
            var path = ""
            for component in components {
                path += "/" + component
                if let existing = byPath[path] { current = existing; continue }
                let inode = Inode(next); next += 1
                nodes[inode] = Node(inode: inode, parent: current, name: String(component), kind: .directory,
                                    permissions: 0o555, content: [], children: [])
                nodes[current]!.children.append((String(component), inode))
                byPath[path] = inode
                current = inode
            }
            return current
        }

        for entry in entries {
            switch entry {
            case .directory(let path):
                _ = ensureDirectory(path.split(separator: "/")[...])
            case .file(let path, let content):
                let components = path.split(separator: "/")
                precondition(!components.isEmpty && byPath[path] == nil, "bad or duplicate path \(path)")
                let parent = ensureDirectory(components.dropLast())
                let inode = Inode(next); next += 1
                nodes[inode] = Node(inode: inode, parent: parent, name: String(components.last!), kind: .regular,
                                    permissions: 0o444, content: content, children: [])
                nodes[parent]!.children.append((String(components.last!), inode))
                byPath[path] = inode
            }
        }
        for inode in nodes.keys {
            nodes[inode]!.children.sort { Array($0.name.utf8).lexicographicallyPrecedes(Array($1.name.utf8)) }
        }
        self.nodes = nodes
        self.userID = userID
        self.groupID = groupID
        self.modifiedMillis = modifiedMillis
    }

    // MARK: Introspection (tests, debugging)

    public func lookupCount(of inode: Inode) -> UInt64 { state.withLock { $0.lookupCounts[inode] ?? 0 } }
    public var openHandleCount: Int { state.withLock { $0.openFiles.count + $0.openDirectories.count } }

    // MARK: FilesystemOperations (asynchronous form: every reply is sent at once)

    public func lookup(parent: Inode, name: String, reply: Reply<FileAttributes>) {
        reply.answer { () throws(FilesystemError) in try lookup(parent: parent, name: name) }
    }

    public func attributes(of inode: Inode, reply: Reply<FileAttributes>) {
        reply.answer { () throws(FilesystemError) in try attributes(of: inode) }
    }

    public func openDirectory(_ inode: Inode, reply: Reply<UInt64>) {
        reply.answer { () throws(FilesystemError) in try openDirectory(inode) }
    }

    public func readDirectory(_ inode: Inode, handle: UInt64, after offset: Int64, plus: Bool,
                              into buffer: any DirectoryBuffer, reply: Reply<Void>) {
        do throws(FilesystemError) {
            for entry in try readDirectory(inode, handle: handle, after: offset) {
                if plus && !DirectoryEntryPlus.isDotOrDotDot(entry.name) {
                    let attributes = try self.attributes(of: entry.inode)
                    guard buffer.add(entry, attributes: attributes) else { break }
                    state.withLock { $0.lookupCounts[entry.inode, default: 0] += 1 }
                } else {
                    guard buffer.add(entry, attributes: nil) else { break }
                }
            }
            reply.succeed()
        } catch {
            reply.fail(error)
        }
    }

    public func open(_ inode: Inode, flags: Int32, reply: Reply<OpenedFile>) {
        reply.answer { () throws(FilesystemError) in try open(inode, flags: flags) }
    }

    public func read(_ inode: Inode, handle: UInt64, offset: Int64, size: Int, reply: Reply<ReadData>) {
        reply.answer { () throws(FilesystemError) in .bytes(try read(inode, handle: handle, offset: offset, size: size)) }
    }

    public func statistics(reply: Reply<FilesystemStatistics>) { reply.succeed(statistics()) }

    // MARK: The same operations, synchronously

    public func lookup(parent: Inode, name: String) throws(FilesystemError) -> FileAttributes {
        let directory = try node(parent)
        guard directory.kind == .directory else { throw .notADirectory }
        if name.utf8.count > 255 { throw .nameTooLong }
        let target: Inode
        switch name {
        case ".": target = directory.inode
        case "..": target = directory.parent
        default:
            guard let child = directory.children.first(where: { $0.name == name }) else { throw .notFound }
            target = child.inode
        }
        let attributes = try self.attributes(of: target)
        state.withLock { $0.lookupCounts[target, default: 0] += 1 }
        return attributes
    }

    public func forget(_ inode: Inode, count: UInt64) {
        state.withLock { state in
            let current = state.lookupCounts[inode] ?? 0
            // The kernel never forgets more than it looked up; if it seems to, keep the count sane.
            let remaining = current > count ? current - count : 0
            state.lookupCounts[inode] = remaining == 0 ? nil : remaining
        }
    }

    public func forgetAll() { state.withLock { $0.lookupCounts.removeAll() } }

    public func attributes(of inode: Inode) throws(FilesystemError) -> FileAttributes {
        let node = try node(inode)
        let subdirectories = node.children.filter { nodes[$0.inode]?.kind == .directory }.count
        return FileAttributes(
            inode: node.inode, kind: node.kind, permissions: node.permissions, size: UInt64(node.content.count),
            linkCount: node.kind == .directory ? UInt32(2 + subdirectories) : 1,
            userID: userID, groupID: groupID,
            accessedMillis: modifiedMillis, modifiedMillis: modifiedMillis, changedMillis: modifiedMillis)
    }

    public func openDirectory(_ inode: Inode) throws(FilesystemError) -> UInt64 {
        guard try node(inode).kind == .directory else { throw .notADirectory }
        return state.withLock { state in
            let handle = state.nextHandle
            state.nextHandle += 1
            state.openDirectories[handle] = inode
            return handle
        }
    }

    public func readDirectory(_ inode: Inode, handle: UInt64, after offset: Int64) throws(FilesystemError) -> [DirectoryEntry] {
        guard state.withLock({ $0.openDirectories[handle] }) == inode else { throw .badHandle }
        guard offset >= 0 else { throw .invalidArgument }
        let directory = try node(inode)
        var listing = [
            (name: ".", inode: directory.inode),
            (name: "..", inode: directory.parent),
        ]
        listing += directory.children
        guard offset < Int64(listing.count) else { return [] }
        return listing.indices.dropFirst(Int(offset)).map { index in
            let entry = listing[index]
            return DirectoryEntry(name: entry.name, inode: entry.inode, kind: nodes[entry.inode]!.kind,
                                  nextOffset: Int64(index + 1))
        }
    }

    public func releaseDirectory(_ inode: Inode, handle: UInt64) {
        state.withLock { _ = $0.openDirectories.removeValue(forKey: handle) }
    }

    public func open(_ inode: Inode, flags: Int32) throws(FilesystemError) -> OpenedFile {
        let node = try node(inode)
        guard node.kind == .regular else { throw .isADirectory }
        if flags & O_ACCMODE != O_RDONLY || flags & O_TRUNC != 0 { throw .readOnly }
        let handle = state.withLock { state in
            let handle = state.nextHandle
            state.nextHandle += 1
            state.openFiles[handle] = inode
            return handle
        }
        return OpenedFile(handle: handle, keepCache: true)
    }

    public func read(_ inode: Inode, handle: UInt64, offset: Int64, size: Int) throws(FilesystemError) -> [UInt8] {
        guard state.withLock({ $0.openFiles[handle] }) == inode else { throw .badHandle }
        guard offset >= 0, size >= 0 else { throw .invalidArgument }
        let content = try node(inode).content
        guard offset < Int64(content.count) else { return [] }
        let start = Int(offset)
        return Array(content[start..<min(content.count, start + size)])
    }

    public func release(_ inode: Inode, handle: UInt64) {
        state.withLock { _ = $0.openFiles.removeValue(forKey: handle) }
    }

    public func statistics() -> FilesystemStatistics {
        let bytes = nodes.values.reduce(UInt64(0)) { $0 + UInt64($1.content.count) }
        let blockSize: UInt64 = 4096
        return FilesystemStatistics(blockSize: blockSize, totalBlocks: (bytes + blockSize - 1) / blockSize, freeBlocks: 0,
                                    totalFiles: UInt64(nodes.count), freeFiles: 0, maximumNameLength: 255)
    }

    private func node(_ inode: Inode) throws(FilesystemError) -> Node {
        guard let node = nodes[inode] else { throw .notFound }
        return node
    }
}
