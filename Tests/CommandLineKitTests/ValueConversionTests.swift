import CommandLineKit
import XCTest

/// Each conversion accepts what it says and words what it refuses as the end of the parser's
/// message ("invalid value 'X' for '--name': expected ...").
final class ValueConversionTests: XCTestCase {
    private enum Level: String, CaseIterable, Sendable { case info, debug, trace }

    func testIntegerInARange() {
        let port = ValueConversion<Int>.integer(in: 0...65535)
        XCTAssertEqual(port.value(ofAccepted: "0"), 0)
        XCTAssertEqual(port.value(ofAccepted: "65535"), 65535)
        for bad in ["65536", "-1", "abc", "", "1e3", " 1"] {
            XCTAssertEqual(port.problem(with: bad), "expected an integer in 0...65535", bad)
        }
    }

    func testNumberWithAnOpenLowerBound() {
        let rate = ValueConversion<Double>.number(in: 0...1_000_000, openBelow: true, what: "requests per second")
        XCTAssertEqual(rate.value(ofAccepted: "0.5"), 0.5)
        for bad in ["0", "-3", "nan", "inf", "1000001"] {
            XCTAssertEqual(rate.problem(with: bad), "expected a number of requests per second in (0, 1000000]", bad)
        }
        XCTAssertEqual(ValueConversion<Double>.number(in: 0...1).problem(with: "1.5"), "expected a number in [0, 1]")
        XCTAssertNil(ValueConversion<Double>.number(in: 0...1).problem(with: "0"))
    }

    func testChoiceNamesEveryCase() {
        XCTAssertEqual(ValueConversion<Level>.choice.value(ofAccepted: "debug"), .debug)
        XCTAssertEqual(ValueConversion<Level>.choice.problem(with: "loud"), "expected info, debug or trace")
    }

    func testMapKeepsTheCheckAndTransformsTheValue() {
        let limit = ValueConversion<Int>.integer(in: 0...10).map { $0 == 0 ? nil : $0 }
        XCTAssertEqual(limit.value(ofAccepted: "0"), Int?.none)
        XCTAssertEqual(limit.value(ofAccepted: "7"), 7)
        XCTAssertEqual(limit.problem(with: "11"), "expected an integer in 0...10")
        XCTAssertEqual(ValueConversion<String>.nonEmpty("a host").problem(with: ""), "expected a host")
        XCTAssertNil(ValueConversion<String>.text.problem(with: ""))
    }
}
