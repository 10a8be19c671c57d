import CFuse
import DriveFSCore
import DriveSupport
import Glibc

/// How to mount.
public struct FuseMountConfiguration: Sendable {
    public var mountpoint: String
    /// Extra `-o` mount options (each a comma-separated list), after drivefs's own
    /// (`fsname=drivefs,subtype=drivefs,default_permissions`, plus `ro` when `readOnly`).
    public var options: [String]
    public var readOnly: Bool
    /// Stay attached to the terminal; otherwise the process daemonizes once mounted.
    public var foreground: Bool
    /// libfuse's request log on standard error (`-d`).
    public var debug: Bool
    /// One thread serves every request (libfuse's `fuse_session_loop`).
    public var singleThreaded: Bool
    public var maxThreads: UInt32
    /// Bypass the page cache for every file (each read becomes a FUSE request): for measuring the
    /// bridge, and for content that changes behind the kernel's back.
    public var directIO: Bool
    /// The kernel's read-ahead window and the largest read it sends, in bytes (the kernel caps it
    /// at what it supports; 1 MiB requests need a kernel with `max_pages`, 4.20 or later).
    public var maxReadahead: UInt32
    /// `fsname` in /proc/mounts (what `df` shows in its first column).
    public var fsName: String

    public init(mountpoint: String, options: [String] = [], readOnly: Bool, foreground: Bool, debug: Bool = false,
                singleThreaded: Bool = false, maxThreads: UInt32 = 16, directIO: Bool = false,
                maxReadahead: UInt32 = 1 << 20, fsName: String = "drivefs") {
        self.directIO = directIO
        self.maxReadahead = maxReadahead
        self.fsName = fsName
        self.mountpoint = mountpoint
        self.options = options
        self.readOnly = readOnly
        self.foreground = foreground
        self.debug = debug
        self.singleThreaded = singleThreaded
        self.maxThreads = maxThreads
    }
}

public enum FuseMountError: Error, Equatable {
    /// libfuse rejected the mount options (it printed which on standard error).
    case optionsRejected([String])
    case signalHandlersFailed
    /// The kernel refused the mount (libfuse printed why on standard error).
    case mountFailed(mountpoint: String)
    /// The request loop ended with an error (a negative errno).
    case loopFailed(Int32)
}

/// One FUSE session over a `FilesystemOperations`: create, mount, serve until unmounted or
/// signalled, tear down.
public enum FuseMount {
    /// Mounts `filesystem` and serves requests until the filesystem is unmounted (`fusermount -u`)
    /// or the process gets SIGINT, SIGTERM or SIGHUP; both end normally. `mounted` runs once the
    /// mount exists (before daemonizing); `serving` runs after daemonizing, in the process that
    /// serves the mount, just before the request loop starts: the place to start threads of its
    /// own (they would not survive the fork) and to take `getpid()`.
    ///
    /// Blocks the calling thread. Call it before any Dispatch or Swift-concurrency use when not in
    /// the foreground: daemonizing forks, and such threads do not survive the fork.
    public static func run(
        _ filesystem: any FilesystemOperations, configuration: FuseMountConfiguration, mounted: () -> Void = {},
        serving: () -> Void = {}
    ) throws(FuseMountError) {
        let context = FuseSessionContext(filesystem: filesystem, directIO: configuration.directIO,
                                         maxReadahead: configuration.maxReadahead)
        var operations = LowLevelCallbacks.operations()

        // fsname: commas would split the option list, and libfuse reads backslash escapes.
        let fsName = configuration.fsName.replacingOccurrences(of: "\\", with: "\\\\")
            .replacingOccurrences(of: ",", with: "\\,")
        var own = ["fsname=\(fsName)", "subtype=drivefs", "default_permissions"]
        if configuration.readOnly { own.append("ro") }
        var words = ["drivefs", "-o", own.joined(separator: ",")]
        for option in configuration.options { words += ["-o", option] }
        if configuration.debug { words.append("-d") }

        let argv = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: words.count + 1)
        for (i, word) in words.enumerated() { argv[i] = strdup(word) }
        argv[words.count] = nil
        var args = fuse_args(argc: Int32(words.count), argv: argv, allocated: 0)
        defer {
            // fuse_opt_* may have replaced argv with a copy of its own (allocated = 1).
            fuse_opt_free_args(&args)
            for i in 0..<words.count { free(argv[i]) }
            argv.deallocate()
        }

        guard let session = fuse_session_new(&args, &operations, MemoryLayout<fuse_lowlevel_ops>.size, context.opaquePointer) else {
            throw .optionsRejected(configuration.options)
        }
        defer { fuse_session_destroy(session) }
        context.notifier.attach(session)
        defer { context.notifier.attach(nil) }

        // libfuse installs its handlers only over the default disposition; a process started in the
        // background by a shell inherits SIGINT ignored.
        for sig in [SIGINT, SIGTERM, SIGHUP] { signal(sig, SIG_DFL) }
        guard fuse_set_signal_handlers(session) == 0 else { throw .signalHandlersFailed }
        defer { fuse_remove_signal_handlers(session) }

        guard fuse_session_mount(session, configuration.mountpoint) == 0 else {
            throw .mountFailed(mountpoint: configuration.mountpoint)
        }
        defer { fuse_session_unmount(session) }

        mounted()
        if !configuration.foreground { _ = fuse_daemonize(0) }
        serving()
        // From here a death of this process frees the mount (ConnectionGuard): armed in the
        // process and on the thread that serve it.
        let guarded = ConnectionGuard.arm(mountpoint: configuration.mountpoint)
        if guarded.armed { Log.shared.debug("fuse", guarded.message) } else { Log.shared.info("fuse", guarded.message) }
        defer { if guarded.armed { ConnectionGuard.disarm() } }

        let result: Int32
        if configuration.singleThreaded {
            result = fuse_session_loop(session)
        } else {
            let loopConfiguration = fuse_loop_cfg_create()
            defer { fuse_loop_cfg_destroy(loopConfiguration) }
            fuse_loop_cfg_set_clone_fd(loopConfiguration, 0)
            fuse_loop_cfg_set_max_threads(loopConfiguration, configuration.maxThreads)
            fuse_loop_cfg_set_idle_threads(loopConfiguration, min(10, configuration.maxThreads))
            result = cfuse_session_loop_mt(session, loopConfiguration)
        }
        withExtendedLifetime(context) {}

        // 0: unmounted. A positive value is the signal that ended the loop: a requested stop.
        if result < 0 { throw .loopFailed(result) }
    }
}
