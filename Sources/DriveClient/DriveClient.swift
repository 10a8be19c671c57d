// The Drive v3 client: libcurl transport, OAuth 2.0 tokens, pacing and retries.
//
// What each folder owns (layers import only downward, top to bottom; see docs/client.md):
//   API/        Drive semantics: DriveAPI (operations, uploads, downloads, changes), DriveBackend
//               (the protocol the filesystem uses), DriveFile and models, DriveQuery, DriveEndpoints,
//               FileIDPool with its FileIDReserve (FileIDReserveFile on disk), ResumableUploadSession.
//   Executor/   DriveRequestExecutor, the one wrapper around every request; RequestStats counters.
//   Policy/     TokenManager (cache, margin, single flight), Pacer (token bucket), RetryPolicy,
//               RetryAfter, RandomSource.
//   Auth/       OAuth grants and login (RefreshTokenGrant, ServiceAccountGrant, InstalledAppLogin,
//               CredentialStore): a TokenGrant makes one exchange; TokenManager caches.
//   Transport/  CurlTransport over the CCurl shim (the only code touching libcurl), CancellationFlag.
//   DriveError.swift, GoogleErrorEnvelope.swift: the typed errors and their one classification.
//   HTTPTransport.swift, TokenGrant.swift: the seams.
import DriveSupport
