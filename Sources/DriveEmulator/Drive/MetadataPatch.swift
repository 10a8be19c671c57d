import DriveSupport
import Foundation

/// The writable part of a File resource in a create / update / copy body, validated.
/// Read-only fields in a body → 403 fieldNotWritable; `parents` on update → Google's specific 403.
/// Members the File schema does not know are ignored.
struct MetadataPatch {
    enum Mode { case create, update, copy }

    var id: String?
    var name: String?
    var mimeType: String?
    var parents: [String]?
    /// `.some(nil)` clears the description.
    var description: String??
    var starred: Bool?
    var trashed: Bool?
    var createdTime: Int64?
    var modifiedTime: Int64?
    var viewedByMeTime: Int64?
    /// A nil value removes the key (update semantics).
    var properties: [String: String?]?
    var appProperties: [String: String?]?
    var shortcutTargetId: String?
    var originalFilename: String?
    var folderColorRgb: String?

    /// Whether the patch edits the item (anything but the user's own `starred`, `viewedByMeTime`
    /// and the trash, which have rules of their own): a writer's right.
    var editsItem: Bool {
        name != nil || mimeType != nil || description != nil || modifiedTime != nil || properties != nil
            || appProperties != nil || originalFilename != nil || folderColorRgb != nil
    }

    /// Writable on create; every other File member is read-only.
    static let writableOnCreate: Set<String> = [
        "id", "name", "mimeType", "parents", "description", "starred", "trashed", "createdTime", "modifiedTime",
        "viewedByMeTime", "properties", "appProperties", "shortcutDetails", "originalFilename", "folderColorRgb",
        "contentHints", "writersCanShare", "copyRequiresWriterPermission", "viewersCanCopyContent", "contentRestrictions",
        "driveId", "teamDriveId", "kind", "inheritedPermissionsDisabled", "downloadRestrictions",
    ]

    init(_ body: [String: Any], mode: Mode) throws {
        for key in body.keys where DriveSchema.file[key] != nil {
            if mode != .create && key == "parents" {
                if mode == .update { throw GoogleError.parentsNotWritable }
                continue
            }
            if key == "kind", body[key] as? String == "drive#file", mode == .create { continue }
            let writable = MetadataPatch.writableOnCreate.subtracting(mode == .create ? [] : ["id", "createdTime", "shortcutDetails", "kind"])
                .union(mode == .copy ? ["id", "parents"] : [])
            guard writable.contains(key) else { throw GoogleError.fieldNotWritable }
        }
        func string(_ key: String) throws -> String? {
            guard let v = body[key], !(v is NSNull) else { return nil }
            guard let s = v as? String else { throw GoogleError.invalidValue(location: key) }
            return s
        }
        func bool(_ key: String) throws -> Bool? {
            guard let v = body[key], !(v is NSNull) else { return nil }
            guard let b = v as? Bool else { throw GoogleError.invalidValue(location: key) }
            return b
        }
        func time(_ key: String) throws -> Int64? {
            guard let s = try string(key) else { return nil }
            guard let ms = RFC3339.parseMillis(s, defaultUTC: true) else { throw GoogleError.invalidValue(location: key) }
            return ms
        }
        func map(_ key: String) throws -> [String: String?]? {
            guard let v = body[key], !(v is NSNull) else { return nil }
            guard let d = v as? [String: Any] else { throw GoogleError.invalidValue(location: key) }
            var out: [String: String?] = [:]
            for (k, value) in d {
                if value is NSNull { out[k] = .some(nil); continue }
                guard let s = value as? String else { throw GoogleError.invalidValue(location: key) }
                guard k.utf8.count + s.utf8.count <= 124 else {
                    throw GoogleError(400, reason: "propertyLengthLimitExceeded",
                                      message: "Properties and app properties are limited to 124 bytes in UTF-8 encoding, counting both the key and the value.")
                }
                out[k] = .some(s)
            }
            return out
        }
        id = try string("id")
        name = try string("name")
        mimeType = try string("mimeType")
        if let p = body["parents"], !(p is NSNull) {
            guard let list = p as? [Any], let strings = list as? [String] else { throw GoogleError.invalidValue(location: "parents") }
            parents = strings
        }
        if body.keys.contains("description") { description = .some(try string("description")) }
        starred = try bool("starred")
        trashed = try bool("trashed")
        createdTime = try time("createdTime")
        modifiedTime = try time("modifiedTime")
        viewedByMeTime = try time("viewedByMeTime")
        properties = try map("properties")
        appProperties = try map("appProperties")
        originalFilename = try string("originalFilename")
        folderColorRgb = try string("folderColorRgb")
        if let sd = body["shortcutDetails"], !(sd is NSNull) {
            guard let d = sd as? [String: Any] else { throw GoogleError.invalidValue(location: "shortcutDetails") }
            if d.keys.contains(where: { $0 != "targetId" && $0 != "targetResourceKey" }) { throw GoogleError.fieldNotWritable }
            shortcutTargetId = d["targetId"] as? String
        }
    }

    /// Applies the simple members (not id, parents, trash, mime, shortcut: the callers own those rules).
    func applySimple(to item: inout DriveItem) {
        if let name { item.name = name }
        if let description { item.description = description }
        if let starred { item.starred = starred }
        if let createdTime { item.createdTime = createdTime }
        if let modifiedTime { item.modifiedTime = modifiedTime }
        if let viewedByMeTime { item.viewedByMeTime = viewedByMeTime }
        if let originalFilename { item.originalFilename = originalFilename }
        if let folderColorRgb { item.folderColorRgb = folderColorRgb }
        func merge(_ old: [String: String]?, _ patch: [String: String?]) -> [String: String]? {
            var out = old ?? [:]
            for (k, v) in patch { if let v { out[k] = v } else { out.removeValue(forKey: k) } }
            return out.isEmpty ? nil : out
        }
        if let properties { item.properties = merge(item.properties, properties) }
        if let appProperties { item.appProperties = merge(item.appProperties, appProperties) }
    }
}
