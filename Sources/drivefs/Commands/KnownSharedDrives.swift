import DriveClient
import DriveSupport
import Foundation

/// The shared drives a profile has mounted, by ID and name, kept beside the profile's cache
/// directories (`<cache>/<profile>.shared-drives.json`), so that `drivefs mount --shared-drive
/// NAME` can start offline: the name is resolved from here when Drive cannot be reached (and the
/// drive's saved index then serves the mount). Replaced whole (`AtomicFile`) after each resolution
/// that reached Drive; unreadable or damaged, it counts as empty (a name then needs Drive, as before).
struct KnownSharedDrives {
    let path: String

    init(cacheRoot: URL, profile: String) {
        path = cacheRoot.appendingPathComponent("\(profile).shared-drives.json").path
    }

    private func load() -> [SharedDrive] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        return (try? JSONDecoder().decode([SharedDrive].self, from: data)) ?? []
    }

    /// The drive named (or whose ID is) `nameOrID`, when exactly one known drive matches.
    func find(_ nameOrID: String) -> SharedDrive? {
        let drives = load()
        if let byID = drives.first(where: { $0.id == nameOrID }) { return byID }
        let named = drives.filter { $0.name == nameOrID }
        return named.count == 1 ? named[0] : nil
    }

    /// Keeps `drive` (its current name replaces an older one). A failure only logs: the mount goes on.
    func remember(_ drive: SharedDrive) {
        var drives = load()
        if drives.contains(drive) { return }
        drives.removeAll { $0.id == drive.id }
        drives.append(drive)
        do {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            let data = try JSONEncoder().encode(drives)
            try AtomicFile.write(Array(data), to: path, mode: 0o600, durable: true)
        } catch {
            Log.shared.warning("mount", "cannot remember the shared drive '\(drive.name)' in \(path) (\(error)); "
                               + "mounting it by name will need Drive")
        }
    }
}
