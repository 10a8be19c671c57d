import DriveSupport
import Foundation

/// What `drivefs status` shows of the filesystem itself: cache use against the cap, the change
/// feed's lag, uploads, the metadata index (folders packed and materialized, the memory they take).
/// Reads counters only (no lock beyond each counter's own leaf, the table's held for a few loads;
/// no Drive call), so it may be called from any thread, at any time, before `start` too.
extension DriveFilesystem {
    public func status() -> MountStatus.Filesystem {
        let health = poller.currentHealth
        let changes = MountStatus.Changes(
            pollIntervalSeconds: poller.pollInterval,
            lastPoll: health.lastSuccess.map { RFC3339.format(millis: Int64(($0 * 1000).rounded(.down))) },
            // The poller's own clock (the one its success times come from).
            lagSeconds: poller.lag,
            lastError: health.lastFailure)
        let pinned = pinStatus
        return MountStatus.Filesystem(
            cache: MountStatus.Cache(directory: configuration.cacheDirectory.path, usedBytes: cache.bytesUsed,
                                     capBytes: configuration.cacheSize, pinnedBytes: cache.keptBytes,
                                     pinnedNeededBytes: pinned.reduce(0) { $0 + $1.bytes }),
            uploads: uploads.status,
            changes: changes,
            items: table.count,
            index: table.indexStatus,
            pins: pinned)
    }
}
