import DriveSupport
import Foundation

extension DriveService {
    /// 15 GiB, the free tier.
    static let storageLimit: Int64 = 16_106_127_360

    func aboutGet(_ r: HTTPRequest) throws -> HTTPResponse {
        guard let fields = r.param("fields"), !fields.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw GoogleError.required("fields", message: "The 'fields' parameter is required for this method.")
        }
        let sel = try selection(r, DriveSchema.about, defaults: nil)
        let (usage, trash) = store.read { s -> (Int64, Int64) in
            var usage: Int64 = 0, trash: Int64 = 0
            // Another user's items use their owner's storage, not the user's.
            for item in s.data.items.values where item.owner == nil {
                let size = item.size ?? 0
                usage += size
                if item.trashed { trash += size }
            }
            return (usage, trash)
        }
        let body: [String: Any] = [
            "kind": "drive#about",
            "user": user.json,
            "storageQuota": ["limit": String(DriveService.storageLimit), "usage": String(usage), "usageInDrive": String(usage),
                             "usageInDriveTrash": String(trash)],
            "exportFormats": ExportFormats.targets,
            "importFormats": ExportFormats.imports,
            "maxImportSizes": [DriveMime.document: "10485760", DriveMime.spreadsheet: "104857600",
                               DriveMime.presentation: "104857600", DriveMime.drawing: "2097152"],
            "maxUploadSize": "5497558138880",
            "appInstalled": false,
            "canCreateDrives": true,
            "canCreateTeamDrives": true,
            "folderColorPalette": ["#ac725e", "#d06b64", "#f83a22", "#fa573c", "#ff7537", "#ffad46", "#42d692", "#16a765",
                                   "#7bd148", "#b3dc6c", "#fbe983", "#fad165", "#92e1c0", "#9fe1e7", "#9fc6e7", "#4986e7",
                                   "#9a9cff", "#b99aff", "#8f8f8f", "#cabdbf", "#cca6ac", "#f691b2", "#cd74e6", "#a47ae2"],
            "driveThemes": [] as [Any],
            "teamDriveThemes": [] as [Any],
        ]
        return respond(200, body, sel)
    }
}

/// What the drives hold now (`GET /__emulator/usage`): items not in the trash, roots left out.
public struct DriveUsage: Sendable, Equatable {
    public var files = 0
    public var folders = 0
    /// The sizes of the files' head revisions.
    public var bytes: Int64 = 0

    public init(files: Int = 0, folders: Int = 0, bytes: Int64 = 0) {
        self.files = files
        self.folders = folders
        self.bytes = bytes
    }

    public var json: [String: Any] { ["files": files, "folders": folders, "bytes": bytes] }
}

extension DriveService {
    /// A scan of every item under the metadata lock (milliseconds at 100,000 items; for the bench's
    /// "has everything landed" checks, which must not show in the request counters).
    public func usage() -> DriveUsage {
        store.read { s in
            var u = DriveUsage()
            for item in s.data.items.values where item.parent != nil && !item.trashed && item.owner == nil {
                if item.isFolder { u.folders += 1 } else { u.files += 1; u.bytes += item.size ?? 0 }
            }
            return u
        }
    }
}

