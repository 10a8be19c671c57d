import DriveClient
import Foundation

/// What `drivefs status` shows of one live mount: the daemon publishes it as JSON in its runtime
/// directory (`StatusDirectory`), and `drivefs status --json` prints these values as they are.
///
/// The JSON is a contract for scripts (docs/status.md): fields are added, never renamed or
/// removed, within one `format`. Times are RFC 3339 in UTC; sizes are bytes.
public struct MountStatus: Codable, Sendable, Equatable {
    /// The version of this layout (a reader skips files of another format).
    public static let currentFormat = 1

    public var format: Int
    /// The absolute mount point.
    public var mountpoint: String
    public var profile: String
    /// The account's e-mail address, when the profile knows it.
    public var account: String?
    /// What is mounted: `My Drive`, or `shared drive 'NAME'`.
    public var drive: String
    /// The daemon serving the mount, and its start time in clock ticks since boot
    /// (`/proc/PID/stat`, field 22), so that a reused pid is not taken for it.
    public var pid: Int32
    public var processStart: UInt64?
    /// drivefs's version.
    public var version: String
    /// When the mount went live, and when this status was taken.
    public var started: String
    public var updated: String
    public var cache: Cache
    public var uploads: Uploads
    public var changes: Changes
    /// Items the mount knows (listed folders' children and everything restored from the index).
    public var items: Int
    /// How the metadata index holds them (nil in files of daemons before it was added).
    public var index: Index?
    /// The last warning or error the daemon logged, whatever its log level (nil: none yet).
    public var lastError: Problem?
    /// What Google's limits hold back now: the pacer's lanes (nil in files of daemons before it was added).
    public var pacing: Pacing?
    /// Since when Drive cannot be reached (RFC 3339), while the mount is offline; nil online.
    public var offlineSince: String?
    /// What is pinned (kept offline), each pinned item with its files and how much is local (nil
    /// in files of daemons before pins were added).
    public var pins: [Pin]?

    /// One pinned item (`drivefs pin`): a file, or a folder with everything in it.
    public struct Pin: Codable, Sendable, Equatable {
        /// Where it shows in the mount (as of the last sweep), and its Drive ID.
        public var path: String
        public var id: String
        public var folder: Bool
        /// Files it covers, their bytes, and the bytes of them held locally now.
        public var files: Int
        public var bytes: Int64
        public var localBytes: Int64
        /// False when the item is not in the index (removed from Drive, or not listed yet).
        public var found: Bool
        /// Workspace documents it covers whose current export is not in the cache yet (their bytes
        /// are counted once exported: Drive gives no size before).
        public var documentsNotExported: Int

        public init(path: String, id: String, folder: Bool, files: Int, bytes: Int64, localBytes: Int64, found: Bool,
                    documentsNotExported: Int = 0) {
            self.documentsNotExported = documentsNotExported
            self.path = path
            self.id = id
            self.folder = folder
            self.files = files
            self.bytes = bytes
            self.localBytes = localBytes
            self.found = found
        }
    }

    /// The pacer's two lanes (docs/client.md, "Pacing"): the quota lane (units, or requests for a
    /// legacy project, over a sliding minute) and the write lane (writes a second after a burst).
    public struct Pacing: Codable, Sendable, Equatable {
        /// `units` or `requests` (legacy), and the budget of a minute.
        public var quotaMetering: String?
        public var quotaPerMinute: Int?
        /// Spent in the minute ending at `updated`.
        public var quotaUsedLastMinute: Int
        /// Writes a second the write lane lets go now (nil: no write lane), and its burst.
        public var writeRate: Double?
        public var writeBurst: Int?
        /// The most writes a second the lane climbs to (`--write-ceiling`; nil in older files).
        public var writeCeiling: Double?
        /// Requests waiting for a lane now.
        public var requestsQueued: Int
        /// Writes waiting: the upload queue's backlog (each job at least one write) and the
        /// requests at the write lane now.
        public var writesQueued: Int
        /// Seconds for the writes waiting now to go at `writeRate`.
        public var writeDrainSeconds: Double?
        /// Refusals Google sent since the mount started, per lane.
        public var quotaRefusals: Int
        public var writeRefusals: Int

