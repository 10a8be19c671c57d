import DriveSupport
import Foundation

/// Drive v3 (My Drive and shared drives) with Google's semantics and error format: the `RouteProvider` that the
/// emulator's HTTP server asks for every `/drive/v3/...`, `/upload/drive/v3/...`,
/// `/resumable/upload/drive/v3/...` and `/download/drive/v3/...` request.
///
/// Route method names (for stats and fault injection): `about.get`, `files.list`, `files.get`,
/// `files.get.media`, `files.export`, `files.create`, `files.create.upload`, `files.update`,
/// `files.update.upload`, `files.copy`, `files.delete`, `files.emptyTrash`, `files.generateIds`,
/// `changes.getStartPageToken`, `changes.list`, `revisions.list`, `revisions.get`, `revisions.get.media`,
/// `revisions.update`, `revisions.delete`, `revisions.export` (a Docs revision's export link, `/feeds/download/export`),
/// `drives.create`, `drives.list`, `drives.get`, `drives.update`, `drives.delete`, and `drive.unknown` for any other path under those prefixes.
///
/// Thread-safe: metadata lives behind the store's lock; content streams without it.
public final class DriveService: RouteProvider, Sendable {
    let store: DriveStore
    let sessions: UploadSessions
    let validator: AccessTokenValidator
    let clock: TimeSource
    let limits: ListingLimits
    let quirks: ListingQuirks
    let user = DriveUser()
    /// Set when the state lives in a temporary directory of our own, removed by `close()`.
    private let temporaryDirectory: URL?
    private let closed = Locked(false)

    /// `stateDirectory` nil: a temporary directory, removed on `close()`. `seedDirectory` is imported
    /// into My Drive when the store is empty (first start).
    /// `limits` and `quirks` shape files.list (ListingLimits.swift); the quirks may be switched at
    /// run time by whoever holds the same object (the control API). `driveLimits`: the items per
    /// folder and per shared drive (the request limits are the dispatcher's).
    public init(stateDirectory: URL?, seedDirectory: URL?, validator: AccessTokenValidator, clock: TimeSource,
                limits: ListingLimits = ListingLimits(), quirks: ListingQuirks = ListingQuirks(),
                driveLimits: DriveLimits = .none) throws {
        // Drive's state lives in `drive/` under the state directory (the OAuth part shares it).
        let directory: URL
        if let stateDirectory {
            directory = stateDirectory.appendingPathComponent("drive")
            temporaryDirectory = nil
        } else {
            let temp = FileManager.default.temporaryDirectory.appendingPathComponent("drivefs-emulator-\(SecureRandom.token(length: 10))")
            directory = temp.appendingPathComponent("drive")
            temporaryDirectory = temp
        }
        self.validator = validator
        self.clock = clock
        self.limits = limits
        self.quirks = quirks
        // A state directory of the user's is made durable at every commit; a temporary one, which
        // nothing can restart on, is not.
        store = try DriveStore(directory: directory, clock: clock, durable: stateDirectory != nil, limits: driveLimits)
        sessions = try UploadSessions(store: store)
        if let seedDirectory, store.read({ $0.data.items.count == 1 }) {
            try store.bulkLoad { try SeedImporter(service: self).importTree(at: seedDirectory) }
        }
    }

    public func close() {
        let wasClosed = closed.withLock { c -> Bool in defer { c = true }; return c }
        guard !wasClosed else { return }
        store.close()
        if let temporaryDirectory { try? FileManager.default.removeItem(at: temporaryDirectory) }
    }

    deinit { close() }

    /// The id of My Drive's root folder.
    public var rootFolderId: String { store.read { $0.rootId } }

    // MARK: Routing

    typealias Handler = (DriveService) -> (HTTPRequest) throws -> HTTPResponse

