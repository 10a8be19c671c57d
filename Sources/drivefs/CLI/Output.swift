import DriveSupport
import Glibc

/// Unbuffered writes to the standard streams (the process may exec, fork or exit right after).
enum Output {
    static func standardOutput(_ text: String) { write(1, text) }
    static func standardError(_ text: String) { write(2, text) }

    /// A closed or full stream has nowhere to report to: the text is dropped.
    private static func write(_ fd: Int32, _ text: String) {
        try? SystemCall.writeAll(fd, Array(text.utf8))
    }
}
