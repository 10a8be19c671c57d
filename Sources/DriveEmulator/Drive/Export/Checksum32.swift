/// The two 32-bit checksums that export formats embed: CRC-32 (the ISO-HDLC polynomial that zip
/// entries and PNG chunks carry) and Adler-32 (the trailer of a zlib stream, PNG's IDAT).
enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { n -> UInt32 in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    /// CRC-32 of `bytes`; pass a previous result as `crc` to continue over more bytes.
    static func checksum(_ bytes: some Collection<UInt8>, continuing crc: UInt32 = 0) -> UInt32 {
        var c = ~crc
        table.withUnsafeBufferPointer { t in
            for b in bytes { c = t[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        }
        return ~c
    }
}

enum Adler32 {
    /// RFC 1950 Adler-32: the sums are reduced every 5552 bytes, the most that cannot overflow.
    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1, b: UInt32 = 0
        var i = 0
        while i < bytes.count {
            let end = min(i + 5552, bytes.count)
            while i < end { a &+= UInt32(bytes[i]); b &+= a; i += 1 }
            a %= 65521
            b %= 65521
        }
        return b << 16 | a
    }
}

/// Little- and big-endian appends for the binary formats.
extension Array where Element == UInt8 {
    mutating func appendLE16(_ v: Int) { append(UInt8(v & 0xFF)); append(UInt8((v >> 8) & 0xFF)) }
    mutating func appendLE32(_ v: UInt32) { for s in stride(from: 0, to: 32, by: 8) { append(UInt8((v >> UInt32(s)) & 0xFF)) } }
    mutating func appendBE16(_ v: Int) { append(UInt8((v >> 8) & 0xFF)); append(UInt8(v & 0xFF)) }
    mutating func appendBE32(_ v: UInt32) { for s in stride(from: 24, through: 0, by: -8) { append(UInt8((v >> UInt32(s)) & 0xFF)) } }
}
