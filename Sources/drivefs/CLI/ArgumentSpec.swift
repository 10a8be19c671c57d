/// A positional argument.
struct ArgumentSpec: Sendable {
    let name: String
    let help: String
    var optional: Bool = false
    /// Takes every remaining positional word (only the last argument).
    var variadic: Bool = false

    var synopsis: String {
        let core = variadic ? "\(name)..." : name
        return optional ? "[\(core)]" : core
    }
}
