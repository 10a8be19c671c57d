import Foundation

/// The Drive operations the filesystem uses: implemented by `DriveAPI` (REST over libcurl), and by
/// fakes and decorators (caching, logging) so the filesystem core can be tested without HTTP.
///
/// Contract for every implementation: blocking; safe from many threads; failures are `DriveError`
/// (classified as docs/errors.md says); times are integer milliseconds since the epoch; a create
/// never leaves a duplicate behind when it is retried; uploads verify the md5 of what was sent.
public protocol DriveBackend: Sendable {
    func about() throws -> DriveAbout
    /// `id` may be `root`.
    func getFile(_ id: String) throws -> DriveFile
    /// Non-trashed children, all pages.
    func listChildren(of folderID: String) throws -> [DriveFile]
    /// All files matching `q` (see `DriveQuery` for quoting).
    func list(query q: String, orderBy: String?, pageSize: Int) throws -> [DriveFile]
    /// Non-trashed children of any of `parents` (one query per group; a group Google finds too
    /// complex is split), page by page as they arrive; `onPage` returns false to stop. `fields` is
    /// the per-file mask and includes `parents`. Pages may be short or empty before the end.
    func listChildren(ofAny parents: [String], fields: String, pageSize: Int,
                      onPage: (DriveFileListPage) throws -> Bool) throws

    /// Creates take an optional `id` (from `reserveFileID()` or files.generateIds) that the caller
    /// reuses across its own retries of the same create: a retry whose earlier attempt landed returns
    /// that file. `nil`: the implementation picks an ID itself (still no duplicate on its own retries).
    /// Docs Editors types and shortcuts take no ID (see `DriveAPI+Create.swift`).
    /// `appProperties` (private to this app: drivefs keeps a file's mode and a symbolic link's
    /// target there) are set on the new file; nil sets none.
    func createFolder(name: String, parent: String, modifiedTime: Int64?, id: String?,
                      appProperties: [String: String]?) throws -> DriveFile
    func createEmpty(name: String, parent: String, mimeType: String, modifiedTime: Int64?, id: String?,
                     appProperties: [String: String]?) throws -> DriveFile
    func createFile(name: String, parent: String, mimeType: String?, source: UploadSource, modifiedTime: Int64?,
                    sessionFile: String?, id: String?, appProperties: [String: String]?) throws -> DriveFile
    /// A create under `id` whose content is sent while it is being written (`StreamingCreate`):
    /// the file exists only once the stream's `finish` returns.
    func beginStreamingCreate(name: String, parent: String, mimeType: String?, id: String,
                              appProperties: [String: String]?) throws -> any StreamingCreate
    /// An ID for `id:` of a later create, from the implementation's ID pool (`FileIDPool`): each
    /// handed out at most once, also across crashes when a reserve is attached.
    func reserveFileID() throws -> String
    /// Keeps the pool's unused IDs in `reserve` (loaded now), so that creates after a restart, and
    /// with Drive unreachable, still have IDs: once, before the first `reserveFileID`.
    func attachIDReserve(_ reserve: any FileIDReserve)
    /// Starts refilling the pool ahead of need, on a thread of its own (idempotent; after any fork).
    func startIDPool()
    /// Ends that refilling and writes the pool's claimed, unused IDs back to its reserve (a clean stop).
    func stopIDPool()
    /// Whether Drive can be reached (`Reachability`): the core serves what it holds while offline.
    /// nil: the backend does not know (always online).
    var reachability: Reachability? { get }
    /// `appProperties` given are set (others are kept), as in files.update.
    func updateContent(_ id: String, source: UploadSource, mimeType: String?, name: String?, modifiedTime: Int64?,
                       sessionFile: String?, appProperties: [String: String]?) throws -> DriveFile
    /// Finishes a resumable upload whose session a `createFile` / `updateContent` with
    /// `sessionFile:` persisted (possibly in an earlier process): asks the server what it holds
    /// and sends the rest. The source must be unchanged (size and mtime), else `invalidArgument`
    /// with status 0 (`uploadSession`); a session the server forgot starts over (a create under
    /// its ID, so never a second file). Checked against Drive's md5 like every upload.
    func resumeUpload(from sessionFile: String) throws -> DriveFile
    func updateMetadata(_ id: String, name: String?, mimeType: String?, modifiedTime: Int64?,
                        appProperties: [String: String]?) throws -> DriveFile
    /// One files.update: the new parent, and in the same request a new name and appProperties (merged
    /// into the file's: a key not named keeps its value).
    func move(_ id: String, addParent: String, removeParent: String?, newName: String?,
              appProperties: [String: String]?) throws -> DriveFile
    func trash(_ id: String) throws -> DriveFile
    func untrash(_ id: String) throws -> DriveFile
    func delete(_ id: String) throws
    /// Deletes for good everything in this drive's trash (files.emptyTrash, one write).
    func emptyTrash() throws
    /// Everything in this drive's trash, page by page (`DriveAPI.listTrash`): items trashed
    /// themselves and those in trashed folders, told apart by `explicitlyTrashed`. `onPage`
    /// returns false to stop.
    func listTrash(onPage: ([DriveTrashedItem]) throws -> Bool) throws

    /// Bytes `[offset, offset + length)` (to the end when nil) into `sink`; returns the count.
    func download(_ id: String, offset: Int64, length: Int64?, to sink: ResponseSink) throws -> Int64
    /// The same from one revision (`revisions.get?alt=media`): the bytes can never be those of a
    /// newer version. nil `revision` is the head (`files.get?alt=media`). A revision Drive no longer
    /// keeps is `DriveError.notFound`.
    func download(_ id: String, revision: String?, offset: Int64, length: Int64?, to sink: ResponseSink) throws -> Int64
    func export(_ id: String, mimeType: String) throws -> [UInt8]
    /// A Google Docs file as it was at `revision`, exported to `mimeType` (through the revision's
    /// `exportLinks`: `DriveAPI.exportRevision`). A revision Drive no longer keeps is `notFound`.
    func exportRevision(_ id: String, revision: String, mimeType: String) throws -> [UInt8]
    /// Every revision of the file's content, oldest first.
    func listRevisions(_ fileID: String) throws -> [DriveRevision]

    func changesStartPageToken() throws -> String
    func changes(pageToken: String, pageSize: Int) throws -> DriveChangePage
}

extension DriveAPI: DriveBackend {}

extension DriveBackend {
    public func move(_ id: String, addParent: String, removeParent: String?, newName: String?) throws -> DriveFile {
        try move(id, addParent: addParent, removeParent: removeParent, newName: newName, appProperties: nil)
    }
}
