/// A named option: `--name`, optionally `-x`; a flag, or one that takes a value
/// (`--name=VALUE` or `--name VALUE`; for a short option `-x VALUE` or `-xVALUE`).
public struct OptionSpec: Sendable {
    public let long: String
    public let short: Character?
    /// The placeholder shown in help (`URL`, `FILE`); nil for a flag.
    public let valueName: String?
    /// May be given more than once; every value is kept, in order.
    public let repeatable: Bool
    public let help: String
    /// Returns an explanation when the value is malformed, nil when it is fine.
    public let validate: (@Sendable (String) -> String?)?

    public static func flag(_ long: String, short: Character? = nil, help: String) -> OptionSpec {
        OptionSpec(long: long, short: short, valueName: nil, repeatable: false, help: help, validate: nil)
    }

    public static func value(
        _ long: String, short: Character? = nil, valueName: String, repeatable: Bool = false, help: String,
        validate: (@Sendable (String) -> String?)? = nil
    ) -> OptionSpec {
        OptionSpec(long: long, short: short, valueName: valueName, repeatable: repeatable, help: help, validate: validate)
    }

    public var takesValue: Bool { valueName != nil }

    /// `--name=VALUE` (or with another separator: `--name VALUE`).
    public func spelled(separator: String = "=") -> String {
        "--\(long)" + (valueName.map { separator + $0 } ?? "")
    }

    /// `-o, --option=OPTS` as shown in a command tree's help.
    public var synopsis: String {
        var s = short.map { "-\($0), " } ?? "    "
        s += "--\(long)"
        if let valueName { s += "=\(valueName)" }
        return s
    }
}

/// Options that several commands of a program take, declared once (drivefs's Drive endpoint
/// options). Help lists them under their own heading; the manual gives them a section, and each
/// command that takes them points to it.
public struct OptionGroup: Sendable {
    /// "Drive options": the heading in help; upper-cased, the manual's section.
    public let name: String
    /// Why they are there, after the heading: "for the emulator or a proxy; the defaults talk to Google".
    public let purpose: String
    /// Who takes them, opening the manual's section: "Commands that talk to Drive".
    public let takers: String
    public let specs: [OptionSpec]

    public init(name: String, purpose: String, takers: String, specs: [OptionSpec]) {
        self.name = name
        self.purpose = purpose
        self.takers = takers
        self.specs = specs
    }

    var manualSection: String { name.uppercased() }
}
