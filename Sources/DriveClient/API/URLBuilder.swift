import DriveSupport
import Foundation

/// Percent-encoding for paths and query strings (RFC 3986 unreserved characters pass through).
enum URLBuilder {
    static func encode(_ value: String) -> String { FormEncoding.encodeComponent(value) }

    /// `base + path` with the query appended (items in order; nil values skipped).
    static func make(_ base: String, _ path: String, _ query: [(String, String?)] = []) -> String {
        let items = query.compactMap { name, value in value.map { "\(encode(name))=\(encode($0))" } }
        return base + path + (items.isEmpty ? "" : "?" + items.joined(separator: "&"))
    }
}
