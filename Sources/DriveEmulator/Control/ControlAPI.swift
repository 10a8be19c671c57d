import Foundation

/// The emulator's own endpoints under `/__emulator/`: stats, faults, listing quirks, token
/// revocation, health, what the drives hold, and the Drive service's sharing endpoints (other
/// users' items, sharing, shared-drive membership: `DriveService+Sharing.swift`).
/// Control requests are neither counted in stats nor faulted.
final class ControlAPI: Sendable {
    static let prefix = "/__emulator/"

    private let stats: EmulatorStats
    private let faults: FaultPlan
    private let quirks: ListingQuirks
    private let revoke: @Sendable (String?) -> Void
    private let usage: (@Sendable () -> DriveUsage)?
    /// The services' own endpoints (the Drive service's sharing ones), asked for other paths.
    private let extra: (@Sendable (String, HTTPRequest) -> HTTPResponse?)?

    init(stats: EmulatorStats, faults: FaultPlan, quirks: ListingQuirks, revoke: @escaping @Sendable (String?) -> Void,
         usage: (@Sendable () -> DriveUsage)? = nil, extra: (@Sendable (String, HTTPRequest) -> HTTPResponse?)? = nil) {
        self.extra = extra
        self.stats = stats
        self.faults = faults
        self.quirks = quirks
        self.revoke = revoke
        self.usage = usage
    }

    func handles(_ request: HTTPRequest) -> Bool { request.path.hasPrefix(Self.prefix) }

    func respond(to request: HTTPRequest) -> HTTPResponse {
        let name = String(request.path.dropFirst(Self.prefix.count))
        switch (name, request.method) {
        case ("health", "GET"), ("health", "HEAD"):
            return .json(200, ["status": "ok"])
        case ("stats", "GET"), ("stats", "HEAD"):
            return .json(200, stats.snapshot().json)
        case ("usage", "GET"), ("usage", "HEAD"):
            guard let usage else { return GoogleError.unknownPath(request.path).response }
            return .json(200, usage().json)
        case ("reset-stats", "POST"):
            stats.reset()
            return .json(200, [String: Any]())
        case ("revoke", "POST"):
            do {
                revoke(try tokenParameter(request))
                return .json(200, [String: Any]())
            } catch let error as GoogleError {
                return error.response
            } catch {
                return GoogleError.badRequest("Unreadable request body.").response
            }
        case ("faults", "GET"):
            return .json(200, faults.json)
        case ("faults", "POST"):
            do {
                let body = try request.body.readAll(limit: 1 << 20)
                let (rules, seed) = try FaultRule.parseDocument(Data(body))
                if request.param("replace") == "true" { faults.clear() }
                faults.add(rules, seed: seed)
                return .json(200, faults.json)
            } catch let error as FaultRule.FormatError {
                return GoogleError.badRequest("Invalid fault document: \(error.description)").response
            } catch {
                return GoogleError.badRequest("Unreadable request body.").response
            }
        case ("faults", "DELETE"):
            faults.clear()
            return .json(200, faults.json)
        case ("quirks", "GET"):
            return .json(200, quirks.json)
        case ("quirks", "POST"):
            do {
                try quirks.update(fromJSON: Data(try request.body.readAll(limit: 64 * 1024)))
                return .json(200, quirks.json)
            } catch let error as GoogleError {
                return error.response
            } catch {
                return GoogleError.badRequest("Unreadable request body.").response
            }
        case ("quirks", "DELETE"):
            quirks.set(ListingQuirks.Settings(seed: quirks.settings.seed))
            return .json(200, quirks.json)
        case ("health", _), ("stats", _), ("usage", _), ("reset-stats", _), ("revoke", _), ("faults", _), ("quirks", _):
            var error = GoogleError(405, reason: "httpMethodNotAllowed", message: "Method \(request.method) is not allowed on \(request.path).")
            error.extraHeaders.append(("Allow", Self.allowed(name)))
            return error.response
        default:
            return extra?(name, request) ?? GoogleError.unknownPath(request.path).response
        }
    }

    private static func allowed(_ name: String) -> String {
        switch name {
        case "health", "stats", "usage": return "GET, HEAD"
        case "faults", "quirks": return "GET, POST, DELETE"
        default: return "POST"
        }
    }

    /// `token` from the query, a form body or a JSON body; nil revokes everything.
    private func tokenParameter(_ request: HTTPRequest) throws -> String? {
        if let token = request.param("token") { return token }
        let body = try request.body.readAll(limit: 64 * 1024)
        guard !body.isEmpty else { return nil }
        if request.headers["Content-Type"]?.lowercased().hasPrefix("application/json") == true {
            guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
                throw GoogleError.badRequest("Invalid JSON payload received.")
            }
            return object["token"] as? String
        }
        let form = HTTPRequest.parseQuery(String(decoding: body, as: UTF8.self))
        return form.first { $0.name == "token" }?.value
    }
}
