/// Adler-32 (the trailer of a zlib stream, PNG's IDAT). Export formats' CRC-32 is `CRC32` of
/// DriveSupport, the one the upload journal uses.
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
