import DriveFSCore
import DriveSupport
import Foundation
import XCTest

/// The FUSE bridge end to end: `drivefs debug smoke-mount` in a subprocess, checked with the
/// ordinary shell tools, each bounded in time. Skipped only where FUSE is missing.
final class SmokeMountTests: XCTestCase {
    private var mount: MountedDriveFS!

    override func setUpWithError() throws {
        mount = try MountedDriveFS.start()
    }

    override func tearDown() {
        mount?.tearDown()
        mount = nil
    }

    private func tool(_ name: String, _ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws
        -> ExternalCommand.Result
    {
        let result = try ExternalCommand.runTool(name, arguments, timeout: 20)
        XCTAssertFalse(result.timedOut, "\(name) \(arguments) timed out", file: file, line: line)
        return result
    }

    func testMountIsListedWithDrivefsNameTypeAndReadOnlyOptions() throws {
        let entry = try XCTUnwrap(MountedDriveFS.mountEntry(for: mount.mountpoint))
        XCTAssertEqual(entry[0], "drivefs")
        XCTAssertEqual(entry[2], "fuse.drivefs")
        let options = Set(entry[3].split(separator: ",").map(String.init))
        XCTAssertTrue(options.contains("ro"), "options: \(entry[3])")
        XCTAssertTrue(options.contains("default_permissions"), "options: \(entry[3])")
    }

    func testLsShowsTheTree() throws {
        let root = try tool("ls", ["-1A", mount.mountpoint])
        XCTAssertEqual(root.status, 0, root.summary)
        XCTAssertEqual(root.output, "data\ndocs\nempty.txt\nhello.txt\n")
        let docs = try tool("ls", ["-1A", mount.path("docs")])
        XCTAssertEqual(docs.output, "readme.md\n", docs.summary)
        let long = try tool("ls", ["-la", mount.path("data")])
        XCTAssertEqual(long.status, 0, long.summary)
        XCTAssertTrue(long.output.contains(" 1048576 "), long.output)
        XCTAssertTrue(long.output.contains("1MiB.bin"), long.output)
    }

    func testCatGivesTheExactBytes() throws {
        let hello = try tool("cat", [mount.path("hello.txt")])
        XCTAssertEqual(hello.status, 0, hello.summary)
        XCTAssertEqual(hello.standardOutput, Data("hello from drivefs\n".utf8))
        let readme = try tool("cat", [mount.path("docs/readme.md")])
        XCTAssertEqual(readme.output, SmokeTree.readme)
        let empty = try tool("cat", [mount.path("empty.txt")])
        XCTAssertEqual(empty.status, 0, empty.summary)
        XCTAssertEqual(empty.standardOutput.count, 0)
    }

    func testStatShowsSizeModeTypeAndTimes() throws {
        let file = try tool("stat", ["-c", "%s %a %F %h %Y", mount.path("hello.txt")])
        XCTAssertEqual(file.output, "19 444 regular file 1 1767225600\n", file.summary)
        let directory = try tool("stat", ["-c", "%a %F %h", mount.path("docs")])
        XCTAssertEqual(directory.output, "555 directory 2\n", directory.summary)
        let root = try tool("stat", ["-c", "%a %F %h", mount.mountpoint])
        XCTAssertEqual(root.output, "555 directory 4\n", root.summary)
        let large = try tool("stat", ["-c", "%s", mount.path("data/1MiB.bin")])
        XCTAssertEqual(large.output, "1048576\n", large.summary)
        let filesystem = try tool("stat", ["-f", "-c", "%l %S", mount.mountpoint])
        XCTAssertEqual(filesystem.output, "255 4096\n", filesystem.summary)
    }

    func testLargeFileReadsBackWithTheRightMD5() throws {
        let result = try tool("cat", [mount.path("data/1MiB.bin")])
        XCTAssertEqual(result.status, 0, result.summary)
        XCTAssertEqual(result.standardOutput.count, 1 << 20)
        let md5 = Digest.hex(.md5, of: result.standardOutput)
        // Pinned: SplitMix64 from "drivefs!", computed independently (Python) when the tree was made.
        XCTAssertEqual(md5, "055b1d022f4830a9d8e716fbeead70af")
        XCTAssertEqual(md5, Digest.hex(.md5, of: SmokeTree.largeFileContent()))
    }

    func testReadAtAnOffsetGivesThatRange() throws {
        let result = try tool("dd", ["if=\(mount.path("data/1MiB.bin"))", "bs=1000", "skip=777", "count=5", "status=none"])
        XCTAssertEqual(result.status, 0, result.summary)
        XCTAssertEqual(Array(result.standardOutput), Array(SmokeTree.largeFileContent()[777_000..<782_000]))
    }

    func testParallelReadersAllGetTheSameBytes() throws {
        let expected = "055b1d022f4830a9d8e716fbeead70af"
        let digests = Locked([String]())
        let path = mount.path("data/1MiB.bin")
        DispatchQueue.concurrentPerform(iterations: 6) { _ in
            let result = try? ExternalCommand.runTool("cat", [path], timeout: 20)
            digests.withLock { $0.append(result.map { Digest.hex(.md5, of: $0.standardOutput) } ?? "failed") }
        }
        XCTAssertEqual(digests.withLock { $0 }, Array(repeating: expected, count: 6))
    }

    func testMissingPathIsENOENT() throws {
        let result = try tool("cat", [mount.path("no-such-file")])
        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(result.errorOutput.contains("No such file or directory"), result.summary)
        let nested = try tool("stat", [mount.path("docs/missing/deeper")])
        XCTAssertTrue(nested.errorOutput.contains("No such file or directory"), nested.summary)
        let throughAFile = try tool("stat", [mount.path("hello.txt/x")])
        XCTAssertTrue(throughAFile.errorOutput.contains("Not a directory"), throughAFile.summary)
    }

    func testWritingIsEROFS() throws {
        let overwrite = try tool("sh", ["-c", "echo changed > \"$1\"", "sh", mount.path("hello.txt")])
        XCTAssertNotEqual(overwrite.status, 0)
        XCTAssertTrue(overwrite.errorOutput.contains("Read-only file system"), overwrite.summary)
        let create = try tool("touch", [mount.path("new.txt")])
        XCTAssertTrue(create.errorOutput.contains("Read-only file system"), create.summary)
        let mkdir = try tool("mkdir", [mount.path("newdir")])
        XCTAssertTrue(mkdir.errorOutput.contains("Read-only file system"), mkdir.summary)
        let remove = try tool("rm", ["-f", mount.path("hello.txt")])
        XCTAssertTrue(remove.errorOutput.contains("Read-only file system"), remove.summary)
        let unchanged = try tool("cat", [mount.path("hello.txt")])
        XCTAssertEqual(unchanged.output, "hello from drivefs\n")
    }

    func testFusermountUnmountsAndTheProcessExitsZero() throws {
        let result = try mount.unmount()
        XCTAssertEqual(result.status, 0, result.summary)
        XCTAssertTrue(ExternalCommand.waitForExit(mount.process, timeout: 10), "drivefs still runs after fusermount -u")
        XCTAssertEqual(mount.exitStatus, 0, mount.log)
        XCTAssertFalse(mount.isMounted)
    }

    func testSIGTERMUnmountsAndTheProcessExitsZero() throws {
        kill(mount.process.processIdentifier, SIGTERM)
        XCTAssertTrue(ExternalCommand.waitForExit(mount.process, timeout: 10), "drivefs still runs after SIGTERM")
        XCTAssertEqual(mount.exitStatus, 0, mount.log)
        XCTAssertFalse(mount.isMounted, "SIGTERM left the mount behind")
    }
}

/// The same tree with every read reaching drivefs (`--direct-io`) on one thread: the request path
/// without the page cache, as `make bench` measures it.
final class SmokeMountDirectIOTests: XCTestCase {
    func testDirectIOSingleThreadedMountServesTheSameBytes() throws {
        let mount = try MountedDriveFS.start(extraArguments: ["--direct-io", "--single-threaded"])
        defer { mount.tearDown() }
        for _ in 0..<2 {
            let result = try ExternalCommand.runTool("cat", [mount.path("data/1MiB.bin")], timeout: 20)
            XCTAssertEqual(result.status, 0, result.summary)
            XCTAssertEqual(Digest.hex(.md5, of: result.standardOutput), "055b1d022f4830a9d8e716fbeead70af")
        }
        let hello = try ExternalCommand.runTool("dd", ["if=\(mount.path("hello.txt"))", "bs=1", "skip=6", "count=4", "status=none"])
        XCTAssertEqual(hello.output, "from", hello.summary)
        let result = try mount.unmount()
        XCTAssertEqual(result.status, 0, result.summary)
        XCTAssertTrue(ExternalCommand.waitForExit(mount.process, timeout: 10))
        XCTAssertEqual(mount.exitStatus, 0, mount.log)
    }
}

/// Without `-f`, smoke-mount returns once mounted and leaves a daemon that `fusermount -u` ends.
final class SmokeMountDaemonTests: XCTestCase {
    /// Processes whose command line is exactly `arguments` (the daemon has no parent we know).
    private func processes(withArguments arguments: [String]) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { pid_t($0) }.filter { pid in
            guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
            let words = data.split(separator: 0, omittingEmptySubsequences: false).dropLast().map { String(decoding: $0, as: UTF8.self) }
            return Array(words.dropFirst()) == arguments
        }
    }

