import Foundation
import XCTest

/// docs/architecture.md's "Where things are" names files and folders a newcomer opens: each must
/// exist, so the map stays true as files move (a path of the section that is gone fails here, with
/// its name).
final class ArchitectureMapTests: XCTestCase {
    /// The repository: this file is `Tests/DriveSupportTests/ArchitectureMapTests.swift`.
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The section: from its heading to the next `## ` heading.
    static func mapSection(_ text: String) -> Substring? {
        guard let start = text.range(of: "\n## Where things are") else { return nil }
        let rest = text[start.upperBound...]
        let end = rest.range(of: "\n## ")?.lowerBound ?? rest.endIndex
        return rest[..<end]
    }

    /// Every backquoted word that is a path: it has a `/` (a bare name, `DriveAPI+Concern.swift`,
    /// is a pattern, not a path).
    static func paths(in section: Substring) -> [String] {
        let parts = section.split(separator: "`", omittingEmptySubsequences: false)
        return stride(from: 1, to: parts.count, by: 2).map { String(parts[$0]) }.filter { word in
            !word.contains(" ") && word.contains("/")
        }
    }

    /// Where a path of the map is: under `Sources/`, or from the repository's root (`Tests/...`).
    static func exists(_ path: String) -> Bool {
        let manager = FileManager.default
        return [root.appendingPathComponent("Sources").appendingPathComponent(path), root.appendingPathComponent(path)]
            .contains { manager.fileExists(atPath: $0.path) }
    }

    func testEveryPathTheNewcomersMapNamesExists() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        let section = try XCTUnwrap(Self.mapSection(text), "docs/architecture.md has no \"Where things are\" section")
        let paths = Self.paths(in: section)
        XCTAssertGreaterThan(paths.count, 40, "the map names the modules, their folders and the trails' files")
        for path in paths {
            XCTAssertTrue(Self.exists(path), "docs/architecture.md's map names \(path), which is not in the tree")
        }
        // Every module folder under Sources/ has its line.
        let modules = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("Sources").path)
        for module in modules.sorted() where !module.hasPrefix(".") {
            XCTAssertTrue(section.contains("`\(module)/`"), "the map has no line for Sources/\(module)/")
        }
    }

    /// The check finds a path that is not there, and a module without a line.
    func testTheCheckCatchesAPathThatIsGone() {
        let section = Self.mapSection("# t\n\n## Where things are\n| `DriveFSCore/Mount/NoSuchFile.swift` | `FuseBridge/` |\n## Next\n`Gone/`")!
        XCTAssertEqual(Self.paths(in: section), ["DriveFSCore/Mount/NoSuchFile.swift", "FuseBridge/"])
        XCTAssertFalse(Self.exists("DriveFSCore/Mount/NoSuchFile.swift"))
        XCTAssertTrue(Self.exists("FuseBridge/"))
        XCTAssertTrue(Self.exists("Tests/TestSupport/WaitUntil.swift"))
    }
}
