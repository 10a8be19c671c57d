/// A program's `main` over its command tree: parses the arguments, answers `--help` (on standard
/// output, status 0) and `--version` (`NAME VERSION`), runs the command reached, and turns errors
/// into a message on standard error and an exit status (`ExitStatus`): a `CLIError` as it says, any
/// other error as `NAME: <error>` with status 1.
public enum CommandLineProgram {
    /// - Parameter arguments: without the program's name.
    public static func main(_ root: Command, _ arguments: [String], environment: [String: String], version: String) -> Int32 {
        do {
            switch try CommandLineParser(root: root, environment: environment).parse(arguments) {
            case .help(let command):
                Output.standardOutput(HelpFormatter.help(for: command))
                return ExitStatus.success
            case .version:
                Output.standardOutput("\(root.name) \(version)\n")
                return ExitStatus.success
            case .run(let invocation):
                return try invocation.command.run!(invocation)
            }
        } catch let error as CLIError {
            Output.standardError(error.message(program: root.name) + "\n")
            return error.exitStatus
        } catch {
            Output.standardError("\(root.name): \(error)\n")
            return ExitStatus.failure
        }
    }
}
