import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import XCTest

/// A model checker of the write path across names, in the spirit of the chaos run but inside one
/// process, on the in-memory Drive: random whole writes, edits, fsyncs, renames (over files too),
/// editor saves (a temporary file, maybe fsynced, renamed over the file), unlinks and reads of a
/// few names in one folder (the random seed: also in a folder made at the start and one the run
/// makes and removes, renames across them), while Drive fails requests (before they land, and after: a lost
/// answer), goes away for a while, and the process dies (`kill -9`: the queue and the core
/// abandoned, a new mount over the same cache directory). Nobody else writes this Drive, so at
/// every step the mount must show exactly the model (each name, each byte), and at the end Drive
/// must hold exactly the model: no file lost, none with other bytes, and no file the model removed
/// (chaos finding 24: a removed file made again after a storm of kills).
///
/// Runs on fixed seeds, and on a random one that it prints (opt-in for now, see `testRandomSeed`);
/// `DRIVEFS_NAMES_SEED=N` replays one (the upload threads interleave as they will: the promise
/// holds in every interleaving, so a failure is a bug, whether or not a replay meets it again).
/// `DRIVEFS_NAMES_TRACE=<file>` prints each operation and writes the core's debug log to the file;
/// `DRIVEFS_NAMES_OPERATIONS=N` runs the random seed longer (400 by default).
final class NamespaceModelCheckTests: XCTestCase {
    private static let names = ["a", "b", "c", "d"]
    /// With folders (the random seed): `s` made at the start, `t` made and removed by the run.
    private static let folderNames = ["a", "b", "c", "d", "s/a", "s/b", "t/a", "t/b"]

    func testFixedSeed() throws {
        try run(seed: 1, operations: 400)
    }

    func testAnotherFixedSeed() throws {
        try run(seed: 20_261_207, operations: 400)
    }

