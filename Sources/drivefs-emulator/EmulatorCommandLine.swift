import Foundation
import DriveEmulator

/// The `drivefs-emulator` command line, parsed into an `EmulatorConfig`.
///
/// One table (`options`) is the parser, the `--help` text and the manual page
/// (`EmulatorManPage`), so the three cannot disagree: adding a flag is one row here.
enum EmulatorCommandLine {
    static let version = "drivefs-emulator 0.1.0"
    static let defaultPort = 8080

    enum Parsed: Sendable {
        case run(EmulatorConfig)
        case help
        case version
        case manPage
    }

    struct UsageError: Error, CustomStringConvertible {
        var description: String
    }

    /// One flag: `--long VALUE` (or `--long=VALUE`), or a bare `--long`.
    struct Option: Sendable {
        let long: String
        /// Also accepted, not shown (`-h`).
        var aliases: [String] = []
        /// The placeholder shown in help and the page (`PORT`); nil for a flag.
        let valueName: String?
        /// Wrapped for an 80-column terminal: continuation lines are indented under the first.
        let help: String
        let action: Action

        enum Action: Sendable {
            /// Stops parsing with this answer (`--help`).
            case answer(Parsed)
            /// Sets part of the configuration from the value; throws a message naming the flag.
            case set(@Sendable (inout EmulatorConfig, String) throws -> Void)
        }

        static func value(_ long: String, _ valueName: String, _ help: String,
                          _ set: @escaping @Sendable (inout EmulatorConfig, String) throws -> Void) -> Option {
            Option(long: long, valueName: valueName, help: help, action: .set(set))
        }

        var synopsis: String { valueName.map { "--\(long) \($0)" } ?? "--\(long)" }
    }

    static let summary = "A Google Drive v3 + OAuth 2.0 emulator on loopback (see docs/emulator.md)."
    static let readyNote = "Prints \"listening on http://HOST:PORT/\" once ready; stops on SIGINT or SIGTERM."

