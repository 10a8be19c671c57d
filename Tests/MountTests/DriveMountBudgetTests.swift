import DriveEmulator
import Foundation
import TestSupport
import XCTest

/// Request budgets, counted by the emulator (deterministic: every request drivefs makes is
/// counted before it is answered). "Requests" are every Drive API request, the token endpoint's
/// excepted; each failure message lists the counts per method.
///
/// The mounts use a 10-minute poll interval, so that the only change-feed read is the one at start.
/// The cold budgets measure how folders are listed as they are used, so those mounts run with
/// `--no-index` (the whole-drive index, listing everything from mount on, has its own test below).
final class DriveMountBudgetTests: XCTestCase {
    /// root → 10 folders → 24 subfolders each → 20 files each: 250 folders, 4,800 files.
    private func wideDrive(breadth: Int = 10, sub: Int = 24, filesPerLeaf: Int = 20,
                           configure: (inout EmulatorConfig) -> Void = { _ in }) throws -> (EmulatedDrive, SeedTree) {
        var tree = SeedTree()
        let drive = try EmulatedDrive(configure: configure) { seed in
            try tree.wideTree("", in: seed, breadth: breadth, sub: sub, filesPerLeaf: filesPerLeaf)
        }
        return (drive, tree)
    }

    /// `ls -lR` of the mount: every file line of the tree is there.
    private func assertListsEveryFile(_ mount: MountedDriveFS, _ tree: SeedTree, _ what: String,
                                      file: StaticString = #filePath, line: UInt = #line) throws {
        let ls = try ExternalCommand.tool("ls", ["-lR", mount.mountpoint], timeout: 120, file: file, line: line)
        XCTAssertEqual(ls.status, 0, "\(what): \(ls.summary)", file: file, line: line)
        let regular = ls.output.split(separator: "\n").filter { $0.hasPrefix("-") }.count
        let folders = ls.output.split(separator: "\n").filter { $0.hasPrefix("d") }.count
        XCTAssertEqual(regular, tree.files.count, "\(what): files listed", file: file, line: line)
        XCTAssertEqual(folders, tree.folders.count, "\(what): folders listed", file: file, line: line)
    }

    func testColdListingOf5000EntriesTakesAtMost25RequestsAndWarmNone() throws {
        _ = try MountedDriveFS.requireFuse()
        let (drive, tree) = try wideDrive()
        defer { drive.stop() }
        XCTAssertEqual(tree.files.count + tree.folders.count, 5_050)
        drive.emulator.resetStats()
        let mount = try drive.mount(pollInterval: "10m", extraArguments: ["--no-index"])
        try assertListsEveryFile(mount, tree, "cold")
        let cold = drive.apiRequests()
        print("budget: cold ls -lR of 5,050 entries: \(cold) requests from mount start (\(drive.statsSummary()))")
        XCTAssertLessThanOrEqual(cold, 25, "cold ls -lR, counted from mount start: \(drive.statsSummary())")

        drive.settle()
        let before = drive.apiRequests()
        try assertListsEveryFile(mount, tree, "warm")
        let warm = drive.apiRequests() - before
        print("budget: warm ls -lR: \(warm) requests (\(drive.statsSummary()))")
        XCTAssertEqual(warm, 0, "warm ls -lR: \(drive.statsSummary())")

        // Remount over the index the first mount saved (same cache directory).
        XCTAssertEqual(try mount.unmount().status, 0)
        XCTAssertTrue(ExternalCommand.waitForExit(mount.process, timeout: 20), "drivefs did not end after unmount")
        XCTAssertTrue(FileManager.default.fileExists(atPath: drive.cacheDirectory + "/index.bin"), "no index saved")
        drive.emulator.resetStats()
        let again = try drive.mount(pollInterval: "10m", extraArguments: ["--no-index"])
        XCTAssertTrue(drive.waitForPolls(1), "no change-feed read at start: \(drive.statsSummary())")
        let atStart = drive.apiRequests()
        try assertListsEveryFile(again, tree, "remounted")
        let remounted = drive.apiRequests() - atStart
        print("budget: remounted ls -lR: \(remounted) requests after the mount's \(atStart) at start (\(drive.statsSummary()))")
        XCTAssertLessThanOrEqual(remounted, 3, "ls -lR over the persisted index: \(drive.statsSummary())")
        XCTAssertLessThanOrEqual(atStart, 3, "remount start (root, start token, first poll): \(drive.statsSummary())")
    }