    /// Opt-in (`DRIVEFS_NAMES_RANDOM=1`, or a seed to replay) for now: it found eight faults in its
    /// first day (chaos finding 25) and, with folders, renames across folders made offline that ended
    /// under wrong names (finding 27). It joins `make test` once a long streak of random runs is
    /// clean with them fixed (a random seed that fails in CI rejects a landing).
    func testRandomSeed() throws {
        let environment = ProcessInfo.processInfo.environment
        try XCTSkipUnless(environment["DRIVEFS_NAMES_RANDOM"] == "1" || environment["DRIVEFS_NAMES_SEED"] != nil,
                          "the random seed is opt-in (DRIVEFS_NAMES_RANDOM=1) until a longer clean streak")
        let seed = environment["DRIVEFS_NAMES_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64(1) << 40)
        let operations = environment["DRIVEFS_NAMES_OPERATIONS"].flatMap { Int($0) } ?? 400
        print("NamespaceModelCheckTests: seed \(seed), \(operations) operations (replay with DRIVEFS_NAMES_SEED=\(seed)"
              + (operations == 400 ? "" : " DRIVEFS_NAMES_OPERATIONS=\(operations)") + ")")
        try run(seed: seed, operations: operations, folders: true)
    }

    /// One run: the model (name → bytes), the operations, the final checks.
    private func run(seed: UInt64, operations: Int, folders: Bool = false) throws {
        var rng = SplitMix64(seed: seed)
        let h = try CoreHarness {
            $0.readOnly = false
            $0.newFileSettle = 0.05
        }
        defer {
            h.backend.unreachable = nil
            h.backend.reachability?.recordReached()
            h.backend.clearFaults()
            h.remove()
        }
        func newQueue() throws -> UploadQueue {
            try UploadQueue(directory: h.uploadsDirectory, backend: h.backend, transfers: 2, initialBackoff: 0.01, maximumBackoff: 0.2,
                            newFileSettle: 0.05)
        }
        if folders { h.backend.addFolder("s") }
        var queue = try newQueue()
        try h.mount(uploads: queue)
        let names = folders ? Self.folderNames : Self.names
        // Whether the folder `t` exists (made and removed by the run).
        var hasT = false
        var model: [String: [UInt8]] = [:]
        var log: [String] = []
        var offlineFor = 0
        var serial = 0
        let trace = ProcessInfo.processInfo.environment["DRIVEFS_NAMES_TRACE"] != nil
        if trace { try Log.shared.configure(level: .debug, path: ProcessInfo.processInfo.environment["DRIVEFS_NAMES_TRACE"]) }
        defer { if trace { try? Log.shared.configure(level: .warning, path: nil) } }
        func say(_ line: String) {
            log.append("\(log.count): \(line)")
            if trace { print("names: \(log.last!)") }
        }
        func context() -> String {
            if let path = ProcessInfo.processInfo.environment["DRIVEFS_NAMES_LOG"] {
                try? log.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
            }
            return "seed \(seed), after:\n" + log.suffix(60).joined(separator: "\n")
        }
        func content() -> [UInt8] {
            serial += 1
            let size = Int.random(in: 0...12_000, using: &rng)
            var bytes = Array("\(serial):".utf8)
            bytes += (0..<max(0, size - bytes.count)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            return bytes
        }
        /// The folder and the name in it of a model path ("s/a": `s`, "a"); nil when the folder is not there.
        func place(_ path: String) -> (parent: Inode, leaf: String)? {
            guard let slash = path.firstIndex(of: "/") else { return (.root, path) }
            guard let folder = try? h.lookup(.root, String(path[..<slash])) else { return nil }
            return (folder.inode, String(path[path.index(after: slash)...]))
        }
        func folderOf(_ path: String) -> String { path.firstIndex(of: "/").map { String(path[..<$0]) + "/" } ?? "" }
        func leafOf(_ path: String) -> String { path.firstIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path }
        func usable(_ path: String) -> Bool { !path.hasPrefix("t/") || hasT }
        func lookup(_ name: String) -> FileAttributes? {
            guard let at = place(name) else { return nil }
            return try? h.lookup(at.parent, at.leaf)
        }
        func remove(_ name: String) throws {
            guard let at = place(name) else { throw FilesystemError(errno: ENOENT) }
            try BlockingCall.wait { h.fs.removeFile(parent: at.parent, name: at.leaf, reply: $0) }
        }
        func fsync(_ inode: Inode, _ handle: UInt64) throws {
            let answer = Pending<Void>()
            h.fs.synchronize(inode, handle: handle, dataOnly: false, reply: answer.reply)
            guard let result = answer.wait(seconds: 120) else { throw FilesystemError(errno: ETIMEDOUT) }
            try result.get()
        }
        /// Writes `bytes` as the whole of `name` (made, or truncated), maybe fsynced. True when it held.
        func writeWhole(_ name: String, _ bytes: [UInt8], sync: Bool) -> Bool {
            do {
                let inode: Inode, handle: UInt64
                if let found = lookup(name) {
                    inode = found.inode
                    handle = try h.open(inode, O_WRONLY | O_TRUNC)
                } else {
                    guard let at = place(name) else { return false }
                    let made = try h.create(at.parent, at.leaf)
                    inode = made.attributes.inode
                    handle = made.opened.handle
                }
                var ok = true
                do {
                    if !bytes.isEmpty { try h.write(inode, handle, bytes, at: 0) }
                    if sync { try fsync(inode, handle) }
                } catch {
                    ok = false
                }
                do { try h.close(inode, handle) } catch { ok = false }
                return ok
            } catch {
                return false
            }
        }
        /// The mount shows exactly the model: each name and its bytes, nothing else.
        func checkMount(_ when: String) throws {
            var shown = Set<String>()
            for folder in folders ? ["", "s/", "t/"] : [""] {
                if folder == "t/" && !hasT { continue }
                let listed: [DirectoryEntryPlus]
                do {
                    let inode = folder.isEmpty ? Inode.root : try h.lookup(.root, String(folder.dropLast())).inode
                    listed = try h.listPlus(inode)
                } catch let error as FilesystemError where offlineFor > 0 && error.errno == EIO {
                    return  // Offline, a folder not listed since the restart cannot be.
                }
                for entry in listed where !entry.entry.name.hasPrefix(".") {
                    if folder.isEmpty && folders && (entry.entry.name == "s" || entry.entry.name == "t") {
                        guard entry.entry.name == "s" || hasT else {
                            return XCTFail("\(when): the mount shows the folder t, which the model removed; \(context())")
                        }
                        continue
                    }
                    shown.insert(folder + entry.entry.name)
                }
            }
            guard shown == Set(model.keys) else {
                return XCTFail("\(when): the mount shows \(shown.sorted()), the model \(model.keys.sorted()); \(context())")
            }
            for (name, bytes) in model {
                guard let found = lookup(name) else { return XCTFail("\(when): \(name) not found; \(context())") }
                // Offline, bytes not kept here cannot be read (EIO at once): names only then.
                guard offlineFor == 0 else { continue }
                let read: [UInt8]
                do { read = try h.read(found.inode) } catch {
                    let node = h.fs.table.node(found.inode)
                    let drive = node.flatMap { h.backend.file($0.file.id) }
                    let opened = Result { try BlockingCall.wait { h.fs.open(found.inode, flags: O_RDONLY, reply: $0) } }
                    say("again: open \(opened.map(\.handle)), read \((try? opened.get()).map { o in Result { try h.read(found.inode, handle: o.handle, offset: 0, size: 1 << 20).count } }.map { "\($0)" } ?? "-")")
                    if let o = try? opened.get() { h.fs.release(found.inode, handle: o.handle) }
                    return XCTFail("\(when): reading \(name) (inode \(found.inode.rawValue), \(node?.file.id ?? "?") shown as "
                                   + "\(node?.file.headRevisionId ?? "-") \(node?.file.size ?? -1) B, local \(node?.local != nil); Drive has "
                                   + "\(drive?.headRevisionId ?? "-") \(drive?.size ?? -1) B) failed: \(error); \(context())")
                }
                guard read == bytes else {
                    return XCTFail("\(when): \(name) reads \(read.count) B (\(String(decoding: read.prefix(8), as: UTF8.self))), "
                                   + "the model has \(bytes.count) B (\(String(decoding: bytes.prefix(8), as: UTF8.self))); \(context())")
                }
            }
        }

        for step in 0..<operations {
            do {
                try runStep(step)
            } catch {
                return XCTFail("step \(step): threw \(error); \(context())")
            }
            if testRun?.failureCount ?? 0 > 0 { return }
        }
        func runStep(_ step: Int) throws {
            if offlineFor > 0 {
                offlineFor -= 1
                if offlineFor == 0 {
                    h.backend.unreachable = nil
                    h.backend.reachability?.recordReached()
                    say("online")
                }
            }
            let roll = Int.random(in: 0..<100, using: &rng)
            let name = names.randomElement(using: &rng)!
            guard usable(name) || roll >= 70 else { return }
            switch roll {
            case 0..<22:
                let bytes = content()
                let sync = Bool.random(using: &rng) && Bool.random(using: &rng)
                let ok = writeWhole(name, bytes, sync: sync)
                say("write \(name) \(bytes.count) B\(sync ? " fsync" : ""): \(ok ? "ok" : "failed")")
                // A close that failed kept what it could not journal for a retry: either version may show.
                if ok { model[name] = bytes } else { model[name] = lookup(name).flatMap { try? h.read($0.inode) } ?? model[name] }
            case 22..<34:
                guard var bytes = model[name], let found = lookup(name) else { return }
                let piece = content()
                let at = Int.random(in: 0...bytes.count, using: &rng)
                var ok = true
                do {
                    let handle = try h.open(found.inode, O_RDWR)
                    do { try h.write(found.inode, handle, piece, at: Int64(at)) } catch { ok = false }
                    do { try h.close(found.inode, handle) } catch { ok = false }
                } catch {
                    ok = false
                }
                if bytes.count < at + piece.count { bytes += [UInt8](repeating: 0, count: at + piece.count - bytes.count) }
                bytes.replaceSubrange(at..<(at + piece.count), with: piece)
                say("edit \(name) +\(piece.count) B at \(at): \(ok ? "ok" : "failed")")
                if ok { model[name] = bytes } else { model[name] = (try? h.read(found.inode)) ?? model[name] }
            case 34..<48:
                guard let bytes = model[name] else { return }
                let to = names.randomElement(using: &rng)!
                guard to != name, usable(to), let from = place(name), let into = place(to) else { return }
                do {
                    try h.rename(from.parent, from.leaf, to: into.parent, into.leaf)
                    model[to] = bytes
                    model[name] = nil
                    say("rename \(name) -> \(to): ok")
                } catch {
                    say("rename \(name) -> \(to): failed \(error)")
                }
            case 48..<60:
                guard model[name] != nil else { return }
                let temp = folderOf(name) + "." + leafOf(name) + ".swp"
                let bytes = content()
                let sync = Bool.random(using: &rng)
                if lookup(temp) != nil { try? remove(temp) }
                guard writeWhole(temp, bytes, sync: sync), let from = place(temp), let into = place(name) else {
                    say("save \(name): the temporary file failed")
                    try? remove(temp)
                    return
                }
                do {
                    try h.rename(from.parent, from.leaf, to: into.parent, into.leaf)
                    model[name] = bytes
                    say("save \(name) \(bytes.count) B\(sync ? " fsync" : ""): ok")
                } catch {
                    say("save \(name): the rename failed \(error)")
                    try? remove(temp)
                }
            case 60..<70:
                guard model[name] != nil else { return }
                do {
                    try remove(name)
                    model[name] = nil
                    say("unlink \(name): ok")
                } catch {
                    say("unlink \(name): failed \(error)")
                }
            case 70..<80:
                let method = ["files.create.upload", "files.update.upload", "files.update", "files.create"].randomElement(using: &rng)!
                let after = Bool.random(using: &rng)
                let count = Int.random(in: 1...3, using: &rng)
                h.backend.failNext(method: method, count: count, afterLanding: after)
                say("fault: \(count) × \(method)\(after ? " after landing" : "")")
            case 80..<84:
                guard offlineFor == 0 else { return }
                offlineFor = Int.random(in: 3...15, using: &rng)
                h.backend.unreachable = FakeDriveBackend.cannotConnect
                h.backend.reachability?.markOffline("test: connection refused")
                say("offline for \(offlineFor) operations")
            case 84..<90:
                guard offlineFor == 0 else { return }
                // kill -9: nothing more is journaled; a new mount over the same cache directory.
                queue.crashNow()
                h.crash()
                h.backend.clearFaults()
                queue = try newQueue()
                try h.mount(uploads: queue)
                say("crash and restart (\(queue.recovered.count) uploads recovered"
                    + (trace ? ": " + queue.recovered.map { "\($0.request.name) \($0.request.fileID) new=\($0.request.isNew)" }.joined(separator: ", ") : "") + ")")
            case 90..<93 where folders:
                // The folder t made, or removed when the model holds nothing in it.
                if !hasT {
                    do {
                        _ = try h.makeDirectory(.root, "t")
                        hasT = true
                        say("mkdir t: ok")
                    } catch {
                        say("mkdir t: failed \(error)")
                    }
                } else if !model.keys.contains(where: { $0.hasPrefix("t/") }) {
                    do {
                        for leftover in ["t/.a.swp", "t/.b.swp"] where lookup(leftover) != nil { try? remove(leftover) }
                        try BlockingCall.wait { h.fs.removeDirectory(parent: .root, name: "t", reply: $0) }
                        hasT = false
                        say("rmdir t: ok")
                    } catch {
                        say("rmdir t: failed \(error)")
                    }
                }
            case 90..<94:
                guard offlineFor == 0 else { return }
                let drained = h.fs.drainUploads(timeout: 120)
                say("drain: \(drained ? "done" : "timed out")")
            default:
                guard let bytes = model[name], let found = lookup(name) else { return }
                let read: [UInt8]
                do { read = try h.read(found.inode) } catch let error as FilesystemError where offlineFor > 0 && error.errno == EIO {
                    say("read \(name): EIO offline")
                    return
                } catch {
                    let node = h.fs.table.node(found.inode)
                    let drive = node.flatMap { h.backend.file($0.file.id) }
                    let before = h.backend.requests
                    let again = Result { try h.read(found.inode) }
                    let after = h.backend.requests
                    let sent = after.filter { $0.value != before[$0.key] }.map { "\($0.key) +\($0.value - (before[$0.key] ?? 0))" }
                    say("again: \(again.map(\.count)), requests \(sent)")
                    return XCTFail("step \(step): reading \(name) (\(node?.file.id ?? "?") shown as \(node?.file.headRevisionId ?? "-") "
                                   + "\(node?.file.size ?? -1) B, local \(node?.local != nil); Drive has \(drive?.headRevisionId ?? "-") "
                                   + "\(drive?.size ?? -1) B) failed: \(error); \(context())")
                }
                say("read \(name): \(read.count) B")
                guard read == bytes else {
                    return XCTFail("step \(step): \(name) reads \(read.count) B, the model has \(bytes.count) B; \(context())")
                }
            }
            if step % 10 == 9 { try checkMount("step \(step)") }
        }

        // Drive back for good: everything queued lands, and Drive holds exactly the model.
        h.backend.unreachable = nil
        h.backend.reachability?.recordReached()
        h.backend.clearFaults()
        try checkMount("the end")
        XCTAssertTrue(h.fs.drainUploads(timeout: 120), "\(h.fs.uploadStatus); \(context())")
        var onDrive: [(String, DriveFile)] = []
        for item in h.backend.children(of: h.backend.rootID) where !item.name.hasPrefix(".") {
            guard folders, item.isFolder else {
                onDrive.append((item.name, item))
                continue
            }
            if item.name == "t" && !hasT { XCTFail("Drive holds the folder t, which the model removed; \(context())") }
            for inner in h.backend.children(of: item.id) where !inner.name.hasPrefix(".") { onDrive.append((item.name + "/" + inner.name, inner)) }
        }
        if folders {
            let tFolders = h.backend.children(of: h.backend.rootID).filter { $0.name == "t" && $0.isFolder }.count
            if tFolders != (hasT ? 1 : 0) { XCTFail("Drive holds \(tFolders) folders t, the model \(hasT ? 1 : 0); \(context())") }
        }
        let drive = Dictionary(onDrive.map { ($0.0, [$0.1]) }, uniquingKeysWith: +)
        for (name, files) in drive where files.count > 1 {
            XCTFail("Drive holds \(files.count) files named \(name); \(context())")
        }
        for (name, files) in drive where model[name] == nil {
            XCTFail("Drive holds \(name) (\(files.first.map { h.backend.content(of: $0.id)?.count ?? -1 } ?? -1) B, "
                    + "\(files.first?.id ?? "")), which the model removed; \(context())")
        }
        for (name, bytes) in model {
            guard let file = drive[name]?.first else {
                XCTFail("\(name) (\(bytes.count) B) is not on Drive; \(context())")
                continue
            }
            let stored = h.backend.content(of: file.id)
            if stored != bytes {
                XCTFail("\(name) on Drive has \(stored?.count ?? -1) B, the model \(bytes.count) B; \(context())")
            }
        }
        // And a fresh mount shows the same.
        h.unmount()
        try h.mount()
        try checkMount("a fresh mount")
    }
}
