import CommandLineKit
import DriveFSCore
import DriveSupport
import Foundation
import Glibc

/// `drivefs status [MOUNTPOINT] [--json]`: what each live mount of this user is doing, from the
/// files their daemons publish (`StatusPublisher`, `StatusDirectory`; docs/status.md).
enum StatusCommand {
    /// How long to wait for the daemons to answer a request for a fresh status.
    static let refreshTimeout: Double = 1

    static func make() -> Command {
        Command(
            name: "status", summary: "Show the live mounts: cache, uploads, change feed, errors",
            discussion: """
                For each live drivefs mount of this user (or only the one on MOUNTPOINT): its mount
                point, profile, account and daemon pid, the block cache's use against its cap, the
                uploads queued, running (with bytes done) and failed, how long ago the change feed
                was last read, and the last warning or error the daemon logged.

                Each mount's daemon keeps a status file in the runtime directory
                ($DRIVEFS_RUNTIME_DIR, else $XDG_RUNTIME_DIR/drivefs, else /run/drivefs for root and
                /tmp/drivefs-UID), replaced every second and when this command asks for a fresh one.
                Files of daemons that are gone are skipped and removed.

                --json prints a JSON array, one object per mount (the fields: docs/status.md).
                Exit status 1 when MOUNTPOINT is given and no live mount is there.

                Given a path inside a mount instead (a file, or a folder: then its children too),
                prints each one's sync state (its user.drivefs.state attribute): synced, local
                (written, not queued yet), queued, uploading, conflict, failed (with the reason),
                offline (pinned and all local) or cloud (nothing local).
                """,
            options: [.flag("json", help: "Print JSON (an array of mounts) for scripts")],
            arguments: [ArgumentSpec(name: "MOUNTPOINT", help: "Only the mount on this directory (or: the state of a path in a mount)",
                                     optional: true)],
            examples: [
                ("status", "Every live mount, as a table"),
                ("status ~/gdrive --json", "One mount, as JSON"),
                ("status ~/gdrive/Projects", "Each file's sync state in a folder"),
            ],
            run: run)
    }

    static func run(_ invocation: Invocation) throws -> Int32 {
        let directory = StatusDirectory.resolve(invocation.environment)
        let wanted = invocation.argument("MOUNTPOINT").map(canonical)
        var entries = directory.entries().filter { wanted == nil || canonical($0.status.mountpoint) == wanted }
        entries = refreshed(entries, in: directory)
        if let given = invocation.argument("MOUNTPOINT"), entries.isEmpty {
            if let states = states(of: given) {
                Output.standardOutput(states)
                return ExitStatus.success
            }
            throw CLIError.failure("no live drivefs mount on '\(given)'",
                                   hint: "'drivefs status' lists every mount (of this user, in \(directory.path)).")
        }
        let now = Date().timeIntervalSince1970
        let statuses = entries.map { aged($0.status, now: now) }
        if invocation.flag("json") {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            Output.standardOutput(statuses.isEmpty ? "[]\n" : String(decoding: try encoder.encode(statuses), as: UTF8.self) + "\n")
        } else {
            Output.standardOutput(table(statuses))
        }
        return ExitStatus.success
    }

    /// Asks every daemon for a fresh status (SIGUSR1) and waits, bounded, until each has replaced
    /// its file; a daemon that does not answer in time is shown as of its last file.
    static func refreshed(_ entries: [StatusDirectory.Entry], in directory: StatusDirectory) -> [StatusDirectory.Entry] {
        guard !entries.isEmpty else { return entries }
        for entry in entries { kill(entry.status.pid, StatusPublisher.requestSignal) }
        let deadline = Date().addingTimeInterval(refreshTimeout)
        while entries.contains(where: { directory.inode(of: $0) == $0.inode }) && Date() < deadline {
            usleep(10_000)
        }
        let fresh = Dictionary(directory.entries().map { ($0.status.pid, $0) }, uniquingKeysWith: { a, _ in a })
        // A mount that ended meanwhile is gone from the answer.
        return entries.compactMap { fresh[$0.status.pid] }
    }

