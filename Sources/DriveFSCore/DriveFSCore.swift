// The filesystem core: inodes and handles, the folder-ID cache, the block cache and write-back.
//
// It holds the contract the FUSE bridge calls (`FilesystemOperations` and its value types, in
// Filesystem/), which `DriveFilesystem` (Mount/) implements over Drive, and `StaticTree`, a fixed
// in-memory tree that the smoke mount serves.
import DriveClient
