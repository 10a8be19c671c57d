import CommandLineKit
import DriveClient
import DriveSupport
import Foundation

/// A profile's credentials turned into a working Drive client, for commands that talk to Drive
/// beyond signing in (`mount`). Makes no request itself.
struct DriveConnection {
    let api: DriveAPI
    /// The account's e-mail address as remembered at login, if known.
    let account: String?

    /// Requests a mount may have in flight at once: its I/O threads, read-ahead streams and
    /// prefetching listings, plus the change poller (connections are pooled for that many).
    static let concurrency = 16 + 4 + 4 + 1

    /// The quota lane's request rate: half of the legacy per-user quota (12,000 queries a minute, 200
    /// a second), with a second's worth of it as the burst. The minute's budget of quota units
    /// (`QuotaBudget`) and the write lane (`WriteBudget`) are what keep the mount within Google's
    /// 2026 limits; this rate smooths bursts and is what a quota answer halves (and successes climb
    /// back). It was 40/s after a burst of 100, which made 1,000 cold random reads (one ranged
    /// request each) take 21 s on a LAN where the link needed half a second (docs/benchmarks.md).
    static let ratePerSecond = 100.0
    static let burst = 200

    static func open(_ invocation: Invocation, choice: DriveEndpointChoice, quota: QuotaBudget = .default,
                     writes: WriteBudget = .default) throws -> DriveConnection {
        let signedIn = try SignedInProfile.load(invocation, choice: choice)
        let resolved = signedIn.endpoints
        let transport: CurlTransport
        do {
            transport = try CurlTransport(options: CurlTransport.Options(concurrency: concurrency, caFile: resolved.caFile))
        } catch {
            throw CLIError.failure("cannot start the HTTP client: \(error)")
        }
        let grant: any TokenGrant
        do {
            grant = try signedIn.grant(transport: transport)
        } catch {
            throw AuthCommand.failure(error, doing: "the credentials cannot be used")
        }
        let executor = DriveRequestExecutor(transport: transport, tokens: TokenManager(grant: grant),
                                            pacer: Pacer(ratePerSecond: ratePerSecond, burst: burst, quota: quota, writes: writes),
                                            reachability: Reachability())
        Log.shared.info("pacer", "budgets: \(quota), \(writes)")
        // New files' IDs come 1,000 to a request (Drive's most), so a copy of 1,000 files costs one.
        // Resumable uploads start with 8 MiB chunks and grow to 64 MiB (DriveAPI.maxChunkSize): a
        // large file goes up at nearly the link's speed, in few round trips.
        let api = DriveAPI(executor: executor, endpoints: DriveEndpoints(apiRoot: resolved.apiURL), maxChunkSize: 64 << 20,
                           idBatchSize: 1000)
        return DriveConnection(api: api, account: signedIn.credential.account)
    }

    /// The same account and connection, limited to `scope` (a shared drive).
    func scoped(_ scope: DriveScope) -> DriveAPI {
        DriveAPI(executor: api.executor, endpoints: api.endpoints, idBatchSize: 1000, scope: scope)
    }

    /// The same client for My Drive, whose change feed also carries the shared drives' own changes
    /// (`--account`: its `Shared drives` folder follows them).
    func seeingDriveChanges() -> DriveAPI {
        DriveAPI(executor: api.executor, endpoints: api.endpoints, maxChunkSize: api.maxChunkSize, idBatchSize: 1000,
                 feedSeesDriveChanges: true)
    }

    /// A Drive failure at start-up as a message with the next step.
    static func failure(_ error: Error, doing what: String) -> CLIError {
        if let drive = error as? DriveError {
            switch drive {
            case .unauthorized(let info):
                return .failure("\(what): not authorized (\(info.message))", hint: "Sign in again with: drivefs auth login")
            case .transport(let t):
                return .failure("\(what): \(t.summary)", hint: t.hint)
            case .permissionDenied(let info):
                return .failure("\(what): permission denied (\(info))",
                                hint: "The profile's scopes may not include Drive; sign in again with: drivefs auth login")
            default:
                return .failure("\(what): \(drive)")
            }
        }
        return AuthCommand.failure(error, doing: what)
    }
}
