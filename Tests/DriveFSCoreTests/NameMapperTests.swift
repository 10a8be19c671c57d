import DriveFSCore
import XCTest

/// The name table of docs/semantics.md ("Names"), one row per rule.
final class NameMapperTests: XCTestCase {
    private func names(_ children: [NameMapper.Child]) -> [String: String] { NameMapper.shownNames(children) }

    func testSingleNameRules() {
        let rows: [(String, String?, String)] = [
            ("plain.txt", nil, "plain.txt"),
            ("Reports/2026.txt", nil, "Reports\u{2215}2026.txt"),
            ("a/b/c", nil, "a\u{2215}b\u{2215}c"),
            ("", nil, "_"),
            (".", nil, "._"),
            ("..", nil, ".._"),
            ("Plan", "docx", "Plan.docx"),
            ("Plan.docx", "docx", "Plan.docx"),
            ("Budget.XLSX", "xlsx", "Budget.XLSX"),
            ("café ünïcode", nil, "café ünïcode"),
            ("  spaces kept  ", nil, "  spaces kept  "),
        ]
        for (drive, ext, shown) in rows {
            XCTAssertEqual(NameMapper.singleName(NameMapper.Child(id: "id1", name: drive, exportExtension: ext)), shown, drive)
        }
    }

    func testLongNamesAreShortenedStablyWithinTheLimit() {
        let long = String(repeating: "é", count: 200) + ".pdf"  // 404 bytes
        let a = NameMapper.singleName(NameMapper.Child(id: "fileA", name: long))
        let b = NameMapper.singleName(NameMapper.Child(id: "fileB", name: long))
        XCTAssertLessThanOrEqual(a.utf8.count, 255)
        XCTAssertTrue(a.hasSuffix(".pdf"), a)
        XCTAssertNotEqual(a, b, "two files with the same long name get different short names")
        XCTAssertEqual(a, NameMapper.singleName(NameMapper.Child(id: "fileA", name: long)), "stable")
        XCTAssertNotNil(a.data(using: .utf8), "cut at a character boundary")
        let exact = String(repeating: "x", count: 255)
        XCTAssertEqual(NameMapper.singleName(NameMapper.Child(id: "x", name: exact)), exact, "255 bytes fit")
    }

    func testDuplicatesKeepTheOldestNameAndGetIDSuffixes() {
        let shown = names([
            NameMapper.Child(id: "B2cdefghij", name: "notes.txt", createdTime: 20),
            NameMapper.Child(id: "A1bcdefghi", name: "notes.txt", createdTime: 10),
            NameMapper.Child(id: "C3defghijk", name: "notes.txt", createdTime: 30),
            NameMapper.Child(id: "D4", name: "other", createdTime: 5),
        ])
        XCTAssertEqual(shown["A1bcdefghi"], "notes.txt")
        XCTAssertEqual(shown["B2cdefghij"], "notes (B2cdefgh).txt")
        XCTAssertEqual(shown["C3defghijk"], "notes (C3defghi).txt")
        XCTAssertEqual(shown["D4"], "other")
        XCTAssertEqual(Set(shown.values).count, 4)
    }

    func testANewDuplicateNeverRenamesAnOldOne() {
        let before = names([NameMapper.Child(id: "old1", name: "a", createdTime: 1), NameMapper.Child(id: "old2", name: "a", createdTime: 2)])
        let after = names([NameMapper.Child(id: "old1", name: "a", createdTime: 1), NameMapper.Child(id: "old2", name: "a", createdTime: 2),
                           NameMapper.Child(id: "new3", name: "a", createdTime: 3)])
        XCTAssertEqual(before["old1"], after["old1"])
        XCTAssertEqual(before["old2"], after["old2"])
        XCTAssertEqual(after["new3"], "a (new3)")
    }

    func testASuffixThatCollidesWithARealNameGrows() {
        let shown = names([
            NameMapper.Child(id: "first-id", name: "x.txt", createdTime: 1),
            NameMapper.Child(id: "abcdefgh12345", name: "x.txt", createdTime: 2),
            NameMapper.Child(id: "real", name: "x (abcdefgh).txt", createdTime: 3),
        ])
        XCTAssertEqual(shown["real"], "x (abcdefgh).txt")
        XCTAssertEqual(shown["abcdefgh12345"], "x (abcdefgh12345).txt")
        XCTAssertEqual(Set(shown.values).count, 3)
    }

    func testEveryChildGetsAUniqueNameOverRandomInputs() {
        var seed: UInt64 = 12345
        func next() -> UInt64 { seed = seed &* 6364136223846793005 &+ 1442695040888963407; return seed >> 33 }
        let alphabet = ["a", "b", "/", ".", " ", "é", "x.txt", ""]
        for _ in 0..<200 {
            var children: [NameMapper.Child] = []
            for i in 0..<Int(next() % 12 + 1) {
                var name = ""
                for _ in 0..<Int(next() % 4) { name += alphabet[Int(next() % UInt64(alphabet.count))] }
                children.append(NameMapper.Child(id: "id\(i)-\(next() % 1000)", name: name, createdTime: Int64(next() % 5)))
            }
            let shown = NameMapper.shownNames(children)
            XCTAssertEqual(shown.count, Set(children.map(\.id)).count)
            XCTAssertEqual(Set(shown.values).count, shown.count, "\(children)")
            for name in shown.values {
                XCTAssertFalse(name.contains("/"))
                XCTAssertFalse(name.isEmpty || name == "." || name == "..")
                XCTAssertLessThanOrEqual(name.utf8.count, 255)
            }
        }
    }
}
