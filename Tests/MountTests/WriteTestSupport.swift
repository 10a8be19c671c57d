import DriveClient
import DriveEmulator
import DriveSupport
import Foundation
import XCTest

// Helpers of the write-side mount tests (`DriveMountWrite*Tests`, issue 7). They are written
// against POSIX and the write side's promises, not against its implementation:
// - `drivefs mount` is writable unless `--read-only`; a closed file is uploaded in the background.
// - `fsync(2)` returns once the file is on Drive (a new file whose upload waits its
//   `--upload-delay`: once it is kept here); `drivefs unmount` returns once every queued
//   upload is on Drive, then unmounts.
// - After `kill -9`, the next mount of the same cache directory uploads what was queued.
// - rm moves to Drive's trash; chmod and symbolic links are kept in appProperties; hard links
//   answer EPERM.
// Every access to the mount goes through a subprocess with a timeout (a hung mount must never
// hang the test run); Drive's side is read through the emulator's API (`EmulatedDrive.api()`).

/// A step without which the rest of a test means nothing (a `cp` into the mount that failed):
/// thrown, so the test stops there with a message saying what was expected.
struct StepFailed: Error, CustomStringConvertible {
    let description: String
}

extension ExternalCommand.Result {
    /// Throws `StepFailed` unless the command exited 0.
    @discardableResult
    func requireSuccess(_ step: String) throws -> ExternalCommand.Result {
        guard status == 0, !timedOut else {
            throw StepFailed(description: "\(step): expected exit status 0, got \(summary)")
        }
        return self
    }
}

enum WriteTests {
    /// Lowercase hex md5 of bytes.
    static func md5<C: ContiguousBytes>(_ bytes: C) -> String { Digest.hex(.md5, of: bytes) }

    /// md5 of a local file, read in 1 MiB pieces.
    static func md5(ofFile path: String) throws -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: path]) }
        defer { try? handle.close() }
        var digest = Digest(.md5)
        while let piece = try handle.read(upToCount: 1 << 20), !piece.isEmpty { digest.update(piece) }
        return digest.hexDigest()
    }

    /// A fresh local directory under `base` (never inside a mount).
    static func directory(_ base: URL, _ name: String) throws -> URL {
        let url = base.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// `python3 -c SCRIPT ARGS...`, bounded; python3 is on every machine the tests run on (the
    /// interop tests need it too).
    static func python(_ script: String, _ arguments: [String], timeout: TimeInterval = 60,
                       file: StaticString = #filePath, line: UInt = #line) throws -> ExternalCommand.Result {
        try ExternalCommand.tool("python3", ["-c", script] + arguments, timeout: timeout, file: file, line: line)
    }

    /// Every regular file below `root` (a local tree), relative path → md5.
    static func localMD5s(_ root: URL) throws -> [String: String] {
        var out: [String: String] = [:]
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey, .isSymbolicLinkKey]) else {
            return out
        }
        let prefix = root.standardizedFileURL.path + "/"
        for case let url as URL in walker {
            let values = try url.resourceValues(forKeys: [.isRegularFileKey, .isSymbolicLinkKey])
            guard values.isRegularFile == true, values.isSymbolicLink != true else { continue }
            let path = url.standardizedFileURL.path
            out[String(path.dropFirst(prefix.count))] = try md5(ofFile: path)
        }
        return out
    }

    /// Lists `problems` readably, at most 20 of them.
    static func describe(_ problems: [String]) -> String {
        problems.prefix(20).joined(separator: "\n") + (problems.count > 20 ? "\n… and \(problems.count - 20) more" : "")
    }
}

/// What Drive holds below one folder, read through the other client: every non-trashed item by
/// its path relative to that folder (duplicates kept: a name twice in a folder is a bug the write
/// side promises never to make).
struct RemoteTree {
    struct Entry {
        let path: String
        let file: DriveFile
    }

    let root: DriveFile
    let entries: [Entry]

    /// Files, without the symbolic links drivefs keeps as small files (`drivefs.link`): those are
    /// checked through a mount.
    var files: [Entry] { entries.filter { !$0.file.isFolder && $0.file.appProperties?["drivefs.link"] == nil } }
    var folders: [Entry] { entries.filter { $0.file.isFolder } }

    /// Paths that occur more than once.
    var duplicates: [String] {
        Dictionary(grouping: entries, by: \.path).filter { $0.value.count > 1 }.keys.sorted()
    }

    func file(_ path: String) -> DriveFile? { entries.first { $0.path == path }?.file }

