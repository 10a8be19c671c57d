/// One node of the `drivefs` command tree: either a group (it has subcommands and no `run`) or a
/// leaf (it has `run`). A new command is one `Command(...)` value added to its parent with `add`.
///
/// Every command answers `--help`/`-h` without declaring it; the root also answers `--version`.
/// Commands that talk to Drive set `talksToDrive`, which gives them the endpoint options of
/// `DriveOptions` (declared once, there).
final class Command {
    let name: String
    /// One line, shown in the parent's command list.
    let summary: String
    /// Paragraphs shown in this command's own help, after the usage line.
    let discussion: String
    let options: [OptionSpec]
    let arguments: [ArgumentSpec]
    /// Example command lines (without the leading `drivefs`), each with a one-line explanation.
    let examples: [(String, String)]
    /// Hidden commands run, but are left out of their parent's help (developer tools).
    let hidden: Bool
    let talksToDrive: Bool
    /// Runs the command; the result is the process's exit status. Throw `CLIError` for errors the
    /// user can act on; anything else is reported as `drivefs: <error>` with status 1.
    let run: ((Invocation) throws -> Int32)?

    private(set) var subcommands: [Command] = []
    private(set) weak var parent: Command?

    init(
        name: String, summary: String, discussion: String = "",
        options: [OptionSpec] = [], arguments: [ArgumentSpec] = [],
        examples: [(String, String)] = [], hidden: Bool = false, talksToDrive: Bool = false,
        run: ((Invocation) throws -> Int32)? = nil
    ) {
        precondition(arguments.dropLast().allSatisfy { !$0.variadic }, "only the last argument of '\(name)' may be variadic")
        self.name = name
        self.summary = summary
        self.discussion = discussion
        self.options = options
        self.arguments = arguments
        self.examples = examples
        self.hidden = hidden
        self.talksToDrive = talksToDrive
        self.run = run
    }

    /// Adds a subcommand. Names are unique among siblings.
    @discardableResult
    func add(_ command: Command) -> Command {
        precondition(subcommand(named: command.name) == nil, "duplicate command '\(command.name)' under '\(displayPath)'")
        precondition(run == nil, "'\(displayPath)' runs itself, so it cannot have subcommands")
        command.parent = self
        subcommands.append(command)
        return command
    }

    func subcommand(named name: String) -> Command? { subcommands.first { $0.name == name } }

    var isGroup: Bool { run == nil }
    var isRoot: Bool { parent == nil }

    /// The options this command accepts: its own, then the Drive endpoint options if it talks to Drive.
    var allOptions: [OptionSpec] { options + (talksToDrive ? DriveOptions.specs : []) }

    /// `auth login` for the `login` command under `auth`; the root's name for the root.
    var displayPath: String {
        var names: [String] = []
        var node: Command? = self
        while let n = node, !n.isRoot { names.append(n.name); node = n.parent }
        return names.isEmpty ? name : names.reversed().joined(separator: " ")
    }

    /// `drivefs auth login`.
    var fullPath: String {
        var names: [String] = []
        var node: Command? = self
        while let n = node { names.append(n.name); node = n.parent }
        return names.reversed().joined(separator: " ")
    }

    var root: Command { parent?.root ?? self }
}
