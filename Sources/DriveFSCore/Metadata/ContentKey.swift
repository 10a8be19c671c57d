import DriveClient
import DriveSupport
import Foundation

/// One version of one file's content: what the block cache keys on, so bytes of two versions can
/// never mix. Blobs: the head revision (or md5, or version) and size; exported Workspace files:
/// the export format and the file's version.
public struct ContentKey: Hashable, Sendable, CustomStringConvertible {
    public let fileID: String
    public let version: String
    /// The head revision to download from (pins the bytes), when Drive gave one.
    public let revision: String?
    /// The export MIME type, for Workspace files.
    public let exportMimeType: String?

    public init(fileID: String, version: String, revision: String? = nil, exportMimeType: String? = nil) {
        self.fileID = fileID
        self.version = version
        self.revision = revision
        self.exportMimeType = exportMimeType
    }

    /// nil for folders, shortcuts, and Workspace files that are not exported.
    init?(_ file: DriveFile, exportFormats: ExportFormats) {
        if file.isFolder || file.isShortcut { return nil }
        if file.isGoogleWorkspaceDocument {
            guard let choice = exportFormats.choice(for: file.mimeType) else { return nil }
            let stamp = file.version.map(String.init) ?? file.modifiedTime.map { "t\($0)" } ?? "0"
            self.init(fileID: file.id, version: "export-\(choice.fileExtension)-\(stamp)", exportMimeType: choice.mimeType)
            return
        }
        let base = file.headRevisionId ?? file.md5Checksum ?? file.version.map { "v\($0)" } ?? "t\(file.modifiedTime ?? 0)"
        self.init(fileID: file.id, version: "\(base)-\(file.size ?? 0)", revision: file.headRevisionId)
    }

    public var description: String { "\(fileID)@\(version)" }
}
