/// CRC-32 (IEEE 802.3 / ISO-HDLC: the polynomial of zlib, gzip, zip entries and PNG chunks). It
/// catches torn and bit-flipped records, not tampering: the upload journal's record checksums, and
/// the emulator's export formats.
public enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { n -> UInt32 in
        var c = UInt32(n)
        for _ in 0..<8 { c = (c & 1) != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    /// CRC-32 of `bytes`; pass a previous result as `crc` to continue over more bytes.
    public static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        var c = ~crc
        table.withUnsafeBufferPointer { t in
            for b in bytes { c = t[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        }
        return ~c
    }

    /// CRC-32 of `bytes`; pass a previous result as `crc` to continue over more bytes.
    public static func checksum(_ bytes: some Collection<UInt8>, continuing crc: UInt32 = 0) -> UInt32 {
        if let done = bytes.withContiguousStorageIfAvailable({ checksum(UnsafeRawBufferPointer($0), continuing: crc) }) { return done }
        return Array(bytes).withUnsafeBytes { checksum($0, continuing: crc) }
    }
}
