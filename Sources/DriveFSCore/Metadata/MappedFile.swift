import DriveSupport
import Glibc

/// A whole file mapped read-only: the restored index's listings are slices of it, so a drive's
/// index costs page cache, not the daemon's heap, and the pages of folders nobody opens are never
/// read again after the load.
///
/// Contracts:
/// - The file must never be changed in place while mapped (a truncation would make reads of the
///   lost pages fault with SIGBUS). The index is only ever replaced whole, by a rename
///   (`AtomicFile`): the mapping keeps the old file's inode, which stays valid until unmapped.
/// - `release(_:)` drops pages from this process's resident set (`MADV_DONTNEED`); the bytes stay
///   readable, from the page cache or the disk, on their next touch.
/// - Unmapped when the last listing that refers to it goes.
///
/// @unchecked Sendable: the mapping is read-only and never changes while the object lives.
final class MappedFile: @unchecked Sendable {  // @unchecked: see above
    let bytes: UnsafeRawBufferPointer

    /// Nil when the file cannot be opened or mapped, or is empty.
    init?(path: String) {
        guard let fd = try? SystemCall.open(path, O_RDONLY | O_CLOEXEC) else { return nil }
        defer { close(fd) }
        guard let length = try? SystemCall.size(fd), length > 0, length < Int64(Int.max) else { return nil }
        let size = Int(length)
        guard let base = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), base != MAP_FAILED else { return nil }
        bytes = UnsafeRawBufferPointer(start: base, count: size)
    }

    deinit { munmap(UnsafeMutableRawPointer(mutating: bytes.baseAddress), bytes.count) }

    /// Drops the whole pages inside `range` from the resident set.
    func release(_ range: Range<Int>) {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let start = (range.lowerBound + page - 1) / page * page
        let end = range.upperBound == bytes.count ? bytes.count : range.upperBound / page * page
        guard end > start, let base = bytes.baseAddress else { return }
        _ = madvise(UnsafeMutableRawPointer(mutating: base + start), end - start, MADV_DONTNEED)
    }
}
