import Foundation

/// Who tries a failed request again, decided here once for every layer (docs/errors.md, "Who tries
/// again"):
///
/// - The request executor (`DriveRequestExecutor`, with `RetryPolicy`'s budget: seconds to
///   minutes) tries the same request again when the failure `isTransient`: a rate limit, a server
///   that failed or timed out, a connection that could not be made or was lost.
/// - A create (`DriveAPI.create`) whose earlier try `mayHaveBeenCarriedOut` checks, before it
///   tries again, whether that try made the file (its ID taken, or a file of the name found), so
///   one create never makes two files.
/// - The upload queue (the core's, over hours) tries every job again with its own backoff, unless
///   the failure `isRefusal` (the queue adds what its own steps know: a 404 of an update is the
///   file gone, to be made again; an unreadable local copy ends the job).
/// - The namespace (`rename`, `unlink`, `mkdir` answered at once) asks Drive whether a request
///   that failed but `mayHaveBeenCarriedOut` was done before it answers the program.
extension DriveError {
    /// Another try of the same request, soon, may well succeed: 403 rate limits and 429, 408 and
    /// 500/502/503/504, and a connection not made, timed out or lost. Other 5xx, TLS failures and
    /// every refusal fail at once.
    public var isTransient: Bool {
        switch self {
        case .rateLimited: return true
        case .server(let info): return [408, 500, 502, 503, 504].contains(info.status)
        case .transport(let t):
            switch t {
            case .couldNotConnect, .timedOut, .connectionLost: return true
            case .tls, .invalidURL, .aborted, .other: return false
            }
        default: return false
        }
    }

    /// Drive may have done what the failed request asked though no answer said so: an answer lost
    /// after the request went (a reset, a timeout, a server error), a rate limit (Google carries
    /// out some refused inserts all the same), an answer that could not be read, or a caller that
    /// gave up while the request was in flight. A refusal, a quota or a lost authorization changed
    /// nothing.
    public var mayHaveBeenCarriedOut: Bool {
        switch self {
        case .server, .rateLimited, .transport, .malformedResponse, .unexpectedStatus, .cancelled: return true
        case .notFound, .permissionDenied, .quotaExceeded, .invalidArgument, .conflict, .unauthorized, .preconditionFailed,
             .rangeNotSatisfiable, .checksumMismatch, .localFile:
            return false
        }
    }

    /// Drive refused the request as it was made, so the same request later is refused again: no
    /// permission, not found, an ID already in use, a bad request (not one the client itself
    /// refused for a local reason it may not meet again: content that changed while it was read,
    /// a session file gone bad), any other 4xx but 408. Rate limits, quotas, a lost authorization
    /// (the user may act), server and network failures are not refusals.
    public var isRefusal: Bool {
        switch self {
        case .permissionDenied, .conflict, .notFound:
            return true
        case .invalidArgument(let info):
            return !(info.status == 0 && ["uploadSourceChanged", "uploadSession"].contains(info.reason ?? ""))
        case .unexpectedStatus(let info):
            return (400..<500).contains(info.status) && info.status != 408
        case .quotaExceeded, .rateLimited, .unauthorized, .preconditionFailed, .rangeNotSatisfiable, .server, .transport,
             .checksumMismatch, .malformedResponse, .cancelled, .localFile:
            return false
        }
    }
}
