import CommandLineKit
import DriveSupport
import Foundation

/// `drivefs-emulator --man`: drivefs-emulator(1) in roff, rendered by CommandLineKit's
/// `ManPageFormatter` (drivefs's) from the command whose options are also the parser and `--help`;
/// packaging writes it to man1/drivefs-emulator.1. What the page says beyond the options is here.
enum EmulatorManPage {
    static func page(for command: Command, date: String) -> String {
        ManPageFormatter.page(for: command, version: EmulatorCommandLine.version, date: date, generator: "drivefs-emulator --man",
                              whatIs: "a Google Drive v3 and OAuth 2.0 server for loopback",
                              description: description, extraSections: sections)
    }

    static let description = """
        drivefs-emulator serves Google Drive's v3 REST API and Google's OAuth 2.0 endpoints on a
        loopback address, so that drivefs(1), its tests, benchmarks and demos, and unmodified Google
        clients (google-api-python-client, rclone) run without reaching Google. Files, folders,
        shared drives, q queries, fields masks, paging, ranged downloads, exports of Google Docs,
        media, multipart and resumable uploads, the change feed and the trash behave as Google's do.

        \(EmulatorCommandLine.readyNote) Nothing else is printed on standard output.

        Faults (scripted errors, resets, stalls), latency and bandwidth shaping, request statistics and
        listing quirks are set with the options below or at run time through the control API under
        /__emulator/ (stats, reset-stats, faults, quirks, revoke).
        """

    static let sections: [(String, String)] = [
        ("Signing in", """
            Any client ID and secret are accepted. drivefs signs in with drivefs auth login --no-browser
            --client-id any --client-secret any --api-url http://127.0.0.1:PORT/ --token-url
            http://127.0.0.1:PORT/token --auth-url http://127.0.0.1:PORT/o/oauth2/v2/auth: the emulator
            consents as soon as the printed URL is opened (curl -sL -o /dev/null URL). Other clients may
            use the refresh token of --refresh-token, valid for any client until revoked.
            """),
        ("Drive limits", """
            --limits google reproduces Google's Drive limits of 2026 together: 325,000 quota units a
            minute per user per project and 1,000,000 per project (files.get 5, files.list 100, a
            download or export 200, a write 50, ...), about 3 writes a second per account after a burst
            of 3, 750 GB of uploads and copies per user a day, 500,000 items per folder and 400,000 per
            shared drive. --limits legacy is the old quota of 12,000 requests a minute per user. Past a
            limit the emulator answers Google's 403 (rateLimitExceeded or userRateLimitExceeded, no
            Retry-After) and changes nothing; GET /__emulator/stats counts, per user, the units used and
            the requests refused.
            """),
        ("Exit status", """
            0 after SIGINT or SIGTERM; 1 when it cannot start (the port is in use, the faults file cannot
            be read); 2 for a usage error (an unknown option, a missing or malformed value), with a
            message naming the option on standard error.
            """),
        ("Files", """
            With --state-dir DIR: Drive's metadata (a snapshot and an append-only journal), each
            revision's content and the OAuth grants, kept across restarts. Without it, a temporary
            directory removed at exit. /usr/share/doc/drivefs/ has the full documentation.
            """),
        ("See also", "drivefs(1)"),
    ]
}
