/// A positional argument.
public struct ArgumentSpec: Sendable {
    public let name: String
    public let help: String
    public var optional: Bool = false
    /// Takes every remaining positional word (only the last argument).
    public var variadic: Bool = false

    public init(name: String, help: String, optional: Bool = false, variadic: Bool = false) {
        self.name = name
        self.help = help
        self.optional = optional
        self.variadic = variadic
    }

    public var synopsis: String {
        let core = variadic ? "\(name)..." : name
        return optional ? "[\(core)]" : core
    }
}
