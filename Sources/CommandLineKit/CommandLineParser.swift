/// Parses command lines against a `Command` tree: drivefs's, and drivefs-emulator's (a root that is
/// a leaf: its options and arguments follow the program's name).
///
/// Grammar: `PROGRAM [--help|--version] COMMAND... [OPTION|ARGUMENT]...`. Words name subcommands
/// until a leaf is reached; after that, options and arguments may be interleaved. `--` ends the
/// options: every later word is an argument. A long option takes its value as `--name=VALUE` or
/// `--name VALUE`; a short one as `-x VALUE` or `-xVALUE`. A separate value may not start with `-`
/// (so a forgotten value is reported instead of swallowing the next option); write `--name=-v`.
/// An option not declared `repeatable` may be given once. `--help`/`-h` anywhere before `--` shows
/// the help of the command reached so far. A value an option's `validate` refuses is reported with
/// the option's name, as `CLIError.invalidValue`.
public struct CommandLineParser {
    public enum Outcome {
        case run(Invocation)
        case help(Command)
        case version
    }

    public let root: Command
    public let environment: [String: String]

    public init(root: Command, environment: [String: String]) {
        self.root = root
        self.environment = environment
    }

    /// `arguments` excludes the program name.
    public func parse(_ arguments: [String]) throws(CLIError) -> Outcome {
        var command = root
        var values: [String: [String]] = [:]
        var positionals: [String] = []
        var optionsEnded = false
        var index = 0
        /// The word after an option that found no value, for the error's hint.
        var nextWord: String?

        func usage(_ text: String) -> CLIError { .usage(text, command: command.fullPath) }

        /// A value that starts with `-` is not taken from the next word: say how to give it.
        func dashHint(_ written: String, _ joiner: String) -> String {
            guard let word = nextWord, word.hasPrefix("-"), !["--", "-h", "--help"].contains(word) else { return "" }
            let name = word.split(separator: "=", maxSplits: 1).first.map(String.init) ?? word
            if command.allOptions.contains(where: { name == "--\($0.long)" || $0.short.map { "-\($0)" } == name }) { return "" }
            return "; to give '\(word)', write '\(written)\(joiner)\(word)'"
        }

        func record(_ spec: OptionSpec, as written: String, value: String?) throws(CLIError) {
            if let value, let validate = spec.validate, let problem = validate(value) {
                throw .invalidValue(value, for: written, problem: problem, command: command.fullPath)
            }
            if values[spec.long] != nil && !spec.repeatable {
                throw usage("option '\(written)' was given more than once")
            }
            values[spec.long, default: []].append(value ?? "")
        }

        /// The next word as an option's value, or nil when there is none or it looks like an option.
        func separateValue() -> String? {
            nextWord = index < arguments.count ? arguments[index] : nil
            guard let next = nextWord else { return nil }
            if next.hasPrefix("-") && next != "-" { return nil }
            index += 1
            return next
        }

        while index < arguments.count {
            let word = arguments[index]
            index += 1

            if !optionsEnded && word == "--" {
                optionsEnded = true
                continue
            }

            if !optionsEnded && word.hasPrefix("--") {
                let body = word.dropFirst(2)
                let name: String
                let inline: String?
                if let eq = body.firstIndex(of: "=") {
                    name = String(body[..<eq])
                    inline = String(body[body.index(after: eq)...])
                } else {
                    name = String(body)
                    inline = nil
                }
                let written = "--\(name)"
                if name == "help" {
                    if inline != nil { throw usage("option '--help' does not take a value") }
                    return .help(command)
                }
                if name == "version" && command.isRoot {
                    if inline != nil { throw usage("option '--version' does not take a value") }
                    return .version
                }
                guard let spec = command.allOptions.first(where: { $0.long == name }) else {
                    throw unknownOption(written, for: command)
                }
                if spec.takesValue {
                    guard let value = inline ?? separateValue() else {
                        throw usage("option '\(written)' needs a value (\(written)=\(spec.valueName!))" + dashHint(written, "="))
                    }
                    try record(spec, as: written, value: value)
                } else {
                    if inline != nil { throw usage("option '\(written)' does not take a value") }
                    try record(spec, as: written, value: nil)
                }
                continue
            }

            if !optionsEnded && word.hasPrefix("-") && word != "-" {
                let letters = word.dropFirst()
                let letter = letters.first!
                let attached = letters.dropFirst()
                if letter == "h" && attached.isEmpty { return .help(command) }
                let written = "-\(letter)"
                guard let spec = command.allOptions.first(where: { $0.short == letter }) else {
                    throw unknownOption(attached.isEmpty ? written : word, for: command)
                }
                if spec.takesValue {
                    guard let value = attached.isEmpty ? separateValue() : String(attached) else {
                        throw usage("option '\(written)' needs a value (\(written) \(spec.valueName!))" + dashHint(written, ""))
                    }
                    try record(spec, as: written, value: value)
                } else {
                    // Short flags are not bundled (`-fd`): one letter per word keeps errors precise.
                    if !attached.isEmpty { throw unknownOption(word, for: command) }
                    try record(spec, as: written, value: nil)
                }
                continue
            }

            if command.isGroup {
                guard let sub = command.subcommand(named: word) else {
                    throw unknownCommand(word, under: command)
                }
                command = sub
                continue
            }
            positionals.append(word)
        }

        if command.isGroup {
            let names = command.subcommands.filter { !$0.hidden }.map(\.name).joined(separator: ", ")
            throw usage("'\(command.fullPath)' needs a command: \(names)")
        }

        let fixed = command.arguments.filter { !$0.variadic }
        let required = command.arguments.filter { !$0.optional }
        if positionals.count < required.count {
            let missing = required[positionals.count...].map(\.name).joined(separator: " ")
            throw usage("missing argument \(missing) for '\(command.displayPath)'")
        }
        if !command.arguments.contains(where: \.variadic) && positionals.count > fixed.count {
            let extra = positionals[fixed.count]
            throw usage("unexpected argument '\(extra)' for '\(command.displayPath)'")
        }
        return .run(Invocation(command: command, optionValues: values, positionals: positionals, environment: environment))
    }

