/// Errors the command line reports itself.
///
/// `usage` errors (the words typed were wrong) exit with status 2 and point to the command's help;
/// `failure` errors (the words were right, the work failed) exit with status 1. Both carry a
/// message that says what to do next where there is something to do.
enum CLIError: Error, Equatable {
    /// The command line is wrong. `command` is the command whose help explains it.
    case usage(String, command: String)
    /// The work failed; `hint` says what the user can do about it.
    case failure(String, hint: String? = nil)


    var exitStatus: Int32 {
        switch self {
        case .usage: return ExitStatus.usage
        case .failure: return ExitStatus.failure
        }
    }

    /// The text printed on standard error, without a trailing newline.
    var message: String {
        switch self {
        case let .usage(text, command):
            return "drivefs: \(text) (see '\(command) --help')"
        case let .failure(text, hint):
            return hint.map { "drivefs: \(text)\n\($0)" } ?? "drivefs: \(text)"
        }
    }
}

/// Exit statuses, as documented in `drivefs --help`.
enum ExitStatus {
    static let success: Int32 = 0
    /// The work failed.
    static let failure: Int32 = 1
    /// The command line was wrong: unknown or malformed option, missing or extra argument.
    static let usage: Int32 = 2
}
