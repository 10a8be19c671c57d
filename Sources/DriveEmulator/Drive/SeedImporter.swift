import DriveSupport
import Foundation

/// Imports a local tree into My Drive on first start (`--seed DIR`). Folders become folders, files
/// become blobs with a MIME type guessed from the extension, and the local modification time becomes
/// `modifiedTime` (and `createdTime`). A local name can say what a local tree cannot:
///
/// 1. a trailing `~dupN` (N digits) is dropped, so two local entries can share one Drive name;
/// 2. a trailing `.gdoc`, `.gsheet`, `.gslides` or `.gdraw` is dropped and makes a Google Docs /
///    Sheets / Slides / Drawings file whose "document text" (what export returns) is the local content;
/// 3. `%2F` becomes `/` and `%25` becomes `%`.
///
/// Example: `Plans%2F2026.gdoc~dup1` → a Google Doc named `Plans/2026`. Entries are imported in
/// name order; symbolic links are skipped.
///
/// Shared drives: a top-level folder named `@shared` is not imported into My Drive; each folder in it
/// becomes a shared drive of that name (the same name rules apply) whose tree is the folder's
/// (`@shared/Team/notes.txt` → `notes.txt` at the root of the shared drive `Team`). Drives are
/// created in name order.
///
/// Other users and sharing: a top-level file `@sharing.json` is not imported as a file; it
/// describes items of other users shared with the emulated user, and the user's role in the
/// shared drives (read after the tree, so it may name the `@shared` drives):
///
///     {"items": [{"owner": "colleague@example.com", "name": "Plans", "mimeType": "application/vnd.google-apps.folder",
///                 "permissions": [{"type": "user", "emailAddress": "me", "role": "writer"}],
///                 "children": [{"name": "notes.txt", "content": "hello"}]}],
///      "drives": [{"name": "Team", "role": "reader"}, {"name": "Elsewhere", "role": null}]}
///
/// An item has `name`, `owner` (inherited by its `children`), optionally `mimeType`, `content`
/// (UTF-8 text) or `contentBase64`, `createdTime`/`modifiedTime`, `permissions` (Drive's shape; the
/// entry whose `emailAddress` is `me` or the user's email shares the item with the user with its
/// `role`: reader, commenter or writer) and `children` (for a folder). A drive entry names a drive
/// (made when the tree has none of that name) and the user's role in it (`null`: not a member).
struct SeedImporter {
    let service: DriveService

    static let workspaceSuffixes: [(String, String)] = [
        (".gdoc", DriveMime.document), (".gsheet", DriveMime.spreadsheet), (".gslides", DriveMime.presentation),
        (".gdraw", DriveMime.drawing),
    ]

    /// The Drive name and, for Workspace files, the Workspace MIME type of a local entry.
    static func driveName(forLocalName local: String) -> (name: String, workspaceMime: String?) {
        var name = local
        if let r = name.range(of: "~dup[0-9]+$", options: .regularExpression) { name.removeSubrange(r) }
        var mime: String?
        for (suffix, m) in workspaceSuffixes where name.count > suffix.count && name.lowercased().hasSuffix(suffix) {
            name.removeLast(suffix.count)
            mime = m
            break
        }
        name = name.replacingOccurrences(of: "%2F", with: "/").replacingOccurrences(of: "%2f", with: "/")
            .replacingOccurrences(of: "%25", with: "%")
        return (name, mime)
    }