    private static func command(of pid: pid_t) -> String? {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/comm") else { return nil }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The parent from /proc/PID/stat (the field after the command, which may hold spaces, in parentheses).
    private static func parent(of pid: pid_t) -> pid_t? {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/stat") else { return nil }
        let text = String(decoding: data, as: UTF8.self)
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        return fields.count > 1 ? pid_t(fields[1]) : nil
    }

    func testWithoutForegroundItDaemonizesAndFusermountEndsTheDaemon() throws {
        let fusermount = try MountedDriveFS.requireFuse()
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("drivefs-mount-\(UUID().uuidString)")
        let mountpoint = base.appendingPathComponent("mnt").path
        try FileManager.default.createDirectory(atPath: mountpoint, withIntermediateDirectories: true)
        let arguments = ["debug", "smoke-mount", mountpoint]
        defer {
            if MountedDriveFS.mountEntry(for: mountpoint) != nil {
                _ = try? ExternalCommand.run(fusermount, ["-u", mountpoint], timeout: 5)
                _ = try? ExternalCommand.run(fusermount, ["-uz", mountpoint], timeout: 5)
            }
            for pid in processes(withArguments: arguments) { kill(pid, SIGKILL) }
            if MountedDriveFS.mountEntry(for: mountpoint) == nil {
                rmdir(mountpoint)
                rmdir(base.path)
            }
        }

        let start = try DriveFSBinary.run(arguments, timeout: 20)
        XCTAssertEqual(start.status, 0, start.summary)
        XCTAssertTrue(start.errorOutput.contains("smoke tree mounted at \(mountpoint)"), start.summary)
        XCTAssertNotNil(MountedDriveFS.mountEntry(for: mountpoint), "smoke-mount returned before the mount existed")
        // The daemon forks its connection guard (docs/semantics.md, "When the daemon dies"), which
        // keeps the daemon's command line but names itself drivefs-guard and is the daemon's child.
        let all = processes(withArguments: arguments)
        let guards = all.filter { Self.command(of: $0) == "drivefs-guard" }
        let daemons = all.filter { !guards.contains($0) }
        XCTAssertEqual(daemons.count, 1, "expected one daemon, found \(daemons) (guards \(guards))")
        XCTAssertLessThanOrEqual(guards.count, 1, "expected at most one guard, found \(guards)")
        for guardPID in guards { XCTAssertEqual(Self.parent(of: guardPID), daemons.first, "the guard is not the daemon's child") }
        let hello = try ExternalCommand.runTool("cat", [mountpoint + "/hello.txt"], timeout: 20)
        XCTAssertEqual(hello.output, "hello from drivefs\n", hello.summary)

        let stop = try ExternalCommand.run(fusermount, ["-u", mountpoint], timeout: 10)
        XCTAssertEqual(stop.status, 0, stop.summary)
        let deadline = Date().addingTimeInterval(10)
        while !processes(withArguments: arguments).isEmpty && Date() < deadline { usleep(20_000) }
        XCTAssertEqual(processes(withArguments: arguments), [], "the daemon (or its guard) outlived its mount")
    }
}

/// The read-only POSIX table against the smoke tree.
final class SmokeMountPOSIXTests: XCTestCase {
    func testReadOnlyPOSIXTable() throws {
        let mount = try MountedDriveFS.start()
        defer { mount.tearDown() }
        for (file, content) in [("hello.txt", Array(SmokeTree.hello.utf8)), ("data/1MiB.bin", SmokeTree.largeFileContent())] {
            let table = ReadOnlyPOSIXTable(mountpoint: mount.mountpoint, file: file, fileContent: content, directory: "docs")
            let failures = try XCTUnwrap(table.run(timeout: 60), "the POSIX table hung on \(file)")
            XCTAssertEqual(failures, [], "\(file):\n" + failures.joined(separator: "\n"))
        }
    }
}