    func testColdStatFiveFoldersDeepTakesAtMost6RequestsAndWarmNone() throws {
        _ = try MountedDriveFS.requireFuse()
        var tree = SeedTree()
        let drive = try EmulatedDrive { seed in
            try tree.file("a/b/c/d/e/deep.txt", in: seed, text: "deep\n")
            for name in ["a", "a/b", "a/b/c", "a/b/c/d"] {
                try tree.file(name + "/sibling.txt", in: seed, text: "beside\n")
                try tree.folder(name + "/other", in: seed)
            }
        }
        defer { drive.stop() }
        drive.emulator.resetStats()
        let mount = try drive.mount(pollInterval: "10m", extraArguments: ["--no-index"])
        XCTAssertTrue(drive.waitForPolls(1), "no change-feed read at start: \(drive.statsSummary())")
        let atStart = drive.apiRequests()
        let stat = try ExternalCommand.tool("stat", ["-c", "%s", mount.path("a/b/c/d/e/deep.txt")])
        XCTAssertEqual(stat.output, "5\n", stat.summary)
        let cold = drive.apiRequests() - atStart
        print("budget: cold stat 5 deep: \(cold) requests after the mount's \(atStart) at start (\(drive.statsSummary()))")
        XCTAssertLessThanOrEqual(cold, 6, "cold stat, beyond the \(atStart) at start: \(drive.statsSummary())")

        drive.settle()
        let before = drive.apiRequests()
        let warmStat = try ExternalCommand.tool("stat", ["-c", "%s", mount.path("a/b/c/d/e/deep.txt")])
        XCTAssertEqual(warmStat.output, "5\n", warmStat.summary)
        let warm = drive.apiRequests() - before
        print("budget: warm stat: \(warm) requests")
        XCTAssertEqual(warm, 0, "warm stat: \(drive.statsSummary())")
    }

    /// The whole-drive index (the default): from mount on every folder is listed in the background,
    /// many per request; once it is built (the daemon says so), `ls -lR` and `find` ask Drive
    /// nothing, and a remount restores it from the cache directory without listing anything.
    func testTheWholeDriveIndexIsBuiltAtMountInFewRequestsAndServesEverything() throws {
        _ = try MountedDriveFS.requireFuse()
        let (drive, tree) = try wideDrive()
        defer { drive.stop() }
        drive.emulator.resetStats()
        let mount = try drive.mount(pollInterval: "10m")
        XCTAssertTrue(poll(timeout: 120) { mount.log.contains("index built:") },
                      "the index was not built in 120 s: \(drive.statsSummary())\nlog:\n\(mount.log)")
        let built = drive.apiRequests()
        print("index: 5,050 entries indexed in \(built) requests from mount start (\(drive.statsSummary()))")
        XCTAssertLessThanOrEqual(built, 25, "building the index: \(drive.statsSummary())")
        XCTAssertTrue(mount.log.contains("index built: 5051 items in 251 folders"), mount.log)

        try assertListsEveryFile(mount, tree, "indexed")
        let find = try ExternalCommand.tool("find", [mount.mountpoint, "-mindepth", "1"], timeout: 60)
        XCTAssertEqual(find.output.split(separator: "\n").count, 5_050, find.summary)
        XCTAssertEqual(drive.apiRequests(), built, "ls -lR and find over the index: \(drive.statsSummary())")

        XCTAssertEqual(try mount.unmount().status, 0)
        XCTAssertTrue(ExternalCommand.waitForExit(mount.process, timeout: 20), "drivefs did not end after unmount")
        drive.emulator.resetStats()
        let again = try drive.mount(pollInterval: "10m")
        XCTAssertTrue(poll(timeout: 60) { again.log.contains("the index restored is complete") }, again.log)
        try assertListsEveryFile(again, tree, "remounted")
        XCTAssertEqual(drive.requests("files.list"), 0, "a remount over the saved index: \(drive.statsSummary())")
    }

