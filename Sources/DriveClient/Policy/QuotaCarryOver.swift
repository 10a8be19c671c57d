import DriveSupport
import Foundation

/// The quota units a mount spent in its last minute, kept in a small file of its cache directory so
/// that the next mount of the same cache directory starts with them in its pacer's sliding minute
/// (docs/semantics.md, "Google's limits"). Without it a remount right after a busy mount starts
/// with an empty minute and can spend Google's whole per-user budget a second time within the same
/// minute: refusals, and the slow run the `wan` bench showed.
///
/// Contracts:
/// - `save` replaces the file atomically (a reader sees the old file or the new one, never a part),
///   without fsync: after a crash the file may be older or missing, which costs at most one
///   unpaced minute, as before this existed.
/// - `load` ignores a missing file silently, and a file it cannot read, a corrupt one, or one
///   written under the other kind of budget (units against the legacy quota's requests), with a
///   log line; charges a minute old or older are dropped (`Pacer.carryOver`).
/// - The file holds times and numbers only: nothing about the account or its files.
public struct QuotaCarryOver: Codable, Sendable, Equatable {
    /// Units (or requests, for the legacy quota) charged at `at`, seconds since the epoch.
    public struct Spend: Codable, Sendable, Equatable {
        public var at: Double
        public var units: Int

        public init(at: Double, units: Int) {
            self.at = at
            self.units = units
        }
    }

    /// `QuotaBudget.Metering`'s raw value: what the units are.
    public var metering: String
    public var spent: [Spend]

    public init(metering: String, spent: [Spend]) {
        self.metering = metering
        self.spent = spent
    }

    /// The file's name in a cache directory.
    public static let fileName = "quota-minute.json"

    /// Writes what `pacer` charged in the last minute to `directory`'s file (nothing without a
    /// quota budget). A failure is logged and otherwise ignored: the file is an optimisation.
    public static func save(from pacer: Pacer, in directory: URL) {
        guard let quota = pacer.quota else { return }
        let record = QuotaCarryOver(metering: quota.metering.rawValue, spent: pacer.quotaSpentLastMinute())
        let path = directory.appendingPathComponent(fileName).path
        do {
            try AtomicFile.write(try JSONEncoder().encode(record), to: path, durable: false)
        } catch {
            Log.shared.warning("pacer", "cannot keep the quota spent in the last minute for the next mount: \(error)")
        }
    }

    /// Counts in `pacer`'s minute what the file in `directory` says an earlier mount spent; returns
    /// the units taken in (0 when there is no usable file).
    @discardableResult
    public static func load(into pacer: Pacer, from directory: URL) -> Int {
        guard let quota = pacer.quota else { return 0 }
        let path = directory.appendingPathComponent(fileName).path
        guard FileManager.default.fileExists(atPath: path) else { return 0 }
        let record: QuotaCarryOver
        do {
            record = try JSONDecoder().decode(QuotaCarryOver.self, from: try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            Log.shared.warning("pacer", "ignoring \(path), which cannot be read as the quota an earlier mount spent: \(error)")
            return 0
        }
        guard record.metering == quota.metering.rawValue else {
            Log.shared.info("pacer", "ignoring the quota an earlier mount spent: it was metered in \(record.metering), this mount in \(quota.metering.rawValue)")
            return 0
        }
        let units = pacer.carryOver(record.spent)
        if units > 0 {
            Log.shared.info("pacer", "\(units) of this minute's \(quota.perMinute) \(quota.metering == .units ? "quota units" : "requests") were spent by the previous mount")
        }
        return units
    }
}