    private func unknownOption(_ written: String, for command: Command) -> CLIError {
        let longs = command.allOptions.map { "--\($0.long)" } + ["--help"] + (command.isRoot ? ["--version"] : [])
        let name = written.split(separator: "=", maxSplits: 1).first.map(String.init) ?? written
        if command.isGroup, let leaf = Self.firstLeaf(under: command, declaring: name) {
            let spec = leaf.allOptions.first { "--\($0.long)" == name || $0.short.map { "-\($0)" } == name }!
            let example = spec.valueName.map { "\(name)=\($0)" } ?? name
            return .usage("option '\(name)' goes after the command, as in '\(leaf.fullPath) \(example)'",
                          command: command.fullPath)
        }
        var text = "unknown option '\(name)' for '\(command.displayPath)'"
        if name.hasPrefix("--"), let near = Suggestion.closest(to: name, among: longs) { text += "; did you mean '\(near)'?" }
        return .usage(text, command: command.fullPath)
    }

    /// The first visible leaf under `group` that accepts the option written as `name`.
    private static func firstLeaf(under group: Command, declaring name: String) -> Command? {
        for sub in group.subcommands where !sub.hidden {
            if sub.isGroup {
                if let found = firstLeaf(under: sub, declaring: name) { return found }
            } else if sub.allOptions.contains(where: { "--\($0.long)" == name || $0.short.map { "-\($0)" } == name }) {
                return sub
            }
        }
        return nil
    }

    private func unknownCommand(_ word: String, under command: Command) -> CLIError {
        let names = command.subcommands.filter { !$0.hidden }.map(\.name)
        var text = "unknown command '\(word)' for '\(command.displayPath)'"
        if word.hasPrefix("-") == false, let near = Suggestion.closest(to: word, among: names) {
            text += "; did you mean '\(near)'?"
        }
        return .usage(text, command: command.fullPath)
    }
}
