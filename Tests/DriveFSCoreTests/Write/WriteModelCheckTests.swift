import DriveClient
@testable import DriveFSCore
import DriveSupport
import Foundation
import XCTest

/// An upload queue whose landings the test lets through: after a job's `done` record the queue's
/// thread waits here, in the window where Drive and the journal have the new version and the core
/// has not heard of it yet, until the test delivers it (or the gate is opened for good). The model
/// checker runs its operations inside that window, where landings met a live local copy.
final class LandingGate: UploadQueueing, @unchecked Sendable {
    // @unchecked: the mutable fields are guarded by `condition`; `inner` is Sendable.
    let inner: UploadQueue
    private let condition = NSCondition()
    /// Landings waiting here (by arrival), the ones let through, and the ones delivered to the core.
    private var arrived = 0
    private var released = 0
    private var delivered = 0
    private var open = false
    /// Bounds every wait of a queue thread here, so a broken test cannot hang the run.
    private let holdLimit: Double = 120

    init(_ inner: UploadQueue) { self.inner = inner }

    var recovered: [(request: UploadRequest, contentPath: String)] { inner.recovered }
    var recoveredRemovals: [String] { inner.recoveredRemovals }
    var recoveredWaitingRemovals: [(request: UploadRequest, seconds: Double)] { inner.recoveredWaitingRemovals }
    var recoveredPlacings: [UploadRequest] { inner.recoveredPlacings }
    func decideCutRenames(_ context: RequestContext) -> [String] { inner.decideCutRenames(context) }
    func commit(_ request: UploadRequest, contentPath: String, ready: Bool, settles: Bool) throws(FilesystemError) {
        try inner.commit(request, contentPath: contentPath, ready: ready, settles: settles)
    }
    func endSettle(of fileID: String) { inner.endSettle(of: fileID) }
    func reclaim(_ fileID: String) -> (request: UploadRequest, contentPath: String)? { inner.reclaim(fileID) }
    func contentPath(of fileID: String) -> String? { inner.contentPath(of: fileID) }
    func changeLanding(of fileID: String) -> Bool { inner.changeLanding(of: fileID) }
    func currentID(of fileID: String) -> String { inner.currentID(of: fileID) }
    func queuedBase(of fileID: String) -> (revision: String?, md5: String?) { inner.queuedBase(of: fileID) }
    func isWhole(_ fileID: String) -> Bool { inner.isWhole(fileID) }
    func updateMetadata(of fileID: String, _ change: @Sendable (inout UploadRequest) -> Void) throws(FilesystemError) -> Bool {
        try inner.updateMetadata(of: fileID, change)
    }
    func cancel(_ fileID: String) throws(FilesystemError) -> Bool { try inner.cancel(fileID) }
    func queueChange(_ change: QueuedChange) throws(FilesystemError) { try inner.queueChange(change) }
    func queueRemoval(_ request: UploadRequest) throws(FilesystemError) { try inner.queueRemoval(request) }
    func holdsChanges(of fileID: String) -> Bool { inner.holdsChanges(of: fileID) }
    func awaitsRename(of fileID: String) -> Bool { inner.awaitsRename(of: fileID) }
    func retarget(_ fileID: String, to request: UploadRequest) throws(FilesystemError) -> Bool {
        try inner.retarget(fileID, to: request)
    }
    func beginReplacement(of replaced: UploadRequest, by fileID: String, name: String, parentID: String) throws(FilesystemError) -> UInt64 {
        try inner.beginReplacement(of: replaced, by: fileID, name: name, parentID: parentID)
    }
    func endReplacement(_ number: UInt64) { inner.endReplacement(number) }
    func waitUntilUploaded(_ fileID: String, deadline: Double, cancellation: CancellationFlag?) throws(FilesystemError) {
        try inner.waitUntilUploaded(fileID, deadline: deadline, cancellation: cancellation)
    }
    func whenUploaded(_ fileID: String, cancellation: CancellationFlag?,
                      _ done: @escaping @Sendable (Result<Void, FilesystemError>) -> Void) {
        inner.whenUploaded(fileID, cancellation: cancellation, done)
    }
    func drain(timeout: Double, progress: @Sendable (UploadQueueStatus) -> Void) -> Bool { inner.drain(timeout: timeout, progress: progress) }
    func sendRemovalsNow(timeout: Double) -> Bool { inner.sendRemovalsNow(timeout: timeout) }
    var status: UploadQueueStatus { inner.status }
    func phase(of fileID: String) -> UploadFilePhase { inner.phase(of: fileID) }
    func stop() {
        openForGood()
        inner.stop()
    }

