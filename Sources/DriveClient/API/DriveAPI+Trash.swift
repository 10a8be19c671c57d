import DriveSupport
import Foundation

/// An item in Drive's trash as the trash listing reads it: the file (its name, type, parents,
/// size: what the mount needs to say where it was) and what Drive says of its trashing.
public struct DriveTrashedItem: Sendable, Equatable {
    public var file: DriveFile
    /// Trashed itself, not only through a trashed folder above it (`explicitlyTrashed`): what
    /// Drive's web Trash view lists.
    public var explicitlyTrashed: Bool
    /// When it was trashed (milliseconds since the epoch); Drive gives it only for items in shared
    /// drives (`trashedTime`), nil elsewhere.
    public var trashedTime: Int64?

    public init(file: DriveFile, explicitlyTrashed: Bool, trashedTime: Int64? = nil) {
        self.file = file
        self.explicitlyTrashed = explicitlyTrashed
        self.trashedTime = trashedTime
    }
}

extension DriveAPI {
    /// The per-file mask of the trash listing: only what says what an item is and where it was.
    public static let trashFieldMask = "id,name,mimeType,parents,size,createdTime,trashedTime,explicitlyTrashed"

    /// Every trashed item of this API's drive (`q=trashed = true`, 1,000 a page, only
    /// `trashFieldMask`), the children of trashed folders included (Drive marks them trashed but
    /// not explicitly; its query language cannot ask for `explicitlyTrashed`). `onPage` gets the
    /// items page by page and returns false to stop.
    public func listTrash(onPage: ([DriveTrashedItem]) throws -> Bool) throws {
        struct Item: Decodable {
            var item: DriveTrashedItem
            enum Keys: String, CodingKey { case explicitlyTrashed, trashedTime }
            init(from decoder: any Decoder) throws {
                let file = try DriveFile(from: decoder)
                let c = try decoder.container(keyedBy: Keys.self)
                let time = try c.decodeIfPresent(String.self, forKey: .trashedTime).flatMap { RFC3339.parseMillis($0) }
                item = DriveTrashedItem(file: file, explicitlyTrashed: try c.decodeIfPresent(Bool.self, forKey: .explicitlyTrashed) ?? false,
                                        trashedTime: time)
            }
        }
        struct Wire: Decodable {
            var files: [Item]?
            var nextPageToken: String?
        }
        var token: String?
        repeat {
            let url = apiURL("files", [("q", DriveQuery.trashed), ("pageSize", "1000"), ("pageToken", token)] + scope.listQuery
                             + [("fields", "nextPageToken,files(\(Self.trashFieldMask))")])
            let wire = try decode(Wire.self, try executor.execute("files.list", TransportRequest(method: "GET", url: url)), "files.list")
            guard try onPage((wire.files ?? []).map(\.item)) else { return }
            token = wire.nextPageToken.flatMap { $0.isEmpty ? nil : $0 }
        } while token != nil
    }
}
