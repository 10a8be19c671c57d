import CommandLineKit
import DriveFSCore
import Foundation
import Glibc

/// `drivefs debug index-restore`: what restoring the metadata index of a drive of N items costs,
/// at sizes the emulator cannot seed in a benchmark's time (the goal: a 1,000,000-file drive mounts
/// in under a second). scripts/bench.sh runs it with 1,000,000 items.
///
/// Decisions:
/// - It measures the index restore alone (the file read, `IndexStore.load`, the first listings
///   through the table), not a mount's network start-up: bench/harness.py's workload 8c does that.
/// - The peak RSS is the restore's: after the file is written, the writer's freed heap is handed
///   back (`malloc_trim`) and the high-water mark reset (`/proc/self/clear_refs`, 5); the RSS it
///   was reset to is printed beside it, so what the restore added is plain.
extension DebugCommand {
    static func indexRestore() -> Command {
        Command(
            name: "index-restore",
            summary: "Measure restoring the metadata index of a synthetic drive",
            discussion: """
                Writes, in a temporary directory removed afterwards, the index file (index.bin) of a
                synthetic drive of N items shaped like Google's (33-character IDs, names, md5s, head
                revision IDs, times, web links, the last modifier) in M folders, through the same code
                a mount saves its index with; then loads it as a mount does and lists the root and
                its first folder. Prints the file's size, the load time, the time until the first
                folder is listed, and the peak RSS of the restore (VmHWM). Talks to nobody: it
                measures the index, not a mount's start-up.

                With --walk, then walks the restored table as a `find` of the mount would (every
                folder listed and each entry looked up, the files' lookups forgotten as the kernel
                forgets the entries an idle mount asks it to drop), lets the idle folders be packed
                again, and prints the walk's time, its peak RSS and the RSS after it.
                """,
            options: [
                .value("items", valueName: "N", help: "Items in the drive, folders included (default 1000000)",
                       validate: { validateCount($0, max: 50_000_000) }),
                .value("folders", valueName: "M", help: "Folders among them (default: one per 100 items)",
                       validate: { validateCount($0, max: 50_000_000) }),
                .flag("walk", help: "Then visit every folder once through the table and let them be packed again"),
            ],
            examples: [("debug index-restore --items 1000000", "A drive of a million items in 10,000 folders")],
            run: runIndexRestore)
    }

    static func validateCount(_ text: String, max: Int) -> String? {
        Int(text).map { (1...max).contains($0) } == true ? nil : "expected a whole number from 1 to \(max)"
    }

