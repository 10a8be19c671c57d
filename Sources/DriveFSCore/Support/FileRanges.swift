import CSystem
import Foundation
import Glibc

/// Byte ranges between local files (the staging copies and the block cache): a range copied in
/// the kernel when it can (`copy_file_range`), and local errors as the kernel should see them.
enum FileRanges {
    /// A local file error as the writer sees it: a full disk or quota is `ENOSPC`, an interrupt
    /// `EINTR`, anything else `EIO`.
    static func error(_ code: Int32) -> FilesystemError {
        switch code {
        case ENOSPC, EDQUOT: return .noSpace
        case EINTR: return FilesystemError(errno: EINTR)
        default: return .ioError
        }
    }

    /// Copies `[offset, offset + length)` of one file to the same place in another.
    static func copy(from source: Int32, to target: Int32, offset: Int64, length: Int64) throws(FilesystemError) {
        var inOffset = off_t(offset), outOffset = off_t(offset)
        var left = length
        while left > 0 {
            let n = csystem_copy_file_range(source, &inOffset, target, &outOffset, Int(min(left, 1 << 30)))
            if n > 0 { left -= Int64(n); continue }
            if n < 0 && errno == EINTR { continue }
            if n == 0 || errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP { break }
            throw error(errno)
        }
        // Fallback (a filesystem without copy_file_range, or a short source).
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while left > 0 {
            let want = Int(min(left, Int64(buffer.count)))
            let got = buffer.withUnsafeMutableBytes { pread(source, $0.baseAddress, want, inOffset) }
            if got < 0 { if errno == EINTR { continue }; throw error(errno) }
            if got == 0 { break }  // past the source's end: the target keeps its zeros
            try writeAll(target, buffer, count: got, at: Int64(outOffset))
            inOffset += off_t(got); outOffset += off_t(got); left -= Int64(got)
        }
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8], count: Int, at offset: Int64) throws(FilesystemError) {
        var done = 0
        while done < count {
            let n = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress! + done, count - done, off_t(offset + Int64(done))) }
            if n < 0 { if errno == EINTR { continue }; throw error(errno) }
            done += n
        }
    }
}
