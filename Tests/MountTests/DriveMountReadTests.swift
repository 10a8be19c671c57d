import DriveClient
import Foundation
import XCTest

/// `drivefs mount` over the emulator, read side: the shell tools a user runs on a seeded tree see
/// exactly the seeded names, sizes, times and bytes.
final class DriveMountReadTests: XCTestCase {
    /// Small and medium files, an empty one, names with a space, quotes and a `/`, nesting 5 deep.
    private func mixedTree() throws -> (EmulatedDrive, SeedTree) {
        var tree = SeedTree()
        let drive = try EmulatedDrive { seed in
            try tree.file("hello.txt", in: seed, text: "hello from the emulator\n")
            try tree.file("empty.txt", in: seed, text: "")
            try tree.file("Reports%2F2026.txt", in: seed, text: "a name with a slash\n")
            try tree.file("with space & 'quote'.txt", in: seed, text: "quoted\n")
            try tree.file("bin/random.bin", in: seed, size: (1 << 20) + 123, seed: 1)
            try tree.file("data/six.bin", in: seed, size: 6 * (1 << 20) + 1000, seed: 2)
            try tree.file("a/b/c/d/e/deep.txt", in: seed, text: "five folders down\n")
            try tree.folder("empty-folder", in: seed)
        }
        return (drive, tree)
    }

    func testListingToolsShowTheSeededTree() throws {
        _ = try MountedDriveFS.requireFuse()
        let (drive, tree) = try mixedTree()
        defer { drive.stop() }
        let mount = try drive.mount()

        let find = try ExternalCommand.tool("find", [mount.mountpoint, "-mindepth", "1", "-type", "f", "-printf", "%P\t%s\n"])
        XCTAssertEqual(find.status, 0, find.summary)
        let expectedFiles = tree.files.map { "\(SeedTree.shownPath($0.path))\t\($0.size)" }.sorted()
        XCTAssertEqual(find.output.split(separator: "\n").map(String.init).sorted(), expectedFiles)
        let dirs = try ExternalCommand.tool("find", [mount.mountpoint, "-mindepth", "1", "-type", "d", "-printf", "%P\n"])
        XCTAssertEqual(dirs.output.split(separator: "\n").map(String.init).sorted(), tree.folders.sorted(), dirs.summary)

        let ls = try ExternalCommand.tool("ls", ["-lR", "--time-style=+%s", mount.mountpoint])
        XCTAssertEqual(ls.status, 0, ls.summary)
        let regularLines = ls.output.split(separator: "\n").filter { $0.hasPrefix("-") }
        XCTAssertEqual(regularLines.count, tree.files.count, ls.output)
        for (path, size) in tree.files {
            let name = (SeedTree.shownPath(path) as NSString).lastPathComponent
            let suffix = " \(size) \(Int(SeedTree.modificationTime.timeIntervalSince1970)) \(name)"
            XCTAssertTrue(regularLines.contains { $0.hasSuffix(suffix) }, "no line ending '\(suffix)' in:\n\(ls.output)")
        }

        let stat = try ExternalCommand.tool("stat", ["-c", "%s|%F|%Y|%h", mount.path("a/b/c/d/e/deep.txt"), mount.path("a/b/c")])
        XCTAssertEqual(stat.status, 0, stat.summary)
        let lines = stat.output.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "18|regular file|\(Int(SeedTree.modificationTime.timeIntervalSince1970))|1", stat.summary)
        XCTAssertEqual(lines.last?.split(separator: "|")[1], "directory", stat.summary)

