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
final class MappedFile: @unchecked Sendable {
    let bytes: UnsafeRawBufferPointer

    /// Nil when the file cannot be opened or mapped, or is empty.
    init?(path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_size > 0, info.st_size < Int64(Int.max) else { return nil }
        let size = Int(info.st_size)
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

/// `ByteReader`'s reading of drivefs's encoding (varints, length-prefixed strings, little-endian
/// words) over a mapped file, without copying it into an array.
struct MappedReader {
    let bytes: UnsafeRawBufferPointer
    private(set) var offset: Int
    let end: Int

    init(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) {
        self.bytes = bytes
        offset = start
        self.end = min(end, bytes.count)
    }

    var atEnd: Bool { offset >= end }

    mutating func varint() -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while offset < end, shift < 64 {
            let b = bytes[offset]
            offset += 1
            value |= UInt64(b & 0x7f) << shift
            if b < 0x80 { return value }
            shift += 7
        }
        return nil
    }

    mutating func count(max limit: Int = Int(Int32.max)) -> Int? {
        guard let v = varint(), v <= UInt64(limit) else { return nil }
        return Int(v)
    }

    mutating func string() -> String? {
        guard let v = varint(), v <= UInt64(end - offset) else { return nil }
        let n = Int(v)
        defer { offset += n }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + n]), as: UTF8.self)
    }

    /// Skips the next `n` bytes; their range in the file.
    mutating func skip(_ n: Int) -> Range<Int>? {
        guard n >= 0, n <= end - offset else { return nil }
        defer { offset += n }
        return offset..<offset + n
    }

    mutating func uint64() -> UInt64? {
        guard end - offset >= 8 else { return nil }
        defer { offset += 8 }
        return UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }
}