    func start(onFinished: @escaping @Sendable (UploadOutcome) -> Void) {
        inner.start { [self] outcome in
            condition.lock()
            let ticket = arrived
            arrived += 1
            condition.broadcast()
            let limit = Date().addingTimeInterval(holdLimit)
            while !open && released <= ticket && Date() < limit { _ = condition.wait(until: limit) }
            condition.unlock()
            onFinished(outcome)
            condition.lock()
            delivered += 1
            condition.broadcast()
            condition.unlock()
        }
    }

    /// Landings held here now.
    var held: Int {
        condition.lock(); defer { condition.unlock() }
        return arrived - max(released, delivered)
    }

    /// Waits (bounded) until a landing is held here; false when none came within `timeout`.
    func waitForLanding(timeout: Double) -> Bool {
        condition.lock(); defer { condition.unlock() }
        let limit = Date().addingTimeInterval(timeout)
        while arrived <= released && !open && Date() < limit { _ = condition.wait(until: limit) }
        return arrived > released
    }

    /// Lets every held landing through and waits until the core has heard of each.
    func deliverHeld() {
        condition.lock(); defer { condition.unlock() }
        released = arrived
        condition.broadcast()
        let limit = Date().addingTimeInterval(holdLimit)
        while delivered < released && Date() < limit { _ = condition.wait(until: limit) }
    }

    /// From now on landings pass at once.
    func openForGood() {
        condition.lock()
        open = true
        condition.broadcast()
        condition.unlock()
    }
}

/// A model checker of the write path, in the spirit of xfstests' fsx: random writes, truncates,
/// reads (through the writer's handle, and through read-only opens of their own, as another program
/// reads the file, open or closed), size checks, closes and reopens (some with O_TRUNC) of one file,
/// with uploads landing in between: a landing is held in the window after Drive took it and before the core heard of it,
/// and the test goes on working in that window. Every read and every size is checked against a
/// model, and at the end Drive's bytes (through the backend, not the mount) and a fresh mount's
/// must equal it.
///
/// Runs on a fixed seed and on a random one that it prints; `DRIVEFS_MODEL_SEED=N` replays one.
final class WriteModelCheckTests: XCTestCase {
    private static let maxSize = 300_000

    func testFixedSeed() throws {
        try run(seed: 1, operations: 1_500)
    }

    func testAnotherFixedSeed() throws {
        try run(seed: 20_261_202, operations: 1_500)
    }

