/// Little binary writers and readers for drivefs's own files (the metadata index): LEB128 varints,
/// zigzag for signed values, length-prefixed UTF-8 strings.
///
/// Contract: `ByteReader` never traps on malformed input: every read past the end or of a length
/// that does not fit answers nil, so a damaged file is refused, not a crash.
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    mutating func byte(_ value: UInt8) { bytes.append(value) }

    mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    mutating func signed(_ value: Int64) {
        varint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    mutating func string(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            varint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    mutating func raw<C: Collection>(_ other: C) where C.Element == UInt8 { bytes.append(contentsOf: other) }

    mutating func uint32(_ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }
}

/// Reads drivefs's encoding (varints, zigzag integers, length-prefixed strings, little-endian
/// words) from any byte buffer indexed by offset: an array's slice (`ByteReader`) or a mapped
/// file (`MappedReader`, no copy). Every read answers nil past `end` and leaves `offset` there.
struct ByteCursor<Bytes: RandomAccessCollection> where Bytes.Element == UInt8, Bytes.Index == Int {
    /// Offsets are the buffer's own indices (a slice of a larger buffer keeps its place in it).
    let bytes: Bytes
    private(set) var offset: Int
    let end: Int

    var atEnd: Bool { offset >= end }

    mutating func byte() -> UInt8? {
        guard offset < end else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

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

    mutating func signed() -> Int64? {
        guard let v = varint() else { return nil }
        return Int64(bitPattern: v >> 1) ^ -Int64(bitPattern: v & 1)
    }

    mutating func count(max limit: Int = Int(Int32.max)) -> Int? {
        guard let v = varint(), v <= UInt64(limit) else { return nil }
        return Int(v)
    }

    mutating func string() -> String? {
        guard let v = varint(), v <= UInt64(end - offset) else { return nil }
        let n = Int(v)
        defer { offset += n }
        return String(decoding: bytes[offset..<offset + n], as: UTF8.self)
    }

    /// The next `n` bytes as they are.
    mutating func raw(_ n: Int) -> Bytes.SubSequence? {
        guard n >= 0, n <= end - offset else { return nil }
        defer { offset += n }
        return bytes[offset..<offset + n]
    }

    /// Skips the next `n` bytes; their range in the buffer.
    mutating func skip(_ n: Int) -> Range<Int>? {
        guard n >= 0, n <= end - offset else { return nil }
        defer { offset += n }
        return offset..<offset + n
    }

    mutating func uint32() -> UInt32? {
        guard end - offset >= 4 else { return nil }
        var v: UInt32 = 0
        for i in 0..<4 { v |= UInt32(bytes[offset + i]) << UInt32(8 * i) }
        offset += 4
        return v
    }

    mutating func uint64() -> UInt64? {
        guard end - offset >= 8 else { return nil }
        var v: UInt64 = 0
        for i in 0..<8 { v |= UInt64(bytes[offset + i]) << UInt64(8 * i) }
        offset += 8
        return v
    }
}

typealias ByteReader = ByteCursor<ArraySlice<UInt8>>

extension ByteCursor where Bytes == ArraySlice<UInt8> {
    init(_ bytes: [UInt8], from start: Int = 0, to end: Int? = nil) {
        self.bytes = bytes[...]
        offset = start
        self.end = min(end ?? bytes.count, bytes.count)
    }

    init(_ slice: ArraySlice<UInt8>) {
        bytes = slice
        offset = slice.startIndex
        end = slice.endIndex
    }
}

/// `ByteCursor` over a mapped file: drivefs's encoding read in place, without copying it into an array.
typealias MappedReader = ByteCursor<UnsafeRawBufferPointer>

extension ByteCursor where Bytes == UnsafeRawBufferPointer {
    init(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) {
        self.bytes = bytes
        offset = start
        self.end = min(end, bytes.count)
    }
}

/// A 64-bit checksum of drivefs's own files (the metadata index), fast enough for hundreds of MB
/// at mount: each 8-byte word is mixed into the state by a xor, a multiply and a shift, all
/// bijections, so any change confined to one word always changes the result, and others do but
/// for a chance of 2^-64. It catches torn and damaged files, not tampering.
enum Checksum64 {
    static func of(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var running = Running(count: bytes.count)
        let whole = bytes.count / 8 * 8
        running.add(UnsafeRawBufferPointer(rebasing: bytes[0..<whole]))
        return running.finish(UnsafeRawBufferPointer(rebasing: bytes[whole...]))
    }

    /// The same checksum over pieces: `count` is the whole length; every piece given to `add` is
    /// a whole number of words, in order; `finish` takes the last, shorter than a word.
    struct Running {
        private var h: UInt64

        init(count: Int) { h = 0x6A09_E667_F3BC_C908 ^ UInt64(count) }

        mutating func add(_ words: UnsafeRawBufferPointer) {
            precondition(words.count % 8 == 0, "a piece of the checksum that is not whole words")
            for i in 0..<words.count / 8 {
                h = (h ^ words.loadUnaligned(fromByteOffset: i * 8, as: UInt64.self).littleEndian) &* 0x9E37_79B9_7F4A_7C15
                h ^= h >> 29
            }
        }

        func finish(_ tail: UnsafeRawBufferPointer) -> UInt64 {
            var last: UInt64 = 0
            for i in 0..<tail.count { last |= UInt64(tail[i]) << UInt64(8 * i) }
            let h = (self.h ^ last) &* 0x9E37_79B9_7F4A_7C15
            return h ^ (h >> 32)
        }
    }
}
