import CommandLineKit

/// `drivefs completion bash|zsh`: the shell completion script, generated from the command tree.
enum CompletionCommand {
    static func make() -> Command {
        Command(
            name: "completion", summary: "Print the shell completion script (bash or zsh)",
            discussion: """
                Prints a completion script for SHELL, generated from the same option tables as
                --help: commands, options, and files or directories where an option or argument
                takes one.
                """,
            arguments: [ArgumentSpec(name: "SHELL", help: "bash or zsh")],
            examples: [
                ("completion bash > ~/.local/share/bash-completion/completions/drivefs", "Install for bash"),
                ("completion zsh > \"${fpath[1]}/_drivefs\"", "Install for zsh"),
            ],
            run: { invocation in
                let name = invocation.argument("SHELL")!
                guard let shell = CompletionFormatter.Shell(rawValue: name) else {
                    throw CLIError.usage("unknown shell '\(name)' (expected bash or zsh)", command: invocation.command.fullPath)
                }
                Output.standardOutput(CompletionFormatter.script(for: invocation.command.root, shell: shell))
                return ExitStatus.success
            })
    }
}
