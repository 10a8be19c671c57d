import DriveSupport
import XCTest

final class CRC32Tests: XCTestCase {
    func testTheStandardCheckValueWholeAndContinued() {
        let check = Array("123456789".utf8)
        XCTAssertEqual(CRC32.checksum(check), 0xCBF4_3926)
        XCTAssertEqual(check.withUnsafeBytes { CRC32.checksum($0) }, 0xCBF4_3926)
        XCTAssertEqual(CRC32.checksum(check[5...], continuing: CRC32.checksum(check[..<5])), 0xCBF4_3926)
        XCTAssertEqual(CRC32.checksum("123456789".utf8.lazy.map { $0 }), 0xCBF4_3926, "a collection without contiguous storage")
        XCTAssertEqual(CRC32.checksum([UInt8]()), 0)
    }
}
