import CSystem
import DriveSupport
import Foundation
import Glibc

/// Byte ranges between local files (the staging copies and the block cache): a range copied in
/// the kernel when it can (`copy_file_range`), else through a buffer; failures as the writer sees
/// them (`FilesystemError(local:)`).
enum FileRanges {
    /// Copies `[offset, offset + length)` of one file to the same place in another.
    static func copy(from source: Int32, to target: Int32, offset: Int64, length: Int64) throws(FilesystemError) {
        var inOffset = off_t(offset), outOffset = off_t(offset)
        var left = length
        while left > 0 {
            let n: Int
            do throws(SystemCallError) {
                n = try SystemCall.retrying("copy_file_range") {
                    csystem_copy_file_range(source, &inOffset, target, &outOffset, Int(min(left, 1 << 30)))
                }
            } catch where [EXDEV, EINVAL, ENOSYS, EOPNOTSUPP].contains(error.errno) {
                break
            } catch {
                throw FilesystemError(local: error)
            }
            if n == 0 { break }
            left -= Int64(n)
        }
        // Fallback (a filesystem without copy_file_range, or a short source).
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while left > 0 {
            let want = Int(min(left, Int64(buffer.count)))
            let got: Int
            do {
                got = try buffer.withUnsafeMutableBytes {
                    try SystemCall.read(source, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<want]), at: Int64(inOffset))
                }
            } catch {
                // Only the read throws (withUnsafeMutableBytes rethrows it untyped).
                throw FilesystemError(local: error as? SystemCallError ?? SystemCallError("pread", errno: EIO))
            }
            if got == 0 { break }  // past the source's end: the target keeps its zeros
            try writeAll(target, buffer, count: got, at: Int64(outOffset))
            inOffset += off_t(got); outOffset += off_t(got); left -= Int64(got)
        }
    }

    /// Writes the first `count` bytes of `bytes` at `offset`.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8], count: Int, at offset: Int64) throws(FilesystemError) {
        do throws(SystemCallError) {
            try SystemCall.writeAll(fd, bytes[0..<count], at: offset)
        } catch {
            throw FilesystemError(local: error)
        }
    }
}