    /// Google's grouped-listing bug on (half of the parents of every multi-parent query dropped):
    /// the listing is still complete, because an empty answer from a grouped query is checked.
    /// A smaller tree (60 folders, 600 files) than the budget's: this is about correctness.
    func testListingIsCompleteDespiteTheMultiParentDropQuirk() throws {
        _ = try MountedDriveFS.requireFuse()
        let (drive, tree) = try wideDrive(breadth: 5, sub: 11, filesPerLeaf: 10) {
            $0.listingQuirks = .init(multiParentDropFraction: 0.5, seed: 3)
        }
        defer { drive.stop() }
        let mount = try drive.mount(pollInterval: "10m")
        try assertListsEveryFile(mount, tree, "with the quirk")
        print("quirk: ls -lR with multiParentDrop 0.5: \(drive.statsSummary())")
        let find = try ExternalCommand.tool("find", [mount.mountpoint, "-mindepth", "1"], timeout: 60)
        XCTAssertEqual(find.output.split(separator: "\n").count, tree.files.count + tree.folders.count, find.summary)
    }

    /// 1,000 random 4 KiB reads in a cold 256 MiB file (1 GiB takes too long to seed per test on
    /// two cores): at most 256 MiB downloaded, each read correct, and drivefs under 100 MiB resident.
    func testRandomReadsInALargeFileDownloadLittleAndStaySmall() throws {
        _ = try MountedDriveFS.requireFuse()
        let size = 256 << 20
        var tree = SeedTree()
        let drive = try EmulatedDrive { seed in try tree.file("huge.bin", in: seed, size: size, seed: 5) }
        defer { drive.stop() }
        let mount = try drive.mount(pollInterval: "10m")
        drive.emulator.resetStats()
        let started = Date()
        let script = """
            import os, random, sys
            mounted, source = sys.argv[1], sys.argv[2]
            rng = random.Random(1234)
            m = os.open(mounted, os.O_RDONLY); s = os.open(source, os.O_RDONLY)
            size = os.fstat(s).st_size
            bad = 0
            for i in range(1000):
                offset = rng.randrange(0, size - 4096)
                if os.pread(m, 4096, offset) != os.pread(s, 4096, offset):
                    bad += 1
                    print("wrong bytes at", offset)
            print("reads done, wrong:", bad)
            sys.exit(1 if bad else 0)
            """
        let run = try ExternalCommand.tool("python3", ["-c", script, mount.path("huge.bin"),
                                                       drive.seed.appendingPathComponent("huge.bin").path], timeout: 150)
        XCTAssertEqual(run.status, 0, run.summary)
        print("random reads took \(Date().timeIntervalSince(started)) s")
        drive.settle()
        // Byte counts are added once an exchange is over; settle() waited for the last one.
        let downloaded = drive.mediaBytes()
        let rss = Self.residentKiB(mount.process.processIdentifier)
        print("budget: 1,000 random 4 KiB reads in 256 MiB: \(downloaded) bytes downloaded (\(downloaded >> 20) MiB),"
              + " drivefs VmRSS \(rss.map { "\($0 >> 10) MiB" } ?? "?") (\(drive.statsSummary()))")
        XCTAssertLessThanOrEqual(downloaded, 256 << 20, "downloaded: \(drive.statsSummary())")
        let resident = try XCTUnwrap(rss, "no VmRSS for drivefs")
        XCTAssertLessThan(resident, 100 << 10, "drivefs's resident memory, KiB")
    }

    /// VmRSS of a process, in KiB.
    static func residentKiB(_ pid: pid_t) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
        return line.split(separator: " ").compactMap { Int($0) }.first
    }
}
