import DriveClient
import DriveEmulator
import Foundation
import TestSupport
import XCTest

/// A daemon that dies uncleanly must free its mount, never leave it hung (chaos finding 15's
/// aftermath, docs/chaos-findings.md): a thread of the daemon in `notify_inval_entry` waits for a
/// folder's lock held by a process's request in that folder, which waits for the daemon. When the
/// daemon dies then, that thread never ends, the /dev/fuse descriptor stays open and the mount
/// hangs every process that touches it (the chaos run's later mounts waited on it until the
/// connection was aborted by hand). Here the request is a `mkdir` whose Drive create stalls, the
/// notify comes from a page of changes about the same folder, and the daemon is killed: with
/// SIGKILL (the guard's watcher ends the connection) and with SIGILL and core dumps on (a trap:
/// the dump waits for every thread, so only the signal handler can end it).
final class DriveMountCrashTests: XCTestCase {
    func testADaemonKilledWhileANotifyWaitsFreesItsMount() throws {
        try dieWhileANotifyWaits(signal: SIGKILL, dumpsCore: false)
    }

    func testADaemonThatTrapsWhileANotifyWaitsFreesItsMount() throws {
        try dieWhileANotifyWaits(signal: SIGILL, dumpsCore: true)
    }

    private func dieWhileANotifyWaits(signal: Int32, dumpsCore: Bool) throws {
        _ = try MountedDriveFS.requireFuse()
        // Kernel stacks (which request waits where) and fusectl's files are root's.
        guard getuid() == 0 else { throw XCTSkip("needs root: reads kernel stacks in /proc") }
        try Self.requireFusectl()
        let drive = try EmulatedDrive { seed in
            let work = seed.appendingPathComponent("work")
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            try Data("here before\n".utf8).write(to: work.appendingPathComponent("before.txt"))
        }
        defer { drive.stop() }
        // Its own working directory: a core dump lands there, not in the test's.
        let cwd = drive.temp.appendingPathComponent("daemon-cwd")
        try FileManager.default.createDirectory(at: cwd, withIntermediateDirectories: true)
        // A trap's default action, a core dump (Swift's backtracer would take the signal and exit instead).
        // `--upload-delay 0`: a mkdir is made on Drive before it answers (with a delay its create is
        // queued and the mkdir answers at once: nothing would hold the folder's lock).
        let mount = try drive.mount(pollInterval: "1s", extraArguments: ["--upload-delay", "0"], workingDirectory: cwd.path,
                                    extraEnvironment: dumpsCore ? ["SWIFT_BACKTRACE": "enable=no"] : [:])
        let pid = mount.process.processIdentifier
        let connection = Self.connection(of: mount.mountpoint)
        var mkdir: Process?
        defer {
            // Whatever happened, nothing is left hung: the connection aborted by hand if the
            // daemon could not end it (what the test checks it did not need).
            if mount.process.isRunning {
                if let connection { Self.abort(connection) }
                kill(pid, SIGKILL)
            }
            if let mkdir, mkdir.isRunning { kill(mkdir.processIdentifier, SIGKILL) }
            mount.tearDown()
        }
        XCTAssertNotNil(connection, "the mount's connection is in /proc/self/mountinfo")
        XCTAssertTrue(mount.log.contains("crash guard armed") || !mount.log.contains("no crash guard"),
                      "the guard is armed: \(mount.log)")

        // The folder is listed (a page of changes about it then asks the kernel to drop names).
        let ls = try ExternalCommand.tool("ls", [mount.path("work")])
        XCTAssertEqual(ls.output, "before.txt\n", ls.summary)
        let work = try drive.file(at: "work")
        drive.settle()

        // A mkdir in it whose Drive create stalls: the kernel holds the folder's lock meanwhile.
        drive.emulator.addFaults([FaultRule(method: "files.create", action: .stall(seconds: 600), times: nil)])
        let creates = drive.requests("files.create")
        let child = Process()
        child.executableURL = URL(fileURLWithPath: ExternalCommand.which("mkdir") ?? "/bin/mkdir")
        child.arguments = [mount.path("work/held")]
        child.standardOutput = FileHandle.nullDevice
        child.standardError = FileHandle.nullDevice
        try child.run()
        mkdir = child
        // A stalled request is counted once it ends: the mkdir's own kernel stack says it waits for the daemon.
        let held = poll(timeout: 30) {
            ((try? String(contentsOfFile: "/proc/\(child.processIdentifier)/stack", encoding: .utf8)) ?? "").contains("fuse")
        }
        XCTAssertTrue(held, "the mkdir does not wait for the daemon: \(Self.threadStates(child.processIdentifier))")
        XCTAssertEqual(drive.requests("files.create"), creates, "the mkdir's create is not answered")

        // Another client adds a file there; the next page of changes makes the daemon invalidate
        // its name in the folder, and that notification waits for the folder's lock.
        _ = try drive.api().createFile(name: "from-elsewhere.txt", parent: work.id, source: .bytes(Array("made elsewhere\n".utf8)))
        let waiting = poll(timeout: 60) { Self.threadWaitsOnTheKernel(pid) }
        XCTAssertTrue(waiting, "no thread of the daemon waits in an invalidation: \(Self.threadStates(pid))\n\(mount.log)")
        guard waiting else { return }

        if dumpsCore {
            let limit = try ExternalCommand.tool("prlimit", ["--pid", "\(pid)", "--core=unlimited:unlimited"])
            XCTAssertEqual(limit.status, 0, limit.summary)
        }
        XCTAssertEqual(kill(pid, signal), 0)
        // It ends (a dump of a debug build takes a few seconds), and the mount answers at once: not connected.
        let ended = ExternalCommand.waitForExit(mount.process, timeout: 120)
        guard ended else {
            // Hung, as before the guard: freed by hand now, so that nothing below waits on it.
            XCTFail("the daemon never ended, its mount hangs: \(Self.threadStates(pid))")
            if let connection { Self.abort(connection) }
            return
        }
        let stat = try ExternalCommand.tool("stat", [mount.mountpoint], timeout: 20)
        XCTAssertFalse(stat.timedOut, "stat of the mountpoint hangs")
        XCTAssertNotEqual(stat.status, 0, stat.summary)
        XCTAssertTrue(stat.summary.contains("not connected"), stat.summary)
        XCTAssertTrue(ExternalCommand.waitForExit(child, timeout: 20), "the mkdir waiting on the dead daemon never ended")
        if dumpsCore {
            let dumped = (try? FileManager.default.contentsOfDirectory(atPath: cwd.path)) ?? []
            XCTAssertTrue(dumped.contains { $0.hasPrefix("core") } || Self.coreDumpsElsewhere,
                          "the trap's core dump was written: \(dumped)")
        }
        // A remount where it was works.
        XCTAssertEqual(try mount.unmount().status, 0)
        let again = try drive.mount(pollInterval: "1s", mountpoint: mount.mountpoint)
        XCTAssertTrue(poll(timeout: 30) {
            (try? FileManager.default.contentsOfDirectory(atPath: again.path("work")).sorted()) == ["before.txt", "from-elsewhere.txt"]
        }, "the remount lists the folder")
        XCTAssertEqual(try again.unmount().status, 0)
    }