    public func route(for request: HTTPRequest) -> Route? {
        let override = DriveService.methodOverride(request)
        var matched = request
        if let override { matched.method = override }
        guard let (name, handler) = DriveService.match(matched) else { return nil }
        // Chunks sent to a resumable session URI carry no token (the upload_id is the credential):
        // charged to nobody.
        let quota: () -> QuotaIdentity? = { [validator] in
            DriveService.isResumableSessionRequest(name, request) ? nil
                : validator.quotaIdentity(authorization: request.headers["Authorization"])
        }
        return Route(method: name, quotaIdentity: quota, uploadBytes: { [self] in uploadBytes(name, request) }) { [self] req in
            guard override != nil else { return try serve(name, req, handler(self)) }
            let rewritten: HTTPRequest
            do { rewritten = try DriveService.applyMethodOverride(req) } catch let e as GoogleError { return e.response }
            // The parameters that moved into the body may pick another handler (`alt=media`);
            // the route keeps the name its URL gave it.
            let chosen = DriveService.match(rewritten)?.1 ?? handler
            return try serve(name, rewritten, chosen(self))
        }
    }

    /// What an upload or copy brings, for the daily upload cap, known before it is handled: a
    /// resumable session's declared `X-Upload-Content-Length`, another upload's `Content-Length`
    /// (a multipart body's metadata part included), a copy's source size. nil: not known.
    func uploadBytes(_ name: String, _ r: HTTPRequest) -> Int64? {
        switch name {
        case "files.copy":
            let id = DriveService.fileId(r)
            return store.read { $0.item(id, allDrives: true)?.size }
        case "files.create.upload", "files.update.upload":
            if r.param("uploadType") == "resumable" {
                return r.headers["X-Upload-Content-Length"].flatMap(HTTPRequestHeadParser.parseDecimal)
            }
            return r.body.declaredLength
        default:
            return nil
        }
    }

    /// The method a `POST` stands for when it carries `X-HTTP-Method-Override` (as Google's front
    /// end honours for every method): google-api-python-client turns a GET whose URL passes 2,048
    /// characters into `POST` + `X-HTTP-Method-Override: GET` with the query string as an
    /// `application/x-www-form-urlencoded` body.
    static func methodOverride(_ r: HTTPRequest) -> String? {
        guard r.method.uppercased() == "POST", let value = r.headers["X-HTTP-Method-Override"]?.trimmingCharacters(in: .whitespaces).uppercased(),
              ["GET", "PATCH", "PUT", "DELETE"].contains(value) else { return nil }
        return value
    }

    /// Parameters of an overridden GET sent as a form body: at most this many bytes.
    static let overrideBodyLimit = 1 << 20

    /// The request as its override says: the new method and, for a GET, the form body's
    /// parameters after the URL's (the URL's win where both name one), with an empty body.
    static func applyMethodOverride(_ r: HTTPRequest) throws -> HTTPRequest {
        guard let method = methodOverride(r) else { return r }
        var out = r
        out.method = method
        out.headers.remove("X-HTTP-Method-Override")
        guard method == "GET" else { return out }
        let type = r.headers["Content-Type"]?.lowercased() ?? "application/x-www-form-urlencoded"
        guard type.hasPrefix("application/x-www-form-urlencoded") else {
            throw GoogleError.badRequest("A GET sent as POST with X-HTTP-Method-Override carries its parameters as application/x-www-form-urlencoded.")
        }
        let bytes: [UInt8]
        do { bytes = try r.body.readAll(limit: overrideBodyLimit) } catch HTTPBodyError.tooLarge(let limit) {
            throw GoogleError(413, reason: "requestTooLarge", message: "The request body is larger than \(limit) bytes.")
        }
        out.query += HTTPRequest.parseQuery(String(decoding: bytes, as: UTF8.self))
        out.body = BufferedRequestBody([])
        out.headers.remove("Content-Type")
        out.headers.remove("Content-Length")
        return out
    }

    static let prefixes: [(String, String)] = [
        ("/drive/v3/", "api"), ("/upload/drive/v3/", "upload"), ("/resumable/upload/drive/v3/", "upload"),
        ("/download/drive/v3/", "download"), (DriveService.revisionExportPath, "docs"),
    ]