    /// Reads the tree below `path` ("" = My Drive's root), breadth first.
    static func read(_ drive: EmulatedDrive, at path: String = "") throws -> RemoteTree {
        let api = try drive.api()
        let root = path.isEmpty ? try api.getFile("root") : try drive.file(at: path)
        var entries: [Entry] = []
        var queue: [(String, String)] = [(root.id, "")]
        while !queue.isEmpty {
            let (id, prefix) = queue.removeFirst()
            for child in try api.listChildren(of: id) {
                let childPath = prefix.isEmpty ? child.name : prefix + "/" + child.name
                entries.append(Entry(path: childPath, file: child))
                if child.isFolder { queue.append((child.id, childPath)) }
            }
        }
        return RemoteTree(root: root, entries: entries)
    }

    /// The differences between this tree's files and `expected` (relative path → md5), as lines:
    /// missing, extra, duplicated, wrong md5. Empty when they match exactly.
    func problems(comparedWith expected: [String: String]) -> [String] {
        var problems: [String] = []
        for path in duplicates { problems.append("\(path): on Drive \(entries.filter { $0.path == path }.count) times, expected once") }
        let byPath = Dictionary(files.map { ($0.path, $0.file) }, uniquingKeysWith: { first, _ in first })
        for (path, md5) in expected.sorted(by: { $0.key < $1.key }) {
            guard let file = byPath[path] else { problems.append("\(path): missing on Drive"); continue }
            if file.md5Checksum != md5 {
                problems.append("\(path): md5 on Drive \(file.md5Checksum ?? "none"), expected \(md5) (size on Drive \(file.size.map(String.init) ?? "none"))")
            }
        }
        for path in byPath.keys.sorted() where expected[path] == nil { problems.append("\(path): on Drive but not expected") }
        return problems
    }
}

extension EmulatedDrive {
    /// An emulator with an empty My Drive.
    static func empty(configure: (inout EmulatorConfig) -> Void = { _ in }) throws -> EmulatedDrive {
        try EmulatedDrive(configure: configure) { _ in }
    }

    /// A cache directory nobody used yet: what a second machine (or a wiped cache) starts with.
    func freshCacheDirectory() throws -> String {
        try WriteTests.directory(temp, "cache-\(UUID().uuidString.prefix(8))").path
    }

    /// A second mount of the same Drive with an empty cache directory: it knows only what is on
    /// Drive.
    func mountFresh(pollInterval: String = "1s", extraArguments: [String] = []) throws -> MountedDriveFS {
        try mount(pollInterval: pollInterval, extraArguments: ["--cache-dir", try freshCacheDirectory()] + extraArguments)
    }

    /// `drivefs unmount MOUNTPOINT`, whose contract is to return once every queued upload is on
    /// Drive, then unmount; the daemon must then end with status 0. Throws when it does not, so
    /// the checks of Drive's state that follow never run against an unfinished queue.
    func drivefsUnmount(_ mount: MountedDriveFS, timeout: TimeInterval = 180) throws {
        let started = Date()
        let result = try DriveFSBinary.run(["unmount", mount.mountpoint, "--timeout", String(Int(timeout))],
                                           timeout: timeout + 30, environment: environment)
        let took = Date().timeIntervalSince(started)
        guard result.status == 0, !result.timedOut else {
            throw StepFailed(description: "drivefs unmount \(mount.mountpoint) must return 0 once every queued upload is on Drive;"
                             + " got \(result.summary) after \(Int(took)) s; daemon log:\n\(mount.log.suffix(4000))")
        }
        // Bounded generously: the daemon's change poller may be in a retry's backoff when asked to stop.
        guard ExternalCommand.waitForExit(mount.process, timeout: 60) else {
            throw StepFailed(description: "drivefs unmount returned 0 but the daemon was still running 60 s later; log:\n\(mount.log.suffix(4000))")
        }
        guard mount.exitStatus == 0 else {
            throw StepFailed(description: "the daemon must exit 0 after drivefs unmount, got \(mount.exitStatus.map(String.init) ?? "?");"
                             + " log:\n\(mount.log.suffix(4000))")
        }
        guard !mount.isMounted else {
            throw StepFailed(description: "drivefs unmount returned 0 but \(mount.mountpoint) is still in /proc/mounts")
        }
        print("write tests: drivefs unmount took \(String(format: "%.1f", took)) s")
    }

    /// The trashed children of a folder (rm moves to Drive's trash).
    func trashedChildren(of folderID: String) throws -> [DriveFile] {
        try api().list(query: "\(DriveQuery.quote(folderID)) in parents and trashed = true")
    }

    /// Requests of `method` that were answered with `status` (e.g. uploads that landed: "200").
    func answered(_ method: String, status: String) -> Int {
        emulator.stats().methods[method]?.statuses[status] ?? 0
    }
}
