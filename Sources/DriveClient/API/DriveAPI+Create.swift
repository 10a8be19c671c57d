import DriveSupport
import Foundation

/// Creates and IDs: how a create is retried without leaving a duplicate.
///
/// Drive lets a create carry an ID from files.generateIds; a second create with the same ID gets
/// 409 fileIdInUse. That makes creates safely retryable:
/// - Pooled ID (the default): a retry (attempt > 0) that meets 409 means that an earlier attempt
///   landed although its answer was lost: that file is fetched and returned. The call counts as a
///   success in the executor's counters (no failure).
/// - Caller's ID (`id:`, e.g. from `reserveFileID()`): the caller may call again with the same ID
///   after any failure of its own; a 409, on any attempt, returns the existing file (which the
///   caller's earlier call made). The caller must not use one ID for two different files.
/// - Either way, a file found under a taken ID is checked to be ours before it is returned: the same
///   name and parent (unless the parent was given as the `root` alias) and, for an upload, the same
///   size and md5 (`landedCreate`). Anything else throws `DriveError.conflict` (reason `fileIdInUse`):
///   the ID names some other file, and nothing is overwritten or returned in its place.
/// - Resumable creates follow the same rule at their initiation (`DriveAPI+Upload.swift`): a 409
///   there means that an earlier upload with this ID completed (a lost final answer, a session
///   that expired after it landed, a caller's retry of a whole `createFile`), so the file is
///   fetched and checked instead of answering a conflict.
/// - Drive refuses generated IDs for Google Docs Editors types (`application/vnd.google-apps.*`
///   other than folders) and for shortcuts (400, drive-behaviours §2.5). Those creates carry no ID;
///   after an attempt whose outcome is unknown (connection lost or timed out, 5xx) the retry first
///   looks for a non-trashed file of that name and type in that parent created since the first
///   attempt began (less `lookupSkew` for clock differences) and returns the newest such file.
///   Limits: a file of the same name and type made by someone else within that window is taken for
///   ours; Drive's search may lag behind a create, so a just-made file can be missed and then a
///   duplicate is possible. Passing `id:` for these types throws `invalidArgument`.
extension DriveAPI {
    enum CreateIdentity: Equatable {
        case pooled(String)
        case caller(String)
        case lookup(name: String, parent: String, mimeType: String)

        /// The ID the create carries, if any.
        var id: String? {
            switch self {
            case .pooled(let id), .caller(let id): return id
            case .lookup: return nil
            }
        }
    }

    /// What a create with an ID expects of the file that ID names, if an earlier attempt landed.
    struct CreateExpectation {
        /// nil: not checked (a create without a name, which Drive names "Untitled").
        var name: String?
        var parent: String?
        /// nil: not checked (an upload whose type Drive detects).
        var mimeType: String? = nil
        /// For uploads: the content's size and md5 (nil: a metadata-only create).
        var size: Int64?
        var md5: String?
    }

    /// The file a taken ID names, when it is the one this create made: fetched, then checked
    /// against `expected`; a different file throws `DriveError.conflict` (`fileIdInUse`).
    func landedCreate(_ id: String, expected: CreateExpectation) throws -> DriveFile {
        let file = try getFile(id)
        var differences: [String] = []
        if let name = expected.name, file.name != name { differences.append("name \(file.name)") }
        if let mimeType = expected.mimeType, file.mimeType != mimeType { differences.append("mimeType \(file.mimeType)") }
        // What the answer does not report is not held against it (md5 is checked again by the upload).
        if let parent = expected.parent, parent != "root", !file.parents.isEmpty, !file.parents.contains(parent) {
            differences.append("parents \(file.parents)")
        }
        if let size = expected.size, let reported = file.size, reported != size { differences.append("size \(reported)") }
        if let md5 = expected.md5, let reported = file.md5Checksum, reported.lowercased() != md5.lowercased() {
            differences.append("md5Checksum \(reported)")
        }
        guard differences.isEmpty else {
            throw DriveError.conflict(GoogleErrorInfo(
                status: 409, reason: "fileIdInUse",
                message: "the ID \(id) is taken by another file (\(differences.joined(separator: ", "))), not by this create's"))
        }
        return file
    }

    /// Seconds subtracted from the client's clock when looking for a create that landed unseen.
    static let lookupSkew: Double = 30

    /// Whether Drive accepts a pre-generated ID for a file of this MIME type (nil: a plain file).
    public static func acceptsGeneratedID(mimeType: String?) -> Bool {
        guard let mimeType, mimeType.hasPrefix("application/vnd.google-apps.") else { return true }
        return mimeType == DriveFile.folderMimeType
    }

