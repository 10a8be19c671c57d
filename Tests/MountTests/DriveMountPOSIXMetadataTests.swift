import DriveClient
import Foundation
import Glibc
import XCTest

/// A backup onto the mount (issue 17): with `--posix-metadata`, `tar -xp` and `rsync -a` run as
/// root restore owners, modes and FIFOs, and `mkfifo`, `mknod` and `chown` on the mount are kept;
/// a fresh mount of the same Drive (an empty cache directory: only Drive's appProperties) shows
/// them all with `stat`. Needs root (chown to other users, mknod of a device).
final class DriveMountPOSIXMetadataTests: XCTestCase {
    /// `stat -c '%F %u:%g %a'` (and `%t,%T` for devices) of each path, one line each.
    private func stat(_ format: String, _ paths: [String], file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        let result = try ExternalCommand.tool("stat", ["-c", format] + paths, file: file, line: line)
        XCTAssertEqual(result.status, 0, "stat: \(result.summary)", file: file, line: line)
        return result.output.split(separator: "\n").map(String.init)
    }

    func testTarRsyncMkfifoMknodAndChownAreKeptAcrossAFreshMount() throws {
        _ = try MountedDriveFS.requireFuse()
        guard geteuid() == 0 else { throw XCTSkip("needs root: chown to other users and mknod of a device") }
        for tool in ["tar", "rsync", "mkfifo", "mknod"] where ExternalCommand.which(tool) == nil {
            throw XCTSkip("\(tool) is not installed")
        }
        let drive = try EmulatedDrive.empty()
        defer { drive.stop() }
        // The tree to back up, owned by users that are not the mount's, with a FIFO in it.
        let source = try WriteTests.directory(drive.temp, "source").path
        try ExternalCommand.shell("""
            set -e; cd '\(source)'; umask 022
            mkdir -p etc/app && printf 'conf\\n' > etc/app/app.conf && printf 'key\\n' > etc/app/secret
            mkfifo etc/app/pipe
            chown 4242:4343 etc/app/app.conf && chmod 640 etc/app/app.conf
            chown 4444:4545 etc/app/secret && chmod 600 etc/app/secret
            chown 4646:4747 etc/app/pipe && chmod 620 etc/app/pipe
            chown 4848:4949 etc/app && chmod 750 etc/app
            """).requireSuccess("make the source tree")
        let entries = ["etc/app", "etc/app/app.conf", "etc/app/secret", "etc/app/pipe"]
        let format = "%F %u:%g %a"
        let expected = try stat(format, entries.map { "\(source)/\($0)" })

        let mount = try drive.mount(extraArguments: ["--posix-metadata"])
        let m = mount.mountpoint
        try ExternalCommand.shell("mkdir '\(m)/tar' '\(m)/rsync'").requireSuccess("mkdir tar rsync")
        try ExternalCommand.shell("tar -C '\(source)' -cf - etc | tar -C '\(m)/tar' -xpf - --same-owner", timeout: 120)
            .requireSuccess("tar -xp onto the mount")
        try ExternalCommand.tool("rsync", ["-a", "\(source)/etc", "\(m)/rsync/"], timeout: 120).requireSuccess("rsync -a onto the mount")
        try ExternalCommand.shell("""
            set -e; cd '\(m)'
            mkfifo -m 640 direct.fifo && chown 4242:4343 direct.fifo
            mknod -m 666 null c 1 3 && mknod -m 660 disk b 8 1 && chown 0:6 disk
            """).requireSuccess("mkfifo, mknod and chown on the mount")
        XCTAssertEqual(try stat(format, entries.map { "\(m)/tar/\($0)" }), expected, "tar -xp, on the mount")
        XCTAssertEqual(try stat(format, entries.map { "\(m)/rsync/\($0)" }), expected, "rsync -a, on the mount")
        try drive.drivefsUnmount(mount)

        // Another machine: only what Drive keeps.
        let fresh = try drive.mountFresh(extraArguments: ["--posix-metadata"])
        defer { fresh.tearDown() }
        let f = fresh.mountpoint
        XCTAssertEqual(try stat(format, entries.map { "\(f)/tar/\($0)" }), expected, "tar -xp, after a fresh mount")
        XCTAssertEqual(try stat(format, entries.map { "\(f)/rsync/\($0)" }), expected, "rsync -a, after a fresh mount")
        XCTAssertEqual(try stat("%F %u:%g %a %t,%T", ["\(f)/direct.fifo", "\(f)/null", "\(f)/disk"]),
                       ["fifo 4242:4343 640 0,0", "character special file 0:0 666 1,3", "block special file 0:6 660 8,1"],
                       "mkfifo, mknod and chown, after a fresh mount")
        // A FIFO on the mount is a pipe the kernel makes: a writer and a reader meet through it.
        let piped = try ExternalCommand.shell("(echo through > '\(f)/direct.fifo' &) ; cat '\(f)/direct.fifo'", timeout: 30)
        XCTAssertEqual(piped.output, "through\n", "a FIFO on the mount carries data: \(piped.summary)")
    }
}
