import DriveSupport
import XCTest

/// The roff both generated manual pages share: one row per escaping rule.
final class RoffTests: XCTestCase {
    func testEscaping() {
        let rows: [(String, String)] = [
            ("plain words", "plain words"),
            ("--cache-size", "\\-\\-cache\\-size"),
            ("C:\\path", "C:\\epath"),
            (".starts with a dot", "\\&.starts with a dot"),
            ("'quoted", "\\&'quoted"),
            ("mid.dot and 'quote'", "mid.dot and 'quote'"),
        ]
        for (text, expected) in rows { XCTAssertEqual(Roff.escape(text), expected, text) }
        XCTAssertEqual(Roff.quoted("say \"hi\""), "\"say \\(dqhi\\(dq\"")
    }

    func testParagraphsAndOptions() {
        XCTAssertEqual(Roff.paragraphs("one\n  two\n\nthree\n"), [".PP", "one two", ".PP", "three"])
        XCTAssertEqual(Roff.option(long: "port", valueName: "PORT", help: "the port\n  to use", separator: " "),
                       [".TP", "\\fB\\-\\-port\\fR \\fIPORT\\fR", "the port to use"])
        XCTAssertEqual(Roff.option(long: "foreground", short: "f", valueName: nil, help: "stay"),
                       [".TP", "\\fB\\-f\\fR, \\fB\\-\\-foreground\\fR", "stay"])
    }

    func testThePageDateIsSourceDateEpochs() {
        XCTAssertEqual(Roff.pageDate(["SOURCE_DATE_EPOCH": "1767225600"]), "2026-01-01")
        XCTAssertEqual(Roff.pageDate([:]).count, 10)
    }
}
