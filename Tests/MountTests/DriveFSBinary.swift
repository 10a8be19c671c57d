import Foundation
import XCTest

/// Finds the built `drivefs` executable: `$DRIVEFS_BIN`, else next to the test bundle (the same
/// `.build/<config>` directory), else `.build/debug/drivefs` under the package root.
enum DriveFSBinary {
    static func path() throws -> String {
        let fm = FileManager.default
        if let explicit = ProcessInfo.processInfo.environment["DRIVEFS_BIN"], fm.isExecutableFile(atPath: explicit) {
            return explicit
        }
        var candidates: [String] = []
        // The xctest runner's argument 0 or the bundle path sits in .build/<triple>/<config>/.
        for base in [Bundle.main.bundlePath, CommandLine.arguments.first ?? ""] where !base.isEmpty {
            var dir = URL(fileURLWithPath: base)
            for _ in 0..<3 {
                dir = dir.deletingLastPathComponent()
                candidates.append(dir.appendingPathComponent("drivefs").path)
            }
        }
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        candidates.append(packageRoot.appendingPathComponent(".build/debug/drivefs").path)
        if let found = candidates.first(where: { fm.isExecutableFile(atPath: $0) && !$0.hasSuffix(".xctest") }) {
            return found
        }
        throw NotBuilt(candidates: candidates)
    }

    /// A missing binary is a failure, not a skip: `swift build --build-tests` always builds it.
    struct NotBuilt: Error, CustomStringConvertible {
        let candidates: [String]
        var description: String { "the drivefs executable is not built (looked in \(candidates.joined(separator: ", "))); run 'swift build' first" }
    }

    static func run(_ arguments: [String], timeout: TimeInterval = 20, environment: [String: String]? = nil) throws
        -> ExternalCommand.Result
    {
        try ExternalCommand.run(try path(), arguments, timeout: timeout, environment: environment)
    }
}
