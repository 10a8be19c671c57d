import DriveSupport
import Foundation

/// Every `period` seconds, on a thread of its own: sheds the folders idle for `idleFor` seconds
/// (`NodeTable.shedIdleFolders`, one bounded batch), hands their entries to the invalidator
/// (whose thread tells the kernel), and packs what earlier forgets left queued
/// (`packUnneededFolders`, which also gives freed memory back). The forgets the kernel sends for
/// the entries shed pack their folders as they arrive (`NodeTable.forget`).
///
/// `idleFor` 0: never (`--release-idle-after 0`); nothing is started.
final class IdleFolderShedder: Sendable {
    private let table: NodeTable
    private let invalidator: Invalidator
    let idleFor: Double
    let period: Double
    private let loop: BackgroundLoop

    init(table: NodeTable, invalidator: Invalidator, idleFor: Double) {
        self.table = table
        self.invalidator = invalidator
        self.idleFor = max(0, idleFor)
        // A quarter of the idle time: a folder goes at most a quarter late; between 0.25 and 5 s.
        period = min(5, max(0.25, idleFor / 4))
        loop = BackgroundLoop(name: "drivefs-shed", interval: period)
    }

    func start() {
        guard idleFor > 0 else { return }
        loop.start { [self] in _ = shedNow() }
    }

    func stop() { loop.stop() }

    /// One batch (the thread's tick; tests call it directly). Returns the folders shed.
    @discardableResult
    func shedNow() -> Int {
        let (invalidations, folders) = table.shedIdleFolders(idleFor: idleFor)
        if folders > 0 {
            Log.shared.debug("index", "asking the kernel to let go of \(invalidations.entries.count) entries of \(folders) idle folder(s)")
        }
        invalidator.apply(invalidations)
        table.packUnneededFolders()
        return folders
    }
}
