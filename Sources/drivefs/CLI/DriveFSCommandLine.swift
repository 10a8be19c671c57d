import Foundation

/// The `drivefs` program: parses the command line against the command tree, runs the command,
/// and turns errors into messages on standard error and an exit status (see `ExitStatus`).
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
                Output.standardError(error.message + "\n")
                return error.exitStatus
            }
        }
        let parser = CommandLineParser(root: root, environment: environment)
        if arguments.isEmpty {
            // No command: the overview, on standard error since nothing was done.
            Output.standardError(HelpFormatter.help(for: root))
            return ExitStatus.usage
        }
        do {
            switch try parser.parse(arguments) {
            case .help(let command):
                Output.standardOutput(HelpFormatter.help(for: command))
                return ExitStatus.success
            case .version:
                Output.standardOutput("drivefs \(DriveFSVersion.current)\n")
                return ExitStatus.success
            case .run(let invocation):
                return try invocation.command.run!(invocation)
            }
        } catch let error as CLIError {
            Output.standardError(error.message + "\n")
            return error.exitStatus
        } catch {
            Output.standardError("drivefs: \(error)\n")
            return ExitStatus.failure
        }
    }
}
