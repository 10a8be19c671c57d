import Foundation
import DriveEmulator

/// The `drivefs-emulator` command line, parsed into an `EmulatorConfig`.
enum EmulatorCommandLine {
    static let version = "drivefs-emulator 0.1.0"
    static let defaultPort = 8080

    enum Parsed {
        case run(EmulatorConfig)
        case help
        case version
    }

    struct UsageError: Error, CustomStringConvertible {
        var description: String
    }

    static let usage = """
    usage: drivefs-emulator [options]

    A Google Drive v3 + OAuth 2.0 emulator on loopback (see docs/emulator.md).

    options:
      --host HOST                 address to listen on (default 127.0.0.1; ::1 for IPv6)
      --port PORT                 port to listen on (default \(defaultPort); 0 picks a free port)
      --public-url URL            base of absolute URLs handed out (e.g. https://www.googleapis.com)
      --state-dir DIR             persist metadata and content in DIR (default: a temporary directory)
      --seed DIR                  import the tree under DIR at start
      --latency MS                delay every API request by MS milliseconds
      --bandwidth BYTES_PER_S     limit each connection to BYTES_PER_S bytes per second
      --total-bandwidth BYTES_PER_S
                                  limit all connections together to BYTES_PER_S bytes per
                                  second, shared fairly (N busy connections get about 1/N each)
      --user-rate-limit REQ_PER_S enforce Google's per-user rate limit: past REQ_PER_S requests per
                                  second per user (after a burst), answer 403 userRateLimitExceeded
                                  (Google's default quota: 12,000 per minute, i.e. 200)
      --user-rate-burst N         requests a user may send at once (default: one second's worth)
      --faults FILE               load scripted faults (JSON) from FILE
      --token-lifetime SECONDS    access token lifetime (default 3600)
      --refresh-token TOKEN       the always-valid refresh token (default drivefs-emulator-refresh-token)
      --write-service-account FILE  write a service-account key the emulator trusts to FILE
      --log-level info|debug      debug logs one line per request to stderr (default info)
      --max-parent-terms N        a files.list q with more than N 'X' in parents terms is a 400
                                  "The query is too complex." (default \(ListingLimits.defaultMaxParentTerms))
      --quirk-multi-parent-drop F reproduce Google's grouped-listing bug: a q naming several parents
                                  leaves out each parent's children with probability F (0..1;
                                  default 0, off; also POST /__emulator/quirks)
      --quirk-seed N              seed of the quirk's draws (default 1)
      --help                      show this help
      --version                   show the version

    Prints "listening on http://HOST:PORT/" once ready; stops on SIGINT or SIGTERM.
    """

    static func parse(_ arguments: [String]) throws -> Parsed {
        var config = EmulatorConfig(port: defaultPort)
        var userRate: Double?
        var userBurst: Int?
        var index = 0
        func value(for flag: String, inline: String?) throws -> String {
            if let inline { return inline }
            index += 1
            guard index < arguments.count else { throw UsageError(description: "option \(flag) needs a value") }
            return arguments[index]
        }
        func integer(_ flag: String, _ text: String, _ range: ClosedRange<Int>) throws -> Int {
            guard let n = Int(text), range.contains(n) else {
                throw UsageError(description: "option \(flag): \"\(text)\" is not an integer in \(range.lowerBound)...\(range.upperBound)")
            }
            return n
        }
        func directory(_ flag: String, _ text: String) throws -> URL {
            guard !text.isEmpty else { throw UsageError(description: "option \(flag) needs a directory") }
            return URL(fileURLWithPath: text)
        }
        while index < arguments.count {
            let argument = arguments[index]
            var flag = argument
            var inline: String?
            if argument.hasPrefix("--"), let eq = argument.firstIndex(of: "=") {
                flag = String(argument[..<eq])
                inline = String(argument[argument.index(after: eq)...])
            }
            switch flag {
            case "--help", "-h": return .help
            case "--version": return .version
            case "--host":
                let host = try value(for: flag, inline: inline)
                guard !host.isEmpty else { throw UsageError(description: "option --host needs a host") }
                config.host = host
            case "--port": config.port = try integer(flag, try value(for: flag, inline: inline), 0...65535)
            case "--public-url":
                let url = try value(for: flag, inline: inline)
                guard url.hasPrefix("http://") || url.hasPrefix("https://"), URL(string: url)?.host != nil else {
                    throw UsageError(description: "option --public-url: \"\(url)\" is not an http(s) URL")
                }
                config.publicURL = url
            case "--state-dir": config.stateDirectory = try directory(flag, try value(for: flag, inline: inline))
            case "--seed": config.seedDirectory = try directory(flag, try value(for: flag, inline: inline))
            case "--latency": config.latencyMs = try integer(flag, try value(for: flag, inline: inline), 0...600_000)
            case "--bandwidth":
                config.bandwidthBytesPerSecond = try integer(flag, try value(for: flag, inline: inline), 1...Int(Int32.max))
            case "--total-bandwidth":
                config.totalBandwidthBytesPerSecond = try integer(flag, try value(for: flag, inline: inline), 1...Int(Int32.max))
            case "--user-rate-limit":
                let text = try value(for: flag, inline: inline)
                guard let rate = Double(text), rate.isFinite, rate > 0, rate <= 1_000_000 else {
                    throw UsageError(description: "option --user-rate-limit: \"\(text)\" is not a number of requests per second in (0, 1000000]")
                }
                userRate = rate
            case "--user-rate-burst":
                userBurst = try integer(flag, try value(for: flag, inline: inline), 1...1_000_000)
            case "--faults": config.faultsFile = URL(fileURLWithPath: try value(for: flag, inline: inline))
            case "--token-lifetime":
                config.tokenLifetime = try integer(flag, try value(for: flag, inline: inline), 1...(366 * 86_400))
            case "--refresh-token":
                let token = try value(for: flag, inline: inline)
                guard !token.isEmpty else { throw UsageError(description: "option --refresh-token needs a token") }
                config.refreshToken = token
            case "--write-service-account":
                config.writeServiceAccount = URL(fileURLWithPath: try value(for: flag, inline: inline))
            case "--max-parent-terms":
                config.listingLimits.maxParentTerms = try integer(flag, try value(for: flag, inline: inline), 1...100_000)
            case "--quirk-multi-parent-drop":
                let text = try value(for: flag, inline: inline)
                guard let f = Double(text), (0...1).contains(f) else {
                    throw UsageError(description: "option --quirk-multi-parent-drop: \"\(text)\" is not a number in 0...1")
                }
                config.listingQuirks.multiParentDropFraction = f
            case "--quirk-seed":
                let text = try value(for: flag, inline: inline)
                guard let n = UInt64(text) else {
                    throw UsageError(description: "option --quirk-seed: \"\(text)\" is not a non-negative integer")
                }
                config.listingQuirks.seed = n
            case "--log-level":
                let text = try value(for: flag, inline: inline)
                guard let level = EmulatorLogLevel(rawValue: text) else {
                    throw UsageError(description: "option --log-level: \"\(text)\" is not info or debug")
                }
                config.logLevel = level
            default:
                throw UsageError(description: argument.hasPrefix("-") ? "unknown option \(argument)"
                                 : "unexpected argument \(argument)")
            }
            index += 1
        }
        if let userRate {
            config.userRateLimit = UserRateLimit(perSecond: userRate, burst: userBurst)
        } else if userBurst != nil {
            throw UsageError(description: "option --user-rate-burst needs --user-rate-limit")
        }
        return .run(config)
    }
}
