/// A named option: `--name`, optionally `-x`; a flag, or one that takes a value
/// (`--name=VALUE` or `--name VALUE`; for a short option `-x VALUE` or `-xVALUE`).
struct OptionSpec: Sendable {
    let long: String
    let short: Character?
    /// The placeholder shown in help (`URL`, `FILE`); nil for a flag.
    let valueName: String?
    /// May be given more than once; every value is kept, in order.
    let repeatable: Bool
    let help: String
    /// Returns an explanation when the value is malformed, nil when it is fine.
    let validate: (@Sendable (String) -> String?)?

    static func flag(_ long: String, short: Character? = nil, help: String) -> OptionSpec {
        OptionSpec(long: long, short: short, valueName: nil, repeatable: false, help: help, validate: nil)
    }

    static func value(
        _ long: String, short: Character? = nil, valueName: String, repeatable: Bool = false, help: String,
        validate: (@Sendable (String) -> String?)? = nil
    ) -> OptionSpec {
        OptionSpec(long: long, short: short, valueName: valueName, repeatable: repeatable, help: help, validate: validate)
    }

    var takesValue: Bool { valueName != nil }

    /// `-o, --option=OPTS` as shown in help.
    var synopsis: String {
        var s = short.map { "-\($0), " } ?? "    "
        s += "--\(long)"
        if let valueName { s += "=\(valueName)" }
        return s
    }
}