        public init(quotaMetering: String?, quotaPerMinute: Int?, quotaUsedLastMinute: Int, writeRate: Double?, writeBurst: Int?,
                    requestsQueued: Int, writesQueued: Int, writeDrainSeconds: Double?, quotaRefusals: Int, writeRefusals: Int,
                    writeCeiling: Double? = nil) {
            self.quotaMetering = quotaMetering
            self.quotaPerMinute = quotaPerMinute
            self.quotaUsedLastMinute = quotaUsedLastMinute
            self.writeRate = writeRate
            self.writeBurst = writeBurst
            self.writeCeiling = writeCeiling
            self.requestsQueued = requestsQueued
            self.writesQueued = writesQueued
            self.writeDrainSeconds = writeDrainSeconds
            self.quotaRefusals = quotaRefusals
            self.writeRefusals = writeRefusals
        }
    }

    public struct Cache: Codable, Sendable, Equatable {
        public var directory: String
        /// Bytes of file content held in the block cache, and its cap (`--cache-size`).
        public var usedBytes: Int64
        public var capBytes: Int64
        /// Bytes of the pinned files' content held in the cache (never evicted; counted in
        /// `usedBytes`), and the bytes all pinned files need (nil in older files).
        public var pinnedBytes: Int64?
        public var pinnedNeededBytes: Int64?

        public init(directory: String, usedBytes: Int64, capBytes: Int64, pinnedBytes: Int64? = nil, pinnedNeededBytes: Int64? = nil) {
            self.directory = directory
            self.usedBytes = usedBytes
            self.capBytes = capBytes
            self.pinnedBytes = pinnedBytes
            self.pinnedNeededBytes = pinnedNeededBytes
        }
    }

    /// The upload queue's own status, as the queue reports it (queued, running with bytes done,
    /// failed, the last error).
    public typealias Uploads = UploadQueueStatus
    public typealias Upload = UploadProgress

    public struct Changes: Codable, Sendable, Equatable {
        /// `--poll-interval`, seconds.
        public var pollIntervalSeconds: Double
        /// When the change feed was last read successfully (nil: not yet since the mount started).
        public var lastPoll: String?
        /// Seconds since then, as of `updated` (`drivefs status` brings it up to date when it reads
        /// the file): how far behind Drive the mount may be.
        public var lagSeconds: Double?
        /// Why the polls since `lastPoll` failed (nil while they succeed).
        public var lastError: String?

        public init(pollIntervalSeconds: Double, lastPoll: String?, lagSeconds: Double?, lastError: String?) {
            self.pollIntervalSeconds = pollIntervalSeconds
            self.lastPoll = lastPoll
            self.lagSeconds = lagSeconds
            self.lastError = lastError
        }
    }

    /// The metadata index in memory: folders whose listing is packed (the compact form) or
    /// materialized (a node per child, while the kernel or a handle needs them; packed again after),
    /// and the memory they take.
    public struct Index: Codable, Sendable, Equatable {
        /// What one node costs, for the estimate: its `DriveFile`'s strings, the node, its entries in
        /// the table's dictionaries and the listing's, with the allocator's rounding (measured: a
        /// 202,101-item drive walked with `find` grew by about 330 MiB, 1.7 KB a node).
        public static let bytesPerNode = 1_700
        /// What one packed item costs beyond its bytes: its ID hash in the listing and its entry in
        /// the table's `packedLocation`.
        public static let bytesPerPackedItem = 48

