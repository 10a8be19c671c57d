import DriveClient
import Foundation

/// Everything the Drive filesystem is told at mount time (the `drivefs mount` options).
public struct DriveFSConfiguration: Sendable {
    /// Owner and group every file shows (under `posixMetadata`, every file without an owner of its
    /// own), and the umask applied to the modes of items that have no mode of their own (made by
    /// other clients, or with the default mode); a mode set here is shown as it was set.
    public var userID: UInt32
    public var groupID: UInt32
    public var umask: UInt32
    /// `--posix-metadata`: ownership (chown, and the caller of a create), FIFOs, sockets, device
    /// nodes and ctime are kept in each item's appProperties and shown from there. Off: every item
    /// shows `userID`/`groupID`, chown to anyone else answers EPERM, and `mknod` makes only
    /// regular files (a shared personal drive may not want owners stored).
    public var posixMetadata: Bool = false
    /// Block cache and metadata index live here (`$XDG_CACHE_HOME/drivefs/<profile>` by default).
    public var cacheDirectory: URL
    /// The block cache's cap in bytes (least recently used blocks of closed files go first).
    public var cacheSize: Int64
    /// Bytes the cache's filesystem keeps free (`--cache-min-free`): the block cache evicts below its
    /// cap to keep them (0: only the cap counts).
    public var cacheMinimumFree: Int64 = 0
    /// The cache's filesystem's free bytes now (nil: statvfs(2) of the cache directory). A test
    /// seam: `--cache-min-free` is tested against a value the test sets, not a full disk.
    public var cacheFreeSpace: (@Sendable () -> Int64?)? = nil
    /// A folder's listing is trusted this long (seconds), then listed again when next used.
    public var directoryCacheTTL: Double
    /// Seconds between two reads of the change feed.
    public var pollInterval: Double
    /// A folder nothing used for this long has the kernel let go of its files' entries, so that
    /// its nodes are packed again (`--release-idle-after`, NodeTable+Shedding.swift; 0: never).
    public var releaseIdleAfter: Double = 10
    public var exportFormats: ExportFormats
    /// Read-only mount (every write fails with EROFS).
    public var readOnly: Bool
    /// Uploads that run at once (`--transfers`).
    public var transfers: Int
    /// Seconds a new file's upload waits after its last close (`--upload-delay`): an editor's save
    /// renames it over the original at once, and it then becomes new content for that file
    /// (`UploadQueue.retarget`). An fsync, `--sync-close` or an unmount does not wait for it.
    public var newFileSettle: Double = 2
    /// Seconds the removal of a file on Drive (`rm`) waits before it is sent: a file made again
    /// under its name in its folder and closed meanwhile becomes new content of the removed file,
    /// which keeps its Drive ID (`saveOverRemoved`). 0: removals go at once. `drivefs mount` sets
    /// it to `--upload-delay`; the core's default keeps removals at once.
    public var removalSettle: Double = 0
    /// Seconds a folder made here waits before its create is sent, and a change of an item's
    /// time, mode or owners with no queued upload or create to carry it waits before it is sent:
    /// what follows meanwhile rides along in the same request (tar x, `cp -a`, `rsync -a` give a
    /// folder its time and mode after filling it: one create instead of a create and two
    /// updates). 0: sent at once, before the call returns. `drivefs mount` sets it to
    /// `--upload-delay`; the core's default keeps them at once.
    public var changeSettle: Double = 0
    /// `close` waits until the file is on Drive and reports an upload's failure (`--sync-close`).
    public var syncClose: Bool
    /// Removals delete for good instead of moving to Drive's trash (`--delete-permanently`).
    public var deletePermanently: Bool
    /// At unmount, how long the daemon goes on uploading what was closed before it exits (what is
    /// left stays in the journal for the next mount).
    public var drainTimeout: Double
    /// At unmount, how long the drain goes on while the mount is offline (Drive unreachable) before
    /// it gives up: what is left stays in the journal, and an unmount on a train takes seconds,
    /// not the whole `drainTimeout`. A probe that reaches Drive meanwhile makes it go on.
    public var offlineDrainGrace: Double = 10

