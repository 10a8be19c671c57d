import DriveSupport

/// PNG and JPEG exports of Slides and Drawings: a blank white page of the file's size whose text
/// travels in the image's metadata (PNG `iTXt` "Description", JPEG `COM` segments).
///
/// Decision: the emulator has no font rasteriser, so the pixels carry no glyphs; the images are
/// valid files of the right size that any viewer opens, and the text is there for tools and tests.
enum RasterExports {
    // MARK: PNG

    /// PNG: signature, IHDR (1-bit greyscale), iTXt with the text (UTF-8), IDAT holding a zlib
    /// stream of stored (uncompressed) deflate blocks with its Adler-32, IEND; every chunk with its CRC.
    static func png(width: Int, height: Int, text: String) -> [UInt8] {
        var out: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        var ihdr: [UInt8] = []
        ihdr.appendBE32(UInt32(width))
        ihdr.appendBE32(UInt32(height))
        ihdr += [1, 0, 0, 0, 0]  // bit depth 1, greyscale, deflate, adaptive filtering, no interlace
        chunk("IHDR", ihdr, into: &out)
        // iTXt: keyword, NUL, compression flag 0, method 0, empty language tag, NUL, empty translated keyword, NUL, text.
        chunk("iTXt", Array("Description".utf8) + [0, 0, 0, 0, 0] + Array(text.utf8), into: &out)
        let rowBytes = (width + 7) / 8
        var raw: [UInt8] = []
        raw.reserveCapacity((rowBytes + 1) * height)
        for _ in 0..<height { raw.append(0); raw += [UInt8](repeating: 0xFF, count: rowBytes) }  // filter None, white
        chunk("IDAT", zlibStored(raw), into: &out)
        chunk("IEND", [], into: &out)
        return out
    }

    private static func chunk(_ type: String, _ data: [UInt8], into out: inout [UInt8]) {
        let typeBytes = Array(type.utf8)
        out.appendBE32(UInt32(data.count))
        out += typeBytes
        out += data
        out.appendBE32(CRC32.checksum(data, continuing: CRC32.checksum(typeBytes)))
    }

    /// A zlib stream (RFC 1950) of deflate stored blocks (RFC 1951 BTYPE 00, at most 65535 bytes each).
    static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]  // CM 8, 32K window, FCHECK so that 0x7801 % 31 == 0
        var offset = 0
        repeat {
            let n = min(65535, data.count - offset)
            out.append(offset + n == data.count ? 1 : 0)  // BFINAL on the last block
            out.appendLE16(n)
            out.appendLE16(~n & 0xFFFF)
            out += data[offset..<offset + n]
            offset += n
        } while offset < data.count
        out.appendBE32(Adler32.checksum(data))
        return out
    }

    // MARK: JPEG

    /// A baseline JFIF JPEG, 8-bit greyscale, all white: SOI, APP0 JFIF, the text in COM segments
    /// (UTF-8, at most 65533 bytes each, split anywhere), DQT (all 8), SOF0, two DHT tables,
    /// SOS and the entropy-coded blocks, EOI. Every block is DC only: the first block's DC
    /// difference is +127 (×8 = level 1016, white), every later one 0, each followed by EOB. The
    /// Huffman tables hold just those symbols (DC: category 0 → `0`, 7 → `10`; AC: EOB → `0`).
    static func jpeg(width: Int, height: Int, text: String) -> [UInt8] {
        var out: [UInt8] = [0xFF, 0xD8]
        out += [0xFF, 0xE0, 0x00, 0x10] + Array("JFIF".utf8) + [0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00]
        let comment = Array(text.utf8)
        var offset = 0
        while offset < comment.count {
            let n = min(65533, comment.count - offset)
            out += [0xFF, 0xFE]
            out.appendBE16(n + 2)
            out += comment[offset..<offset + n]
            offset += n
        }
        out += [0xFF, 0xDB, 0x00, 0x43, 0x00] + [UInt8](repeating: 8, count: 64)
        out += [0xFF, 0xC0, 0x00, 0x0B, 0x08]
        out.appendBE16(height)
        out.appendBE16(width)
        out += [0x01, 0x01, 0x11, 0x00]  // one component: id 1, sampling 1×1, quantisation table 0
        out += [0xFF, 0xC4, 0x00, 0x15, 0x00, 1, 1] + [UInt8](repeating: 0, count: 14) + [0, 7]  // DC table 0
        out += [0xFF, 0xC4, 0x00, 0x14, 0x10, 1] + [UInt8](repeating: 0, count: 15) + [0]  // AC table 0
        out += [0xFF, 0xDA, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x3F, 0x00]

        var bits = BitWriter()
        let blocks = ((width + 7) / 8) * ((height + 7) / 8)
        for i in 0..<blocks {
            if i == 0 { bits.write(0b10, count: 2); bits.write(0b111_1111, count: 7) }  // category 7, +127
            else { bits.write(0, count: 1) }  // category 0
            bits.write(0, count: 1)  // EOB
        }
        out += bits.finish()
        out += [0xFF, 0xD9]
        return out
    }

    /// MSB-first bits with JPEG byte stuffing (a 0x00 after every 0xFF) and 1-bit padding.
    private struct BitWriter {
        var bytes: [UInt8] = []
        var current: UInt32 = 0, used = 0

        mutating func write(_ value: UInt32, count: Int) {
            for i in stride(from: count - 1, through: 0, by: -1) {
                current = current << 1 | (value >> UInt32(i)) & 1
                used += 1
                if used == 8 { emit() }
            }
        }

        private mutating func emit() {
            let b = UInt8(current & 0xFF)
            bytes.append(b)
            if b == 0xFF { bytes.append(0) }
            current = 0
            used = 0
        }

        mutating func finish() -> [UInt8] {
            while used != 0 { write(1, count: 1) }
            return bytes
        }
    }
}
