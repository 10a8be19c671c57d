// The filesystem core: inodes and handles, the folder-ID cache, the block cache and write-back.
//
// Today it holds the contract the FUSE bridge calls (`FilesystemOperations` and its value types,
// in Filesystem/) and `StaticTree`, a fixed in-memory tree that the smoke mount serves. The Drive
// filesystem will implement the same protocol.
import DriveClient
