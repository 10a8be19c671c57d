import Foundation

/// Paces the bytes of one connection to a rate (both directions share the budget, as one
/// slow link would). Not thread-safe: a connection has one thread.
final class BandwidthThrottle {
    let bytesPerSecond: Int
    private var windowStart: UInt64
    private var bytesInWindow: Int64 = 0

    init(bytesPerSecond: Int) {
        self.bytesPerSecond = max(1, bytesPerSecond)
        self.windowStart = DispatchTime.now().uptimeNanoseconds
    }

    /// The largest piece to move at once, so that pacing stays smooth (about 1/20 s of budget).
    var chunkSize: Int { max(512, min(64 * 1024, bytesPerSecond / 20)) }

    /// Accounts for `n` bytes moved and sleeps until the rate allows them.
    func pace(_ n: Int) {
        let now = DispatchTime.now().uptimeNanoseconds
        let elapsed = Double(now &- windowStart) / 1e9
        // An idle link does not bank credit: restart the window after a pause.
        if Double(bytesInWindow) / Double(bytesPerSecond) + 0.5 < elapsed {
            windowStart = now
            bytesInWindow = 0
        }
        bytesInWindow += Int64(n)
        let due = Double(bytesInWindow) / Double(bytesPerSecond)
        let sinceStart = Double(DispatchTime.now().uptimeNanoseconds &- windowStart) / 1e9
        if due > sinceStart {
            Thread.sleep(forTimeInterval: due - sinceStart)
        }
    }
}
