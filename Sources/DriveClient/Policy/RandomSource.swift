import Foundation

/// Uniform numbers in [0, 1) for backoff jitter; injectable so tests can pin the schedule.
public protocol RandomSource: Sendable {
    func nextUnit() -> Double
}

public struct SystemRandomSource: RandomSource {
    public init() {}
    public func nextUnit() -> Double { Double.random(in: 0..<1) }
}
