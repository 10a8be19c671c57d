import CommandLineKit
import FuseBridge
import Foundation

/// What every mounting command (`mount`, `debug smoke-mount`) says about `-o` options and about
/// a mount that failed: written once.
enum FuseMountOptions {
    /// Options drivefs sets itself are refused, and `rw` when the mount can only be read-only
    /// (`readOnlyReason` says why; nil: `rw` is the default and accepted).
    static func validate(_ text: String, readOnlyReason: String?) -> String? {
        let owned: Set<String> = ["fsname", "subtype"]
        for option in text.split(separator: ",", omittingEmptySubsequences: false) {
            let name = option.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
            if option.isEmpty { return "an option is empty" }
            if name == "rw", let readOnlyReason { return readOnlyReason }
            if owned.contains(name) { return "drivefs sets '\(name)' itself" }
        }
        return nil
    }

    /// Whether `-o` options ask for a read-only mount (`ro`; a later `rw` undoes it).
    static func asksReadOnly(_ values: [String]) -> Bool {
        var readOnly = false
        for value in values {
            for option in value.split(separator: ",") {
                if option == "ro" { readOnly = true } else if option == "rw" { readOnly = false }
            }
        }
        return readOnly
    }

    /// A `FuseMount` failure as the message the user sees, with what to check.
    static func failure(_ error: FuseMountError, mountpoint: String, command: String, unmountHint: String) -> CLIError {
        switch error {
        case .optionsRejected(let options):
            return .usage("libfuse rejected the mount options '\(options.joined(separator: ","))'", command: command)
        case .signalHandlersFailed:
            return .failure("cannot install the signal handlers")
        case .mountFailed:
            return .failure(
                "cannot mount on '\(mountpoint)' (libfuse said why above)",
                hint: "Check that fuse3 is installed ('make deps'), that /dev/fuse exists, and that nothing is mounted there"
                    + " already ('\(unmountHint) \(mountpoint)').")
        case .loopFailed(let code):
            return .failure("the FUSE session ended with an error: \(String(cString: strerror(-code)))")
        }
    }
}