    static func match(_ r: HTTPRequest) -> (String, Handler)? {
        guard let (prefix, kind) = prefixes.first(where: { r.path.hasPrefix($0.0) }) else { return nil }
        let segments = r.path.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        let m = r.method.uppercased()
        let unknown: (String, Handler) = ("drive.unknown", { s in s.unknownPath })
        switch kind {
        case "api":
            switch (m, segments.count, segments.first ?? "") {
            case ("GET", 1, "about"): return ("about.get", { s in s.aboutGet })
            case ("GET", 1, "files"): return ("files.list", { s in s.filesList })
            case ("POST", 1, "files"): return ("files.create", { s in s.filesCreate })
            case ("GET", 1, "changes"): return ("changes.list", { s in s.changesList })
            case ("POST", 1, "drives"): return ("drives.create", { s in s.drivesCreate })
            case ("GET", 1, "drives"): return ("drives.list", { s in s.drivesList })
            case ("GET", 2, "drives"): return ("drives.get", { s in s.drivesGet })
            case ("PATCH", 2, "drives"): return ("drives.update", { s in s.drivesUpdate })
            case ("DELETE", 2, "drives"): return ("drives.delete", { s in s.drivesDelete })
            case ("GET", 2, "changes") where segments[1] == "startPageToken":
                return ("changes.getStartPageToken", { s in s.changesStartPageToken })
            case ("GET", 2, "files") where segments[1] == "generateIds": return ("files.generateIds", { s in s.filesGenerateIds })
            case ("DELETE", 2, "files") where segments[1] == "trash": return ("files.emptyTrash", { s in s.filesEmptyTrash })
            case ("GET", 2, "files"):
                if r.param("alt") == "media" { return ("files.get.media", { s in s.filesGetMedia }) }
                return ("files.get", { s in s.filesGet })
            case ("PATCH", 2, "files"): return ("files.update", { s in s.filesUpdate })
            case ("DELETE", 2, "files"): return ("files.delete", { s in s.filesDelete })
            case ("POST", 3, "files") where segments[2] == "copy": return ("files.copy", { s in s.filesCopy })
            case ("GET", 3, "files") where segments[2] == "export": return ("files.export", { s in s.filesExport })
            case ("GET", 3, "files") where segments[2] == "revisions": return ("revisions.list", { s in s.revisionsList })
            case ("PATCH", 4, "files") where segments[2] == "revisions": return ("revisions.update", { s in s.revisionsUpdate })
            case ("DELETE", 4, "files") where segments[2] == "revisions": return ("revisions.delete", { s in s.revisionsDelete })
            case ("GET", 4, "files") where segments[2] == "revisions":
                if r.param("alt") == "media" { return ("revisions.get.media", { s in s.revisionsGetMedia }) }
                return ("revisions.get", { s in s.revisionsGet })
            default: return unknown
            }
        case "upload":
            guard segments.first == "files" else { return unknown }
            if segments.count == 1, ["POST", "PUT"].contains(m) { return ("files.create.upload", { s in s.uploadCreate }) }
            if segments.count == 2, ["PATCH", "PUT", "POST"].contains(m) { return ("files.update.upload", { s in s.uploadUpdate }) }
            return unknown
        case "docs":
            // A Docs revision's export link (`revisionExportLinks`): the path alone, with its query.
            guard m == "GET", segments == [""] else { return unknown }
            return ("revisions.export", { s in s.revisionsExport })
        default:
            if m == "GET", segments.count == 2, segments[0] == "files" { return ("files.get.media", { s in s.filesGetMedia }) }
            if m == "GET", segments.count == 4, segments[0] == "files", segments[2] == "revisions" {
                return ("revisions.get.media", { s in s.revisionsGetMedia })
            }
            return unknown
        }
    }

    /// The file id in `/…/files/{fileId}[/…]`.
    static func fileId(_ r: HTTPRequest) -> String {
        guard let range = r.path.range(of: "/files/") else { return "" }
        return String(r.path[range.upperBound...].split(separator: "/", omittingEmptySubsequences: false).first ?? "")
    }

    private func unknownPath(_ r: HTTPRequest) throws -> HTTPResponse {
        throw GoogleError.unknownPath(r.path)
    }

    // MARK: Serving

    static let mutatingMethods: Set<String> = [
        "files.create", "files.create.upload", "files.update", "files.update.upload", "files.copy", "files.delete",
        "files.emptyTrash", "drives.create", "drives.update", "drives.delete", "revisions.update", "revisions.delete",
    ]

    /// Answers a request, and sends nothing before what the answer says is on disk (`makeDurable`).
    private func serve(_ name: String, _ r: HTTPRequest, _ handler: (HTTPRequest) throws -> HTTPResponse) throws -> HTTPResponse {
        let response = try answer(name, r, handler)
        do { try store.makeDurable() } catch {
            return GoogleError(500, reason: "backendError", message: "Backend Error").response
        }
        return response
    }

