import CommandLineKit
import DriveEmulator
import DriveSupport
import Foundation

/// The `drivefs-emulator` command line: one command of CommandLineKit, so drivefs's parser reads it
/// and drivefs's formatters print its `--help` and its manual page (`EmulatorManPage`).
///
/// One table (`options`) holds every option: its spec (name, value, help) and how its value sets the
/// configuration. The conversion and check of each value is one `ValueConversion`: the parser
/// refuses a bad value with it, naming the option, and `config(from:)` converts the accepted text
/// with it. Adding a flag is one row here.
enum EmulatorCommandLine {
    static let version = "0.1.0"
    static let defaultPort = 8080

    static let summary = "A Google Drive v3 + OAuth 2.0 emulator on loopback (see docs/emulator.md)."
    static let readyNote = "Prints \"listening on http://HOST:PORT/\" once ready; stops on SIGINT or SIGTERM."

    /// One option and what its value sets.
    struct Option: Sendable {
        let spec: OptionSpec
        /// Sets part of the configuration from each value the parser accepted, in order.
        let apply: @Sendable (inout EmulatorConfig, String) -> Void

        static func value<V>(_ long: String, _ valueName: String, repeatable: Bool = false, _ help: String,
                             _ conversion: ValueConversion<V>,
                             _ set: @escaping @Sendable (inout EmulatorConfig, V) -> Void) -> Option {
            Option(spec: .value(long, valueName: valueName, repeatable: repeatable, help: help, conversion: conversion),
                   apply: { config, text in set(&config, conversion.value(ofAccepted: text)) })
        }
    }

    /// Rows apply in this order, but `--limits` first: a flag changing one of its numbers wins
    /// wherever it stands on the line. `--user-rate-burst` applies after `--user-rate-limit`.
    static let options: [Option] = [
        .value("host", "HOST", "address to listen on (default 127.0.0.1; ::1 for IPv6)", .nonEmpty("a host")) {
            $0.host = $1
        },
        .value("port", "PORT", "port to listen on (default \(defaultPort); 0 picks a free port)", .integer(in: 0...65535)) {
            $0.port = $1
        },
        .value("public-url", "URL", "base of absolute URLs handed out (e.g. https://www.googleapis.com)", httpURL) {
            $0.publicURL = $1
        },
        .value("state-dir", "DIR", "persist metadata and content in DIR (default: a temporary directory)", directory) {
            $0.stateDirectory = $1
        },
        .value("seed", "DIR", "import the tree under DIR at start", directory) { $0.seedDirectory = $1 },
        .value("latency", "MS", "delay every API request by MS milliseconds", .integer(in: 0...600_000)) {
            $0.latencyMs = $1
        },
        .value("bandwidth", "BYTES_PER_S", "limit each connection to BYTES_PER_S bytes per second",
               .integer(in: 1...Int(Int32.max))) { $0.bandwidthBytesPerSecond = $1 },
        .value("total-bandwidth", "BYTES_PER_S", """
            limit all connections together to BYTES_PER_S bytes per
            second, shared fairly (N busy connections get about 1/N each)
            """, .integer(in: 1...Int(Int32.max))) { $0.totalBandwidthBytesPerSecond = $1 },
        .value("user-rate-limit", "REQ_PER_S", """
            enforce Google's per-user rate limit: past REQ_PER_S requests per
            second per user (after a burst), answer 403 userRateLimitExceeded
            (Google's default quota: 12,000 per minute, i.e. 200)
            """, .number(in: 0...1_000_000, openBelow: true, what: "requests per second")) {
            $0.userRateLimit = UserRateLimit(perSecond: $1)
        },
        .value("user-rate-burst", "N", "requests a user may send at once (default: one second's worth)",
               .integer(in: 1...1_000_000)) {
            // config(from:) refuses a burst without a limit.
            $0.userRateLimit?.burst = $1
        },
        .value("limits", "google|legacy|none", """
            Google's Drive limits: google = its 2026 limits together (quota
            units, 3 writes/s, 750 GB/day, items per folder); legacy = 12,000
            requests a minute per user; none = no limit (default). The flags
            below change single numbers, whatever their order
            """, ValueConversion<DriveLimits.Preset>.choice) { $0.driveLimits = DriveLimits(preset: $1) },
        .value("quota-user-units", "N", """
            quota units a user may spend in any minute, per project (google:
            325,000; 0 = no limit); past it, 403 userRateLimitExceeded
            """, limit(1_000_000_000)) { $0.driveLimits.unitsPerUserPerMinute = $1 },
        .value("quota-project-units", "N", """
            quota units a project may spend in any minute (google: 1,000,000;
            0 = no limit); past it, 403 rateLimitExceeded
            """, limit(1_000_000_000)) { $0.driveLimits.unitsPerProjectPerMinute = $1 },
        .value("method-cost", "METHOD=N", repeatable: true, """
            the quota units a method costs (files.list=100, ...; repeatable;
            default: docs/emulator.md#quota-units)
            """, methodCost) { $0.driveLimits.methodCosts[$1.method] = $1.units },
        .value("write-rate", "W_PER_S", """
            sustained writes per second per account (google: 3; 0 = no
            limit); past it (after the burst), 403 rateLimitExceeded
            """, ValueConversion.number(in: 0...1_000_000, what: "writes per second").map { $0 == 0 ? nil : $0 }) {
            $0.driveLimits.writesPerSecond = $1
        },
        .value("write-burst", "N", "writes an account may send at once (default \(DriveLimits.defaultWriteBurst))",
               .integer(in: 1...1_000_000)) { $0.driveLimits.writeBurst = $1 },
        .value("daily-upload-bytes", "BYTES", """
            bytes of uploads and copies per user in any 24 hours (google:
            750000000000; 0 = no limit)
            """, limit(Int.max)) { $0.driveLimits.dailyUploadBytes = $1.map(Int64.init) },
        .value("max-folder-items", "N", "items in one folder, roots exempt (google: 500,000; 0 = no limit)",
               limit(1_000_000_000)) { $0.driveLimits.maxItemsPerFolder = $1 },
        .value("max-shared-drive-items", "N", "items in one shared drive (google: 400,000; 0 = no limit)",
               limit(1_000_000_000)) { $0.driveLimits.maxItemsPerSharedDrive = $1 },
        .value("quirk-refused-write-lands", "F", """
            reproduce Google's quirk: a write refused by the write limit is
            carried out anyway with probability F (0..1; default 0, off)
            """, .number(in: 0...1)) { $0.driveLimits.refusedWriteLands = $1 },
        .value("faults", "FILE", "load scripted faults (JSON) from FILE", file) { $0.faultsFile = $1 },
        .value("token-lifetime", "SECONDS", "access token lifetime (default 3600)", .integer(in: 1...(366 * 86_400))) {
            $0.tokenLifetime = $1
        },
        .value("refresh-token", "TOKEN", "the always-valid refresh token (default drivefs-emulator-refresh-token)",
               .nonEmpty("a token")) { $0.refreshToken = $1 },
        .value("write-service-account", "FILE", "write a service-account key the emulator trusts to FILE", file) {
            $0.writeServiceAccount = $1
        },
        .value("log-level", "info|debug", "debug logs one line per request to stderr (default info)",
               ValueConversion<EmulatorLogLevel>.choice) { $0.logLevel = $1 },
        .value("max-parent-terms", "N", """
            a files.list q with more than N 'X' in parents terms is a 400
            "The query is too complex." (default \(ListingLimits.defaultMaxParentTerms))
            """, .integer(in: 1...100_000)) { $0.listingLimits.maxParentTerms = $1 },
        .value("quirk-multi-parent-drop", "F", """
            reproduce Google's grouped-listing bug: a q naming several parents
            leaves out each parent's children with probability F (0..1;
            default 0, off; also POST /__emulator/quirks)
            """, .number(in: 0...1)) { $0.listingQuirks.multiParentDropFraction = $1 },
        .value("quirk-seed", "N", "seed of the quirks' draws (default 1)", unsigned) { $0.listingQuirks.seed = $1 },
    ]

