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
    }

    static let sharedDrivesFolder = "@shared"

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