    private static func runIndexRestore(_ invocation: Invocation) throws -> Int32 {
        let items = invocation.value("items").flatMap { Int($0) } ?? 1_000_000
        let folders = invocation.value("folders").flatMap { Int($0) } ?? max(1, items / 100)
        guard folders <= items else {
            throw CLIError.usage("--folders (\(folders)) is more than --items (\(items)): folders are items too",
                                 command: invocation.command.fullPath)
        }
        var template = Array((NSTemporaryDirectory() + "/drivefs-index-restore.XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw CLIError.failure("cannot make a temporary directory: \(String(cString: strerror(errno)))",
                                   hint: "Check TMPDIR.")
        }
        let directory = String(cString: made)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        // The layout of scripts/bench.sh's other figures: the label in 58 columns, the value right-aligned in 14.
        func line(_ label: String, _ value: String) {
            let pad = { (text: String, width: Int) in String(repeating: " ", count: max(0, width - text.count)) }
            Output.standardOutput(label + pad(label, 58) + " " + pad(value, 14) + value + "\n")
        }
        func ms(_ seconds: Double) -> String { seconds < 1 ? String(format: "%.1f ms", seconds * 1000) : String(format: "%.2f s", seconds) }
        func mib(_ kib: Int?) -> String { kib.map { String(format: "%.0f MiB", Double($0) / 1024) } ?? "unknown" }
        func grouped(_ n: Int) -> String {
            let digits = Array(String(n))
            return String(digits.enumerated().flatMap { i, c in (i > 0 && (digits.count - i) % 3 == 0 ? [","] : []) + [c] })
        }

        let written = SyntheticIndex.write(items: items, folders: folders, directory: directory)
        guard written.fileBytes > 0 else { throw CLIError.failure("the synthetic index was not written in \(directory)", hint: nil) }
        Output.standardOutput("synthetic drive: \(grouped(items)) items, \(grouped(folders)) of them folders "
                              + "(\(grouped(written.topFolders)) in the root), written in \(ms(written.writeSeconds))\n")
        line("index: file size", String(format: "%.1f MiB", Double(written.fileBytes) / 1_048_576))
        line("index: bytes an item", String(format: "%.0f B", Double(written.fileBytes) / Double(items)))

        let baseline = resetPeakRSS()
        var held: Int?
        var peak: Int?
        var walkBaseline: Int?
        var walkPeak: Int?
        var afterWalk: Int?
        let walk = invocation.flag("walk")
        guard let restore = SyntheticIndex.restore(directory: directory, walk: walk, whileHeld: {
            held = procStatus("VmRSS")
            peak = procStatus("VmHWM")
            if walk { walkBaseline = resetPeakRSS() }
        }, afterWalk: {
            walkPeak = procStatus("VmHWM")
            afterWalk = procStatus("VmRSS")
        }) else {
            throw CLIError.failure("the synthetic index did not load back", hint: "See the log for the reason.")
        }
        line("index: load (IndexStore.load, no item decoded)", ms(restore.loadSeconds))
        line("index: after the load, nodes / items held packed", "\(restore.nodesAfterLoad) / \(grouped(restore.packedItemsAfterLoad))")
        line("index: root listed (\(grouped(restore.rootEntries)) entries materialized)", ms(restore.rootListingSeconds))
        line("index: first folder listed (\(grouped(restore.firstFolderEntries)) entries)", ms(restore.firstFolderSeconds))
        line("index: from the start of the load to the first folder", ms(restore.totalSeconds))
        line("index: peak RSS of the restore (VmHWM)", mib(peak))
        line("index: RSS before the load (where VmHWM was reset)", baseline.map { mib($0) } ?? "not reset")
        line("index: RSS with the restored table held", mib(held))
        if let w = restore.walk {
            line("walk: folders visited / entries looked up", "\(grouped(w.foldersVisited)) / \(grouped(w.itemsVisited))")
            line("walk: every folder materialized and each entry looked up", ms(w.seconds))
            line("walk: most folders materialized at once", grouped(w.peakMaterialized))
            line("walk: peak RSS (VmHWM, reset before the walk)", mib(walkPeak))
            line("walk: RSS before the walk (where VmHWM was reset)", walkBaseline.map { mib($0) } ?? "not reset")
            line("walk: idle folders shed and packed again", ms(w.packSeconds))
            line("walk: after it, nodes / folders materialized", "\(grouped(w.nodesAfter)) / \(grouped(w.materializedAfter))")
            line("walk: after it, items held packed", grouped(w.packedItemsAfter))
            line("walk: RSS after the walk, packed again", mib(afterWalk))
        }
        return ExitStatus.success
    }

    /// Hands freed heap back to the system and resets VmHWM to the current RSS; that RSS, or nil
    /// when the kernel refused (before Linux 4.0, or no /proc).
    private static func resetPeakRSS() -> Int? {
        typealias Trim = @convention(c) (Int) -> Int32
        if let symbol = dlsym(nil, "malloc_trim") { _ = unsafeBitCast(symbol, to: Trim.self)(0) }
        guard let fd = fopen("/proc/self/clear_refs", "w") else { return nil }
        let ok = fputs("5", fd) >= 0
        return fclose(fd) == 0 && ok ? procStatus("VmRSS") : nil
    }

    /// A `/proc/self/status` field in KiB. (Read with read(2): /proc files report a size of 0,
    /// which Foundation's whole-file readers trust.)
    private static func procStatus(_ field: String) -> Int? {
        let fd = open("/proc/self/status", O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &buffer, buffer.count)
            guard n > 0 else { break }
            bytes += buffer[0..<n]
        }
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where line.hasPrefix(field + ":") {
            return Int(line.dropFirst(field.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
        }
        return nil
    }
}
