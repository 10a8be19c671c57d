// The filesystem core: inodes and handles, the folder-ID cache, the block cache and write-back.
import DriveClient
