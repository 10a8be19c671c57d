/// Where the ID pool (`FileIDPool`) keeps the file IDs it has from Drive and has not claimed, so
/// that they outlive the process: a create needs no generateIds request while the reserve lasts,
/// also in a process that starts without the network. The core supplies one in its cache
/// directory (`FileIDReserveFile`); tests supply their own.
///
/// Contracts (the pool relies on both; its crash order is written in `FileIDPool`):
/// - `save` replaces what is kept with exactly `ids`, durably, before it returns. A `save` that
///   throws leaves what was kept before whole (never a mix of the two): the pool then assumes
///   nothing of the new content and hands out none of the IDs it was about.
/// - `load` answers what the last successful `save` kept, in order, or nothing when what is kept
///   cannot be used (absent, damaged, another drive's, unreadable): that is logged, never fatal,
///   and the next `save` replaces it.
public protocol FileIDReserve: Sendable {
    /// Where the IDs are kept, for log lines.
    var location: String { get }
    func load() -> [String]
    func save(_ ids: [String]) throws
}
