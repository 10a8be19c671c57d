import DriveClient
import DriveSupport
import Foundation
import Glibc

/// Where an inode shows in the mount (`/Projects/plan.txt`), for log lines.
struct InodeNamer: Sendable {
    let backend: any DriveBackend
    let table: NodeTable
    let lister: FolderLister

    func callAsFunction(_ inode: Inode) -> String {
        guard let names = ShortcutResolver(backend: backend, table: table, lister: lister).path(of: inode) else {
            return table.node(inode).map { "'\($0.name)' (\($0.file.id))" } ?? "\(inode)"
        }
        return "/" + names.joined(separator: "/")
    }
}

/// The interactive threads (`pool`, bounded): what a request cannot answer from memory runs here,
/// with the request's cancellation and deadline, and its failure is mapped to an errno once and
/// logged once per path and errno. No lock is held by the runner.
final class RequestRunner: Sendable {
    let pool: WorkPool
    private let backend: any DriveBackend
    private let configuration: DriveFSConfiguration
    private let time: any TimeSource
    let describe: InodeNamer

    init(pool: WorkPool, backend: any DriveBackend, configuration: DriveFSConfiguration, time: any TimeSource,
         describe: InodeNamer) {
        self.pool = pool
        self.backend = backend
        self.configuration = configuration
        self.time = time
        self.describe = describe
    }

    /// Says once per path and errno why a request failed, with Drive's reason (never for the
    /// everyday ENOENT, or an interrupt the user asked for).
    func logFailure(_ what: String, _ inode: Inode, _ error: Error, _ mapped: FilesystemError) {
        guard mapped.errno != ENOENT, mapped.errno != EINTR else { return }
        if mapped.errno == EIO, backend.reachability?.isOffline == true {
            return Log.shared.once(.warning, "fs", "\(what) \(describe(inode)): not available offline (\(mapped))")
        }
        Log.shared.once(.warning, "fs", "\(what) \(describe(inode)): \(mapped) (\(error))")
    }

    /// Runs `body` on an interactive thread, with the request's cancellation and deadline, and
    /// hands its result to `then` on that thread (which answers the request, or arranges for it
    /// to be answered later without holding the thread).
    func run<T: Sendable>(_ cancellation: CancellationFlag?, _ what: String, _ inode: Inode,
                          _ body: @escaping @Sendable () throws(FilesystemError) -> T,
                          then: @escaping @Sendable (Result<T, FilesystemError>) -> Void) {
        let deadline = time.now() + configuration.requestDeadline
        pool.submit { [self] in
            let context = RequestContext(priority: .interactive, deadline: deadline, cancellation: cancellation)
            let result: Result<T, FilesystemError>
            do {
                result = .success(try context.scope { () throws -> T in try body() })
            } catch {
                let mapped = FilesystemError.from(error)
                // Cancelled without an interrupt: the request's deadline passed. That is a
                // failure of Drive, not something the caller asked for.
                if mapped.errno == EINTR && cancellation?.isCancelled != true {
                    Log.shared.warning("fs", "\(what) \(describe(inode)) gave up after "
                                       + "\(Int(configuration.requestDeadline)) s: \(error)")
                    result = .failure(.ioError)
                } else {
                    logFailure(what, inode, error, mapped)
                    result = .failure(mapped)
                }
            }
            then(result)
        }
    }

    /// Runs `body` on an interactive thread and answers `reply` with its result.
    func answer<T: Sendable>(_ reply: Reply<T>, _ what: String, _ inode: Inode,
                             _ body: @escaping @Sendable () throws(FilesystemError) -> T) {
        run(reply.cancellation, what, inode, body) { result in reply.complete(result) }
    }
}
