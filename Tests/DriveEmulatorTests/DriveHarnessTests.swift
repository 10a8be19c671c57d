import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

/// Accepts `Bearer good` (all scopes) and `Bearer readonly` (drive.readonly); no header is "missing",
/// anything else "invalid".
final class StubValidator: AccessTokenValidator {
    func check(authorization: String?) -> AccessCheck {
        switch authorization {
        case nil: return .missing
        case "Bearer good": return .granted(scopes: [])
        case "Bearer readonly": return .granted(scopes: ["https://www.googleapis.com/auth/drive.readonly"])
        default: return .invalid
        }
    }
}

/// A request body served in pieces, optionally ending early with `HTTPBodyError.truncated`.
final class PiecewiseBody: HTTPRequestBody {
    private var bytes: [UInt8]
    private var offset = 0
    private let truncateAfter: Int?
    let declaredLength: Int64?
    init(_ bytes: [UInt8], truncateAfter: Int? = nil, declared: Bool = true) {
        self.bytes = bytes
        self.truncateAfter = truncateAfter
        declaredLength = declared ? Int64(bytes.count) : nil
    }
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let end = truncateAfter ?? bytes.count
        if offset >= end {
            if truncateAfter != nil { throw HTTPBodyError.truncated }
            return 0
        }
        let n = min(buffer.count, end - offset, 1000)
        bytes.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + offset, byteCount: n) }
        offset += n
        return n
    }
}

/// A DriveService in a temporary state directory, called without a server. `restart` is not
/// thread-safe; everything else may be called from many threads.
final class DriveHarness: @unchecked Sendable {
    let stateDirectory: URL
    let clock = ManualTimeSource(now: 1_700_000_000)
    /// The service's listing quirks (off unless a test sets them).
    let quirks = ListingQuirks()
    private(set) var service: DriveService!
    private let ownsDirectory: Bool

    init(stateDirectory: URL? = nil, seed: URL? = nil) throws {
        ownsDirectory = stateDirectory == nil
        self.stateDirectory = stateDirectory ?? FileManager.default.temporaryDirectory.appendingPathComponent("drive-test-\(UUID().uuidString)")
        service = try DriveService(stateDirectory: self.stateDirectory, seedDirectory: seed, validator: StubValidator(), clock: clock,
                                   quirks: quirks)
    }

    func restart(seed: URL? = nil) throws {
        service.close()
        service = try DriveService(stateDirectory: stateDirectory, seedDirectory: seed, validator: StubValidator(), clock: clock,
                                   quirks: quirks)
    }

    func shutdown() {
        service.close()
        if ownsDirectory { try? FileManager.default.removeItem(at: stateDirectory) }
    }

    var rootId: String { service.rootFolderId }

    @discardableResult
    func send(_ method: String, _ target: String, headers: [(String, String)] = [], body: HTTPRequestBody = BufferedRequestBody([]),
              auth: String? = "Bearer good") throws -> HTTPResponse {
        var h = HTTPHeaders(headers)
        if let auth { h.add("Authorization", auth) }
        let request = HTTPRequest(method: method, target: target, headers: h, body: body, baseURL: "http://127.0.0.1:9999")
        guard let route = service.route(for: request) else { throw NSError(domain: "no route for \(method) \(target)", code: 0) }
        return try route.handle(request)
    }

    func send(_ method: String, _ target: String, headers: [(String, String)] = [], bytes: [UInt8]) throws -> HTTPResponse {
        try send(method, target, headers: headers, body: BufferedRequestBody(bytes))
    }

    /// A JSON call: (status, body object).
    func call(_ method: String, _ target: String, json: [String: Any]? = nil, auth: String? = "Bearer good") throws -> (Int, [String: Any]) {
        let body = try json.map { try JSONSerialization.data(withJSONObject: $0) }.map { Array($0) } ?? []
        let r = try send(method, target, headers: json == nil ? [] : [("Content-Type", "application/json")], body: BufferedRequestBody(body), auth: auth)
        return (r.status, DriveHarness.object(r))
    }

    static func bytes(_ r: HTTPResponse) -> [UInt8] {
        switch r.body {
        case .empty: return []
        case .bytes(let b): return b
        case .file(let path, let offset, let length):
            guard let h = FileHandle(forReadingAtPath: path) else { return [] }
            defer { try? h.close() }
            try? h.seek(toOffset: UInt64(offset))
            return Array(h.readData(ofLength: Int(length)))
        case .stream(let next):
            var out: [UInt8] = []
            while let chunk = try? next() { out += chunk }
            return out
        }
    }

    static func object(_ r: HTTPResponse) -> [String: Any] {
        let b = bytes(r)
        guard !b.isEmpty, let o = try? JSONSerialization.jsonObject(with: Data(b)) as? [String: Any] else { return [:] }
        return o
    }

    static func reason(_ body: [String: Any]) -> String? {
        ((body["error"] as? [String: Any])?["errors"] as? [[String: Any]])?.first?["reason"] as? String
    }

    static func location(_ body: [String: Any]) -> String? {
        ((body["error"] as? [String: Any])?["errors"] as? [[String: Any]])?.first?["location"] as? String
    }

    static func message(_ body: [String: Any]) -> String? { (body["error"] as? [String: Any])?["message"] as? String }

    /// Creates a folder or empty file; returns its id.
    @discardableResult
    func create(_ name: String, parent: String? = nil, mime: String? = nil, extra: [String: Any] = [:]) throws -> String {
        var meta: [String: Any] = ["name": name]
        if let parent { meta["parents"] = [parent] }
        if let mime { meta["mimeType"] = mime }
        meta.merge(extra) { $1 }
        let (status, body) = try call("POST", "/drive/v3/files", json: meta)
        guard status == 200, let id = body["id"] as? String else { throw NSError(domain: "create failed \(status) \(body)", code: 0) }
        return id
    }

    /// Uploads content with uploadType=media and renames it.
    @discardableResult
    func upload(_ name: String, _ content: [UInt8], parent: String? = nil, mime: String = "application/octet-stream") throws -> String {
        let boundary = "b0undary"
        var meta: [String: Any] = ["name": name]
        if let parent { meta["parents"] = [parent] }
        let metaJSON = String(decoding: try JSONSerialization.data(withJSONObject: meta), as: UTF8.self)
        var body = Array("--\(boundary)\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n\(metaJSON)\r\n--\(boundary)\r\nContent-Type: \(mime)\r\n\r\n".utf8)
        body += content
        body += Array("\r\n--\(boundary)--\r\n".utf8)
        let r = try send("POST", "/upload/drive/v3/files?uploadType=multipart", headers: [("Content-Type", "multipart/related; boundary=\(boundary)")], bytes: body)
        guard r.status == 200, let id = DriveHarness.object(r)["id"] as? String else { throw NSError(domain: "upload failed \(r.status)", code: 0) }
        return id
    }

    static func q(_ s: String) -> String { FileResource.queryEscape(s) }
}
