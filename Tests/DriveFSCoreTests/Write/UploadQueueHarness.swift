@testable import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// An upload queue over a `FakeDriveBackend`, in a temporary directory of its own, with the core's
/// side played by the test: content files in `staging/`, requests with reserved IDs, outcomes
/// recorded. Time is a `ManualTimeSource` (backoff sleeps advance it at once); every wait is a
/// bounded loop on a condition.
final class UploadQueueHarness {
    let fake: FakeDriveBackend
    let root: String
    let uploads: String
    let staging: String
    let time = ManualTimeSource()
    let outcomes = Locked<[UploadOutcome]>([])
    let logPath: String
    let log: Log
    private var counter = 0

    init(fake: FakeDriveBackend = FakeDriveBackend()) throws {
        self.fake = fake
        // A tmpfs when there is one: the queue fsyncs at every commit point, and a disk's fsyncs
        // would make the crash and property tests slow, not different.
        let base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : FileManager.default.temporaryDirectory.path
        root = base + "/drivefs-upload-queue-\(UUID().uuidString)"
        uploads = root + "/uploads"
        staging = root + "/staging"
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        logPath = root + "/log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let fd = open(logPath, O_WRONLY | O_APPEND | O_CLOEXEC)
        log = Log(level: .debug, descriptor: fd)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    func makeQueue(transfers: Int = 2, deletePermanently: Bool = false, compactionBound: Int64 = 4 << 20) throws -> UploadQueue {
        try UploadQueue(directory: uploads, backend: fake, transfers: transfers, deletePermanently: deletePermanently, time: time,
                        log: log, compactionBound: compactionBound)
    }

    func start(_ queue: UploadQueue) {
        queue.start { [outcomes] outcome in outcomes.withLock { $0.append(outcome) } }
    }

    /// A new content file in staging/ with these bytes.
    func content(_ bytes: [UInt8]) -> String {
        counter += 1
        let path = "\(staging)/content-\(counter)"
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        return path
    }

    func content(_ text: String) -> String { content(Array(text.utf8)) }

    /// A request for a new file in the root, under a reserved ID.
    func newFile(_ name: String, parent: String? = nil, appProperties: [String: String] = [:]) throws -> UploadRequest {
        UploadRequest(fileID: try fake.reserveFileID(), isNew: true, parentID: parent ?? fake.rootID, name: name,
                      mimeType: "text/plain", modifiedTime: 1_750_000_000_000, appProperties: appProperties, displayPath: "/" + name)
    }

    /// A request for new content of an existing Drive file, based on its head now.
    func update(_ id: String) -> UploadRequest {
        let file = fake.file(id)!
        return UploadRequest(fileID: id, isNew: false, parentID: file.parents[0], name: file.name, mimeType: file.mimeType,
                             modifiedTime: 1_760_000_000_000, baseRevision: file.headRevisionId, baseMD5: file.md5Checksum,
                             displayPath: "/" + file.name)
    }

    /// The target's `waitUntil`, for tests that hold a harness.
    func waitUntil(_ what: String, file: StaticString = #filePath, line: UInt = #line, _ condition: () -> Bool) {
        TestSupport.waitUntil(what, file: file, line: line, condition)
    }

    func waitIdle(_ queue: UploadQueue, file: StaticString = #filePath, line: UInt = #line) {
        waitUntil("the queue to be idle", file: file, line: line) { queue.status.isIdle }
    }

    var logText: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    var stagingFiles: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: staging)) ?? []).sorted() }

    /// Non-trashed files in the root, by name.
    func rootNames() -> [String] { fake.children(of: fake.rootID).map(\.name) }
}

/// A gate a fake's write hook can hold: writes of `method` wait at `.before` until it is opened.
final class WriteGate: @unchecked Sendable {
    // @unchecked: all state is behind `state`.
    private let state = Locked((open: false, waiting: 0))
    let method: String

    init(method: String) { self.method = method }

    var hook: FakeDriveBackend.WriteHook {
        { [self] method, phase, _ in
            guard method == self.method, phase == .before else { return }
            state.withLock { $0.waiting += 1 }
            while !state.withLock({ $0.open }) { usleep(500) }
            state.withLock { $0.waiting -= 1 }
        }
    }

    var waiting: Int { state.withLock { $0.waiting } }
    func open() { state.withLock { $0.open = true } }
}
