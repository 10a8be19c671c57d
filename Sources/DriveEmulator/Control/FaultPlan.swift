import Foundation
import DriveSupport

/// The active scripted faults, consulted once per counted request.
///
/// Rules are tried in the order they were added; the first one whose method matches and that
/// fires (its `fraction` drawn from one seeded generator, so a given seed and request sequence
/// always hit the same requests) answers, and its `times` count goes down. A hit that turns out not
/// to apply (a reset after more bytes than the request or response has) is refunded, so the rule
/// stays armed for the next request. Used-up rules stay in the table (hidden) until refunds are
/// impossible, i.e. until the next `add` or `clear`.
final class FaultPlan: Sendable {
    private struct Active {
        var id: Int
        var rule: FaultRule
        var remaining: Int?
        var fired = 0
        var isUsedUp: Bool { remaining.map { $0 <= 0 } ?? false }
    }
    private struct State {
        var rules: [Active] = []
        var nextID = 0
        var seed: UInt64 = 1
        var random = SplitMix64(seed: 1)
    }
    private let state = Locked(State())

    /// One fired rule, for a possible refund.
    struct Hit {
        let ruleID: Int
        let action: FaultRule.Action
    }

    func add(_ rules: [FaultRule], seed: UInt64? = nil) {
        state.withLock { s in
            if let seed {
                s.seed = seed
                s.random = SplitMix64(seed: seed)
            }
            s.rules.removeAll { $0.isUsedUp }
            for rule in rules {
                s.rules.append(Active(id: s.nextID, rule: rule, remaining: rule.times))
                s.nextID += 1
            }
        }
    }

    func clear() { state.withLock { $0.rules = [] } }

    /// The fault for one request of this method, if any fires.
    func next(for method: String) -> Hit? {
        state.withLock { s in
            for i in s.rules.indices where !s.rules[i].isUsedUp {
                let rule = s.rules[i].rule
                guard rule.method == "*" || rule.method == method else { continue }
                if let fraction = rule.fraction {
                    guard s.random.nextUnitDouble() < fraction else { continue }
                }
                s.rules[i].fired += 1
                if let remaining = s.rules[i].remaining { s.rules[i].remaining = remaining - 1 }
                return Hit(ruleID: s.rules[i].id, action: rule.action)
            }
            return nil
        }
    }

    /// Undoes a hit that did not apply.
    func refund(_ hit: Hit) {
        state.withLock { s in
            guard let i = s.rules.firstIndex(where: { $0.id == hit.ruleID }) else { return }
            s.rules[i].fired -= 1
            if let remaining = s.rules[i].remaining { s.rules[i].remaining = remaining + 1 }
        }
    }

    /// `{"seed":N,"faults":[{...rule, "remaining":K, "fired":F}]}`
    var json: [String: Any] {
        state.withLock { s in
            let faults: [[String: Any]] = s.rules.filter { !$0.isUsedUp }.map { active in
                var d = active.rule.json
                d["fired"] = active.fired
                if let remaining = active.remaining { d["remaining"] = remaining }
                return d
            }
            return ["seed": s.seed, "faults": faults]
        }
    }
}