    func testRandomSeed() throws {
        let seed = ProcessInfo.processInfo.environment["DRIVEFS_MODEL_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64(1) << 40)
        print("WriteModelCheckTests: seed \(seed) (replay with DRIVEFS_MODEL_SEED=\(seed))")
        try run(seed: seed, operations: 1_500)
    }

    // MARK: The run

    private struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private func run(seed: UInt64, operations: Int) throws {
        let harness = try CoreHarness { c in
            c.readOnly = false
            c.blockSize = 16 << 10  // several blocks per file: partial fills matter
        }
        defer { harness.remove() }
        let queue = try UploadQueue(directory: harness.uploadsDirectory, backend: harness.backend, transfers: 2,
                                    initialBackoff: 0.01, maximumBackoff: 0.05)
        let gate = LandingGate(queue)
        try harness.mount(uploads: gate)
        if let level = ProcessInfo.processInfo.environment["DRIVEFS_MODEL_DEBUG"] {
            try? Log.shared.configure(level: Log.Level(name: level) ?? .debug,
                                      path: ProcessInfo.processInfo.environment["DRIVEFS_MODEL_LOG"])
        }
        var rng = SplitMix64(seed: seed)
        func below(_ n: Int) -> Int { Int(rng.next() % UInt64(max(1, n))) }

        var log: [String] = []
        func note(_ s: String) {
            log.append(s)
            if log.count > 40 { log.removeFirst() }
        }
        func fail(_ step: Int, _ message: String) -> Failure {
            Failure(description: "seed \(seed), step \(step): \(message)\nlast operations:\n" + log.joined(separator: "\n"))
        }

        var model: [UInt8] = []
        func readMismatch(_ what: String, _ got: [UInt8], _ want: [UInt8]) -> String {
            let firstDiff = zip(got, want).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            return "a read through \(what) gave \(got.count) bytes, the model has \(want.count)"
                + (firstDiff.map { "; first difference at \($0)" } ?? "")
        }
        let created = try harness.create(.root, "model.bin")
        let inode = created.attributes.inode
        // Where the file is now: it is renamed across two folders, sometimes over another file.
        let sub = try harness.makeDirectory(.root, "sub").inode
        var place: (parent: Inode, name: String) = (.root, "model.bin")
        var victims = 0
        var handle = created.opened.handle
        var isOpen = true
        var bytesSeed = seed &* 1_000_003

        // What the step is doing, for the message when it fails with an error of its own.
        var doing = ""
        for step in 0..<operations {
          do {
            let roll = below(100)
            doing = "roll \(roll), the file \(isOpen ? "open" : "closed") at \(place.parent == .root ? "" : "sub/")\(place.name)"
            if !isOpen && roll < 90 && below(4) == 0 {
                // Another program reads the closed file (an open of its own, read-only), while its
                // uploads queue, run or land.
                doing += ": reading it"
                let got = try harness.read(inode)
                note("\(step): read the closed file -> \(got.count)")
                if got != model { throw fail(step, readMismatch("the closed file", got, model)) }
                continue
            }
            if !isOpen && roll < 90 {
                // Most steps need the file open: reopen first (as fsx does after a close).
                let truncating = below(10) == 0
                doing += ": opening it\(truncating ? " O_TRUNC" : "")"
                handle = try harness.open(inode, O_RDWR | (truncating ? O_TRUNC : 0))
                isOpen = true
                if truncating { model = [] }
                note("\(step): open\(truncating ? " O_TRUNC" : "")")
                continue
            }
            switch roll {
            case 0..<30 where isOpen:
                let offset = below(Self.maxSize - 1)
                let length = 1 + below(min(64 << 10, Self.maxSize - offset))
                bytesSeed &+= 1
                let bytes = CoreHarness.pattern(length, seed: bytesSeed)
                try harness.write(inode, handle, bytes, at: Int64(offset))
                if model.count < offset + length { model += [UInt8](repeating: 0, count: offset + length - model.count) }
                model.replaceSubrange(offset..<(offset + length), with: bytes)
                note("\(step): write \(offset)+\(length)")
            case 30..<40 where isOpen:
                let size = below(Self.maxSize)
                _ = try BlockingCall.wait { harness.fs.setAttributes(inode, AttributeChanges(size: Int64(size)), handle: handle, reply: $0) }
                if size < model.count { model.removeSubrange(size...) } else { model += [UInt8](repeating: 0, count: size - model.count) }
                note("\(step): truncate \(size)")
            case 40..<45 where isOpen:
                // A reader of its own while the file is open for writing: it reads what was written.
                let got = try harness.read(inode)
                note("\(step): read with another handle -> \(got.count)")
                if got != model { throw fail(step, readMismatch("another handle", got, model)) }
            case 45..<55 where isOpen:
                let offset = below(max(1, model.count + 1000))
                let length = 1 + below(80_000)
                let got = try harness.read(inode, handle: handle, offset: Int64(offset), size: length)
                let want = offset < model.count ? Array(model[offset..<min(model.count, offset + length)]) : []
                note("\(step): read \(offset)+\(length) -> \(got.count)")
                if got != want {
                    let firstDiff = zip(got, want).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                    throw fail(step, "read \(offset)+\(length) gave \(got.count) bytes, the model has \(want.count)"
                               + (firstDiff.map { "; first difference at \(offset + $0)" } ?? ""))
                }
            case 55..<65:
                let attributes = try BlockingCall.wait { harness.fs.attributes(of: inode, reply: $0) }
                note("\(step): stat -> \(attributes.size)")
                if attributes.size != UInt64(model.count) {
                    throw fail(step, "the size is \(attributes.size), the model's \(model.count)")
                }
            case 65..<77 where isOpen:
                try harness.close(inode, handle)
                isOpen = false
                note("\(step): close")
            case 77..<87:
                // Let an upload reach Drive and hold its landing: what follows runs in the window.
                let status = gate.status
                if !status.isIdle || gate.held > 0 {
                    let held = gate.waitForLanding(timeout: 30)
                    note("\(step): wait for a landing -> \(held ? "held" : "none")")
                }
            case 87..<95:
                gate.deliverHeld()
                note("\(step): deliver landings")
            case 95..<98:
                // A rename to the other folder or within this one; half the time over a file
                // (a new one, queued or landed, as an editor's save leaves), which goes.
                let parent = below(2) == 0 ? place.parent : (place.parent == .root ? sub : .root)
                let name = "model-\(below(3)).bin"
                if name == place.name && parent == place.parent { continue }
                var over = ""
                if below(2) == 0 {
                    victims += 1
                    try harness.writeFile(parent, name, Array("victim \(victims)\n".utf8))
                    over = " over a new file"
                    if below(2) == 0, gate.waitForLanding(timeout: 30) { gate.deliverHeld(); over += " (landings delivered)" }
                }
                try harness.rename(place.parent, place.name, to: parent, name)
                place = (parent, name)
                note("\(step): rename to \(parent == .root ? "" : "sub/")\(name)\(over)")
            default:
                try harness.fs.pollChanges()
                note("\(step): poll changes")
            }
          } catch let failure as Failure {
            throw failure
          } catch {
            throw fail(step, "the operation after the last one listed (\(doing)) failed: \(error)")
          }
        }

        if isOpen {
            do { try harness.close(inode, handle) } catch { throw fail(operations, "the last close failed: \(error)") }
        }
        gate.openForGood()
        XCTAssertTrue(harness.fs.drainUploads(timeout: 120), "uploads did not drain: \(harness.fs.uploadStatus)")

        let onMount: [UInt8]
        do { onMount = try harness.read(inode) } catch {
            let node = harness.fs.table.node(inode)
            let drive = harness.backend.children(of: harness.backend.rootID).first { $0.name == "model.bin" }
            throw fail(operations, "reading the file after the uploads failed: \(error); the node shows revision "
                       + "\(node?.file.headRevisionId ?? "-") of size \(node?.file.size ?? -1), local \(String(describing: node?.local)); "
                       + "Drive has \(drive?.headRevisionId ?? "-") of size \(drive?.size ?? -1)")
        }
        if onMount != model { throw fail(operations, "after the uploads, the mount reads \(onMount.count) bytes unlike the model's \(model.count)") }
        // On Drive: the file once, where it was renamed last, with the model's bytes; no victim left.
        let subID = try XCTUnwrap(harness.fs.table.node(sub)?.file.id)
        let files = (harness.backend.children(of: harness.backend.rootID) + harness.backend.children(of: subID))
            .filter { $0.name.hasPrefix("model") }
        let path = (place.parent == .root ? "" : "sub/") + place.name
        XCTAssertEqual(files.map(\.name), [place.name], "seed \(seed): Drive holds \(files.map(\.name)), the file is at \(path)")
        let onDrive = try XCTUnwrap(files.first.flatMap { harness.backend.content(of: $0.id) })
        if onDrive != model { throw fail(operations, "Drive holds \(onDrive.count) bytes unlike the model's \(model.count)") }
        // A fresh mount over the same cache directory reads the same.
        harness.unmount()
        do { try harness.mount() } catch { throw fail(operations, "the remount failed: \(error)") }
        let again = try harness.resolve(path)
        XCTAssertEqual(try harness.read(again.inode), model, "seed \(seed): a remount reads other bytes")
    }
}