    private func answer(_ name: String, _ r: HTTPRequest, _ handler: (HTTPRequest) throws -> HTTPResponse) throws -> HTTPResponse {
        do {
            if !DriveService.isResumableSessionRequest(name, r) {
                try authorize(name, r)
                try requireVisibleFile(name, r)
            }
            return DriveService.honourPrettyPrint(try handler(r), r)
        } catch let e as GoogleError {
            return e.response
        } catch let e as FieldSelection.Invalid {
            return GoogleError.invalidParameter("fields", "Invalid field selection \(e.token)").response
        } catch HTTPBodyError.truncated {
            // The client is gone; whatever arrived has been kept. Nothing to answer.
            throw HTTPBodyError.truncated
        } catch HTTPBodyError.tooLarge(let limit) {
            return GoogleError(413, reason: "uploadTooLarge", message: "The request body is larger than \(limit) bytes.").response
        } catch let e as HTTPBodyError {
            return GoogleError.badRequest("Malformed request body (\(e)).").response
        } catch {
            return GoogleError(500, reason: "backendError", message: "Backend Error").response
        }
    }

    /// `prettyPrint=false` (a standard query parameter) makes a JSON answer compact. Errors stay
    /// indented whatever it says, as Google's do (drive-behaviours §2.1).
    static func honourPrettyPrint(_ response: HTTPResponse, _ r: HTTPRequest) -> HTTPResponse {
        guard r.param("prettyPrint")?.lowercased() == "false", response.status < 400,
              response.headers["Content-Type"]?.hasPrefix("application/json") == true,
              case .bytes(let bytes) = response.body
        else { return response }
        var out = response
        // Whitespace outside strings dropped, in one pass (Go clients such as rclone send
        // prettyPrint=false on every call: re-serializing would cost more than the listing).
        out.body = .bytes(JSONText.compact(bytes))
        return out
    }

    /// A chunk or status probe sent to a resumable session URI. As at Google, its `upload_id` is the
    /// credential: no `Authorization` is needed, and an expired or revoked access token does not stop
    /// an upload already under way. An unknown or expired `upload_id` is a 404 from the handler.
    static func isResumableSessionRequest(_ name: String, _ r: HTTPRequest) -> Bool {
        (name == "files.create.upload" || name == "files.update.upload") && r.param("upload_id") != nil
    }

    private func authorize(_ name: String, _ r: HTTPRequest) throws {
        switch validator.check(authorization: r.headers["Authorization"]) {
        case .missing: throw GoogleError.loginRequired(rpcMethod: DriveService.rpcMethod(name))
        case .invalid: throw GoogleError.invalidCredentials
        case .granted(let scopes):
            guard !scopes.isEmpty else { return }
            let short = Set(scopes.map { $0.split(separator: "/").last.map(String.init) ?? $0 })
            let any: Set<String> = ["drive", "drive.file", "drive.appdata", "drive.readonly", "drive.metadata",
                                    "drive.metadata.readonly", "drive.photos.readonly", "drive.apps.readonly"]
            let write: Set<String> = ["drive", "drive.file", "drive.appdata", "drive.metadata"]
            if short.isDisjoint(with: any) || (DriveService.mutatingMethods.contains(name) && short.isDisjoint(with: write)) {
                throw GoogleError.insufficientScopes
            }
        }
    }

    static func rpcMethod(_ name: String) -> String {
        let map = [
            "about.get": "DriveAbout.Get", "changes.list": "DriveChanges.List", "changes.getStartPageToken": "DriveChanges.GetStartPageToken",
            "files.list": "DriveFiles.List", "files.get": "DriveFiles.Get", "files.get.media": "DriveFiles.Get",
            "files.export": "DriveFiles.Export", "files.create": "DriveFiles.Create", "files.create.upload": "DriveFiles.Create",
            "files.update": "DriveFiles.Update", "files.update.upload": "DriveFiles.Update", "files.copy": "DriveFiles.Copy",
            "files.delete": "DriveFiles.Delete", "files.emptyTrash": "DriveFiles.EmptyTrash", "files.generateIds": "DriveFiles.GenerateIds",
            "drives.create": "DriveDrives.Create", "drives.list": "DriveDrives.List", "drives.get": "DriveDrives.Get",
            "drives.update": "DriveDrives.Update", "drives.delete": "DriveDrives.Delete",
            "revisions.list": "DriveRevisions.List", "revisions.get": "DriveRevisions.Get", "revisions.get.media": "DriveRevisions.Get",
            "revisions.export": "DriveRevisions.Get", "revisions.update": "DriveRevisions.Update", "revisions.delete": "DriveRevisions.Delete",
        ]
        return "google.apps.drive.v3." + (map[name] ?? "DriveFiles.Get")
    }

