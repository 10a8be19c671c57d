import DriveSupport
import Foundation

/// Google's limits on files.list that batched multi-parent listings must survive
/// (drive-behaviours §3.5a), in one place.
public struct ListingLimits: Sendable, Equatable {
    /// A `q` with more `'X' in parents` terms than this (counted over the whole query) is a 400
    /// "The query is too complex.". Google publishes no number: rclone's groups of 50 pass there,
    /// reports of failures name long chains (hundreds), so the emulator draws the line at 100.
    public static let defaultMaxParentTerms = 100
    /// A files.list page holds at most this many items when `parents` is among the selected file
    /// fields, whatever `pageSize` says (long-standing reports: google-api-dotnet-client#808).
    public static let parentsPageCap = 460

    public var maxParentTerms: Int

    public init(maxParentTerms: Int = ListingLimits.defaultMaxParentTerms) {
        self.maxParentTerms = maxParentTerms
    }

    /// Google's answer to a query over the limit. The message is Google's (reported by PyDrive2
    /// users); reason and location are the emulator's guess, those of every other bad `q`.
    static var queryTooComplex: GoogleError {
        GoogleError(400, reason: "invalid", message: "The query is too complex.", location: "q", locationType: "parameter")
    }
}

/// Google's known multi-parent listing bug, reproducible on demand (drive-behaviours §3.5a): a
/// query grouping several parents with `or` sometimes answers without the children of some of
/// them, or with nothing at all. Off by default; with it off, listings are exact.
///
/// When on, every files.list request whose query names two or more parents (`'A' in parents or
/// 'B' in parents …`) drops each of those parents independently with probability `fraction`: the
/// answer holds none of that parent's children. Draws come from one SplitMix64 seeded by `seed`,
/// so a given seed and request sequence always drop the same parents. Single-parent listings are
/// never touched (rclone's workaround re-lists each folder alone).
public final class ListingQuirks: Sendable {
    public struct Settings: Sendable, Equatable {
        /// 0 (off) … 1 (every grouped listing comes back empty).
        public var multiParentDropFraction: Double
        public var seed: UInt64

        public init(multiParentDropFraction: Double = 0, seed: UInt64 = 1) {
            self.multiParentDropFraction = multiParentDropFraction
            self.seed = seed
        }

        var json: [String: Any] { ["multiParentDrop": multiParentDropFraction, "seed": seed] }
    }

    private let state: Locked<(settings: Settings, random: SplitMix64)>

    public init(_ settings: Settings = Settings()) {
        state = Locked((settings, SplitMix64(seed: settings.seed)))
    }

    public var settings: Settings { state.withLock { $0.settings } }

    /// Replaces the settings and restarts the generator from the (new) seed.
    public func set(_ settings: Settings) {
        state.withLock { $0 = (settings, SplitMix64(seed: settings.seed)) }
    }

    /// The parents whose children this answer leaves out (empty unless the quirk is on and the
    /// query groups two or more parents).
    func droppedParents(_ parents: [String]) -> Set<String> {
        guard parents.count > 1 else { return [] }
        return state.withLock { s -> Set<String> in
            let fraction = s.settings.multiParentDropFraction
            guard fraction > 0 else { return [] }
            var dropped = Set<String>()
            for p in parents where s.random.nextUnitDouble() < fraction { dropped.insert(p) }
            return dropped
        }
    }

    /// `{"multiParentDrop": 0.5, "seed": 7}`: either key may be left out (it keeps its value;
    /// a new seed restarts the generator). Refuses other keys and out-of-range values.
    func update(fromJSON data: Data) throws {
        guard let object = (data.isEmpty ? [:] : try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw GoogleError.badRequest("Invalid quirks document: not a JSON object.")
        }
        // On Linux an NSNumber 1 also casts to Bool, so booleans are told apart by their type.
        func isBoolean(_ value: Any) -> Bool {
            type(of: value) == Bool.self || (value as? NSNumber).map { String(cString: $0.objCType) == "c" } == true
        }
        var next = settings
        for (key, value) in object {
            switch key {
            case "multiParentDrop":
                guard let n = value as? NSNumber, !isBoolean(value), (0...1).contains(n.doubleValue) else {
                    throw GoogleError.badRequest("Invalid quirks document: multiParentDrop must be a number in 0...1.")
                }
                next.multiParentDropFraction = n.doubleValue
            case "seed":
                guard let n = value as? NSNumber, !isBoolean(value), let seed = UInt64(exactly: n.doubleValue) else {
                    throw GoogleError.badRequest("Invalid quirks document: seed must be a non-negative integer.")
                }
                next.seed = seed
            default:
                throw GoogleError.badRequest("Invalid quirks document: unknown key \(key).")
            }
        }
        set(next)
    }

    var json: [String: Any] { settings.json }
}
