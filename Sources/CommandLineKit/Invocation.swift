/// A parsed command line, handed to a command's `run`.
///
/// Values are keyed by the option's long name (`api-url`), arguments by their spec's name
/// (`MOUNTPOINT`). Every option and argument was checked against the command's specs, so asking
/// for a name the command does not declare is a programming error.
public struct Invocation {
    public let command: Command
    private let optionValues: [String: [String]]
    private let argumentValues: [String: [String]]
    /// The process environment (injected so that commands are testable).
    public let environment: [String: String]

    public init(command: Command, optionValues: [String: [String]], positionals: [String], environment: [String: String]) {
        self.command = command
        self.optionValues = optionValues
        self.environment = environment
        var byName: [String: [String]] = [:]
        var rest = positionals[...]
        for spec in command.arguments {
            if spec.variadic {
                byName[spec.name] = Array(rest)
                rest = []
            } else if let first = rest.first {
                byName[spec.name] = [first]
                rest = rest.dropFirst()
            }
        }
        self.argumentValues = byName
    }

    /// True when the flag was given.
    public func flag(_ long: String) -> Bool {
        precondition(spec(long) != nil, "'\(command.displayPath)' declares no option --\(long)")
        return optionValues[long] != nil
    }

    /// The option's value (the last one when repeatable), or nil when it was not given.
    public func value(_ long: String) -> String? { values(long).last }

    /// Every value given for a repeatable option, in order.
    public func values(_ long: String) -> [String] {
        precondition(spec(long) != nil, "'\(command.displayPath)' declares no option --\(long)")
        return optionValues[long] ?? []
    }

    /// A positional argument's value, or nil when an optional argument was left out.
    public func argument(_ name: String) -> String? { arguments(name).first }

    /// A variadic argument's values.
    public func arguments(_ name: String) -> [String] {
        precondition(command.arguments.contains { $0.name == name }, "'\(command.displayPath)' declares no argument \(name)")
        return argumentValues[name] ?? []
    }

    private func spec(_ long: String) -> OptionSpec? { command.allOptions.first { $0.long == long } }
}
