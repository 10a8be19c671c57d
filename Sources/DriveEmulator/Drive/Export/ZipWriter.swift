import DriveSupport

/// A zip archive of stored (uncompressed) entries: the container of every OOXML, ODF and EPUB
/// export and of the HTML `application/zip` exports.
///
/// Contracts: entries appear in the order they are added, each with a local header, its bytes
/// and a central-directory record; the end record closes the archive. Every timestamp is the DOS
/// epoch (1980-01-01 00:00:00), so the same entries always give the same bytes. Names are UTF-8
/// (general-purpose flag bit 11 set when a name is not ASCII). No zip64: callers stay far below
/// 4 GiB and 65535 entries (exports are capped at 10 MB). ODF and EPUB need their `mimetype`
/// entry first, stored, with no extra field; this writer never writes extra fields.
struct ZipWriter {
    private var archive: [UInt8] = []
    private var central: [UInt8] = []
    private var count = 0

    /// DOS time 00:00:00 and date 1980-01-01 (year 0 since 1980, month 1, day 1).
    static let dosTime = 0, dosDate = (0 << 9) | (1 << 5) | 1

    mutating func add(_ name: String, _ data: [UInt8]) {
        let nameBytes = Array(name.utf8)
        let flags = nameBytes.allSatisfy({ $0 < 0x80 }) ? 0 : 0x0800
        let crc = CRC32.checksum(data)
        let offset = UInt32(archive.count)

        archive.appendLE32(0x0403_4B50)
        archive.appendLE16(20)  // version needed: 2.0
        archive.appendLE16(flags)
        archive.appendLE16(0)  // method: stored
        archive.appendLE16(ZipWriter.dosTime)
        archive.appendLE16(ZipWriter.dosDate)
        archive.appendLE32(crc)
        archive.appendLE32(UInt32(data.count))  // compressed size
        archive.appendLE32(UInt32(data.count))  // uncompressed size
        archive.appendLE16(nameBytes.count)
        archive.appendLE16(0)  // extra field length
        archive += nameBytes
        archive += data

        central.appendLE32(0x0201_4B50)
        central.appendLE16(20)  // version made by: 2.0, MS-DOS attributes
        central.appendLE16(20)
        central.appendLE16(flags)
        central.appendLE16(0)
        central.appendLE16(ZipWriter.dosTime)
        central.appendLE16(ZipWriter.dosDate)
        central.appendLE32(crc)
        central.appendLE32(UInt32(data.count))
        central.appendLE32(UInt32(data.count))
        central.appendLE16(nameBytes.count)
        central.appendLE16(0)  // extra
        central.appendLE16(0)  // comment
        central.appendLE16(0)  // disk number start
        central.appendLE16(0)  // internal attributes
        central.appendLE32(0)  // external attributes
        central.appendLE32(offset)
        central += nameBytes
        count += 1
    }

    mutating func add(_ name: String, _ text: String) { add(name, Array(text.utf8)) }

    /// The finished archive: the entries, the central directory and the end record.
    func finish() -> [UInt8] {
        var out = archive
        let directoryOffset = UInt32(out.count)
        out += central
        out.appendLE32(0x0605_4B50)
        out.appendLE16(0)  // this disk
        out.appendLE16(0)  // disk of the central directory
        out.appendLE16(count)
        out.appendLE16(count)
        out.appendLE32(UInt32(central.count))
        out.appendLE32(directoryOffset)
        out.appendLE16(0)  // comment length
        return out
    }
}