    /// Declared (rather than left to the formatter) to keep their place and wording in the help.
    static let answers: [OptionSpec] = [
        .flag("help", help: "show this help"),
        .flag("version", help: "show the version"),
        .flag("man", help: "print the drivefs-emulator(1) manual page (roff)"),
    ]

    /// The program as one command; `serve` runs the emulator with the configuration the line set.
    static func command(serve: @escaping (EmulatorConfig) throws -> Int32) -> Command {
        Command(
            name: "drivefs-emulator", summary: summary, discussion: readyNote,
            options: options.map(\.spec) + answers,
            run: { invocation in
                if invocation.flag("man") {
                    Output.standardOutput(EmulatorManPage.page(for: invocation.command, date: Roff.pageDate(invocation.environment)))
                    return ExitStatus.success
                }
                return try serve(try config(from: invocation))
            })
    }

    /// The configuration the parsed line sets: every option's values applied in table order,
    /// `--limits` first.
    static func config(from invocation: Invocation) throws(CLIError) -> EmulatorConfig {
        if invocation.value("user-rate-burst") != nil && invocation.value("user-rate-limit") == nil {
            throw .usage("option '--user-rate-burst' needs '--user-rate-limit'", command: invocation.command.fullPath)
        }
        var config = EmulatorConfig(port: defaultPort)
        let presetFirst = options.filter { $0.spec.long == "limits" } + options.filter { $0.spec.long != "limits" }
        for option in presetFirst {
            for value in invocation.values(option.spec.long) { option.apply(&config, value) }
        }
        return config
    }

    // MARK: the value conversions the table shares

    private static let httpURL = ValueConversion<String> { url in
        guard url.hasPrefix("http://") || url.hasPrefix("https://"), URL(string: url)?.host != nil else {
            return .failure(.init("expected an http:// or https:// URL with a host"))
        }
        return .success(url)
    }

    private static let directory = ValueConversion<String>.nonEmpty("a directory").map { URL(fileURLWithPath: $0) }

    private static let file = ValueConversion<String>.text.map { URL(fileURLWithPath: $0) }

    private static let unsigned = ValueConversion<UInt64> { text in
        UInt64(text).map { .success($0) } ?? .failure(.init("expected a non-negative integer"))
    }

    /// A limit's number: 0 switches it off (nil).
    private static func limit(_ max: Int) -> ValueConversion<Int?> {
        ValueConversion.integer(in: 0...max).map { $0 == 0 ? nil : $0 }
    }

    /// `METHOD=N`: a Drive method name (files.list, files.get.media, ...) and its cost in quota units.
    private static let methodCost = ValueConversion<(method: String, units: Int)> { text in
        let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2, DriveLimits.googleCosts[parts[0]] != nil else {
            return .failure(.init("expected METHOD=N with a Drive method name (files.list, files.get.media, ...)"))
        }
        return ValueConversion.integer(in: 0...1_000_000).convert(parts[1]).map { (parts[0], $0) }
    }
}
