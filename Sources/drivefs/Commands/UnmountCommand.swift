import Foundation

/// `drivefs unmount MOUNTPOINT`: `fusermount -u`, then waits until the mount is gone.
enum UnmountCommand {
    static func make() -> Command {
        Command(
            name: "unmount", summary: "Unmount a mounted Drive",
            discussion: """
                Unmounts MOUNTPOINT (as 'fusermount -u' does) and returns once the kernel no longer
                lists it. A busy mount (a shell or a program with files open inside) is not
                unmounted: close them, or use --lazy to detach it now and let it go when they are done.
                """,
            options: [
                .flag("lazy", short: "z", help: "Detach now even if busy; the mount goes when no longer used"),
                .value("timeout", valueName: "SECONDS", help: "How long to wait for the mount to go (default 30)",
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
        return ExitStatus.success
    }
}