    /// An ID from the pool, for a caller that wants to pass the same `id:` to its own retries of a
    /// create. Every ID must be used for at most one file.
    public func reserveFileID() throws -> String { try nextPooledID() }

    /// Keeps the ID pool's unused IDs in `reserve` from now on (`FileIDPool`, its crash order),
    /// loading the IDs it holds now: once, before the first create (the core calls it with
    /// `<cache>/file-ids`). Creates then need no generateIds while the reserve lasts.
    public func attachIDReserve(_ reserve: any FileIDReserve) { idPool.attach(reserve) }

    /// Starts the ID pool's one background refill thread (idempotent): from then on the pool is
    /// refilled ahead of need, when it falls below `idLowWater` IDs (default a quarter of
    /// `idBatchSize`). Until it is called no thread is made and an empty pool is refilled by the
    /// taker that finds it empty (others wait for that one). Call it after the daemon has forked
    /// (threads do not survive fork), e.g. once the mount is up.
    public func startIDPool() {
        idPool.start { [weak self] count in
            guard let self else { throw DriveError.cancelled }
            return try self.generateIds(count: count)
        }
    }

    /// Ends the background refill thread (after the refill in flight) and writes the claimed IDs
    /// not handed out back to the reserve, if one is attached; takers refill on their own again.
    public func stopIDPool() { idPool.stop() }

    /// What the ID pool holds and how its refills went (a failed refill is reported here until one succeeds).
    public var idPoolStats: FileIDPoolStats { idPool.stats }

    func nextPooledID() throws -> String { try idPool.next { try generateIds(count: $0) } }

    func createIdentity(name: String, parent: String, mimeType: String?, callerID: String?) throws -> CreateIdentity {
        if let mimeType, !Self.acceptsGeneratedID(mimeType: mimeType) {
            if callerID != nil {
                throw DriveError.invalidArgument(GoogleErrorInfo(
                    status: 0, reason: "idNotSupported",
                    message: "Drive does not accept a pre-generated ID for \(mimeType) files; create it without an id"))
            }
            return .lookup(name: name, parent: parent, mimeType: mimeType)
        }
        if let callerID { return .caller(callerID) }
        return .pooled(try nextPooledID())
    }

    /// Sends a create with retries, resolving lost answers as the type comment says.
    func create(_ identity: CreateIdentity, method: String, expected: CreateExpectation,
                _ makeRequest: () -> TransportRequest) throws -> DriveFile {
        try create(identity, method: method, { expected }, makeRequest)
    }

    /// `expected` is asked only when a taken ID must be checked (an upload's md5 may come from
    /// reading the body while it was sent).
    func create(_ identity: CreateIdentity, method: String, _ expected: () throws -> CreateExpectation,
                _ makeRequest: () -> TransportRequest) throws -> DriveFile {
        enum Outcome {
            case created(TransportResponse)
            case idTaken(String)
            case found(DriveFile)
        }
        let started = executor.time.now()
        var uncertain = false
        let outcome: Outcome = try executor.retrying(method) { attempt in
            if attempt > 0, uncertain, case .lookup(let name, let parent, let mimeType) = identity,
               let landed = try findCreated(name: name, parent: parent, mimeType: mimeType, since: started - Self.lookupSkew) {
                return .found(landed)
            }
            let accept: Set<Int>
            switch identity {
            case .pooled: accept = attempt > 0 ? [409] : []
            case .caller: accept = [409]
            case .lookup: accept = []
            }
            do {
                let response = try executor.send(method, makeRequest(), accept: accept)
                if response.status == 409, let id = identity.id { return .idTaken(id) }
                return .created(response)
            } catch let error as DriveError {
                if error.mayHaveBeenCarriedOut { uncertain = true }
                throw error
            }
        }
        switch outcome {
        case .created(let response): return try decode(DriveFile.self, response, method)
        case .idTaken(let id): return try landedCreate(id, expected: try expected())
        case .found(let file): return file
        }
    }

    /// The newest non-trashed file named exactly `name`, of `mimeType`, in `parent`, created at or
    /// after `since` (seconds since the epoch).
    func findCreated(name: String, parent: String, mimeType: String, since: Double) throws -> DriveFile? {
        let q = DriveQuery.child(named: name, in: parent) + " and mimeType = \(DriveQuery.quote(mimeType))"
            + " and createdTime >= \(DriveQuery.quote(RFC3339.format(millis: Int64(since * 1000))))"
        return try list(query: q).filter { $0.name == name }.max { ($0.createdTime ?? 0) < ($1.createdTime ?? 0) }
    }
}
