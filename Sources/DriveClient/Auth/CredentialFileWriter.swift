import DriveSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Private file writes for credentials (through `AtomicFile`: never half written, never readable
/// by others even for an instant), and the private directories that hold them.
enum CredentialFileWriter {
    static func write(_ bytes: [UInt8], to url: URL, mode: mode_t = 0o600) throws {
        do {
            try AtomicFile.write(bytes, to: url.path, mode: mode)
        } catch let failure as AtomicFile.Failure {
            throw OAuthError.configuration(failure.description)
        }
    }

    /// Creates the directory (and parents) with `mode` for what it creates; tightens an existing
    /// drivefs directory to `mode`.
    static func ensureDirectory(_ url: URL, mode: mode_t = 0o700) throws {
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDir) {
            guard isDir.boolValue else { throw OAuthError.configuration("\(url.path) exists and is not a directory") }
            _ = chmod(url.path, mode)
            return
        }
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: Int(mode)])
        } catch {
            throw OAuthError.configuration("cannot create \(url.path): \(error.localizedDescription)")
        }
        _ = chmod(url.path, mode)
    }
}
