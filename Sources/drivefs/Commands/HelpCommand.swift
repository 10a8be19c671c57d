import CommandLineKit

/// `drivefs help [COMMAND...]`: the same text as `drivefs COMMAND... --help`.
enum HelpCommand {
    static func make() -> Command {
        Command(
            name: "help",
            summary: "Show the help of a command",
            arguments: [ArgumentSpec(name: "COMMAND", help: "The command (and subcommands) to explain", optional: true, variadic: true)],
            examples: [("help", "This program's overview"), ("help debug smoke-mount", "The smoke mount's options")],
            run: { invocation in
                var command = invocation.command.root
                for name in invocation.arguments("COMMAND") {
                    guard let sub = command.subcommand(named: name) else {
                        throw CLIError.usage("unknown command '\(name)' for '\(command.displayPath)'", command: command.fullPath)
                    }
                    command = sub
                }
                Output.standardOutput(HelpFormatter.help(for: command))
                return ExitStatus.success
            })
    }
}
