/// Renders a command's `--help` text. A command of a tree (drivefs's): summary, usage, description,
/// commands, arguments, options, shared options, examples. A program of one command
/// (drivefs-emulator): the short layout of a single-command tool (`usage:`, summary, options with
/// `--name VALUE`, description).
///
/// Rows for `--help` and `--version` follow the command's own options, unless it declares them
/// itself (to place them, or word them).
public enum HelpFormatter {
    public static func help(for command: Command) -> String {
        command.isRoot && !command.isGroup ? programHelp(command) : commandHelp(command)
    }

    private static func commandHelp(_ command: Command) -> String {
        var out: [String] = []
        out.append("\(command.fullPath): \(command.summary)")
        out.append("")
        out.append("Usage: \(usage(of: command))")

        if !command.discussion.isEmpty {
            out.append("")
            out.append(command.discussion)
        }

        let visible = command.subcommands.filter { !$0.hidden }
        if command.isGroup && !visible.isEmpty {
            out.append("")
            out.append("Commands:")
            out += table(visible.map { ($0.name, $0.summary) })
        }

        if !command.arguments.isEmpty {
            out.append("")
            out.append("Arguments:")
            out += table(command.arguments.map { ($0.synopsis, $0.help) })
        }

        out.append("")
        out.append("Options:")
        out += table(withBuiltIns(command, help: "Show this help and exit", version: "Show the version and exit")
            .map { ($0.synopsis, $0.help) })

        if let group = command.sharedOptions {
            out.append("")
            out.append("\(group.name) (\(group.purpose)):")
            out += table(group.specs.map { ($0.synopsis, $0.help) })
        }

        if !command.examples.isEmpty {
            out.append("")
            out.append("Examples:")
            for (line, explanation) in command.examples {
                out.append("  \(command.root.name) \(line)")
                out.append("      \(explanation)")
            }
        }

        if command.isGroup {
            out.append("")
            out.append("Run '\(command.fullPath) COMMAND --help' for the options of each command.")
        }
        return out.joined(separator: "\n") + "\n"
    }

    /// `usage: NAME [options]`, the summary, the options (`-x, --name VALUE`), then the discussion.
    private static func programHelp(_ command: Command) -> String {
        var lines = ["usage: \(command.name) [options]", "", command.summary, "", "options:"]
        let options = withBuiltIns(command, help: "show this help", version: "show the version")
        lines += flowingTable(options.map { option in
            ((option.short.map { "-\($0), " } ?? "") + option.spelled(separator: " "), option.help)
        })
        if !command.discussion.isEmpty { lines += ["", command.discussion] }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The command's options, then `--help` (`-h`) and, for the root, `--version`, unless declared.
    static func withBuiltIns(_ command: Command, help: String, version: String) -> [OptionSpec] {
        var all = command.options
        if !all.contains(where: { $0.long == "help" }) { all.append(.flag("help", short: "h", help: help)) }
        if command.isRoot && !all.contains(where: { $0.long == "version" }) { all.append(.flag("version", help: version)) }
        return all
    }

    public static func usage(of command: Command) -> String {
        var parts = [command.fullPath]
        if command.isGroup {
            parts.append("COMMAND")
        } else {
            if !command.allOptions.isEmpty { parts.append("[OPTIONS]") }
            parts += command.arguments.map(\.synopsis)
        }
        return parts.joined(separator: " ")
    }

    /// Two columns; the left one padded to the widest entry (capped, longer entries wrap the text
    /// to the next line).
    private static func table(_ rows: [(String, String)]) -> [String] {
        let width = min(28, rows.map(\.0.count).max() ?? 0)
        var lines: [String] = []
        for (left, right) in rows {
            let helpLines = right.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let indent = String(repeating: " ", count: width + 4)
            if left.count > width {
                lines.append("  \(left)")
                lines += helpLines.map { indent + $0 }
            } else {
                let pad = String(repeating: " ", count: width - left.count)
                lines.append("  \(left)\(pad)  \(helpLines.first ?? "")")
                lines += helpLines.dropFirst().map { indent + $0 }
            }
        }
        return lines
    }

    /// Two columns, the left one 26 wide and two spaces before the help; a longer left entry keeps
    /// its help on the same line, two spaces after it, and continuation lines are indented under it.
    private static func flowingTable(_ rows: [(String, String)]) -> [String] {
        var lines: [String] = []
        for (left, right) in rows {
            let helpLines = right.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let column = max(left.count + 2, 28)
            lines.append("  \(left)\(String(repeating: " ", count: column - left.count))\(helpLines.first ?? "")")
            lines += helpLines.dropFirst().map { String(repeating: " ", count: 2 + column) + $0 }
        }
        return lines
    }
}
