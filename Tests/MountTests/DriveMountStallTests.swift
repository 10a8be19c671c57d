import DriveEmulator
import Foundation
import TestSupport
import XCTest

/// A stalled backend must not freeze what is cached: with every download stalled and 16 readers
/// stuck on uncached files, listing a cached folder and stat of a cached file still answer.
final class DriveMountStallTests: XCTestCase {
    func testCachedOperationsAnswerWhileDownloadsStall() throws {
        _ = try MountedDriveFS.requireFuse()
        let drive = try EmulatedDrive { seed in
            let cached = seed.appendingPathComponent("cached"), cold = seed.appendingPathComponent("cold")
            try FileManager.default.createDirectory(at: cached, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: cold, withIntermediateDirectories: true)
            for i in 0..<5 { try Data("cached \(i)\n".utf8).write(to: cached.appendingPathComponent("file-\(i).txt")) }
            for i in 0..<16 { try TestContent.writeFile(cold.appendingPathComponent("cold-\(i).bin"), size: 300_000, seed: UInt64(100 + i)) }
        }
        defer { drive.stop() }
        let mount = try drive.mount(pollInterval: "10m")
        // Every name and attribute known, no content of cold/ read.
        let warm = try ExternalCommand.tool("ls", ["-lR", mount.mountpoint])
        XCTAssertEqual(warm.status, 0, warm.summary)
        XCTAssertEqual(try ExternalCommand.tool("cat", [mount.path("cached/file-0.txt")]).output, "cached 0\n")
        drive.settle()

        let stall = 5.0
        drive.emulator.addFaults(["files.get.media", "revisions.get.media"].map {
            FaultRule(method: $0, action: .stall(seconds: stall), times: nil)
        })
        let mediaBefore = drive.requests("files.get.media") + drive.requests("revisions.get.media")
        var readers: [Process] = []
        defer { for reader in readers { ExternalCommand.stop(reader) } }
        for i in 0..<16 {
            let reader = Process()
            reader.executableURL = URL(fileURLWithPath: ExternalCommand.which("md5sum") ?? "/usr/bin/md5sum")
            reader.arguments = [mount.path("cold/cold-\(i).bin")]
            let out = drive.temp.appendingPathComponent("cold-\(i).md5")
            _ = FileManager.default.createFile(atPath: out.path, contents: nil)
            reader.standardOutput = try FileHandle(forWritingTo: out)
            reader.standardError = FileHandle.nullDevice
            try reader.run()
            readers.append(reader)
        }
        let stalled = poll(timeout: 20) {
            drive.requests("files.get.media") + drive.requests("revisions.get.media") - mediaBefore >= 4
        }
        XCTAssertTrue(stalled, "the readers' downloads never reached the emulator: \(drive.statsSummary())")
        XCTAssertTrue(readers.allSatisfy { $0.isRunning }, "a reader finished although downloads stall")

        // What drivefs has cached answers now: readdir always reaches the daemon.
        let ls = try ExternalCommand.tool("ls", ["-l", mount.path("cached")], timeout: 20)
        XCTAssertFalse(ls.timedOut, "ls -l of a cached folder hung behind stalled downloads")
        XCTAssertEqual(ls.status, 0, ls.summary)
        XCTAssertEqual(ls.output.split(separator: "\n").filter { $0.hasPrefix("-") }.count, 5, ls.summary)
        let stat = try ExternalCommand.tool("stat", ["-c", "%s", mount.path("cached/file-3.txt")], timeout: 20)
        XCTAssertFalse(stat.timedOut, "stat of a cached file hung behind stalled downloads")
        XCTAssertEqual(stat.output, "9\n", stat.summary)
        let cat = try ExternalCommand.tool("cat", [mount.path("cached/file-0.txt")], timeout: 20)
        XCTAssertFalse(cat.timedOut, "reading a cached file hung behind stalled downloads")
        XCTAssertEqual(cat.output, "cached 0\n", cat.summary)

        // Once the backend answers again, the readers finish with the right bytes.
        drive.emulator.clearFaults()
        let finished = poll(timeout: 90) { readers.allSatisfy { !$0.isRunning } }
        XCTAssertTrue(finished, "readers still stuck \(Int(stall)) s after the stall ended; stats: \(drive.statsSummary())\n\(mount.log)")
        guard finished else { return }
        for i in 0..<16 {
            let source = drive.seed.appendingPathComponent("cold/cold-\(i).bin").path
            let expected = try ExternalCommand.tool("md5sum", [source]).output.prefix(32)
            let got = (try? String(contentsOf: drive.temp.appendingPathComponent("cold-\(i).md5"), encoding: .utf8)) ?? ""
            XCTAssertEqual(readers[i].terminationStatus, 0, "reader \(i)")
            XCTAssertEqual(got.prefix(32), expected, "reader \(i)")
        }
    }
}
