/// Errors the command line reports itself.
///
/// `usage` errors (the words typed were wrong) exit with status 2 and point to the command's help;
/// `failure` errors (the words were right, the work failed) exit with status 1. Both carry a
/// message that says what to do next where there is something to do.
public enum CLIError: Error, Equatable {
    /// The command line is wrong. `command` is the command whose help explains it.
    case usage(String, command: String)
    /// The work failed; `hint` says what the user can do about it.
    case failure(String, hint: String? = nil)

    /// The one wording of a value an option refuses: `invalid value 'X' for '--name': PROBLEM`.
    public static func invalidValue(_ value: String, for written: String, problem: String, command: String) -> CLIError {
        .usage("invalid value '\(value)' for '\(written)': \(problem)", command: command)
    }

    public var exitStatus: Int32 {
        switch self {
        case .usage: return ExitStatus.usage
        case .failure: return ExitStatus.failure
        }
    }

    /// The text printed on standard error, without a trailing newline; `program` is the name it
    /// starts with (`drivefs`).
    public func message(program: String) -> String {
        switch self {
        case let .usage(text, command):
            return "\(program): \(text) (see '\(command) --help')"
        case let .failure(text, hint):
            return hint.map { "\(program): \(text)\n\($0)" } ?? "\(program): \(text)"
        }
    }
}

/// Exit statuses, as documented in `drivefs --help` and drivefs-emulator(1).
public enum ExitStatus {
    public static let success: Int32 = 0
    /// The work failed.
    public static let failure: Int32 = 1
    /// The command line was wrong: unknown or malformed option, missing or extra argument.
    public static let usage: Int32 = 2
}
