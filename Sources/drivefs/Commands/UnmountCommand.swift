import CommandLineKit
import DriveFSCore
import Foundation

/// `drivefs unmount MOUNTPOINT`: `fusermount -u`, then waits until the mount is gone.
enum UnmountCommand {
    static func make() -> Command {
        Command(
            name: "unmount", summary: "Unmount a mounted Drive",
            discussion: """
                Unmounts MOUNTPOINT (as 'fusermount -u' does), then waits until the drivefs daemon
                behind it has uploaded every file closed on the mount and exited, printing progress;
                when it returns 0, everything written there is on Drive. If the daemon exits with
                uploads left (it could not reach Drive in time), they stay in its journal and the next
                'drivefs mount' of the same profile sends them: the command says so and exits 1.
                Ctrl-C stops the waiting, not the uploads. A busy mount (a shell or a program with
                files open inside) is not unmounted: close them, or use --lazy to detach it now and
                let it go when they are done.
                """,
            options: [
                .flag("lazy", short: "z", help: "Detach now even if busy; the mount goes when no longer used"),
                .value("timeout", valueName: "SECONDS", help: "How long to wait for the kernel to let the mount go\n(default 30; uploads are waited for without limit)",
                       validate: { Double($0).map { $0 > 0 } == true ? nil : "expected a positive number of seconds" }),
            ],
            arguments: [ArgumentSpec(name: "MOUNTPOINT", help: "Where the Drive is mounted")],
            examples: [("unmount ~/gdrive", "Unmount"), ("unmount -z ~/gdrive", "Detach a busy mount")],
            run: run)
    }

    static func run(_ invocation: Invocation) throws -> Int32 {
        let given = invocation.argument("MOUNTPOINT")!
        let path = given.hasPrefix("/") ? given
            : URL(fileURLWithPath: given, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath)).standardizedFileURL.path
        guard MountPoint.isMounted(path) else {
            throw CLIError.failure("nothing is mounted on '\(given)'")
        }
        // The daemon serving it, from its status file (docs/status.md), to wait for its uploads.
        let statusDirectory = StatusDirectory.resolve(invocation.environment)
        let daemon = statusDirectory.liveMounts().first { $0.mountpoint == path }
        var output = ""
        guard MountPoint.unmount(path, lazy: invocation.flag("lazy"), errorOutput: &output) else {
            let busy = output.lowercased().contains("busy")
            throw CLIError.failure("cannot unmount '\(given)'" + (output.isEmpty ? "" : ": \(output)"),
                                   hint: busy ? "Close the programs using it (see: fuser -vm '\(given)'), or use --lazy." : nil)
        }
        let timeout = invocation.value("timeout").flatMap(Double.init) ?? 30
        let deadline = Date().addingTimeInterval(timeout)
        while MountPoint.isMounted(path) {
            guard Date() < deadline else {
                throw CLIError.failure("'\(given)' is still mounted after \(Int(timeout)) s")
            }
            usleep(50_000)
        }
        if let daemon { return try waitForUploads(daemon, directory: statusDirectory, given: given) }
        return ExitStatus.success
    }

    /// Waits until the daemon exits (it uploads what was closed first), printing its progress
    /// about every two seconds while uploads remain.
    static func waitForUploads(_ daemon: MountStatus, directory: StatusDirectory, given: String) throws -> Int32 {
        var lastLine = ""
        var lastPrinted = Date.distantPast
        while StatusDirectory.isAlive(pid: daemon.pid, processStart: daemon.processStart) {
            if let now = directory.liveMounts(removingDead: false).first(where: { $0.pid == daemon.pid }) {
                let pending = now.uploads.queued + now.uploads.running.count
                if pending > 0 && Date().timeIntervalSince(lastPrinted) >= 2 {
                    // What each running upload is doing: a large file is hashed before it is sent.
                    let line = "drivefs: uploading before unmounting: \(now.uploads.progressSummary)"
                    if line != lastLine { Output.standardError(line + "\n") }
                    lastLine = line
                    lastPrinted = Date()
                }
            }
            usleep(100_000)
        }
        let left = UnfinishedUploads.read(cacheDirectory: daemon.cache.directory)
        guard left == 0 else {
            throw CLIError.failure("'\(given)' is unmounted, but \(left) upload(s) could not reach Drive before drivefs exited",
                                   hint: "They are kept in the upload journal; the next 'drivefs mount' of profile "
                                       + "'\(daemon.profile)' sends them.")
        }
        return ExitStatus.success
    }
}
