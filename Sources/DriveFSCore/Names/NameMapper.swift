import DriveClient
import DriveSupport

/// Drive names → the names a folder shows on Linux (docs/semantics.md, "Names").
///
/// Drive names may contain `/`, repeat within a folder, be empty, `.` or `..`, and run past
/// Linux's 255 bytes; Linux names cannot. Every Drive child gets exactly one shown name, unique in
/// its folder, and the same file keeps the same name across listings and remounts:
///
/// 1. `/` becomes `∕` (U+2215 DIVISION SLASH); a NUL (which Drive should never hold) becomes `�`.
///    An empty name shows as `_`, and `.` / `..` as `._` / `.._`.
/// 2. An exported Google Workspace file gets its format's extension (`Report` → `Report.docx`)
///    unless its name already ends with it.
/// 3. A name longer than 255 bytes is cut at a character boundary and marked with `~` and eight
///    hex digits of the SHA-256 of the file's ID, keeping a short extension:
///    `<prefix>~1a2b3c4d.pdf`.
/// 4. Duplicates: among the children whose names (after 1–3) are equal, the one created first
///    (then the smallest ID) keeps the name; each other one gets ` (<first 8 characters of its
///    ID>)` before its extension, longer if that still collides. The suffix comes from the file
///    itself, not from its rank, so a new duplicate never renames an old one.
public enum NameMapper {
    public static let maximumNameBytes = 255

    /// What the mapper needs of a Drive child.
    public struct Child: Sendable, Equatable {
        public var id: String
        public var name: String
        public var createdTime: Int64?
        /// The extension an export adds (`docx`), nil for files shown as they are.
        public var exportExtension: String?

        public init(id: String, name: String, createdTime: Int64? = nil, exportExtension: String? = nil) {
            self.id = id
            self.name = name
            self.createdTime = createdTime
            self.exportExtension = exportExtension
        }
    }

    /// Shown names, by Drive ID, for all the children of one folder.
    public static func shownNames(_ children: [Child]) -> [String: String] {
        var base: [String: String] = [:]
        var groups: [String: [Child]] = [:]
        for child in children {
            let name = singleName(child)
            base[child.id] = name
            groups[name, default: []].append(child)
        }
        var result: [String: String] = [:]
        var taken = Set(groups.keys)
        for (name, group) in groups {
            if group.count == 1 {
                result[group[0].id] = name
                continue
            }
            let ordered = group.sorted { a, b in
                let ta = a.createdTime ?? Int64.max, tb = b.createdTime ?? Int64.max
                return ta != tb ? ta < tb : a.id < b.id
            }
            result[ordered[0].id] = name
            for child in ordered.dropFirst() {
                var length = 8
                var candidate = disambiguated(name, id: child.id, length: length)
                while taken.contains(candidate) && length < child.id.count {
                    length = min(child.id.count, length * 2)
                    candidate = disambiguated(name, id: child.id, length: length)
                }
                taken.insert(candidate)
                result[child.id] = candidate
            }
        }
        return result
    }

    /// The Drive name for a name given through the mount (a create, mkdir, symlink, mknod or
    /// rename): rule 1 undone, `∕` is written as `/`. Only that: `_`, `._`, an export extension,
    /// a shortening mark or a duplicate's suffix typed by someone are taken as they are.
    public static func driveName(forShown name: String) -> String {
        name.replacingOccurrences(of: "\u{2215}", with: "/")
    }

    /// Rules 1–3 for one child, without looking at its siblings.
    public static func singleName(_ child: Child) -> String {
        var name = child.name.replacingOccurrences(of: "/", with: "\u{2215}").replacingOccurrences(of: "\0", with: "\u{FFFD}")
        switch name {
        case "": name = "_"
        case ".": name = "._"
        case "..": name = ".._"
        default: break
        }
        if let ext = child.exportExtension, !name.lowercased().hasSuffix("." + ext.lowercased()) {
            name += "." + ext
        }
        return shortened(name, id: child.id)
    }

    /// `name` itself when it fits in 255 bytes, else cut and marked with a hash of `id`.
    static func shortened(_ name: String, id: String) -> String {
        guard name.utf8.count > maximumNameBytes else { return name }
        let (stem, ext) = split(name)
        let keep = ext.utf8.count <= 16 ? ext : ""
        let mark = "~" + String(Digest.hex(.sha256, of: Array(id.utf8)).prefix(8))
        let room = maximumNameBytes - mark.utf8.count - keep.utf8.count
        return prefix(of: keep.isEmpty ? name : stem, bytes: room) + mark + keep
    }

    /// ` (<id prefix>)` before the extension, staying within 255 bytes.
    static func disambiguated(_ name: String, id: String, length: Int) -> String {
        let (stem, ext) = split(name)
        let tag = " (" + String(id.prefix(length)) + ")"
        let room = maximumNameBytes - tag.utf8.count - ext.utf8.count
        return prefix(of: stem, bytes: room) + tag + ext
    }

    /// `report.final.txt` → (`report.final`, `.txt`); a leading dot is not an extension.
    static func split(_ name: String) -> (stem: String, ext: String) {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return (name, "") }
        let ext = String(name[dot...])
        guard ext.count > 1, ext.utf8.count <= 32, !ext.contains(" ") else { return (name, "") }
        return (String(name[..<dot]), ext)
    }

    /// The longest prefix of whole characters that fits in `bytes` UTF-8 bytes.
    static func prefix(of text: String, bytes: Int) -> String {
        guard bytes > 0 else { return "" }
        var used = 0
        var end = text.startIndex
        for index in text.indices {
            let size = text[index].utf8.count
            if used + size > bytes { break }
            used += size
            end = text.index(after: index)
        }
        return String(text[..<end])
    }
}
