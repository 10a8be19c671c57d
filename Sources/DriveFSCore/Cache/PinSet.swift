import DriveSupport
import Foundation

/// What the user asked to keep offline (`drivefs pin`, `user.drivefs.pinned`), by Drive file ID,
/// kept in `<cache>/pins.json` across remounts.
///
/// Contracts:
/// - A rule names one item by its Drive ID (so a rename or a move keeps it) and says pinned or
///   not. An item without a rule of its own takes the rule of its nearest ancestor that has one:
///   a pinned folder covers everything in it, including what is added to it later, and an unpin
///   inside a pinned folder is a rule of its own (`false`).
/// - Every change is written before it returns (`AtomicFile`: the old file or the new one, never
///   a torn one); a file that cannot be read starts empty, and says so in the log.
/// - `kept` is the set of files the last sweep found pinned (the block cache's exemption), saved
///   with the rules so that the next start's cache keeps them before any sweep ran.
public final class PinSet: Sendable {
    public static let fileName = "pins.json"

    public let path: String
    private let state: Locked<Stored>

    struct Stored: Codable, Equatable {
        var format = 1
        var rules: [String: Bool] = [:]
        var kept: [String] = []
    }

    public init(path: String) {
        self.path = path
        var stored = Stored()
        if let data = FileManager.default.contents(atPath: path) {
            if let decoded = try? JSONDecoder().decode(Stored.self, from: data), decoded.format == 1 {
                stored = decoded
            } else {
                Log.shared.warning("pins", "cannot read the pins in \(path); starting with none")
            }
        }
        state = Locked(stored)
    }

    /// The rules: Drive ID → pinned (true) or unpinned inside a pinned folder (false).
    public var rules: [String: Bool] { state.withLock { $0.rules } }
    public var kept: Set<String> { Set(state.withLock { $0.kept }) }

    /// Sets (`true`/`false`) or removes (nil) the rule of `id`, durably.
    public func setRule(_ id: String, _ pinned: Bool?) throws {
        try update { $0.rules[id] = pinned }
    }

    /// Records the files the last sweep found pinned (written only when it changed).
    public func setKept(_ ids: Set<String>) throws {
        try update { $0.kept = ids.sorted() }
    }

    private func update(_ change: (inout Stored) -> Void) throws {
        try state.withLock { s in
            var next = s
            change(&next)
            guard next != s else { return }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            try AtomicFile.write(Array(try encoder.encode(next)), to: path, mode: 0o600)
            s = next
        }
    }
}