    // MARK: Helpers shared by the handlers

    /// The `fields` selection of a request, validated against the response schema; absent or empty → `defaults`.
    func selection(_ r: HTTPRequest, _ schema: [String: FieldSchema], defaults: FieldSelection?) throws -> FieldSelection? {
        try selection(fieldsText: r.param("fields"), schema, defaults: defaults)
    }

    func selection(fieldsText: String?, _ schema: [String: FieldSchema], defaults: FieldSelection?) throws -> FieldSelection? {
        guard let text = fieldsText, !text.trimmingCharacters(in: .whitespaces).isEmpty else { return defaults }
        let sel = try FieldSelection.parse(text)
        try sel.validate(schema)
        return sel
    }

    func respond(_ status: Int, _ object: [String: Any], _ selection: FieldSelection?) -> HTTPResponse {
        let shaped = selection.map { $0.apply(to: object) } ?? object
        return HTTPResponse.json(status, shaped as? [String: Any] ?? object)
    }

    /// A `File` answer for `item`, as the user sees it (owners, capabilities and parents follow the
    /// user's access to it).
    func respondFile(_ r: HTTPRequest, _ item: DriveItem, _ sel: FieldSelection?) -> HTTPResponse {
        let (access, rootId) = store.read { s in (s.access(item) ?? .own, s.rootId) }
        return respond(200, resource(r, rootId: rootId).render(item, only: sel?.topLevelNames, access: access), sel)
    }

    func resource(_ r: HTTPRequest, rootId: String) -> FileResource {
        FileResource(user: user, rootId: rootId, baseURL: r.baseURL)
    }

    /// The request body as a JSON object; an empty body is `{}`.
    func jsonBody(_ r: HTTPRequest, limit: Int = 4 << 20) throws -> [String: Any] {
        let bytes = try r.body.readAll(limit: limit)
        return try DriveService.parseJSONObject(bytes)
    }

    static func parseJSONObject(_ bytes: [UInt8]) throws -> [String: Any] {
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return [:] }
        guard let obj = try? JSONSerialization.jsonObject(with: Data(bytes)), let dict = obj as? [String: Any] else {
            throw GoogleError(400, reason: "parseError", message: "Invalid JSON payload received.", itemMessage: "Parse Error")
        }
        return dict
    }

    func boolParam(_ r: HTTPRequest, _ name: String, default value: Bool) throws -> Bool {
        guard let v = r.param(name) else { return value }
        switch v.lowercased() {
        case "true", "1", "": return true
        case "false", "0": return false
        default: throw GoogleError.invalidValue(location: name)
        }
    }

    func intParam(_ r: HTTPRequest, _ name: String) throws -> Int? {
        guard let v = r.param(name) else { return nil }
        guard let n = Int(v) else { throw GoogleError.invalidValue(location: name) }
        return n
    }

    /// A list's `pageSize`: `defaultSize` when absent, larger than `maximum` coerced down, ≤ 0 a
    /// 400 on `pageSize` (as Drive answers).
    func pageSizeParam(_ r: HTTPRequest, default defaultSize: Int, maximum: Int) throws -> Int {
        guard let n = try intParam(r, "pageSize") else { return defaultSize }
        guard n > 0 else { throw GoogleError.invalidValue(location: "pageSize") }
        return min(n, maximum)
    }

    /// A list's `q`, parsed; nil when absent or blank, a 400 on `q` when it does not parse.
    func queryParam(_ r: HTTPRequest) throws -> DriveQuery? {
        let text = r.param("q") ?? ""
        guard !text.trimmingCharacters(in: .whitespaces).isEmpty else { return nil }
        do { return try DriveQuery.parse(text) } catch { throw GoogleError.invalidValue(location: "q") }
    }
}
