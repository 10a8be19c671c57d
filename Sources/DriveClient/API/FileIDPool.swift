import DriveSupport
import Foundation

/// IDs from files.generateIds, fetched in batches and handed out one per create. Every ID is used
/// at most once. Fetching happens outside the lock; two threads that find the pool empty at once
/// may both fetch (the spare IDs simply stay in the pool).
final class FileIDPool: Sendable {
    let batchSize: Int
    private let ids = Locked<[String]>([])

    init(batchSize: Int) { self.batchSize = max(1, min(1000, batchSize)) }

    func next(_ api: DriveAPI) throws -> String {
        if let id = ids.withLock({ $0.popLast() }) { return id }
        var fresh = try api.generateIds(count: batchSize)
        let id = fresh.removeLast()
        ids.withLock { $0.append(contentsOf: fresh) }
        return id
    }

    var available: Int { ids.withLock { $0.count } }
}
