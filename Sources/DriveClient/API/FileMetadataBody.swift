import DriveSupport
import Foundation

/// The metadata a create or an update sends (the body of `files.create` and `files.update`, and the
/// first part of a multipart or resumable upload): only the fields set are sent, with sorted keys,
/// so that the same metadata is the same bytes every time. A resumable session keeps it as text
/// (`ResumableUploadSession.metadataJSON`) and reads it back with `init(json:)`.
struct FileMetadataBody: Codable, Equatable, Sendable {
    var id: String?
    var name: String?
    var parents: [String]?
    var mimeType: String?
    /// RFC 3339 with milliseconds, as Drive writes it.
    var modifiedTime: String?
    var appProperties: [String: String]?
    var trashed: Bool?

    init(id: String? = nil, name: String? = nil, parents: [String]? = nil, mimeType: String? = nil,
         modifiedTime millis: Int64? = nil, appProperties: [String: String]? = nil, trashed: Bool? = nil) {
        self.id = id
        self.name = name
        self.parents = parents
        self.mimeType = mimeType
        self.modifiedTime = millis.map { RFC3339.format(millis: $0) }
        // An empty map would say nothing: it is left out, as Drive would change nothing for it.
        self.appProperties = appProperties?.isEmpty == false ? appProperties : nil
        self.trashed = trashed
    }

    /// Reads back a body written by `json` (a persisted session's metadata); nil if it is not one.
    init?(json: String) {
        guard let body = try? JSONDecoder().decode(Self.self, from: Data(json.utf8)) else { return nil }
        self = body
    }

    /// The body's bytes: a JSON object of the fields set, keys sorted.
    var json: [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Strings, arrays of strings, a map of strings and a Bool cannot fail to encode.
        return (try? Array(encoder.encode(self))) ?? Array("{}".utf8)
    }
}
