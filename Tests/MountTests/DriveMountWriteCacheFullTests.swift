import DriveClient
import Foundation
import TestSupport
import XCTest

/// Local failures keep their meaning (issue 7): with the cache directory on a tmpfs of 8 MiB, a
/// file bigger than that fails with ENOSPC (not EINVAL, not EIO), what was accepted before is
/// neither lost nor corrupted, and once the failed file is removed the mount keeps working.
final class DriveMountWriteCacheFullTests: XCTestCase {
    /// tmpfs mounts this test made; unmounted in `tearDown`, pass or fail.
    private var tmpfsMounts: [String] = []

    override func tearDown() {
        for dir in tmpfsMounts.reversed() {
            if MountedDriveFS.mountEntry(for: dir) != nil { _ = try? ExternalCommand.runTool("umount", [dir], timeout: 10) }
            if MountedDriveFS.mountEntry(for: dir) != nil { _ = try? ExternalCommand.runTool("umount", ["-l", dir], timeout: 10) }
            if MountedDriveFS.mountEntry(for: dir) == nil { rmdir(dir) }
        }
        tmpfsMounts = []
        super.tearDown()
    }

    /// A tmpfs of `size` on a new directory outside every test's temp tree (`EmulatedDrive.stop`
    /// removes its tree recursively, which must never reach into a live mount).
    private func tinyFilesystem(size: String) throws -> String {
        guard getuid() == 0 else { throw MountedDriveFS.missingRequirement("mounting a tmpfs needs root; the ENOSPC mount test runs as root (as in CI)") }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("drivefs-tinycache-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let mount = try ExternalCommand.tool("mount", ["-t", "tmpfs", "-o", "size=\(size),mode=0700", "tmpfs", dir])
        guard mount.status == 0 else {
            rmdir(dir)
            throw MountedDriveFS.missingRequirement("cannot mount a tmpfs of \(size) (\(mount.errorOutput)); the ENOSPC test needs one")
        }
        tmpfsMounts.append(dir)
        return dir
    }

    func testAFullCacheDiskAnswersENOSPCAndLosesNothingAccepted() throws {
        _ = try MountedDriveFS.requireFuse()
        let cache = try tinyFilesystem(size: "8m")
        let drive = try EmulatedDrive.empty()
        defer { drive.stop() }
        let source = try WriteTests.directory(drive.temp, "source/full")
        for (i, name) in ["a.bin", "b.bin", "c.bin"].enumerated() {
            try Data(TestContent.bytes(count: 512 << 10, seed: 13_000 + UInt64(i))).write(to: source.appendingPathComponent(name))
        }
        let mount = try drive.mount(extraArguments: ["--cache-dir", cache])
        try ExternalCommand.tool("cp", ["-r", source.path, mount.path("full")], timeout: 60).requireSuccess("cp of three 512 KiB files")

        // 32 MiB into a cache of 8 MiB: some write, or the close (flush) or fsync after it, must say ENOSPC.
        let big = try WriteTests.python("""
            import errno, os, sys
            path, total = sys.argv[1], int(sys.argv[2])
            piece = os.urandom(1 << 20)
            err, written = None, 0
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                while written < total:
                    written += os.write(fd, piece[: min(len(piece), total - written)])
                os.fsync(fd)
            except OSError as e:
                err = e
            try:
                os.close(fd)
            except OSError as e:
                err = err or e
            if err is None:
                print("no error after", written, "bytes")
            else:
                print(errno.errorcode.get(err.errno, err.errno))
                print("after", written, "bytes:", err, file=sys.stderr)
            """, [mount.path("full/big.bin"), String(32 << 20)], timeout: 120)
        XCTAssertEqual(big.output, "ENOSPC\n", "writing 32 MiB with an 8 MiB cache disk must fail with ENOSPC (errno 28): \(big.summary)")

        for name in ["a.bin", "b.bin", "c.bin"] {
            let cmp = try ExternalCommand.tool("cmp", [source.appendingPathComponent(name).path, mount.path("full/\(name)")])
            XCTAssertEqual(cmp.status, 0, "\(name), accepted before the disk filled up, reads back intact: \(cmp.summary)")
        }
        try ExternalCommand.tool("rm", ["-f", mount.path("full/big.bin")]).requireSuccess("rm of the file that did not fit")
        // The mount keeps working: a new file of 1 MiB is written, read back, and uploaded.
        let after = source.appendingPathComponent("after.bin")
        try Data(TestContent.bytes(count: 1 << 20, seed: 13_100)).write(to: after)
        // The removed file's copy is given back by the daemon (at once, or when its upload, which
        // the removal cancelled, stops retrying): wait, bounded, until the cache disk has room.
        let freed = poll(timeout: 30, interval: 0.05) {
            var fs = statvfs()
            return statvfs(cache, &fs) == 0 && UInt64(fs.f_bavail) * UInt64(fs.f_frsize) >= 3 << 20
        }
        if !freed {
            let du = try ExternalCommand.tool("du", ["-ab", cache])
            XCTFail("the removed file's space was not given back within 30 s: \(du.output)\nlog:\n\(mount.log.suffix(3000))")
        }
        try ExternalCommand.tool("cp", [after.path, mount.path("full/after.bin")], timeout: 60)
            .requireSuccess("cp of a 1 MiB file once the space is free again")
        let cmp = try ExternalCommand.tool("cmp", [after.path, mount.path("full/after.bin")])
        XCTAssertEqual(cmp.status, 0, "the file written after the failure reads back: \(cmp.summary)")

        try drive.drivefsUnmount(mount)
        let problems = try RemoteTree.read(drive, at: "full").problems(comparedWith: try WriteTests.localMD5s(source))
        XCTAssertTrue(problems.isEmpty, "on Drive: the accepted files and the one written after, intact, and not the file that did not fit:\n"
                      + WriteTests.describe(problems))
    }
}
