import Foundation

/// Google's Drive limits as configured (`--limits google|legacy|none` and the flags that change
/// each number): quota units over a sliding minute per user and per project, the sustained write
/// limit per account, the daily upload cap per user, items per folder and per shared drive.
/// nil (or 0 from a flag) switches a limit off. drive-behaviours.md §4 and §4a are the source of
/// every default; docs/emulator.md#drive-limits says which numbers are inferred.
public struct DriveLimits: Sendable, Equatable {
    public enum Preset: String, Sendable, CaseIterable {
        /// No limit (the default: the project's own tests stay fast).
        case none
        /// Google's limits for Cloud projects created since 2026-05-01, all together.
        case google
        /// The quota of projects that used the API between 2025-11 and 2026-04: 12,000 requests a
        /// minute per user, every request costing 1 (until 2027-04-01).
        case legacy
    }

    /// Quota units a user may spend in any minute, per Cloud project.
    public var unitsPerUserPerMinute: Int?
    /// Quota units all users of one Cloud project may spend in any minute.
    public var unitsPerProjectPerMinute: Int?
    /// Cost in quota units of each route method name (`files.list`, `files.get.media`, …); a name
    /// not in the table costs nothing.
    public var methodCosts: [String: Int]
    /// Sustained writes per second per account (Google: "avoid exceeding 3 requests per second of
    /// sustained write or insert requests, per account").
    public var writesPerSecond: Double?
    /// Writes an account may send at once after being idle (≥ 1). Google documents none.
    public var writeBurst: Int
    /// Bytes of uploads and copies per user in any 24 hours.
    public var dailyUploadBytes: Int64?
    /// Items directly in one folder (roots exempt, as `numChildrenInNonRootLimitExceeded` says).
    public var maxItemsPerFolder: Int?
    /// Items in one shared drive.
    public var maxItemsPerSharedDrive: Int?
    /// The quirk `--quirk-refused-write-lands F`: a write refused by the write limit is carried out
    /// anyway with this probability (its answer is still the refusal). 0: off.
    public var refusedWriteLands: Double = 0

    public init(unitsPerUserPerMinute: Int? = nil, unitsPerProjectPerMinute: Int? = nil,
                methodCosts: [String: Int] = DriveLimits.googleCosts, writesPerSecond: Double? = nil,
                writeBurst: Int = DriveLimits.defaultWriteBurst, dailyUploadBytes: Int64? = nil,
                maxItemsPerFolder: Int? = nil, maxItemsPerSharedDrive: Int? = nil) {
        self.unitsPerUserPerMinute = unitsPerUserPerMinute
        self.unitsPerProjectPerMinute = unitsPerProjectPerMinute
        self.methodCosts = methodCosts
        self.writesPerSecond = writesPerSecond
        self.writeBurst = max(1, writeBurst)
        self.dailyUploadBytes = dailyUploadBytes
        self.maxItemsPerFolder = maxItemsPerFolder
        self.maxItemsPerSharedDrive = maxItemsPerSharedDrive
    }

    public init(preset: Preset) {
        switch preset {
        case .none: self.init()
        case .legacy: self.init(unitsPerUserPerMinute: 12_000, methodCosts: DriveLimits.legacyCosts)
        case .google:
            self.init(unitsPerUserPerMinute: 325_000, unitsPerProjectPerMinute: 1_000_000,
                      writesPerSecond: 3, dailyUploadBytes: 750_000_000_000,
                      maxItemsPerFolder: 500_000, maxItemsPerSharedDrive: 400_000)
        }
    }

    public static let none = DriveLimits(preset: .none)
    public static let google = DriveLimits(preset: .google)
    public static let legacy = DriveLimits(preset: .legacy)

    /// A few writes: Google documents no burst; the reference says "tens at most", and the issue
    /// "small". One second's worth at the default rate.
    public static let defaultWriteBurst = 3