    /// The lag as of now rather than as of the file's `updated`.
    static func aged(_ status: MountStatus, now: Double) -> MountStatus {
        var status = status
        if let lastPoll = status.changes.lastPoll.flatMap({ RFC3339.parseMillis($0) }) {
            status.changes.lagSeconds = max(0, (now * 1000 - Double(lastPoll)) / 1000)
        }
        return status
    }

    /// An absolute path with its parent's symbolic links resolved (never the mount point itself:
    /// resolving it would ask the daemon, which may be hung).
    static func canonical(_ path: String) -> String {
        let absolute = path.hasPrefix("/") ? path
            : FileManager.default.currentDirectoryPath + "/" + path
        let url = URL(fileURLWithPath: absolute).standardizedFileURL
        let parent = url.deletingLastPathComponent().path
        guard let resolved = realpath(parent, nil) else { return url.path }
        defer { free(resolved) }
        let base = String(cString: resolved)
        return url.path == "/" ? "/" : (base == "/" ? "" : base) + "/" + url.lastPathComponent
    }

    /// `PATH  STATE` for a path in a mount and, for a folder, each of its children (from their
    /// `user.drivefs.state`); nil when the path is not in a drivefs mount.
    static func states(of path: String) -> String? {
        guard let own = try? PathAttributes.read(path, ExtendedAttributes.state).get() else { return nil }
        var rows: [(path: String, state: String, error: String?)] = [(path, own, try? PathAttributes.read(path, ExtendedAttributes.error).get())]
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue,
           let names = try? FileManager.default.contentsOfDirectory(atPath: path) {
            for name in names.sorted() {
                let child = (path.hasSuffix("/") ? path : path + "/") + name
                rows.append((child, (try? PathAttributes.read(child, ExtendedAttributes.state).get()) ?? "?",
                             try? PathAttributes.read(child, ExtendedAttributes.error).get()))
            }
        }
        let width = rows.map { $0.path.count }.max() ?? 0
        var out = ""
        for row in rows {
            let reason = row.error.map { " (\($0))" } ?? ""
            out += row.path + String(repeating: " ", count: width - row.path.count) + "  " + row.state + reason + "\n"
        }
        return out
    }

    // MARK: The table

    static func table(_ statuses: [MountStatus]) -> String {
        guard !statuses.isEmpty else { return "No drivefs mounts.\n" }
        var rows = [["MOUNTPOINT", "PROFILE", "ACCOUNT", "PID", "CACHE", "UPLOADS", "CHANGES READ", "INDEX"]]
        var notes: [String] = []
        for s in statuses {
            let percent = s.cache.capBytes > 0 ? " (\(Int((Double(s.cache.usedBytes) / Double(s.cache.capBytes) * 100).rounded())) %)" : ""
            rows.append([s.mountpoint, s.profile, s.account ?? "-", "\(s.pid)",
                         "\(bytes(s.cache.usedBytes)) of \(bytes(s.cache.capBytes))\(percent)",
                         uploads(s.uploads), s.changes.lagSeconds.map { "\(duration($0)) ago" } ?? "not yet",
                         index(s)])
            for upload in s.uploads.running {
                let done = upload.size > 0 ? " (\(Int((Double(upload.bytesDone) / Double(upload.size) * 100).rounded(.down))) %)" : ""
                // A large file is read for its md5 before anything is sent: say so.
                let doing = upload.phase == .hashing ? "hashing (before uploading)" : "uploading"
                notes.append("\(s.mountpoint): \(doing) \(upload.path): \(bytes(upload.bytesDone)) of \(bytes(upload.size))\(done)")
            }
            if let pinned = s.cache.pinnedNeededBytes, pinned > 0 || !(s.pins ?? []).isEmpty {
                let held = s.cache.pinnedBytes ?? 0
                notes.append("\(s.mountpoint): pinned: \(bytes(pinned)) (\(bytes(held)) local) against the cache's cap of "
                             + "\(bytes(s.cache.capBytes))")
                if pinned > s.cache.capBytes {
                    notes.append("\(s.mountpoint): warning: the pins alone need more than the cache's cap: nothing else stays "
                                 + "cached (raise --cache-size or unpin something)")
                }
            }
            if let since = s.offlineSince {
                notes.append("\(s.mountpoint): offline since \(since): Drive cannot be reached; what is local is served, "
                             + "changes wait in the journal")
            }
            if let pacing = s.pacing { notes.append("\(s.mountpoint): \(limits(pacing))") }
            if let error = s.uploads.lastError { notes.append("\(s.mountpoint): last upload error: \(error)") }
            if let error = s.changes.lastError { notes.append("\(s.mountpoint): the change feed fails: \(error)") }
            if let problem = s.lastError {
                notes.append("\(s.mountpoint): last \(problem.level) (\(problem.at), \(problem.area)): \(problem.message)")
            }
        }
        var out = Output.columns(rows)
        if !notes.isEmpty { out += [""] + notes }
        return out.joined(separator: "\n") + "\n"
    }

