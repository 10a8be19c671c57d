import DriveClient

/// A folder's listing kept packed: its children's metadata as one compact byte string instead of a
/// node each. This is how the whole-drive index holds folders no one has opened (listed ahead by
/// the prefetcher, or restored from disk): about 150-250 bytes an item where a node costs 1-2 KB,
/// so a 200,000-item drive fits in tens of MiB. A packed folder becomes nodes ("materialized") the
/// first time anything asks for it by inode (NodeTable+Packed.swift).
///
/// The encoding is drivefs's own and private (a record per child, in the listing's order): field
/// presence bits, the ID and name, then each present field; a string field equal to the same field
/// of the record before is written as one byte, so the MIME types, the web link's frame, the
/// drive and the last modifier cost almost nothing when they repeat.
struct PackedListing: Sendable {
    /// Where the bytes are: an array of their own (listed in this run, or packed again), or a range
    /// of the restored index file's mapping (`MappedFile`: no copy at mount, page cache rather than
    /// heap, and pages of folders nobody opens never read again).
    private enum Storage: Sendable {
        case owned(ArraySlice<UInt8>)
        case mapped(MappedFile, Range<Int>)
    }
    private var storage: Storage

    /// The packed bytes (a mapped listing's are copied out: one folder's, as it is decoded).
    var bytes: ArraySlice<UInt8> {
        get {
            switch storage {
            case .owned(let slice): return slice
            case .mapped(let file, let range): return Array(UnsafeRawBufferPointer(rebasing: file.bytes[range]))[...]
            }
        }
        set { storage = .owned(newValue) }
    }

    /// `bytes.count`, without a copy.
    var byteCount: Int {
        switch storage {
        case .owned(let slice): return slice.count
        case .mapped(_, let range): return range.count
        }
    }

    /// Whether the bytes are a range of a mapped index file.
    var isMapped: Bool {
        if case .mapped = storage { return true }
        return false
    }

    /// A mapped listing's pages dropped from the resident set (the whole pages inside its range:
    /// `MappedFile.release`), once its bytes were decoded into nodes: a walk of a restored index
    /// touches every page, which would otherwise stay resident while the mapping lives.
    func releasePages() {
        if case .mapped(let file, let range) = storage { file.release(range) }
    }

