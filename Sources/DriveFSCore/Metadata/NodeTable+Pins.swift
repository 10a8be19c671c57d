import DriveClient

/// What the pins (`PinSet`, `PinKeeper`) need of the table: an item found by its Drive ID even when
/// only a packed listing holds it, and the rule that applies to a node.
extension NodeTable {
    /// The node of the item `id`, materializing the packed folders between it and the nearest
    /// node (a restored index holds most folders packed); nil when no listing held names it.
    func materializeItem(_ id: String) -> Inode? {
        withState { s in
            if let inode = s.byID[id] { return inode }
            // Up through the packed folders until one that is a node.
            var chain: [String] = []
            var current = id
            while s.byID[current] == nil {
                guard chain.count < 256, let folder = Self.packedHolder(of: current, s) else { return nil }
                chain.append(folder)
                current = folder
            }
            // Down again: each folder's listing becomes nodes, which makes the next one a node.
            for folder in chain.reversed() {
                guard let inode = s.byID[folder] else { return nil }
                materialize(inode, &s)
            }
            return s.byID[id]
        }
    }

    /// The packed folder whose listing holds `id` (checked, so a hash collision cannot mislead).
    private static func packedHolder(of id: String, _ s: State) -> String? {
        let h = PackedListing.hash(id)
        func holds(_ folder: String) -> Bool {
            s.packed[folder]?.entries(folderID: folder)?.contains(where: { $0.file.id == id }) == true
        }
        if let folder = s.packedLocation[h], holds(folder) { return folder }
        // Another ID with the same hash: every folder that holds the hash.
        return s.packed.first(where: { $0.value.idHashes.contains(h) && holds($0.key) })?.key
    }

    /// The rule that applies to `inode`: its own, else its nearest ancestor's (`PinSet`'s
    /// contract), with the ID of the item whose rule it is; nil when none applies.
    func pinRule(of inode: Inode, rules: [String: Bool]) -> (pinned: Bool, from: String)? {
        guard !rules.isEmpty else { return nil }
        return withState { s in
            var current: Inode? = inode
            var steps = 0
            while let at = current, let node = s.nodes[at], steps < 4096 {
                if let rule = rules[node.file.id] { return (rule, node.file.id) }
                current = at == .root ? nil : node.parent
                steps += 1
            }
            return nil
        }
    }
}