    /// `202101 items, 3 folders materialized (1.2 MiB), 41 MiB`: items known, folders held as nodes
    /// now and what their nodes take, and the whole index's memory (estimates: `MountStatus.Index`).
    static func index(_ s: MountStatus) -> String {
        guard let i = s.index else { return "\(s.items) items" }
        return "\(s.items) items, \(i.materializedFolders) folders materialized (\(bytes(Int64(i.materializedBytes)))), "
            + "\(bytes(Int64(i.estimatedBytes)))"
    }

    /// `Google's limits: writes 3 queued at 2.87/s of at most 3/s (1.0 s to go), quota 5,250 of 292,500
    /// units in the last minute, refused 0 (quota) and 2 (writes)`: what the pacer's lanes hold back
    /// now (the write rate climbs to its ceiling while Google refuses no write).
    static func limits(_ p: MountStatus.Pacing) -> String {
        var parts: [String] = []
        if let rate = p.writeRate {
            var writes = "writes \(p.writesQueued) queued at \(writeRate(rate))/s"
            if let ceiling = p.writeCeiling, writeRate(ceiling) != writeRate(rate) { writes += " of at most \(writeRate(ceiling))/s" }
            if p.writesQueued > 0, let drain = p.writeDrainSeconds { writes += " (\(duration(drain)) to go)" }
            parts.append(writes)
        }
        if let budget = p.quotaPerMinute {
            let unit = p.quotaMetering == "requests" ? "requests" : "units"
            parts.append("quota \(grouped(p.quotaUsedLastMinute)) of \(grouped(budget)) \(unit) in the last minute")
        }
        parts.append("refused \(p.quotaRefusals) (quota) and \(p.writeRefusals) (writes)")
        return "Google's limits: " + parts.joined(separator: ", ")
    }

    /// `2.87`, `3`, `100`: a write rate to two decimals, whole rates without them.
    static func writeRate(_ rate: Double) -> String {
        let text = String(format: "%.2f", rate)
        return text.hasSuffix(".00") ? String(text.dropLast(3)) : text
    }

    /// `292,500`.
    static func grouped(_ n: Int) -> String {
        let digits = String(n.magnitude)
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out += "," }
            out.append(c)
        }
        return (n < 0 ? "-" : "") + out
    }

    static func uploads(_ u: MountStatus.Uploads) -> String {
        if u.queued == 0 && u.running.isEmpty && u.failed == 0 { return "none" }
        return "\(u.queued) queued, \(u.running.count) running, \(u.failed) failed"
    }

    /// `512 B`, `1.5 KiB`, `10 GiB`.
    static func bytes(_ count: Int64) -> String {
        let units = ["KiB", "MiB", "GiB", "TiB", "PiB"]
        guard count >= 1024 else { return "\(count) B" }
        var value = Double(count) / 1024
        var unit = 0
        while value >= 1024 && unit < units.count - 1 { value /= 1024; unit += 1 }
        let text = value >= 100 || value == value.rounded() ? String(Int(value.rounded())) : String(format: "%.1f", value)
        return "\(text) \(units[unit])"
    }

    /// `0.4 s`, `12 s`, `3 min`, `2 h`.
    static func duration(_ seconds: Double) -> String {
        if seconds < 10 { return String(format: "%.1f s", seconds) }
        if seconds < 120 { return "\(Int(seconds)) s" }
        if seconds < 7200 { return "\(Int(seconds / 60)) min" }
        return "\(Int(seconds / 3600)) h"
    }
}
