/// Renders a command's `--help` text: summary, usage, description, commands, arguments, options,
/// Drive options, examples.
enum HelpFormatter {
    static func help(for command: Command) -> String {
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

        var own = command.options.map { ($0.synopsis, $0.help) }
        own.append(("-h, --help", "Show this help and exit"))
        if command.isRoot { own.append(("    --version", "Show the version and exit")) }
        out.append("")
        out.append("Options:")
        out += table(own)

        if command.talksToDrive {
            out.append("")
            out.append("Drive options (for the emulator or a proxy; the defaults talk to Google):")
            out += table(DriveOptions.specs.map { ($0.synopsis, $0.help) })
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

    static func usage(of command: Command) -> String {
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
}
