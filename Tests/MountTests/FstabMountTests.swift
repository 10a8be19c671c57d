import Foundation
import XCTest

/// drivefs as mount(8)'s helper: `mount DIR` / `umount DIR` through an fstab line mount and
/// unmount the emulator's Drive, and every `drivefs mount` option has an `-o` spelling.
///
/// The mount runs in private mount and PID namespaces (`unshare -m -p -f`), with an fstab of its
/// own (`mount -T`) and `mount.fuse.drivefs` added to /usr/sbin by an overlay that only that
/// namespace sees; when the namespace's first process ends, everything in it ends with it, so
/// nothing outlives the test whatever fails.
final class FstabMountTests: XCTestCase {
    /// The line docs/fstab.md shows, for this test's mount point and profile.
    static func fstabLine(mountpoint: String) -> String {
        "drivefs#default \(mountpoint) fuse.drivefs noauto,_netdev,x-systemd.automount,cache_size=64M,poll_interval=1s,umask=022 0 0"
    }

    private func helperLink(_ directory: URL, name: String = "mount.fuse.drivefs") throws -> URL {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let link = directory.appendingPathComponent(name)
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: try DriveFSBinary.path())
        return link
    }

    func testTheHelperTranslatesMountOptions() throws {
        let temp = FileManager.default.temporaryDirectory.appendingPathComponent("drivefs-helper-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: temp) }
        for name in ["mount.fuse.drivefs", "mount.drivefs"] {
            let helper = try helperLink(temp, name: name)
            let fake = try ExternalCommand.run(helper.path, [
                "drivefs#work", "/home/me/gdrive", "-f", "-v", "-o",
                "rw,noauto,user,_netdev,nofail,x-systemd.automount,uid=1000,gid=1000,cache_size=20G,allow_other,"
                    + "poll_interval=30s,dir_cache_ttl=5m,umask=027,log_level=debug,shared_drive=Team,default_permissions",
            ])
            XCTAssertEqual(fake.status, 0, fake.summary)
            XCTAssertEqual(fake.errorOutput, "drivefs mount /home/me/gdrive --uid=1000 --gid=1000 --cache-size=20G --allow-other "
                           + "--poll-interval=30s --dir-cache-ttl=5m --umask=027 --log-level=debug --shared-drive=Team --profile=work "
                           + "--options=default_permissions (not run: -f)\n", name)
            try FileManager.default.removeItem(at: helper)
        }
        let helper = try helperLink(temp)
        let plain = try ExternalCommand.run(helper.path, ["default", "/m", "-f", "-v", "-o", "profile=other,cache_dir=/var/cache/d"])
        XCTAssertEqual(plain.errorOutput, "drivefs mount /m --cache-dir=/var/cache/d --profile=other (not run: -f)\n", plain.summary)
        // fstab's ro makes a read-only mount; a later rw undoes it (mount(8) reads them in order).
        let readOnly = try ExternalCommand.run(helper.path, ["drivefs", "/m", "-f", "-v", "-o", "noauto,ro"])
        XCTAssertEqual(readOnly.errorOutput, "drivefs mount /m --read-only (not run: -f)\n", readOnly.summary)
        let undone = try ExternalCommand.run(helper.path, ["drivefs", "/m", "-f", "-v", "-o", "ro,rw"])
        XCTAssertEqual(undone.errorOutput, "drivefs mount /m (not run: -f)\n", undone.summary)
        let missing = try ExternalCommand.run(helper.path, ["drivefs", "/m", "-f", "-o", "cache_size"])
        XCTAssertEqual(missing.status, 2, missing.summary)
        XCTAssertTrue(missing.errorOutput.contains("'cache_size' needs a value"), missing.summary)
        let flagValue = try ExternalCommand.run(helper.path, ["drivefs", "/m", "-f", "-o", "allow_other=1"])
        XCTAssertEqual(flagValue.status, 2, flagValue.summary)
        let oneWord = try ExternalCommand.run(helper.path, ["/m"])
        XCTAssertEqual(oneWord.status, 2, oneWord.summary)
        XCTAssertTrue(oneWord.errorOutput.contains("expected SOURCE MOUNTPOINT"), oneWord.summary)
        // Every drivefs mount option but the three that make no sense under mount(8) has a spelling.
        let help = try DriveFSBinary.run(["mount", "--help"]).output
        for long in help.split(separator: "\n").compactMap({ line -> String? in
            guard let range = line.range(of: #"--[a-z-]+"#, options: .regularExpression), line.hasPrefix("  ") else { return nil }
            return String(line[range].dropFirst(2))
        }) where !["foreground", "debug", "options", "help"].contains(long) {
            let spelled = long.replacingOccurrences(of: "-", with: "_")
            let takesValue = help.contains("--\(long)=")
            let run = try ExternalCommand.run(helper.path, ["drivefs", "/m", "-f", "-v", "-o", takesValue ? "\(spelled)=x" : spelled])
            XCTAssertTrue(run.errorOutput.contains("--\(long)"), "-o \(spelled) does not become --\(long): \(run.summary)")
        }
    }

    func testAnFstabLineMountsAndUnmounts() throws {
        _ = try MountedDriveFS.requireFuse()
        guard getuid() == 0 else {
            throw MountedDriveFS.missingRequirement("the fstab test needs root (a private mount namespace and mount(8) as root)")
        }
        for tool in ["unshare", "mount", "umount", "findmnt"] where ExternalCommand.which(tool) == nil {
            throw MountedDriveFS.missingRequirement("\(tool) is missing: install util-linux ('make deps')")
        }
        let drive = try EmulatedDrive { seed in
            try Data("hello through fstab\n".utf8).write(to: seed.appendingPathComponent("hello.txt"))
        }
        defer { drive.stop() }
        let helpers = drive.temp.appendingPathComponent("sbin")
        _ = try helperLink(helpers)
        let mountpoint = drive.temp.appendingPathComponent("gdrive").path
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        let fstab = drive.temp.appendingPathComponent("fstab")
        try (Self.fstabLine(mountpoint: mountpoint) + "\n").write(to: fstab, atomically: true, encoding: .utf8)

        let script = """
            set -u
            mnt='\(mountpoint)'
            cleanup() { fusermount3 -u "$mnt" 2>/dev/null; fusermount3 -uz "$mnt" 2>/dev/null; }
            trap cleanup EXIT
            mount -t overlay overlay -o 'lowerdir=\(helpers.path):/usr/sbin' /usr/sbin || { echo "no overlay"; exit 90; }
            mount -T '\(fstab.path)' "$mnt" || exit 91
            echo "type: $(findmnt -n -o FSTYPE "$mnt")"
            echo "options: $(findmnt -n -o VFS-OPTIONS "$mnt")"
            echo "content: $(cat "$mnt/hello.txt")"
            umount "$mnt" || exit 92
            if findmnt "$mnt" >/dev/null; then echo "still mounted"; exit 93; fi
            echo unmounted
            """
        let run = try ExternalCommand.run("/usr/bin/unshare", ["-m", "-p", "-f", "--mount-proc", "--propagation", "private",
                                                               "/bin/sh", "-c", script],
                                          timeout: 60, environment: drive.environment)
        if run.status == 90, ProcessInfo.processInfo.environment["DRIVEFS_MOUNT_REQUIRED"] != "1" {
            throw XCTSkip("this kernel cannot overlay /usr/sbin in a private namespace: \(run.summary)")
        }
        XCTAssertEqual(run.status, 0, run.summary)
        XCTAssertTrue(run.output.contains("type: fuse.drivefs\n"), run.summary)
        XCTAssertTrue(run.output.contains("options: rw,"), run.summary)
        XCTAssertTrue(run.output.contains("content: hello through fstab\n"), run.summary)
        XCTAssertTrue(run.output.hasSuffix("unmounted\n"), run.summary)
        XCTAssertNil(MountedDriveFS.mountEntry(for: mountpoint), "nothing is mounted outside the namespace")
    }
}