    func importTree(at directory: URL) throws {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDir), isDir.boolValue else {
            throw DriveStore.StoreError.io("seed directory \(directory.path) does not exist")
        }
        try importChildren(of: directory, into: service.rootFolderId, topLevel: true)
        let sharing = directory.appendingPathComponent(SeedImporter.sharingFile)
        if FileManager.default.fileExists(atPath: sharing.path) { try importSharing(at: sharing) }
    }

    static let sharedDrivesFolder = "@shared"
    static let sharingFile = "@sharing.json"

    struct SeedError: Error, CustomStringConvertible {
        var description: String
    }

    /// Reads `@sharing.json` (see above).
    private func importSharing(at url: URL) throws {
        guard let doc = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any] else {
            throw SeedError(description: "\(url.path): not a JSON object")
        }
        if let extra = doc.keys.first(where: { !["items", "drives"].contains($0) }) {
            throw SeedError(description: "\(url.path): unknown key \(extra)")
        }
        for entry in doc["items"] as? [[String: Any]] ?? [] { try importForeign(entry, owner: nil, parent: nil, in: url) }
        for entry in doc["drives"] as? [[String: Any]] ?? [] {
            guard let name = entry["name"] as? String else { throw SeedError(description: "\(url.path): a drive needs a name") }
            var role: DriveRole?
            if let text = entry["role"] as? String {
                guard let r = DriveRole(rawValue: text), DriveRole.memberRoles.contains(r) else {
                    throw SeedError(description: "\(url.path): drive \(name): unknown role \(text)")
                }
                role = r
            }
            let existing = service.store.read { s in s.sharedDriveRoots.first { $0.name == name }?.id }
            let id = try existing ?? service.createSharedDrive(name: name, requestId: nil).id
            try service.setMembership(id, role: role)
        }
    }

    private func importForeign(_ entry: [String: Any], owner inherited: String?, parent: String?, in url: URL) throws {
        let known: Set<String> = ["owner", "name", "mimeType", "content", "contentBase64", "permissions", "children",
                                  "createdTime", "modifiedTime"]
        if let extra = entry.keys.first(where: { !known.contains($0) }) { throw SeedError(description: "\(url.path): unknown key \(extra)") }
        guard let name = entry["name"] as? String, let owner = (entry["owner"] as? String) ?? inherited else {
            throw SeedError(description: "\(url.path): an item needs a name and an owner")
        }
        var role: DriveRole?
        for permission in entry["permissions"] as? [[String: Any]] ?? [] {
            let email = (permission["emailAddress"] as? String)?.lowercased()
            guard email == "me" || email == service.userEmail.lowercased() else { continue }
            guard let text = permission["role"] as? String, let r = DriveRole(rawValue: text), DriveRole.fileRoles.contains(r) else {
                throw SeedError(description: "\(url.path): \(name): a permission for the user needs a role (reader, commenter, writer)")
            }
            role = r
        }
        let children = entry["children"] as? [[String: Any]] ?? []
        let mime = (entry["mimeType"] as? String) ?? (children.isEmpty ? nil : DriveMime.folder)
        var content: [UInt8]?
        if let text = entry["content"] as? String { content = Array(text.utf8) }
        if let b64 = entry["contentBase64"] as? String, let data = Data(base64Encoded: b64) { content = Array(data) }
        let item = try service.makeForeignItem(owner: owner, name: name, mimeType: mime, parent: parent, content: content, role: role,
                                               createdTime: entry["createdTime"] as? String, modifiedTime: entry["modifiedTime"] as? String)
        for child in children { try importForeign(child, owner: owner.lowercased(), parent: item.id, in: url) }
    }

    private func importSharedDrives(in directory: URL) throws {
        let fm = FileManager.default
        for local in try fm.contentsOfDirectory(atPath: directory.path).sorted() {
            let url = directory.appendingPathComponent(local)
            guard (try fm.attributesOfItem(atPath: url.path))[.type] as? FileAttributeType == .typeDirectory else { continue }
            let drive = try service.createSharedDrive(name: SeedImporter.driveName(forLocalName: local).name, requestId: nil)
            try importChildren(of: url, into: drive.id, topLevel: false)
        }
    }

    private func importChildren(of directory: URL, into parentId: String, topLevel: Bool) throws {
        let fm = FileManager.default
        for local in try fm.contentsOfDirectory(atPath: directory.path).sorted() {
            let url = directory.appendingPathComponent(local)
            let attrs = try fm.attributesOfItem(atPath: url.path)
            let type = attrs[.type] as? FileAttributeType
            if topLevel, local == SeedImporter.sharedDrivesFolder, type == .typeDirectory {
                try importSharedDrives(in: url)
                continue
            }
            if topLevel, local == SeedImporter.sharingFile, type == .typeRegular { continue }
            let mtime = (attrs[.modificationDate] as? Date).map { Int64($0.timeIntervalSince1970 * 1000) }
            var meta: [String: Any] = ["parents": [parentId]]
            if let mtime {
                meta["modifiedTime"] = RFC3339.format(millis: mtime)
                meta["createdTime"] = RFC3339.format(millis: mtime)
            }
            let (name, workspaceMime) = SeedImporter.driveName(forLocalName: local)
            meta["name"] = name
            if type == .typeDirectory {
                meta["mimeType"] = DriveMime.folder
                let folder = try service.createItem(try MetadataPatch(meta, mode: .create), content: nil, allDrives: true)
                try importChildren(of: url, into: folder.id, topLevel: false)
            } else if type == .typeRegular {
                meta["mimeType"] = workspaceMime ?? ExportFormats.mimeType(forName: name)
                let writer = try ContentWriter(path: service.store.newTempPath())
                let fd = open(url.path, O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else { writer.abandon(); throw DriveStore.StoreError.io("open \(url.path): errno \(errno)") }
                defer { close(fd) }
                var buffer = [UInt8](repeating: 0, count: 256 * 1024)
                while true {
                    let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
                    if n <= 0 { break }
                    try buffer.withUnsafeBytes { try writer.write(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                }
                let staged = StagedContent(tempPath: writer.path, summary: writer.finish(), contentType: nil)
                _ = try service.createItem(try MetadataPatch(meta, mode: .create), content: staged, allDrives: true)
            }
        }
    }
}
