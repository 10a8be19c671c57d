import DriveSupport
import XCTest

final class RFC3339Tests: XCTestCase {
    func testFormatsThreeFractionDigitsAndZ() {
        XCTAssertEqual(RFC3339.format(millis: 0), "1970-01-01T00:00:00.000Z")
        XCTAssertEqual(RFC3339.format(millis: 1_598_678_325_678), "2020-08-29T05:18:45.678Z")
        XCTAssertEqual(RFC3339.format(millis: -1), "1969-12-31T23:59:59.999Z")
    }

    func testParsesWhatDriveAccepts() {
        let table: [(String, Int64?)] = [
            ("2020-08-29T05:18:45.678Z", 1_598_678_325_678),
            ("2020-08-29T05:18:45Z", 1_598_678_325_000),
            ("2020-08-29T05:18:45.123456789Z", 1_598_678_325_123),
            ("2020-08-29T07:18:45.5+02:00", 1_598_678_325_500),
            ("2020-08-29t05:18:45z", 1_598_678_325_000),
            ("2020-08-29T05:18:45", nil),
            ("2020-02-30T00:00:00Z", nil),
            ("2020-08-29T05:18:45.1234567890Z", nil),
            ("2020-08-29T05:18:45.Z", nil),
            ("garbage", nil),
            ("", nil),
        ]
        for (text, expected) in table {
            XCTAssertEqual(RFC3339.parseMillis(text), expected, text)
        }
        XCTAssertEqual(RFC3339.parseMillis("2012-06-04T12:00:00", defaultUTC: true), 1_338_811_200_000)
        XCTAssertEqual(RFC3339.parseMillis("2012-06-04", defaultUTC: true, allowDateOnly: true), 1_338_768_000_000)
    }

    func testRoundTripsEveryMillisecondValue() {
        for ms in stride(from: Int64(1_700_000_000_000), to: 1_700_000_001_000, by: 1) {
            XCTAssertEqual(RFC3339.parseMillis(RFC3339.format(millis: ms)), ms)
        }
    }
}
