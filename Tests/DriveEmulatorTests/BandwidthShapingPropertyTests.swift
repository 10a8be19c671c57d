import DriveSupport
import Foundation
import XCTest
@testable import DriveEmulator

/// The bandwidth shaping (`--bandwidth`, `--total-bandwidth`) as arithmetic over an injected clock:
/// streams are simulated event by event (each moves at most a chunk, reserves it, and moves again
/// when its wait is over, exactly as `BandwidthThrottle.pace` does on a connection thread), so every
/// assertion is about byte accounting, never about wall-clock time.
final class BandwidthShapingPropertyTests: XCTestCase {
    // MARK: The token bucket

    func testTokenBucketArithmetic() {
        var b = TokenBucket(capacity: 100, now: 1_000)
        XCTAssertEqual(b.credit, 100, "starts full")
        XCTAssertEqual(b.reserve(60, now: 1_000), 0)
        XCTAssertEqual(b.reserve(60, now: 1_000), 20, "a debt of 20 ns")
        XCTAssertEqual(b.credit, -20)
        XCTAssertFalse(b.tryTake(1, now: 1_010), "still 10 ns in debt")
        XCTAssertEqual(b.credit, -10, "a refused take costs nothing")
        XCTAssertTrue(b.tryTake(5, now: 1_025))
        XCTAssertEqual(b.credit, 0)
        b.refill(now: 1_000_000)
        XCTAssertEqual(b.credit, 100, "an idle bucket banks at most its capacity")
        b.refill(now: 5)
        XCTAssertEqual(b.credit, 100, "time never runs backwards")
        XCTAssertEqual(b.updated, 1_000_000)
        XCTAssertEqual(TokenBucket.cost(1, perSecond: 1_000_000_000), 1)
        XCTAssertEqual(TokenBucket.cost(1, perSecond: 3), 333_333_334, "rounded up: never faster than the rate")
        XCTAssertEqual(TokenBucket.cost(64 * 1024, perSecond: 40 << 20), 1_562_500)
        XCTAssertEqual(TokenBucket.cost(perSecond: 200), 5_000_000)
        XCTAssertEqual(TokenBucket.cost(perSecond: 0.5), 2_000_000_000)
    }

    // MARK: Simulated streams

    struct Move { var time: Int64; var stream: Int; var bytes: Int }

    /// Runs `sizes.count` streams, stream k starting at `starts[k]` ns, through throttles sharing
    /// `total` (and each limited to `perConnection` when set). Moves are in time order; streams due
    /// at the same instant move in the order they became due (as threads woken in turn would).
    static func simulate(total: Int?, perConnection: Int?, sizes: [Int], starts: [Int64]) -> (moves: [Move], chunk: Int) {
        let shared = total.map { SharedBandwidth(bytesPerSecond: $0, now: 0) }
        let throttles = sizes.indices.map { _ in
            BandwidthThrottle(bytesPerSecond: perConnection, shared: shared, clock: { 0 }, sleep: { _ in XCTFail("no sleeping here") })
        }
        var left = sizes
        var due = starts
        var order = Array(sizes.indices).map { Int64($0) }
        var nextOrder = Int64(sizes.count)
        var moves: [Move] = []
        let chunk = throttles.first?.chunkSize ?? 1
        while true {
            var pick: Int?
            for k in sizes.indices where left[k] > 0 {
                if let p = pick, (due[p], order[p]) <= (due[k], order[k]) { continue }
                pick = k
            }
            guard let k = pick else { break }
            let n = min(left[k], throttles[k].chunkSize)
            moves.append(Move(time: due[k], stream: k, bytes: n))
            left[k] -= n
            due[k] += throttles[k].delay(after: n, now: due[k])
            order[k] = nextOrder
            nextOrder += 1
        }
        return (moves, chunk)
    }

    /// The most bytes moved in any window [t_i, t_j] beyond what `rate` allows in it:
    /// max over i ≤ j of (bytes at times in [t_i, t_j]) − rate·(t_j − t_i). `moves` in time order.
    static func worstExcess(_ moves: [Move], rate: Int) -> Double {
        var prefix = 0.0
        var lowest = Double.infinity
        var worst = -Double.infinity
        var index = 0
        while index < moves.count {
            let t = Double(moves[index].time) * Double(rate) / 1e9
            lowest = min(lowest, prefix - t)
            // Every move at this instant belongs to a window ending here.
            while index < moves.count, Double(moves[index].time) * Double(rate) / 1e9 == t {
                prefix += Double(moves[index].bytes)
                index += 1
            }
            worst = max(worst, (prefix - t) - lowest)
        }
        return worst
    }

    /// What a budget may run ahead of its rate: its banked 1/20 s, plus one unpaid chunk per stream.
    static func slack(rate: Int, streams: Int, chunk: Int) -> Double {
        Double(rate) * Double(BandwidthThrottle.burstNanos) / 1e9 + Double(streams * chunk) + 1
    }

    static func logUniform(_ rng: inout SplitMix64, _ low: Double, _ high: Double) -> Int {
        Int(exp(log(low) + rng.nextUnitDouble() * (log(high) - log(low))))
    }