    /// Calls `body` with the packed bytes where they are (no copy).
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        switch storage {
        case .owned(let slice): return try slice.withUnsafeBytes(body)
        case .mapped(let file, let range): return try body(UnsafeRawBufferPointer(rebasing: file.bytes[range]))
        }
    }

    var count: Int
    /// When Drive listed it (the TTL runs from here), in the table's clock.
    var listedAt: Double
    /// False when a change touched the folder while its listing was in flight (listed again when used).
    var trusted: Bool
    /// The children that are folders, by Drive ID (what prefetching lists next; what the index's
    /// walk from the root follows).
    var subfolders: [String]
    /// `PackedListing.hash` of each child's ID: where NodeTable's `packedLocation` points here.
    var idHashes: [UInt64]
    /// Inode numbers given in this run to children whose encoded entry has none, in the entries'
    /// order (0: none): a mapped listing packed back unchanged keeps its bytes in the mapping and
    /// its children's numbers here (NodeTable+Repack.swift). `entries` applies them; the index's
    /// save encodes such a listing anew with them (`IndexStore.save`).
    var inodeOverrides: [UInt64]?

    struct Entry: Sendable, Equatable {
        var file: DriveFile
        /// An exported Workspace file's size, once it was exported.
        var exportedSize: Int64?
        /// The inode number it had when the index was saved (kept across remounts, as tools that
        /// remember `st_ino` expect: git's index, backup tools' file caches); nil for items listed
        /// in this run and not yet made nodes.
        var inode: UInt64?

        init(file: DriveFile, exportedSize: Int64? = nil, inode: UInt64? = nil) {
            self.file = file
            self.exportedSize = exportedSize
            self.inode = inode
        }
    }

    init(bytes: ArraySlice<UInt8>, count: Int, listedAt: Double, trusted: Bool, subfolders: [String], idHashes: [UInt64]) {
        self.init(storage: .owned(bytes), count: count, listedAt: listedAt, trusted: trusted, subfolders: subfolders, idHashes: idHashes)
    }

    /// A listing whose bytes are `range` of `file`.
    init(mapped file: MappedFile, range: Range<Int>, count: Int, listedAt: Double, trusted: Bool, subfolders: [String],
         idHashes: [UInt64]) {
        self.init(storage: .mapped(file, range), count: count, listedAt: listedAt, trusted: trusted, subfolders: subfolders,
                  idHashes: idHashes)
    }

    private init(storage: Storage, count: Int, listedAt: Double, trusted: Bool, subfolders: [String], idHashes: [UInt64]) {
        self.storage = storage
        self.count = count
        self.listedAt = listedAt
        self.trusted = trusted
        self.subfolders = subfolders
        self.idHashes = idHashes
    }

    init(folderID: String, entries: [Entry], listedAt: Double, trusted: Bool) {
        var encoder = Encoder(folderID: folderID)
        for entry in entries { encoder.append(entry) }
        self.init(bytes: encoder.writer.bytes[...], count: entries.count, listedAt: listedAt, trusted: trusted,
                  subfolders: entries.compactMap { $0.file.isFolder && !$0.file.trashed ? $0.file.id : nil },
                  idHashes: entries.map { Self.hash($0.file.id) })
    }

    /// FNV-1a (64 bits) of an item's ID: stable from run to run, so the index file can keep it.
    static func hash(_ id: String) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in id.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return h
    }

    /// Every child; nil when the bytes are not a valid encoding (a damaged index file).
    func entries(folderID: String) -> [Entry]? {
        var decoder = Decoder(bytes: bytes, folderID: folderID)
        var out: [Entry] = []
        out.reserveCapacity(count)
        while !decoder.reader.atEnd {
            guard var entry = decoder.next() else { return nil }
            if let overrides = inodeOverrides, out.count < overrides.count, overrides[out.count] != 0 {
                entry.inode = overrides[out.count]
            }
            out.append(entry)
        }
        return out.count == count ? out : nil
    }

    // MARK: The record format

    private struct Field: OptionSet {
        let rawValue: UInt64
        static let size = Field(rawValue: 1 << 0)
        static let md5 = Field(rawValue: 1 << 1)
        static let modified = Field(rawValue: 1 << 2)
        static let created = Field(rawValue: 1 << 3)
        static let trashed = Field(rawValue: 1 << 4)
        static let version = Field(rawValue: 1 << 5)
        static let headRevision = Field(rawValue: 1 << 6)
        static let shortcut = Field(rawValue: 1 << 7)
        static let shortcutMime = Field(rawValue: 1 << 8)
        static let exportLinks = Field(rawValue: 1 << 9)
        static let capabilities = Field(rawValue: 1 << 10)
        static let driveID = Field(rawValue: 1 << 11)
        static let webLink = Field(rawValue: 1 << 12)
        /// The web link is `prefix + id + suffix` (Drive's links name the file): only the frame is kept.
        static let webLinkFramed = Field(rawValue: 1 << 13)
        static let user = Field(rawValue: 1 << 14)
        static let userName = Field(rawValue: 1 << 15)
        static let userEmail = Field(rawValue: 1 << 16)
        static let appProperties = Field(rawValue: 1 << 17)
        static let exportedSize = Field(rawValue: 1 << 18)
        /// `parents` is exactly the packed folder (nearly always): nothing more is written.
        static let parentIsFolder = Field(rawValue: 1 << 19)
        static let inode = Field(rawValue: 1 << 20)
    }

    /// String fields that repeat from record to record, each remembered separately.
    private enum Repeating: Int, CaseIterable {
        case mime, md5, headRevision, shortcutMime, driveID, linkPrefix, linkSuffix, userName, userEmail, parent
    }

    private struct Encoder {
        let folderID: String
        var writer = ByteWriter()
        var last = [String?](repeating: nil, count: Repeating.allCases.count)

        init(folderID: String) { self.folderID = folderID }

        /// 0 for "as in the record before", else the string's length + 1 and its bytes.
        mutating func repeating(_ field: Repeating, _ value: String) {
            if last[field.rawValue] == value {
                writer.varint(0)
                return
            }
            last[field.rawValue] = value
            var value = value
            value.withUTF8 { utf8 in
                writer.varint(UInt64(utf8.count) + 1)
                writer.raw(Array(utf8))
            }
        }

        mutating func append(_ entry: Entry) {
            let f = entry.file
            var fields: Field = []
            if f.size != nil { fields.insert(.size) }
            if f.md5Checksum != nil { fields.insert(.md5) }
            if f.modifiedTime != nil { fields.insert(.modified) }
            if f.createdTime != nil { fields.insert(.created) }
            if f.trashed { fields.insert(.trashed) }
            if f.version != nil { fields.insert(.version) }
            if f.headRevisionId != nil { fields.insert(.headRevision) }
            if let s = f.shortcutDetails {
                fields.insert(.shortcut)
                if s.targetMimeType != nil { fields.insert(.shortcutMime) }
            }
            if f.exportLinks != nil { fields.insert(.exportLinks) }
            if f.capabilities != nil { fields.insert(.capabilities) }
            if f.driveId != nil { fields.insert(.driveID) }
            var frame: (Substring, Substring)?
            if let link = f.webViewLink {
                fields.insert(.webLink)
                if !f.id.isEmpty, let range = link.range(of: f.id) {
                    fields.insert(.webLinkFramed)
                    frame = (link[..<range.lowerBound], link[range.upperBound...])
                }
            }
            if let u = f.lastModifyingUser {
                fields.insert(.user)
                if u.displayName != nil { fields.insert(.userName) }
                if u.emailAddress != nil { fields.insert(.userEmail) }
            }
            if f.appProperties != nil { fields.insert(.appProperties) }
            if entry.exportedSize != nil { fields.insert(.exportedSize) }
            if f.parents == [folderID] { fields.insert(.parentIsFolder) }
            if entry.inode != nil { fields.insert(.inode) }

            writer.varint(fields.rawValue)
            writer.string(f.id)
            writer.string(f.name)
            repeating(.mime, f.mimeType)
            if !fields.contains(.parentIsFolder) {
                writer.varint(UInt64(f.parents.count))
                for parent in f.parents { repeating(.parent, parent) }
            }
            if let v = f.size { writer.signed(v) }
            if let v = f.md5Checksum { repeating(.md5, v) }
            if let v = f.modifiedTime { writer.signed(v) }
            if let v = f.createdTime { writer.signed(v) }
            if let v = f.version { writer.signed(v) }
            if let v = f.headRevisionId { repeating(.headRevision, v) }
            if let s = f.shortcutDetails {
                writer.string(s.targetId)
                if let m = s.targetMimeType { repeating(.shortcutMime, m) }
            }
            if let links = f.exportLinks { map(links) }
            if let c = f.capabilities {
                var present: UInt64 = 0
                var values: UInt64 = 0
                for (bit, flag) in c.flags.enumerated() {
                    if let v = flag {
                        present |= 1 << UInt64(bit)
                        if v { values |= 1 << UInt64(bit) }
                    }
                }
                writer.varint(present)
                writer.varint(values)
            }
            if let v = f.driveId { repeating(.driveID, v) }
            if let link = f.webViewLink {
                if let frame {
                    repeating(.linkPrefix, String(frame.0))
                    repeating(.linkSuffix, String(frame.1))
                } else {
                    writer.string(link)
                }
            }
            if let u = f.lastModifyingUser {
                if let v = u.displayName { repeating(.userName, v) }
                if let v = u.emailAddress { repeating(.userEmail, v) }
            }
            if let props = f.appProperties { map(props) }
            if let v = entry.exportedSize { writer.signed(v) }
            if let v = entry.inode { writer.varint(v) }
        }

        mutating func map(_ dictionary: [String: String]) {
            writer.varint(UInt64(dictionary.count))
            for key in dictionary.keys.sorted() {
                writer.string(key)
                writer.string(dictionary[key]!)
            }
        }
    }

    private struct Decoder {
        var reader: ByteReader
        let folderID: String
        var last = [String?](repeating: nil, count: Repeating.allCases.count)

        init(bytes: ArraySlice<UInt8>, folderID: String) {
            reader = ByteReader(bytes)
            self.folderID = folderID
        }

        mutating func repeating(_ field: Repeating) -> String? {
            guard let n = reader.count(max: reader.end - reader.offset + 1) else { return nil }
            if n == 0 { return last[field.rawValue] }
            guard let raw = reader.raw(n - 1) else { return nil }
            let value = field == .mime || field == .shortcutMime ? PackedListing.interned(raw) : String(decoding: raw, as: UTF8.self)
            last[field.rawValue] = value
            return value
        }

        mutating func map() -> [String: String]? {
            guard let n = reader.count(max: reader.end - reader.offset) else { return nil }
            var out: [String: String] = [:]
            for _ in 0..<n {
                guard let k = reader.string(), let v = reader.string() else { return nil }
                out[k] = v
            }
            return out
        }

        mutating func next() -> Entry? {
            guard let bits = reader.varint(), let id = reader.string(), let name = reader.string(),
                  let mime = repeating(.mime) else { return nil }
            let fields = Field(rawValue: bits)
            var file = DriveFile(id: id, name: name, mimeType: mime)
            if fields.contains(.parentIsFolder) {
                file.parents = [folderID]
            } else {
                guard let n = reader.count(max: reader.end - reader.offset) else { return nil }
                for _ in 0..<n {
                    guard let p = repeating(.parent) else { return nil }
                    file.parents.append(p)
                }
            }
            if fields.contains(.size) { guard let v = reader.signed() else { return nil }; file.size = v }
            if fields.contains(.md5) { guard let v = repeating(.md5) else { return nil }; file.md5Checksum = v }
            if fields.contains(.modified) { guard let v = reader.signed() else { return nil }; file.modifiedTime = v }
            if fields.contains(.created) { guard let v = reader.signed() else { return nil }; file.createdTime = v }
            file.trashed = fields.contains(.trashed)
            if fields.contains(.version) { guard let v = reader.signed() else { return nil }; file.version = v }
            if fields.contains(.headRevision) { guard let v = repeating(.headRevision) else { return nil }; file.headRevisionId = v }
            if fields.contains(.shortcut) {
                guard let target = reader.string() else { return nil }
                var details = DriveFile.ShortcutDetails(targetId: target, targetMimeType: nil)
                if fields.contains(.shortcutMime) {
                    guard let m = repeating(.shortcutMime) else { return nil }
                    details.targetMimeType = m
                }
                file.shortcutDetails = details
            }
            if fields.contains(.exportLinks) { guard let m = map() else { return nil }; file.exportLinks = m }
            if fields.contains(.capabilities) {
                guard let present = reader.varint(), let values = reader.varint() else { return nil }
                file.capabilities = DriveFile.Capabilities(flags: (0..<7).map { bit -> Bool? in
                    present & (1 << UInt64(bit)) != 0 ? values & (1 << UInt64(bit)) != 0 : nil
                })
            }
            if fields.contains(.driveID) { guard let v = repeating(.driveID) else { return nil }; file.driveId = v }
            if fields.contains(.webLink) {
                if fields.contains(.webLinkFramed) {
                    guard let prefix = repeating(.linkPrefix), let suffix = repeating(.linkSuffix) else { return nil }
                    file.webViewLink = prefix + id + suffix
                } else {
                    guard let v = reader.string() else { return nil }
                    file.webViewLink = v
                }
            }
            if fields.contains(.user) {
                var user = DriveFile.User()
                if fields.contains(.userName) { guard let v = repeating(.userName) else { return nil }; user.displayName = v }
                if fields.contains(.userEmail) { guard let v = repeating(.userEmail) else { return nil }; user.emailAddress = v }
                file.lastModifyingUser = user
            }
            if fields.contains(.appProperties) { guard let m = map() else { return nil }; file.appProperties = m }
            var exportedSize: Int64?
            if fields.contains(.exportedSize) { guard let v = reader.signed() else { return nil }; exportedSize = v }
            var inode: UInt64?
            if fields.contains(.inode) { guard let v = reader.varint() else { return nil }; inode = v }
            return Entry(file: file, exportedSize: exportedSize, inode: inode)
        }
    }

    /// The MIME types of nearly every item, shared rather than allocated per node.
    private static let common: [String] = [
        DriveFile.folderMimeType, DriveFile.shortcutMimeType, "application/octet-stream", "text/plain",
        "application/vnd.google-apps.document", "application/vnd.google-apps.spreadsheet",
        "application/vnd.google-apps.presentation", "application/vnd.google-apps.drawing", "application/vnd.google-apps.form",
        "application/pdf", "image/jpeg", "image/png", "application/zip", "text/html", "application/json", "text/x-c",
    ]
    private static let commonByBytes: [[UInt8]: String] = Dictionary(uniqueKeysWithValues: common.map { (Array($0.utf8), $0) })

    static func interned(_ raw: ArraySlice<UInt8>) -> String {
        if raw.count > 15, let shared = commonByBytes[Array(raw)] { return shared }
        return String(decoding: raw, as: UTF8.self)
    }
}
