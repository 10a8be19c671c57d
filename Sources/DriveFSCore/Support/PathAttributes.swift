import CSystem
import Glibc

/// Extended attributes of a path, for the command line's `drivefs pin` and `drivefs status PATH`
/// (the attributes a mount answers: `ExtendedAttributes`). The one place outside the filesystem
/// that calls getxattr(2)/setxattr(2) (through CSystem, which only this module imports).
public enum PathAttributes {
    /// The value of `name` on `path` (at most 64 KiB), or the errno that getxattr(2) answered.
    public static func read(_ path: String, _ name: String) -> Result<String, FilesystemError> {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let n = csystem_getxattr(path, name, &buffer, buffer.count)
        guard n >= 0 else { return .failure(FilesystemError(errno: errno)) }
        return .success(String(decoding: buffer[..<n], as: UTF8.self))
    }

    /// Sets `name` on `path` to `value`; the errno setxattr(2) answered when it fails.
    public static func write(_ path: String, _ name: String, _ value: String) throws(FilesystemError) {
        let bytes = Array(value.utf8)
        guard csystem_setxattr(path, name, bytes, bytes.count, 0) == 0 else { throw FilesystemError(errno: errno) }
    }
}
