// The FUSE bridge: the only code that touches libfuse.
import CFuse
import DriveFSCore
