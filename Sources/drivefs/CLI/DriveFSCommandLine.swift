import CommandLineKit
import Foundation

/// The `drivefs` program: mount(8)'s words translated, no words answered with the overview, and
/// the rest handed to `CommandLineProgram.main` (parse against the command tree, run the command,
/// errors as messages on standard error and an exit status, see `ExitStatus`).
enum DriveFSCommandLine {
    /// - Parameter program: argument 0; as `mount.drivefs` or `mount.fuse.drivefs` the arguments
    ///   are mount(8)'s (`MountHelper`).
    static func main(_ arguments: [String], environment: [String: String], program: String? = nil) -> Int32 {
        let root = CommandTree.make()
        var arguments = arguments
        if MountHelper.isHelper(program) {
            do {
                let (outcome, verbose) = try MountHelper.translate(arguments, mount: root.subcommand(named: "mount")!)
                switch outcome {
                case .fake(let words):
                    if verbose { Output.standardError("drivefs \(words.joined(separator: " ")) (not run: -f)\n") }
                    return ExitStatus.success
                case .run(let words):
                    if verbose { Output.standardError("drivefs \(words.joined(separator: " "))\n") }
                    arguments = words
                }
            } catch {
                Output.standardError(error.message(program: root.name) + "\n")
                return error.exitStatus
            }
        }
        if arguments.isEmpty {
            // No command: the overview, on standard error since nothing was done.
            Output.standardError(HelpFormatter.help(for: root))
            return ExitStatus.usage
        }
        return CommandLineProgram.main(root, arguments, environment: environment, version: DriveFSVersion.current)
    }
}