        // du -sb: the files' bytes plus each folder's own st_size, as stat shows it.
        let folderSize = try XCTUnwrap(Int(ExternalCommand.tool("stat", ["-c", "%s", mount.mountpoint]).output
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        let du = try ExternalCommand.tool("du", ["-sb", mount.mountpoint])
        XCTAssertEqual(du.status, 0, du.summary)
        let expectedDu = tree.files.reduce(0) { $0 + $1.size } + folderSize * (tree.folders.count + 1)
        XCTAssertEqual(du.output.split(separator: "\t").first.map(String.init), String(expectedDu), du.summary)
    }

    func testDfShowsTheStorageQuota() throws {
        _ = try MountedDriveFS.requireFuse()
        let (drive, _) = try mixedTree()
        defer { drive.stop() }
        let mount = try drive.mount()
        let about = try drive.api().about()
        let limit = try XCTUnwrap(about.storageLimit), usage = try XCTUnwrap(about.storageUsage)
        let df = try ExternalCommand.tool("df", ["-B1", "--output=size,used,avail", mount.mountpoint])
        XCTAssertEqual(df.status, 0, df.summary)
        let numbers = df.output.split(separator: "\n").last?.split(separator: " ").compactMap { Int64($0) } ?? []
        XCTAssertEqual(numbers.count, 3, df.summary)
        guard numbers.count == 3 else { return }
        XCTAssertEqual(numbers[0], limit / 4096 * 4096, "size is the quota's limit: \(df.summary)")
        XCTAssertLessThanOrEqual(abs(numbers[1] - usage), 4096, "used is the quota's usage (\(usage)): \(df.summary)")
        XCTAssertEqual(numbers[0], numbers[1] + numbers[2], df.summary)
    }

    func testEverySeededFileComparesEqual() throws {
        _ = try MountedDriveFS.requireFuse()
        let (drive, tree) = try mixedTree()
        defer { drive.stop() }
        let mount = try drive.mount()
        for (path, _) in tree.files {
            let cmp = try ExternalCommand.tool("cmp", [drive.seed.appendingPathComponent(path).path, mount.path(SeedTree.shownPath(path))])
            XCTAssertEqual(cmp.status, 0, "\(path): \(cmp.summary)")
        }
    }

    func testRangesWithDdAndTailMatchTheSource() throws {
        _ = try MountedDriveFS.requireFuse()
        let (drive, _) = try mixedTree()
        defer { drive.stop() }
        let mount = try drive.mount()
        let source = try Data(contentsOf: drive.seed.appendingPathComponent("data/six.bin"))
        let shown = mount.path("data/six.bin")
        // (block size, skip, count): unaligned, across block edges, past the end.
        for (bs, skip, count) in [(4096, 3, 5), (1 << 20, 5, 3), (1000, 4321, 7), (65536, 95, 10), (1 << 20, 7, 1)] {
            let dd = try ExternalCommand.tool("dd", ["if=\(shown)", "bs=\(bs)", "skip=\(skip)", "count=\(count)", "status=none"])
            XCTAssertEqual(dd.status, 0, dd.summary)
            let start = min(source.count, bs * skip), end = min(source.count, bs * (skip + count))
            XCTAssertEqual(dd.standardOutput, source.subdata(in: start..<end), "dd bs=\(bs) skip=\(skip) count=\(count)")
        }
        for n in [1, 1000, 3 * (1 << 20) + 17] {
            let tail = try ExternalCommand.tool("tail", ["-c", String(n), shown])
            XCTAssertEqual(tail.status, 0, tail.summary)
            XCTAssertEqual(tail.standardOutput, source.suffix(n), "tail -c \(n)")
        }
    }

    /// 8 readers of one 64 MiB file at once, started together: all see the source's md5.
    func testConcurrentReadersOfALargeFileAllReadItCorrectly() throws {
        _ = try MountedDriveFS.requireFuse()
        var tree = SeedTree()
        let drive = try EmulatedDrive { seed in try tree.file("large.bin", in: seed, size: 64 << 20, seed: 7) }
        defer { drive.stop() }
        let mount = try drive.mount()
        let expected = try ExternalCommand.tool("md5sum", [drive.seed.appendingPathComponent("large.bin").path]).output.prefix(32)
        let shown = mount.path("large.bin")
        let script = (0..<8).map { "md5sum '\(shown)' > '\(drive.temp.path)/md5-\($0)' &" }.joined(separator: "\n") + "\nwait\n"
        let run = try ExternalCommand.shell(script, timeout: 120)
        XCTAssertEqual(run.status, 0, run.summary)
        for reader in 0..<8 {
            let line = (try? String(contentsOfFile: "\(drive.temp.path)/md5-\(reader)", encoding: .utf8)) ?? ""
            XCTAssertEqual(line.prefix(32), expected, "reader \(reader): \(line)")
        }
    }
}
