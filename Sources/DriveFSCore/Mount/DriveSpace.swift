import DriveClient
import DriveSupport
import Foundation

/// Drive's space as the mount shows it: `statfs` (the quota, asked at most once a minute for `df`,
/// an older answer kept when Drive is slow) and the free space a close checks a file's growth
/// against (asked at most once a `quotaRefreshInterval`, under a short deadline).
///
/// Its two locks are leaves (`LockRank.leaf`, asserted in debug builds); Drive is asked with
/// neither held.
final class DriveSpace: Sendable {
    private let backend: any DriveBackend
    private let time: any TimeSource
    private let configuration: DriveFSConfiguration
    /// How many items the mount knows (the inode counts `statfs` shows).
    private let itemCount: @Sendable () -> Int
    private let about = RankedLocked<(value: DriveAbout?, fetchedAt: Double)>(.leaf, (nil, 0))
    /// When a close last asked Drive for its quota (successful or not): at most one about.get per
    /// `quotaRefreshInterval` for closes, whatever Drive answers.
    private let quotaAskedAt = RankedLocked<Double>(.leaf, -Double.infinity)

    init(backend: any DriveBackend, time: any TimeSource, configuration: DriveFSConfiguration,
         itemCount: @escaping @Sendable () -> Int) {
        self.backend = backend
        self.time = time
        self.configuration = configuration
        self.itemCount = itemCount
    }

    /// The statistics to answer at once (the quota asked less than a minute ago), or nil.
    var recentStatistics: FilesystemStatistics? {
        let cached = about.withLock { $0 }
        guard let value = cached.value, time.now() - cached.fetchedAt < 60 else { return nil }
        return statistics(value)
    }

    /// Asks Drive for the quota (on an I/O thread). When Drive fails, an older answer is better
    /// than none: df should not fail because Drive is slow.
    func fetchStatistics() throws(FilesystemError) -> FilesystemStatistics {
        let cached = about.withLock { $0 }
        do {
            let value = try backend.about()
            about.withLock { $0 = (value, time.now()) }
            return statistics(value)
        } catch {
            if let value = cached.value { return statistics(value) }
            throw FilesystemError.from(error)
        }
    }

    /// Bytes Drive has free for this account (`about.storageQuota`: limit − usage), as the mount
    /// knows it: the answer `df` uses, asked again by a close at most every
    /// `quotaRefreshInterval` seconds (one request, its deadline short: a close does not wait
    /// long for Drive). nil: no limit (an unlimited account), or not known (Drive did not answer).
    /// `ask`: false answers from what is known, never asking Drive (a caller holding a lock).
    func freeSpace(ask mayAsk: Bool = true) -> Int64? {
        let now = time.now()
        var known = about.withLock { $0 }
        let stale = known.value == nil || now - known.fetchedAt >= configuration.quotaRefreshInterval
        let ask = mayAsk && stale && quotaAskedAt.withLock { asked -> Bool in
            guard now - asked >= configuration.quotaRefreshInterval || known.value == nil && asked == -Double.infinity else {
                return false
            }
            asked = now
            return true
        }
        if ask {
            let context = RequestContext(priority: .interactive, deadline: now + min(10, configuration.requestDeadline))
            if let fresh = context.scope({ try? backend.about() }) {
                known = (fresh, time.now())
                about.withLock { $0 = known }
            }
        }
        guard let value = known.value, let limit = value.storageLimit else { return nil }
        return max(0, limit - max(0, value.storageUsage ?? 0))
    }

    private func statistics(_ about: DriveAbout) -> FilesystemStatistics {
        let blockSize: UInt64 = 4096
        let used = UInt64(max(0, about.storageUsage ?? 0))
        // Unlimited storage (no limit): show a petabyte, so that df and tools that check room work.
        let limit = about.storageLimit.map { UInt64(max(0, $0)) } ?? max(used, 1 << 50)
        let free = limit > used ? limit - used : 0
        let files = UInt64(itemCount())
        return FilesystemStatistics(blockSize: blockSize, totalBlocks: limit / blockSize, freeBlocks: free / blockSize,
                                    totalFiles: files + 1_000_000, freeFiles: 1_000_000,
                                    maximumNameLength: UInt64(NameMapper.maximumNameBytes))
    }
}