    /// The block cache's unit, in bytes: a cold random read fetches whole blocks, never less.
    public var blockSize: Int
    /// How far a sequential reader is read ahead, at most, and in pieces of what size (each piece
    /// is one HTTP range stream; several run in parallel): a `readAheadStreams`th of the window,
    /// from `readAheadChunk` up to `maxReadAheadChunk`.
    public var maxReadAhead: Int64
    public var readAheadChunk: Int64
    public var maxReadAheadChunk: Int64 = 64 << 20
    public var readAheadStreams: Int
    /// A file read at random (several misses of one handle, none sequential) and no larger than
    /// this is filled in the background at `.background` priority, in `randomReadFillChunk` range
    /// requests, `randomReadFillStreams` at a time, so that its next random reads are local instead
    /// of a download each (0: never; never more than a quarter of the cache).
    public var randomReadFillLimit: Int64 = 1 << 30
    public var randomReadFillChunk: Int64 = 8 << 20
    public var randomReadFillStreams: Int = 2
    /// Misses of one handle, none of them sequential, before its file is filled.
    public var randomReadFillAfter: Int = 8
    /// How far a random reader's miss runs on past the read, at most, once its file is being
    /// filled (its bytes are coming anyway): from the `randomReadFillAfter`th miss on, each miss's
    /// range doubles from one block up to this, from the missed block on to the first block that
    /// is present or already being fetched. The reader is answered as soon as its own blocks are
    /// in; the rest streams on in the same request. Fewer, larger requests: 1,000 random reads
    /// of a 1 GiB file cost a few hundred downloads instead of one a miss (issue 16). 0: one
    /// block a miss, as for a file too large to fill.
    public var randomReadRange: Int64 = 16 << 20
    /// Folders listed in one query (`'a' in parents or 'b' in parents ...`).
    public var listingGroupSize: Int
    /// From mount on, every folder of the drive is listed in the background (the whole-drive index,
    /// kept packed and on disk); otherwise folders are listed as they are used, and those below a
    /// listed one ahead of the user (`drivefs mount --no-index`).
    public var indexWholeDrive: Bool
    /// A new file written from its first byte starts going to Drive once it holds this many bytes,
    /// while it is still being written (`EarlyUpload`); 0: only after its last close.
    public var earlyUploadThreshold: Int64
    /// Threads that answer requests needing Drive (never the kernel's threads), and that prefetch listings.
    public var interactiveThreads: Int
    public var backgroundListingThreads: Int
    /// A user's request that needs Drive fails with EIO after this many seconds of retrying.
    public var requestDeadline: Double
    /// How long the kernel may cache names and attributes (seconds); changes seen in the feed are
    /// pushed to the kernel at once, so this only bounds staleness when notifications fail.
    public var kernelCacheTimeout: Double
    /// The largest file Drive holds (Google: 5 TB per file, `about.maxUploadSize` 5,497,558,138,880):
    /// a `truncate` or a write whose end would pass it answers EFBIG at once and changes nothing.
    public var maximumFileSize: Int64
    /// How old the account's storage quota (`about.storageQuota`, what `df` shows) may be when a
    /// close checks that the file's growth fits in Drive's free space (seconds): at most one
    /// about.get per this interval, shared with `statfs`.
    public var quotaRefreshInterval: Double

    public init(userID: UInt32, groupID: UInt32, umask: UInt32 = 0o022, cacheDirectory: URL,
                cacheSize: Int64 = 10 << 30, directoryCacheTTL: Double = 300, pollInterval: Double = 30,
                exportFormats: ExportFormats = ExportFormats(), readOnly: Bool = true, blockSize: Int = 128 << 10,
                maxReadAhead: Int64 = 256 << 20, readAheadChunk: Int64 = 4 << 20, readAheadStreams: Int = 4,
                listingGroupSize: Int = 50, interactiveThreads: Int = 16, backgroundListingThreads: Int = 4,
                requestDeadline: Double = 60, kernelCacheTimeout: Double = 30, transfers: Int = 4, syncClose: Bool = false,
                deletePermanently: Bool = false, drainTimeout: Double = 3600, indexWholeDrive: Bool = false,
                earlyUploadThreshold: Int64 = 16 << 20, maximumFileSize: Int64 = DriveFSConfiguration.driveMaximumFileSize,
                quotaRefreshInterval: Double = 60) {
        self.userID = userID
        self.groupID = groupID
        self.umask = umask
        self.cacheDirectory = cacheDirectory
        self.cacheSize = cacheSize
        self.directoryCacheTTL = directoryCacheTTL
        self.pollInterval = pollInterval
        self.exportFormats = exportFormats
        self.readOnly = readOnly
        self.blockSize = blockSize
        self.maxReadAhead = maxReadAhead
        self.readAheadChunk = readAheadChunk
        self.readAheadStreams = readAheadStreams
        self.listingGroupSize = listingGroupSize
        self.interactiveThreads = interactiveThreads
        self.backgroundListingThreads = backgroundListingThreads
        self.requestDeadline = requestDeadline
        self.kernelCacheTimeout = kernelCacheTimeout
        self.transfers = max(1, transfers)
        self.syncClose = syncClose
        self.deletePermanently = deletePermanently
        self.drainTimeout = drainTimeout
        self.indexWholeDrive = indexWholeDrive
        self.earlyUploadThreshold = max(0, earlyUploadThreshold)
        self.maximumFileSize = max(0, maximumFileSize)
        self.quotaRefreshInterval = max(0, quotaRefreshInterval)
    }

    /// Google's largest file: 5 TiB (`about.maxUploadSize`, discovery's `mediaUpload.maxSize`).
    public static let driveMaximumFileSize: Int64 = 5_497_558_138_880
}
