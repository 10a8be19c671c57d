/// One node of a program's command tree: either a group (it has subcommands and no `run`) or a
/// leaf (it has `run`). A new command is one `Command(...)` value added to its parent with `add`.
/// A program of one command (`drivefs-emulator`) is a root that is a leaf.
///
/// Every command answers `--help`/`-h` without declaring it; the root also answers `--version`.
/// Options several commands share (drivefs's Drive endpoint options) are one `OptionGroup`, declared
/// once and named by each command that takes it (`sharedOptions`).
public final class Command {
    public let name: String
    /// One line, shown in the parent's command list.
    public let summary: String
    /// Paragraphs shown in this command's own help, after the usage line (for a program of one
    /// command, at the end of its help).
    public let discussion: String
    public let options: [OptionSpec]
    public let arguments: [ArgumentSpec]
    /// Example command lines (without the program's name), each with a one-line explanation.
    public let examples: [(String, String)]
    /// Hidden commands run, but are left out of their parent's help (developer tools).
    public let hidden: Bool
    /// Options this command takes besides its own, shown under their group's heading.
    public let sharedOptions: OptionGroup?
    /// Runs the command; the result is the process's exit status. Throw `CLIError` for errors the
    /// user can act on; anything else is reported as `PROGRAM: <error>` with status 1.
    public let run: ((Invocation) throws -> Int32)?

    public private(set) var subcommands: [Command] = []
    private(set) weak var parent: Command?

    public init(
        name: String, summary: String, discussion: String = "",
        options: [OptionSpec] = [], arguments: [ArgumentSpec] = [],
        examples: [(String, String)] = [], hidden: Bool = false, sharedOptions: OptionGroup? = nil,
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
        self.sharedOptions = sharedOptions
        self.run = run
    }

    /// Adds a subcommand. Names are unique among siblings.
    @discardableResult
    public func add(_ command: Command) -> Command {
        precondition(subcommand(named: command.name) == nil, "duplicate command '\(command.name)' under '\(displayPath)'")
        precondition(run == nil, "'\(displayPath)' runs itself, so it cannot have subcommands")
        command.parent = self
        subcommands.append(command)
        return command
    }

    public func subcommand(named name: String) -> Command? { subcommands.first { $0.name == name } }

    public var isGroup: Bool { run == nil }
    public var isRoot: Bool { parent == nil }

    /// The options this command accepts: its own, then its shared group's.
    public var allOptions: [OptionSpec] { options + (sharedOptions?.specs ?? []) }

    /// `auth login` for the `login` command under `auth`; the root's name for the root.
    public var displayPath: String {
        var names: [String] = []
        var node: Command? = self
        while let n = node, !n.isRoot { names.append(n.name); node = n.parent }
        return names.isEmpty ? name : names.reversed().joined(separator: " ")
    }

    /// `drivefs auth login`.
    public var fullPath: String {
        var names: [String] = []
        var node: Command? = self
        while let n = node { names.append(n.name); node = n.parent }
        return names.reversed().joined(separator: " ")
    }

    public var root: Command { parent?.root ?? self }
}