    /// Random stream counts, sizes, start times and caps: the total never runs ahead of the shared
    /// cap by more than the slack, every byte is delivered, and the link is never left idle while a
    /// stream waits (the last byte moves no later than total/rate).
    func testTotalThroughputStaysWithinTheCapPlusBoundedSlack() {
        var rng = SplitMix64(seed: 0xBA0D_0001)
        for trial in 0..<40 {
            let rate = Self.logUniform(&rng, 16 * 1024, 512 * 1024 * 1024)
            let streams = 1 + rng.next(below: 12)
            let chunk = max(512, min(64 * 1024, rate / 20))
            let budget = 2500 * chunk / streams  // bounded work per trial
            let sizes = (0..<streams).map { _ in 1 + rng.next(below: budget) }
            let sameStart = rng.next(below: 2) == 0
            let starts = (0..<streams).map { _ in sameStart ? Int64(0) : Int64(rng.next(below: 200_000_000)) }
            let (moves, used) = Self.simulate(total: rate, perConnection: nil, sizes: sizes, starts: starts)
            let what = "trial \(trial): rate \(rate), \(streams) streams of \(sizes), starts \(starts)"
            XCTAssertEqual(used, chunk, what)
            XCTAssertEqual(moves.reduce(0) { $0 + $1.bytes }, sizes.reduce(0, +), "every byte moves: \(what)")
            let excess = Self.worstExcess(moves, rate: rate)
            XCTAssertLessThanOrEqual(excess, Self.slack(rate: rate, streams: streams, chunk: chunk), what)
            if sameStart {
                // Work-conserving: rounding each chunk's cost up may add a nanosecond per chunk.
                let last = moves.last!.time
                let ideal = Double(sizes.reduce(0, +)) * 1e9 / Double(rate)
                XCTAssertLessThanOrEqual(Double(last), ideal + Double(moves.count) + 1, "never slower than the cap: \(what)")
            }
        }
    }

    /// N streams of one size started together each get about total/N: when the first finishes,
    /// every other one is within two chunks of done.
    func testStreamsShareTheCapFairly() {
        var rng = SplitMix64(seed: 0xBA0D_0002)
        for trial in 0..<30 {
            let rate = Self.logUniform(&rng, 64 * 1024, 256 * 1024 * 1024)
            let streams = 2 + rng.next(below: 11)
            let chunk = max(512, min(64 * 1024, rate / 20))
            let size = chunk * (20 + rng.next(below: 2000 / streams))
            let (moves, _) = Self.simulate(total: rate, perConnection: nil, sizes: Array(repeating: size, count: streams),
                                           starts: Array(repeating: 0, count: streams))
            var moved = Array(repeating: 0, count: streams)
            for m in moves {
                moved[m.stream] += m.bytes
                if moved[m.stream] == size { break }
            }
            let what = "trial \(trial): rate \(rate), \(streams) streams of \(size) bytes, moved \(moved)"
            XCTAssertGreaterThanOrEqual(moved.min()!, size - 2 * chunk, what)
        }
    }

    /// With a per-connection cap as well, each stream stays within its own cap (plus its slack) and
    /// all of them within the shared one.
    func testPerConnectionAndTotalCapsHoldTogether() {
        var rng = SplitMix64(seed: 0xBA0D_0003)
        for trial in 0..<30 {
            let total = Self.logUniform(&rng, 64 * 1024, 256 * 1024 * 1024)
            let perConnection = Self.logUniform(&rng, Double(total) / 16, Double(total) * 2)
            let streams = 1 + rng.next(below: 10)
            let chunk = max(512, min(64 * 1024, min(total, perConnection) / 20))
            let sizes = (0..<streams).map { _ in 1 + rng.next(below: 2000 * chunk / streams) }
            let starts = (0..<streams).map { _ in Int64(rng.next(below: 100_000_000)) }
            let (moves, used) = Self.simulate(total: total, perConnection: perConnection, sizes: sizes, starts: starts)
            let what = "trial \(trial): total \(total), per connection \(perConnection), \(streams) streams of \(sizes)"
            XCTAssertEqual(used, chunk, what)
            XCTAssertEqual(moves.reduce(0) { $0 + $1.bytes }, sizes.reduce(0, +), what)
            XCTAssertLessThanOrEqual(Self.worstExcess(moves, rate: total), Self.slack(rate: total, streams: streams, chunk: chunk), what)
            for k in 0..<streams {
                let own = moves.filter { $0.stream == k }
                XCTAssertLessThanOrEqual(Self.worstExcess(own, rate: perConnection), Self.slack(rate: perConnection, streams: 1, chunk: chunk),
                                         "stream \(k), \(what)")
            }
        }
    }

    /// Without a shared cap, connections do not slow each other: two streams each run at the
    /// per-connection rate (each within its own slack, together up to twice the rate).
    func testPerConnectionCapAloneIsPerConnection() {
        let rate = 1 << 20
        let (moves, chunk) = Self.simulate(total: nil, perConnection: rate, sizes: [4 << 20, 4 << 20], starts: [0, 0])
        for k in 0..<2 {
            XCTAssertLessThanOrEqual(Self.worstExcess(moves.filter { $0.stream == k }, rate: rate), Self.slack(rate: rate, streams: 1, chunk: chunk))
        }
        let last = Double(moves.last!.time)
        XCTAssertLessThanOrEqual(last, 4e9 + Double(moves.count), "each stream at the full rate: 4 MiB in 4 s")
        XCTAssertGreaterThan(Self.worstExcess(moves, rate: rate), Double(rate), "together they move more than one rate")
    }
}