    static let options: [Option] = [
        .value("host", "HOST", "address to listen on (default 127.0.0.1; ::1 for IPv6)") { config, text in
            guard !text.isEmpty else { throw UsageError(description: "option --host needs a host") }
            config.host = text
        },
        .value("port", "PORT", "port to listen on (default \(defaultPort); 0 picks a free port)") { config, text in
            config.port = try integer("--port", text, 0...65535)
        },
        .value("public-url", "URL", "base of absolute URLs handed out (e.g. https://www.googleapis.com)") { config, url in
            guard url.hasPrefix("http://") || url.hasPrefix("https://"), URL(string: url)?.host != nil else {
                throw UsageError(description: "option --public-url: \"\(url)\" is not an http(s) URL")
            }
            config.publicURL = url
        },
        .value("state-dir", "DIR", "persist metadata and content in DIR (default: a temporary directory)") { config, text in
            config.stateDirectory = try directory("--state-dir", text)
        },
        .value("seed", "DIR", "import the tree under DIR at start") { config, text in
            config.seedDirectory = try directory("--seed", text)
        },
        .value("latency", "MS", "delay every API request by MS milliseconds") { config, text in
            config.latencyMs = try integer("--latency", text, 0...600_000)
        },
        .value("bandwidth", "BYTES_PER_S", "limit each connection to BYTES_PER_S bytes per second") { config, text in
            config.bandwidthBytesPerSecond = try integer("--bandwidth", text, 1...Int(Int32.max))
        },
        .value("total-bandwidth", "BYTES_PER_S", """
            limit all connections together to BYTES_PER_S bytes per
            second, shared fairly (N busy connections get about 1/N each)
            """) { config, text in
            config.totalBandwidthBytesPerSecond = try integer("--total-bandwidth", text, 1...Int(Int32.max))
        },
        .value("user-rate-limit", "REQ_PER_S", """
            enforce Google's per-user rate limit: past REQ_PER_S requests per
            second per user (after a burst), answer 403 userRateLimitExceeded
            (Google's default quota: 12,000 per minute, i.e. 200)
            """) { config, text in
            guard let rate = Double(text), rate.isFinite, rate > 0, rate <= 1_000_000 else {
                throw UsageError(description: "option --user-rate-limit: \"\(text)\" is not a number of requests per second in (0, 1000000]")
            }
            // A --user-rate-burst given before keeps its value (it is checked once all are read).
            let burst = config.userRateLimit.map { $0.perSecond == 0 ? $0.burst : nil } ?? nil
            config.userRateLimit = UserRateLimit(perSecond: rate, burst: burst)
        },
        .value("user-rate-burst", "N", "requests a user may send at once (default: one second's worth)") { config, text in
            let burst = try integer("--user-rate-burst", text, 1...1_000_000)
            // perSecond 0 until --user-rate-limit says (parse refuses a burst without a limit).
            config.userRateLimit = UserRateLimit(perSecond: config.userRateLimit?.perSecond ?? 0, burst: burst)
        },
        .value("limits", "google|legacy|none", """
            Google's Drive limits: google = its 2026 limits together (quota
            units, 3 writes/s, 750 GB/day, items per folder); legacy = 12,000
            requests a minute per user; none = no limit (default). The flags
            below change single numbers, whatever their order
            """) { config, text in
            guard let preset = DriveLimits.Preset(rawValue: text) else {
                throw UsageError(description: "option --limits: \"\(text)\" is not google, legacy or none")
            }
            let lands = config.driveLimits.refusedWriteLands
            config.driveLimits = DriveLimits(preset: preset)
            config.driveLimits.refusedWriteLands = lands
        },
        .value("quota-user-units", "N", """
            quota units a user may spend in any minute, per project (google:
            325,000; 0 = no limit); past it, 403 userRateLimitExceeded
            """) { config, text in
            config.driveLimits.unitsPerUserPerMinute = try limit("--quota-user-units", text, 1_000_000_000)
        },
        .value("quota-project-units", "N", """
            quota units a project may spend in any minute (google: 1,000,000;
            0 = no limit); past it, 403 rateLimitExceeded
            """) { config, text in
            config.driveLimits.unitsPerProjectPerMinute = try limit("--quota-project-units", text, 1_000_000_000)
        },
        .value("method-cost", "METHOD=N", """
            the quota units a method costs (files.list=100, ...; repeatable;
            default: docs/emulator.md#quota-units)
            """) { config, text in
            let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, DriveLimits.googleCosts[parts[0]] != nil else {
                throw UsageError(description: "option --method-cost: \"\(text)\" is not METHOD=N with a Drive method name (files.list, files.get.media, ...)")
            }
            config.driveLimits.methodCosts[parts[0]] = try integer("--method-cost", parts[1], 0...1_000_000)
        },
        .value("write-rate", "W_PER_S", """
            sustained writes per second per account (google: 3; 0 = no
            limit); past it (after the burst), 403 rateLimitExceeded
            """) { config, text in
            guard let rate = Double(text), rate.isFinite, rate >= 0, rate <= 1_000_000 else {
                throw UsageError(description: "option --write-rate: \"\(text)\" is not a number of writes per second in [0, 1000000]")
            }
            config.driveLimits.writesPerSecond = rate == 0 ? nil : rate
        },
        .value("write-burst", "N", "writes an account may send at once (default \(DriveLimits.defaultWriteBurst))") { config, text in
            config.driveLimits.writeBurst = try integer("--write-burst", text, 1...1_000_000)
        },
        .value("daily-upload-bytes", "BYTES", """
            bytes of uploads and copies per user in any 24 hours (google:
            750000000000; 0 = no limit)
            """) { config, text in
            config.driveLimits.dailyUploadBytes = try limit("--daily-upload-bytes", text, Int.max).map(Int64.init)
        },
        .value("max-folder-items", "N", "items in one folder, roots exempt (google: 500,000; 0 = no limit)") { config, text in
            config.driveLimits.maxItemsPerFolder = try limit("--max-folder-items", text, 1_000_000_000)
        },
        .value("max-shared-drive-items", "N", "items in one shared drive (google: 400,000; 0 = no limit)") { config, text in
            config.driveLimits.maxItemsPerSharedDrive = try limit("--max-shared-drive-items", text, 1_000_000_000)
        },
        .value("quirk-refused-write-lands", "F", """
            reproduce Google's quirk: a write refused by the write limit is
            carried out anyway with probability F (0..1; default 0, off)
            """) { config, text in
            guard let f = Double(text), (0...1).contains(f) else {
                throw UsageError(description: "option --quirk-refused-write-lands: \"\(text)\" is not a number in 0...1")
            }
            config.driveLimits.refusedWriteLands = f
        },
        .value("faults", "FILE", "load scripted faults (JSON) from FILE") { config, text in
            config.faultsFile = URL(fileURLWithPath: text)
        },
        .value("token-lifetime", "SECONDS", "access token lifetime (default 3600)") { config, text in
            config.tokenLifetime = try integer("--token-lifetime", text, 1...(366 * 86_400))
        },
        .value("refresh-token", "TOKEN", "the always-valid refresh token (default drivefs-emulator-refresh-token)") { config, text in
            guard !text.isEmpty else { throw UsageError(description: "option --refresh-token needs a token") }
            config.refreshToken = text
        },
        .value("write-service-account", "FILE", "write a service-account key the emulator trusts to FILE") { config, text in
            config.writeServiceAccount = URL(fileURLWithPath: text)
        },
        .value("log-level", "info|debug", "debug logs one line per request to stderr (default info)") { config, text in
            guard let level = EmulatorLogLevel(rawValue: text) else {
                throw UsageError(description: "option --log-level: \"\(text)\" is not info or debug")
            }
            config.logLevel = level
        },
        .value("max-parent-terms", "N", """
            a files.list q with more than N 'X' in parents terms is a 400
            "The query is too complex." (default \(ListingLimits.defaultMaxParentTerms))
            """) { config, text in
            config.listingLimits.maxParentTerms = try integer("--max-parent-terms", text, 1...100_000)
        },
        .value("quirk-multi-parent-drop", "F", """
            reproduce Google's grouped-listing bug: a q naming several parents
            leaves out each parent's children with probability F (0..1;
            default 0, off; also POST /__emulator/quirks)
            """) { config, text in
            guard let f = Double(text), (0...1).contains(f) else {
                throw UsageError(description: "option --quirk-multi-parent-drop: \"\(text)\" is not a number in 0...1")
            }
            config.listingQuirks.multiParentDropFraction = f
        },
        .value("quirk-seed", "N", "seed of the quirks' draws (default 1)") { config, text in
            guard let n = UInt64(text) else {
                throw UsageError(description: "option --quirk-seed: \"\(text)\" is not a non-negative integer")
            }
            config.listingQuirks.seed = n
        },
        Option(long: "help", aliases: ["-h"], valueName: nil, help: "show this help", action: .answer(.help)),
        Option(long: "version", valueName: nil, help: "show the version", action: .answer(.version)),
        Option(long: "man", valueName: nil, help: "print the drivefs-emulator(1) manual page (roff)", action: .answer(.manPage)),
    ]

