import DriveClient
import DriveFSCore
import DriveSupport
import Foundation
import Glibc

/// `drivefs mount`'s part of `drivefs status`: who and where the mount is, around what the
/// filesystem says of itself (`DriveFilesystem.status()`), published by a `StatusPublisher`.
extension MountCommand {
    struct StatusIdentity: Sendable {
        let mountpoint: String
        let profile: String
        let account: String?
        let drive: String
    }

    /// Starts publishing; call in the process that serves the mount (after daemonizing). A
    /// runtime directory that cannot be used costs `drivefs status` this mount, not the mount.
    static func startPublishingStatus(of filesystem: DriveFilesystem, _ identity: StatusIdentity, pacer: Pacer?,
                                      reachability: Reachability?, environment: [String: String],
                                      quotaDirectory: URL? = nil) -> StatusPublisher? {
        StatusPublisher.prepareSignal()
        // The quota spent in the last minute, kept for the next mount every `quotaSaveInterval`
        // seconds of publishing (a small file written without fsync: cheap at this pace).
        let lastQuotaSave = Locked(-Double.infinity)
        let pid = getpid()
        let processStart = StatusDirectory.processStartTime(pid)
        let started = RFC3339.format(millis: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
        let publisher = StatusPublisher(directory: StatusDirectory.resolve(environment), pid: pid) {
            let problem = Log.shared.lastProblem.map {
                MountStatus.Problem(at: RFC3339.format(millis: $0.millis), level: $0.level.description, area: $0.area, message: $0.message)
            }
            let state = filesystem.status()
            if let pacer, let quotaDirectory {
                let now = Date().timeIntervalSince1970
                let due = lastQuotaSave.withLock { last -> Bool in
                    guard now - last >= quotaSaveInterval else { return false }
                    last = now
                    return true
                }
                if due { QuotaCarryOver.save(from: pacer, in: quotaDirectory) }
            }
            return MountStatus(
                mountpoint: identity.mountpoint, profile: identity.profile, account: identity.account, drive: identity.drive,
                pid: pid, processStart: processStart, version: DriveFSVersion.current, started: started,
                updated: RFC3339.format(millis: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))),
                filesystem: state, lastError: problem, pacing: pacer.map { pacing($0.status, uploads: state.uploads) },
                offlineSince: reachability?.offlineSince.map { RFC3339.format(millis: Int64(($0 * 1000).rounded(.down))) })
        }
        do {
            try publisher.start()
            Log.shared.info("status", "publishing the mount's status in \(publisher.directory.file(for: pid))")
            return publisher
        } catch {
            Log.shared.warning("status", "drivefs status will not show this mount: \(error)")
            return nil
        }
    }

    /// How often a serving mount keeps the quota it spent in the last minute for the next mount.
    static let quotaSaveInterval: Double = 5

    static func pacing(_ p: Pacer.Status, uploads: UploadQueueStatus) -> MountStatus.Pacing {
        MountStatus.Pacing(p, uploads: uploads)
    }
}
