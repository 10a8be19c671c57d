import Foundation

/// What one request costs in the budgets Google meters, decided in this one place from the method
/// name the client counts it under (`files.list`, `files.get.media`, ...) and its HTTP method.
///
/// Sources (docs/client.md, "Pacing"; docs/emulator.md#quota-units): Google's 2026 quota table gives
/// files.get 5 units, files.list 100, a download (`alt=media`) 200, files.update 50,
/// files.generateIds 5; the rest are priced by likeness, as the emulator does. The write limit
/// ("3 requests per second of sustained write or insert requests, per account") counts creates,
/// updates, copies, deletes and uploads; a resumable upload counts once, at its initiation: its
/// chunks (PUT to the session URI) carry neither units nor a write.
public struct RequestCharge: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, CaseIterable {
        /// A metadata read (files.get, about.get, generateIds, ...).
        case read
        /// A listing (files.list, changes.list, ...).
        case list
        /// Media: a download, an export, a revision's content.
        case download
        /// A write or insert: what the write limit counts.
        case write
        /// Charged nothing: a chunk sent to a resumable session URI.
        case unmetered
    }

    public let kind: Kind
    /// Google's cost in quota units (the 2026 table).
    public let units: Int

    public init(kind: Kind, units: Int) {
        self.kind = kind
        self.units = max(0, units)
    }

    public var isWrite: Bool { kind == .write }

    public var description: String { "\(kind.rawValue) (\(units) units)" }

    public static let read = RequestCharge(kind: .read, units: 5)
    public static let list = RequestCharge(kind: .list, units: 100)
    public static let download = RequestCharge(kind: .download, units: 200)
    public static let write = RequestCharge(kind: .write, units: 50)
    public static let unmetered = RequestCharge(kind: .unmetered, units: 0)

    /// The charge of a request sent under `method` with HTTP method `httpMethod`. A method name the
    /// table does not know is taken for a metadata read.
    public static func of(method: String, httpMethod: String = "GET") -> RequestCharge {
        // Resumable chunks and status probes: PUT to the session URI, under the upload's name.
        if httpMethod == "PUT" && method.hasSuffix(".upload") { return .unmetered }
        switch method {
        case "files.list", "changes.list", "revisions.list", "drives.list":
            return .list
        case "files.get.media", "files.export", "revisions.get.media":
            return .download
        case "files.create", "files.create.upload", "files.update", "files.update.upload", "files.copy",
             "files.delete", "files.emptyTrash", "drives.create", "drives.update", "drives.delete",
             "revisions.update", "revisions.delete":
            return .write
        default:
            return .read
        }
    }
}

/// The quota budget the pacer keeps to over any sliding minute: Google's quota units (2026), or
/// requests for projects on the legacy quota (every request costs 1).
public struct QuotaBudget: Sendable, Equatable, CustomStringConvertible {
    public enum Metering: String, Sendable {
        /// Quota units per method (`RequestCharge.units`).
        case units
        /// One per request (the legacy quota: 12,000 requests a minute per user).
        case requests
    }

    public let metering: Metering
    /// Units (or requests) the pacer lets go in any minute.
    public let perMinute: Int

    public init(metering: Metering, perMinute: Int) {
        self.metering = metering
        self.perMinute = max(1, perMinute)
    }

    /// Google's quota per user per project (2026): 325,000 units a minute.
    public static let googleUnitsPerUser = 325_000
    /// The default: 90% of Google's per-user quota, leaving room for the user's other clients
    /// (the web UI, a phone) and for the spread between our clock and Google's.
    public static let `default` = QuotaBudget(metering: .units, perMinute: googleUnitsPerUser * 9 / 10)

    public static func units(perMinute: Int) -> QuotaBudget { QuotaBudget(metering: .units, perMinute: perMinute) }
    public static func legacy(requestsPerMinute: Int) -> QuotaBudget { QuotaBudget(metering: .requests, perMinute: requestsPerMinute) }

    /// What `charge` costs against this budget.
    public func cost(of charge: RequestCharge) -> Int {
        if charge.kind == .unmetered { return 0 }
        return metering == .units ? charge.units : 1
    }

    public var description: String {
        metering == .units ? "\(perMinute) quota units a minute" : "\(perMinute) requests a minute (legacy quota)"
    }
}

/// The write lane's pace: sustained writes a second after a small burst.
public struct WriteBudget: Sendable, Equatable, CustomStringConvertible {
    public let perSecond: Double
    public let burst: Int

    public init(perSecond: Double, burst: Int) {
        self.perSecond = perSecond > 0 && perSecond.isFinite ? perSecond : WriteBudget.default.perSecond
        self.burst = max(1, burst)
    }

    /// Google's write limit is "about 3 a second per account" with an undocumented burst: 2.5 a
    /// second keeps a sixth below it, and a burst of 2 (the emulator's `google` preset allows 3)
    /// leaves one write of slack for requests that reach Google closer together than they left.
    public static let `default` = WriteBudget(perSecond: 2.5, burst: 2)

    public var description: String { "\(Pacer.format(perSecond)) writes/s after a burst of \(burst)" }
}