    /// `--help`: the usage line, the summary, then one row per option (the left column is 28
    /// wide; a longer synopsis keeps two spaces before its help).
    static var usage: String {
        var lines = ["usage: drivefs-emulator [options]", "", summary, "", "options:"]
        for option in options {
            let left = option.synopsis
            let help = option.help.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let pad = String(repeating: " ", count: max(2, 28 - left.count))
            lines.append("  \(left)\(pad)\(help.first ?? "")")
            let indent = String(repeating: " ", count: 2 + max(left.count + 2, 28))
            lines += help.dropFirst().map { indent + $0 }
        }
        lines += ["", readyNote]
        return lines.joined(separator: "\n")
    }

    static func parse(_ arguments: [String]) throws -> Parsed {
        var config = EmulatorConfig(port: defaultPort)
        // `--limits` is applied before every other option, so that a flag changing one of its
        // numbers wins wherever it stands on the line.
        var settings: [(set: @Sendable (inout EmulatorConfig, String) throws -> Void, value: String, isPreset: Bool)] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            var flag = argument
            var inline: String?
            if argument.hasPrefix("--"), let eq = argument.firstIndex(of: "=") {
                flag = String(argument[..<eq])
                inline = String(argument[argument.index(after: eq)...])
            }
            guard let option = options.first(where: { "--" + $0.long == flag || $0.aliases.contains(flag) }) else {
                throw UsageError(description: argument.hasPrefix("-") ? "unknown option \(argument)"
                                 : "unexpected argument \(argument)")
            }
            switch option.action {
            case .answer(let answer):
                return answer
            case .set(let set):
                let value: String
                if let inline {
                    value = inline
                } else {
                    index += 1
                    guard index < arguments.count else { throw UsageError(description: "option \(flag) needs a value") }
                    value = arguments[index]
                }
                settings.append((set, value, option.long == "limits"))
            }
            index += 1
        }
        for setting in settings.filter(\.isPreset) + settings.filter({ !$0.isPreset }) {
            try setting.set(&config, setting.value)
        }
        if let limit = config.userRateLimit, limit.perSecond == 0 {
            throw UsageError(description: "option --user-rate-burst needs --user-rate-limit")
        }
        return .run(config)
    }

    private static func integer(_ flag: String, _ text: String, _ range: ClosedRange<Int>) throws -> Int {
        guard let n = Int(text), range.contains(n) else {
            throw UsageError(description: "option \(flag): \"\(text)\" is not an integer in \(range.lowerBound)...\(range.upperBound)")
        }
        return n
    }

    /// A limit's number: 0 switches it off (nil).
    private static func limit(_ flag: String, _ text: String, _ max: Int) throws -> Int? {
        let n = try integer(flag, text, 0...max)
        return n == 0 ? nil : n
    }

    private static func directory(_ flag: String, _ text: String) throws -> URL {
        guard !text.isEmpty else { throw UsageError(description: "option \(flag) needs a directory") }
        return URL(fileURLWithPath: text)
    }
}