    /// Costs in quota units. Google's published table names files.get 5, files.list 100, a download
    /// (`alt=media`) 200, files.update 50, files.generateIds 5; the rest are the emulator's choices,
    /// written down in docs/emulator.md#quota-units: a write like an update (50), a listing like
    /// files.list (100), a metadata read like files.get (5), media of any kind like a download (200).
    /// `drive.unknown` (a 404 for a path Drive does not have) costs nothing.
    public static let googleCosts: [String: Int] = [
        "files.get": 5, "files.list": 100, "files.get.media": 200, "files.export": 200,
        "files.update": 50, "files.update.upload": 50, "files.generateIds": 5,
        "files.create": 50, "files.create.upload": 50, "files.copy": 50, "files.delete": 50,
        "files.emptyTrash": 50, "changes.list": 100, "changes.getStartPageToken": 5, "about.get": 5,
        "revisions.list": 100, "revisions.get": 5, "revisions.get.media": 200, "revisions.export": 200, "revisions.update": 50, "revisions.delete": 50,
        "drives.list": 100, "drives.get": 5, "drives.create": 50, "drives.update": 50, "drives.delete": 50,
    ]

    /// The legacy quota counts requests: every Drive method costs 1.
    public static let legacyCosts: [String: Int] = googleCosts.mapValues { _ in 1 }

    /// The route methods the write limit counts: what Google calls "write or insert requests".
    /// A resumable upload counts once, when its session starts (its chunks carry no token and are
    /// charged to nobody); reads never count.
    public static let writeMethods: Set<String> = [
        "files.create", "files.create.upload", "files.update", "files.update.upload", "files.copy",
        "files.delete", "files.emptyTrash", "drives.create", "drives.update", "drives.delete",
        "revisions.update", "revisions.delete",
    ]

    /// The route methods whose bytes count against the daily upload cap.
    public static let uploadMethods: Set<String> = ["files.create.upload", "files.update.upload", "files.copy"]

    public func cost(of method: String) -> Int { methodCosts[method] ?? 0 }

    /// Whether any limit enforced per request is on (the items limits live in the store).
    public var metersRequests: Bool {
        unitsPerUserPerMinute != nil || unitsPerProjectPerMinute != nil || writesPerSecond != nil
            || dailyUploadBytes != nil
    }

    /// Whether anything at all is limited.
    public var isActive: Bool { metersRequests || maxItemsPerFolder != nil || maxItemsPerSharedDrive != nil }
}

extension GoogleError {
    /// Past the write limit, and past a project's quota (drive-behaviours §4, §4a): 403
    /// `usageLimits`/`rateLimitExceeded` "Rate Limit Exceeded", no `Retry-After`.
    static var rateLimitExceeded: GoogleError {
        GoogleError(403, reason: "rateLimitExceeded", message: "Rate Limit Exceeded", domain: "usageLimits")
    }

    /// Past the 750 GB a day of uploads and copies (drive-behaviours §4, §4a): the short lowercase
    /// message, on which rclone's `--drive-stop-on-upload-limit` gives up.
    static var uploadLimitExceeded: GoogleError {
        GoogleError(403, reason: "userRateLimitExceeded", message: "User rate limit exceeded.", domain: "usageLimits")
    }

    /// A folder (not a root) with its maximum of direct children: Google's "Resolve errors" guide
    /// (reason in drive-behaviours §2.4; the message as Google's guide and clients quote it).
    static var folderItemLimitExceeded: GoogleError {
        GoogleError(403, reason: "numChildrenInNonRootLimitExceeded",
                    message: "The limit for this folder's number of children (files and folders) has been exceeded.")
    }

    /// A shared drive with its maximum of items (Google's "Resolve errors" guide).
    static var sharedDriveItemLimitExceeded: GoogleError {
        GoogleError(403, reason: "teamDriveFileLimitExceeded", message: "The file limit for this shared drive has been exceeded.")
    }
}