        public var packedFolders: Int
        public var packedItems: Int
        /// The packed listings' bytes (exact).
        public var packedBytes: Int
        public var materializedFolders: Int
        /// Items held as nodes: the children of materialized folders, the root, and items the kernel
        /// still holds outside them.
        public var nodes: Int
        /// An estimate of the memory the nodes take: `nodes` × `bytesPerNode`.
        public var materializedBytes: Int
        /// An estimate of the whole index's memory: `materializedBytes`, plus `packedBytes` and
        /// `bytesPerPackedItem` per packed item.
        public var estimatedBytes: Int

        public init(packedFolders: Int, packedItems: Int, packedBytes: Int, materializedFolders: Int, nodes: Int) {
            self.packedFolders = packedFolders
            self.packedItems = packedItems
            self.packedBytes = packedBytes
            self.materializedFolders = materializedFolders
            self.nodes = nodes
            materializedBytes = nodes * Self.bytesPerNode
            estimatedBytes = materializedBytes + packedBytes + packedItems * Self.bytesPerPackedItem
        }
    }

    public struct Problem: Codable, Sendable, Equatable {
        public var at: String
        /// `warning` or `error`.
        public var level: String
        /// The log area (`fs`, `changes`, `client`...).
        public var area: String
        public var message: String

        public init(at: String, level: String, area: String, message: String) {
            self.at = at
            self.level = level
            self.area = area
            self.message = message
        }
    }

    /// The part of a status the filesystem itself knows (`DriveFilesystem.status()`); the command
    /// line adds who and where.
    public struct Filesystem: Sendable, Equatable {
        public var cache: Cache
        public var uploads: Uploads
        public var changes: Changes
        public var items: Int
        public var index: Index?
        public var pins: [Pin]?

        public init(cache: Cache, uploads: Uploads, changes: Changes, items: Int, index: Index? = nil, pins: [Pin]? = nil) {
            self.pins = pins
            self.cache = cache
            self.uploads = uploads
            self.changes = changes
            self.items = items
            self.index = index
        }
    }

    public init(mountpoint: String, profile: String, account: String?, drive: String, pid: Int32, processStart: UInt64?,
                version: String, started: String, updated: String, filesystem: Filesystem, lastError: Problem?,
                pacing: Pacing? = nil, offlineSince: String? = nil) {
        format = Self.currentFormat
        self.offlineSince = offlineSince
        self.mountpoint = mountpoint
        self.profile = profile
        self.account = account
        self.drive = drive
        self.pid = pid
        self.processStart = processStart
        self.version = version
        self.started = started
        self.updated = updated
        cache = filesystem.cache
        uploads = filesystem.uploads
        changes = filesystem.changes
        items = filesystem.items
        index = filesystem.index
        pins = filesystem.pins
        self.lastError = lastError
        self.pacing = pacing
    }
}

extension UploadQueueStatus {
    /// No upload queued, running or failed.
    public static let none = UploadQueueStatus()
}

extension MountStatus.Pacing {
    /// The lanes as `drivefs status` shows them, from the pacer's state and the upload queue's.
    /// The writes that wait are the queue's backlog (jobs queued: each is at least one write) and
    /// the requests at the write lane now (a running upload's, or a rename's): the pacer's waiters
    /// alone are at most the transfers running, and a drain time from them said seconds where a
    /// backlog of hundreds of files takes minutes. The time to drain is the backlog's at the write
    /// rate now.
    public init(_ p: Pacer.Status, uploads: UploadQueueStatus) {
        let writes = uploads.queued + max(uploads.running.count, p.writesQueued)
        self.init(quotaMetering: p.quota?.metering.rawValue, quotaPerMinute: p.quota?.perMinute,
                  quotaUsedLastMinute: p.quotaUsedLastMinute, writeRate: p.writeRate, writeBurst: p.writes?.burst,
                  requestsQueued: p.queued, writesQueued: writes,
                  writeDrainSeconds: p.writeRate.map { $0 > 0 ? Double(writes) / $0 : 0 },
                  quotaRefusals: p.quotaRefusals, writeRefusals: p.writeRefusals, writeCeiling: p.writes?.ceiling)
    }
}
