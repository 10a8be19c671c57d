/// An inode number owned by drivefs (never a Drive file ID). `root` is FUSE's root ID.
public struct Inode: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public static let root = Inode(1)
    public static func < (a: Inode, b: Inode) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "inode \(rawValue)" }
}
