// The FUSE bridge: the only code that touches libfuse (through CFuse).
//
// It owns the session lifecycle (`FuseMount`) and the low-level callbacks (`LowLevelCallbacks.swift`),
// which turn each kernel request into one call on a `FilesystemOperations` (DriveFSCore) and
// exactly one reply.
import CFuse
import DriveFSCore
