import DriveSupport
import Foundation

/// How a daemon that exited tells `drivefs unmount` that uploads were left in the journal:
/// `<cache>/uploads/unfinished` holds their count, written at exit (only then) and removed by the
/// next start.
public enum UnfinishedUploads {
    static func path(_ cacheDirectory: String) -> String { cacheDirectory + "/uploads/unfinished" }

    /// Uploads left by the daemon that last used `cacheDirectory` (0: none, or no note).
    public static func read(cacheDirectory: String) -> Int {
        guard let data = FileManager.default.contents(atPath: path(cacheDirectory)) else { return 0 }
        return Int(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    static func write(_ count: Int, cacheDirectory: String) {
        if count == 0 {
            unlink(path(cacheDirectory))
        } else {
            try? AtomicFile.write(Array("\(count)\n".utf8), to: path(cacheDirectory), mode: 0o600)
        }
    }
}
