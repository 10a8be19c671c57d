import DriveSupport
import Foundation

/// A single `Range: bytes=…` request.
enum ByteRange: Equatable {
    case from(Int64, through: Int64?)
    case suffix(Int64)

    /// One range of the `bytes` unit; anything else (other units, several ranges, garbage) is nil
    /// and the whole entity is served, as HTTP allows.
    static func parse(_ header: String?) -> ByteRange? {
        guard let header = header?.trimmingCharacters(in: .whitespaces), header.lowercased().hasPrefix("bytes=") else { return nil }
        let spec = header.dropFirst(6).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let a = spec[..<dash].trimmingCharacters(in: .whitespaces), b = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        if a.isEmpty { return Int64(b).map { .suffix($0) } }
        guard let start = Int64(a), start >= 0 else { return nil }
        if b.isEmpty { return .from(start, through: nil) }
        guard let end = Int64(b), end >= start else { return nil }
        return .from(start, through: end)
    }

    /// The satisfiable (offset, length) within `size`, or nil → 416.
    func resolve(size: Int64) -> (offset: Int64, length: Int64)? {
        guard size > 0 else { return nil }
        switch self {
        case .from(let start, let end):
            guard start < size else { return nil }
            let last = min(end ?? (size - 1), size - 1)
            return (start, last - start + 1)
        case .suffix(let n):
            guard n > 0 else { return nil }
            let len = min(n, size)
            return (size - len, len)
        }
    }
}

extension DriveService {
    // MARK: files.get?alt=media

    func filesGetMedia(_ r: HTTPRequest) throws -> HTTPResponse {
        let id = DriveService.fileId(r)
        _ = try boolParam(r, "acknowledgeAbuse", default: false)
        let item = try store.read { s -> DriveItem in
            guard let item = s.item(id) else { throw GoogleError.notFound(id) }
            return item
        }
        guard item.isBlob, let file = item.contentFile else { throw GoogleError.fileNotDownloadable }
        return try mediaResponse(path: store.contentPath(file), size: item.size ?? 0, mimeType: item.mimeType, md5: item.md5, r)
    }

    /// The bytes of one piece of content, as files.get and revisions.get with `alt=media` answer:
    /// 200, or 206 + `Content-Range` for one satisfiable `Range`, 416 `bytes */SIZE` for a range
    /// that starts past the end (or any range of empty content).
    func mediaResponse(path: String, size: Int64, mimeType: String, md5: String?, _ r: HTTPRequest) throws -> HTTPResponse {
        var headers = HTTPHeaders([("Content-Type", mimeType), ("X-GUploader-UploadID", SecureRandom.token(length: 40)),
                                   ("Cache-Control", "private, max-age=0, must-revalidate")])
        if let md5 { headers.add("X-Goog-Hash", "md5=\(Base64URL.decodeHexToBase64(md5))") }
        if let range = ByteRange.parse(r.headers["Range"]) {
            guard let (offset, length) = range.resolve(size: size) else { throw GoogleError.rangeNotSatisfiable(size: size) }
            headers.add("Content-Range", "bytes \(offset)-\(offset + length - 1)/\(size)")
            return HTTPResponse(status: 206, headers: headers, body: .file(path: path, offset: offset, length: length))
        }
        return HTTPResponse(status: 200, headers: headers, body: .file(path: path, offset: 0, length: size))
    }

    // MARK: files.export

    /// Google caps exports at 10 MB.
    static let exportLimit = 10 * 1024 * 1024

    func filesExport(_ r: HTTPRequest) throws -> HTTPResponse {
        let id = DriveService.fileId(r)
        guard let target = r.param("mimeType"), !target.isEmpty else { throw GoogleError.required("mimeType") }
        let item = try store.read { s -> DriveItem in
            guard let item = s.item(id) else { throw GoogleError.notFound(id) }
            return item
        }
        guard item.isWorkspace else {
            throw GoogleError(403, reason: "fileNotExportable", message: "Export only supports Docs Editors files.")
        }
        guard (ExportFormats.targets[item.mimeType] ?? []).contains(target) else { throw DriveService.conversionNotSupported }
        var text: [UInt8] = []
        if let file = item.contentFile {
            let path = store.contentPath(file)
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            guard size <= DriveService.exportLimit else { throw DriveService.exportTooLarge }
            text = Array((try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data())
        }
        let source = ExportSource(fileId: item.id, name: item.name, sourceMime: item.mimeType, text: text)
        guard let bytes = ExportFormats.exportBytes(source, target: target) else { throw DriveService.conversionNotSupported }
        guard bytes.count <= DriveService.exportLimit else { throw DriveService.exportTooLarge }
        return HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", target)]), body: .bytes(bytes))
    }

    static var conversionNotSupported: GoogleError {
        GoogleError(400, reason: "badRequest", message: "The requested conversion is not supported.",
                    location: "convertTo", locationType: "parameter")
    }

    static var exportTooLarge: GoogleError {
        GoogleError(403, reason: "exportSizeLimitExceeded", message: "This file is too large to be exported.")
    }
}

extension Base64URL {
    /// Hex digest → standard base64 (as in `X-Goog-Hash`).
    static func decodeHexToBase64(_ hex: String) -> String {
        var bytes: [UInt8] = []
        var it = hex.makeIterator()
        while let a = it.next(), let b = it.next() {
            guard let v = UInt8(String([a, b]), radix: 16) else { return "" }
            bytes.append(v)
        }
        return Data(bytes).base64EncodedString()
    }
}
