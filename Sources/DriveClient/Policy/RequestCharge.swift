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
        case "files.get.media", "files.export", "revisions.get.media", "revisions.export":
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

/// The write lane's pace: the rate it starts at, the ceiling it probes up to while writes go
/// unrefused, and a small burst (the lane's AIMD: `Pacer`, docs/client.md "Pacing").
public struct WriteBudget: Sendable, Equatable, CustomStringConvertible {
    /// Writes a second the lane starts at (never above `ceiling`).
    public let perSecond: Double
    public let burst: Int
    /// The most writes a second the lane ever climbs to.
    public let ceiling: Double

    /// `ceiling` nil: Google's published limit, or `perSecond` when that is higher (a server without
    /// Google's limit, such as a test's emulator told `--write-rate 100`). A `perSecond` above a
    /// given ceiling starts at the ceiling.
    public init(perSecond: Double, burst: Int, ceiling: Double? = nil) {
        let start = perSecond > 0 && perSecond.isFinite ? perSecond : WriteBudget.startRate
        let top = ceiling.flatMap { $0 > 0 && $0.isFinite ? $0 : nil } ?? max(WriteBudget.googlePublishedRate, start)
        self.perSecond = min(start, top)
        self.burst = max(1, burst)
        self.ceiling = top
    }

    /// Google's write limit: "avoid exceeding 3 requests per second of sustained write or insert
    /// requests, per account". The default ceiling.
    public static let googlePublishedRate = 3.0
    /// Where the lane starts: a sixth below Google's published limit, so that a mount's first writes
    /// draw no refusal whatever the account's other clients spend; the lane climbs from there.
    public static let startRate = 2.5
    /// The burst is undocumented: 2 (the emulator's `google` preset allows 3) leaves one write of
    /// slack for requests that reach Google closer together than they left.
    public static let `default` = WriteBudget(perSecond: startRate, burst: 2)

    // The lane's AIMD (additive increase per unrefused write, multiplicative decrease per refusal).
    // The numbers are chosen for a token bucket of L writes a second with a few writes of slack S
    // (Google's limit as the emulator models it: L = 3, a burst of 3 against the lane's 2, so S ≈ 2);
    // docs/client.md, "Pacing", has this arithmetic with the simulations that check it:
    // - At or under L (the default ceiling is L) the bucket never refuses a paced write: the lane
    //   sits at the ceiling, and only arrivals bunched by more than the slack (S/L ≈ 0.67 s of
    //   jitter) draw a refusal.
    // - Above L (a ceiling set higher, or Google's limit lower than published) the lane saws: past L
    //   each write spends (r − L)/L of the slack, so k writes of a climb by `increase` spend
    //   increase · k² / (2L); the slack is gone, and one write refused, after k = √(2LS/increase)
    //   writes, at R = L + √(2LS · increase). The lane falls to `decreaseFactor` · R and climbs back
    //   to L in (L − decreaseFactor · R)/increase writes. With increase 0.002 and factor 0.9:
    //   k ≈ 77, R ≈ 3.15, the fall to 2.84, 80 writes back to L: about one refusal in 157 writes
    //   (0.64%, under 2% with room for the writes in flight when it comes), and the rate never under
    //   2.84 (the mean over a cycle ≈ 2.95, over 3/1.1 = 2.73).
    // - A larger increase or a deeper fall trades one goal for the other: 0.005 makes the cycle 65
    //   writes (1.5% refused); a factor of 0.5 (the quota lane's) makes the mean about 2.4.
    // - Until the lane's first refusal it climbs by `probeIncrease` (from 2.5 to 3 in 10 writes):
    //   nothing says yet that the ceiling is too high, and 0.002 would take 250 writes (83 s) to
    //   reach it, most of a 200-file copy (the bench's wan workload 5 would be 1.11 times the floor).
    public static let probeIncrease = 0.05
    public static let increase = 0.002
    public static let decreaseFactor = 0.9

    public var description: String {
        let rise = ceiling > perSecond ? " rising to \(Pacer.format(ceiling))" : ""
        return "\(Pacer.format(perSecond)) writes/s\(rise) after a burst of \(burst)"
    }
}
