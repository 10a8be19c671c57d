/// SplitMix64: a tiny deterministic generator, so that fault fractions, generated test data and
/// randomized tests replay exactly from their seed. Not for secrets (`SecureRandom` is).
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    public mutating func nextUnitDouble() -> Double { Double(next() >> 11) / Double(UInt64(1) << 53) }

    /// In 0..<n (n > 0); the slight modulo bias does not matter for tests and fault fractions.
    public mutating func next(below n: Int) -> Int { Int(next() % UInt64(n)) }
}