    // MARK: The kernel's side

    static let connections = "/sys/fs/fuse/connections"

    /// fusectl is what the guard ends a connection through: mounted by systemd at boot; mounted
    /// here when the test runs as root without it, else the test is skipped.
    static func requireFusectl() throws {
        if (try? FileManager.default.contentsOfDirectory(atPath: connections))?.isEmpty == false || isFusectlMounted { return }
        guard getuid() == 0 else { throw XCTSkip("fusectl is not mounted at \(connections), and mounting it needs root") }
        let mounted = try ExternalCommand.tool("mount", ["-t", "fusectl", "none", connections])
        if mounted.status != 0 { throw XCTSkip("cannot mount fusectl: \(mounted.summary)") }
    }

    private static var isFusectlMounted: Bool {
        ((try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? "").split(separator: "\n")
            .contains { $0.split(separator: " ").dropFirst(2).first == "fusectl" }
    }

    /// Where core dumps go when not to the working directory (a pipe to a collector).
    static var coreDumpsElsewhere: Bool {
        ((try? String(contentsOfFile: "/proc/sys/kernel/core_pattern", encoding: .utf8)) ?? "").hasPrefix("|")
    }

    /// The fusectl connection of the FUSE mount on `mountpoint` (its minor device number).
    static func connection(of mountpoint: String) -> String? {
        let text = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
        var found: String?
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count > 4, fields[4] == mountpoint, line.contains(" - fuse") else { continue }
            found = fields[2].split(separator: ":").last.map(String.init)
        }
        return found
    }

    static func abort(_ connection: String) {
        let fd = open("\(connections)/\(connection)/abort", O_WRONLY)
        guard fd >= 0 else { return }
        _ = write(fd, "1", 1)
        close(fd)
    }

    /// A thread of `pid` waits in the kernel for a FUSE invalidation (its kernel stack names it,
    /// read as root), or, where stacks cannot be read, sleeps uninterruptibly.
    static func threadWaitsOnTheKernel(_ pid: pid_t) -> Bool {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.contains { tid in
            if let stack = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/stack", encoding: .utf8), !stack.isEmpty {
                return stack.contains("fuse_reverse_inval") || stack.contains("fuse_notify_inval")
            }
            return state(pid, tid) == "D"
        }
    }

    static func state(_ pid: pid_t, _ tid: String) -> String? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(close, offsetBy: 2)...].split(separator: " ").first.map(String.init)
    }

    static func threadStates(_ pid: pid_t) -> String {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.sorted().map { tid in
            let stack = (try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/stack", encoding: .utf8))?
                .split(separator: "\n").prefix(3).joined(separator: " < ") ?? ""
            return "\(tid) \(state(pid, tid) ?? "?") \(stack)"
        }.joined(separator: "\n")
    }
}
