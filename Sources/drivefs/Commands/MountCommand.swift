import CommandLineKit
import DriveClient
import DriveFSCore
import DriveSupport
import FuseBridge
import Foundation

/// `drivefs mount MOUNTPOINT`: the signed-in account's My Drive as a filesystem.
///
/// Everything that can fail for a reason the user can fix (the mount point, the credentials, the
/// network, Drive's answer for the root) is checked before mounting, in the foreground, so the
/// command exits non-zero with the reason; only then does it mount, daemonize (unless
/// `--foreground`) and return, with the mount live.
enum MountCommand {
    static func make() -> Command {
        Command(
            name: "mount", summary: "Mount Google Drive on a directory",
            discussion: """
                Mounts the profile's My Drive (or --shared-drive, or with --account the whole account:
                'My Drive/', 'Shared drives/NAME/' and 'Trash/') on MOUNTPOINT and returns once the mount is live, leaving
                the filesystem running in the background (--foreground keeps it attached; Ctrl-C then
                unmounts). Unmount with 'drivefs unmount MOUNTPOINT' or 'fusermount -u MOUNTPOINT'.

                Files written are kept in the cache directory and uploaded when closed, in the
                background (--transfers at a time); what close accepted survives crashes and is
                uploaded by the next mount if need be. fsync returns once the file is on Drive;
                'drivefs unmount' returns once every upload is. rm moves files to Drive's trash
                ('drivefs trash' lists, restores and empties it; --delete-permanently deletes them
                instead). Google Docs, Sheets, Slides and Drawings appear
                as exported files (--export-formats), read-only; shortcuts as symbolic links.

                From mount on, every folder is listed in the background, many per request (the
                index: --no-index lists folders only as they are used). Listings, kept compact, and
                file blocks are cached under --cache-dir and survive remounts; the change feed is
                read every --poll-interval.

                A mount point left behind by a killed drivefs ("Transport endpoint is not connected")
                is cleaned up and mounted again.

                From /etc/fstab (type fuse.drivefs, source drivefs#PROFILE; mount(8) runs the
                mount.fuse.drivefs link to drivefs), each option is spelled with '_' for '-':
                cache_size=20G, poll_interval=30s, allow_other, profile=work...
                """,
            options: [
                .flag("foreground", short: "f", help: "Stay in the foreground; log to standard error"),
                .flag("read-only", help: "Mount read-only"),
                .value("transfers", valueName: "N", help: "Uploads run at once (default 4)",
                       validate: { Int($0).map { (1...64).contains($0) } == true ? nil : "expected a number from 1 to 64" }),
                .flag("sync-close", help: "close() waits until the file is on Drive and reports\nan upload's failure"),
                .value("upload-delay", valueName: "DURATION",
                       help: "How long a new file waits after its last close before it\ngoes to Drive, so that renaming it over a file (an\neditor's save) updates that file instead; an rm waits as\nlong, so that a file made again under its name updates it\n(default 2s; 0: none)",
                       validate: { Duration.parse($0, allowZero: true) == nil ? "expected a duration such as 2s, 500ms or 0" : nil }),
                .flag("delete-permanently", help: "rm deletes for good instead of moving to Drive's trash"),
                .flag("no-index", help: "Do not list the whole drive in the background from mount on;\nlist folders as they are used (and those below ahead)"),
                .flag("allow-other", help: "Let other users see the mount (needs user_allow_other\nin /etc/fuse.conf when not root)"),
                .value("uid", valueName: "UID", help: "Owner shown for every file (default: yours)", validate: validateID),
                .value("gid", valueName: "GID", help: "Group shown for every file (default: yours)", validate: validateID),
                .value("umask", valueName: "MASK", help: "Permission bits to clear, octal (default 022), from files\nwithout a mode of their own (one set by chmod or a create\nhere is shown as set)",
                       validate: validateUmask),
                .flag("posix-metadata", help: "Keep owners (chown), FIFOs, sockets, device nodes and ctime\nin each file's Drive appProperties and show them (a backup\ntarget: tar -xp, rsync -a as root); off: all show --uid/--gid"),
                .value("cache-dir", valueName: "DIR", help: "Block cache and index (default $XDG_CACHE_HOME/drivefs/PROFILE)"),
                .value("cache-size", valueName: "SIZE", help: "Cap of the block cache, e.g. 10G, 500M (default 10G)",
                       validate: { ByteSize.parse($0) == nil ? "expected a size such as 10G, 512M or 1048576" : nil }),
                .value("cache-min-free", valueName: "SIZE",
                       help: "Evict cached content, below the cap too, to keep this much\nfree on the cache's filesystem (default 0: the cap alone;\npinned content is never evicted)",
                       validate: { ByteSize.parse($0) == nil ? "expected a size such as 5G, 512M or 0" : nil }),
                .value("random-read-fill", valueName: "SIZE",
                       help: "Fill a file read at random in the background, in a few\nlarge requests, when it is at most this large (default 1G;\n0: never; never more than a quarter of --cache-size)",
                       validate: { ByteSize.parse($0) == nil ? "expected a size such as 1G, 256M or 0" : nil }),
                .value("dir-cache-ttl", valueName: "DURATION", help: "How long a folder listing is trusted, e.g. 5m (default 5m)",
                       validate: validateDuration),
                .value("poll-interval", valueName: "DURATION", help: "How often the change feed is read (default 30s)",
                       validate: validateDuration),
                .value("release-idle-after", valueName: "DURATION",
                       help: "Let the kernel drop the cached file entries of a folder\nunused this long, so their memory is packed again\n(default 10s; 0: never)",
                       validate: { Duration.parse($0, allowZero: true) == nil ? "expected a duration such as 10s, 1m or 0" : nil }),
                .value("shared-drive", valueName: "NAME_OR_ID", help: "Mount this shared drive instead of My Drive",
                       validate: { $0.isEmpty ? "name the shared drive (its name or ID)" : nil }),
                .flag("account", help: "Mount the whole account: 'My Drive/', 'Shared drives/NAME/'\n(every shared drive the account can see) and 'Trash/'\n(mv out restores, rm deletes for good) under MOUNTPOINT"),
                .value("export-formats", valueName: "LIST", help: "Formats for Google Docs etc., in order of preference\n(default docx,xlsx,pptx,svg,pdf)",
                       validate: { ExportFormats.parse($0).problem }),
                .value("quota-units-per-minute", valueName: "N",
                       help: "Google quota units the mount spends in any minute\n(default 292500: 90% of Google's 325,000 per user)",
                       validate: validatePositiveInteger),
                .value("quota-legacy-rpm", valueName: "N",
                       help: "Instead: a project on Google's legacy quota, N requests\nin any minute, whatever the method (e.g. 10800)",
                       validate: validatePositiveInteger),
                .value("write-rate", valueName: "W_PER_S",
                       help: "Writes a second to start at; the rate climbs while Google\nrefuses none, up to --write-ceiling, and falls back on a\nrefusal (default 2.5)",
                       validate: { Double($0).map { $0 > 0 && $0 <= 1000 } == true ? nil : "expected a number of writes a second, e.g. 2.5" }),
                .value("write-ceiling", valueName: "W_PER_S",
                       help: "The most writes a second, ever (default 3: Google's\nper-account write limit; --write-rate when that is higher)",
                       validate: { Double($0).map { $0 > 0 && $0 <= 1000 } == true ? nil : "expected a number of writes a second, e.g. 3" }),
                .value("write-burst", valueName: "N", help: "Writes that may go at once after an idle spell (default 2)",
                       validate: { Int($0).map { (1...1000).contains($0) } == true ? nil : "expected a number from 1 to 1000" }),
                .value("log-file", valueName: "FILE", help: "Where the daemon logs (default $XDG_STATE_HOME/drivefs/PROFILE.log;\nstandard error with --foreground)"),
                .value("log-level", valueName: "LEVEL", help: "debug, info, warning or error (default info)",
                       validate: { Log.Level(name: $0) == nil ? "expected debug, info, warning or error" : nil }),
                .value("options", short: "o", valueName: "OPTS", repeatable: true,
                       help: "Extra FUSE mount options, comma-separated (e.g. allow_other)", validate: validateMountOptions),
                .flag("debug", short: "d", help: "Log every FUSE request on standard error (implies --foreground)"),
            ],
            arguments: [ArgumentSpec(name: "MOUNTPOINT", help: "An existing empty directory")],
            examples: [
                ("mount ~/gdrive", "Mount My Drive and return"),
                ("mount ~/gdrive -f --log-level debug", "Stay in the foreground, logging everything"),
                ("mount ~/gdrive --profile work --cache-size 20G", "Another account, a bigger cache"),
                ("mount ~/team --shared-drive 'Team files'", "A shared drive (by name or ID)"),
                ("mount ~/gdrive --account", "My Drive and every shared drive, in folders of their own"),
            ],
            sharedOptions: DriveOptions.group,
            run: run)
    }

    static func validateID(_ text: String) -> String? { UInt32(text) == nil ? "expected a number" : nil }

    static func validatePositiveInteger(_ text: String) -> String? {
        Int(text).map { $0 > 0 } == true ? nil : "expected a positive whole number"
    }

    /// The pacer's budgets from `--quota-units-per-minute` / `--quota-legacy-rpm`, `--write-rate`,
    /// `--write-ceiling` and `--write-burst` (docs/client.md, "Pacing").
    static func budgets(_ invocation: Invocation) throws(CLIError) -> (quota: QuotaBudget, writes: WriteBudget) {
        let units = invocation.value("quota-units-per-minute").flatMap(Int.init)
        let legacy = invocation.value("quota-legacy-rpm").flatMap(Int.init)
        if units != nil && legacy != nil {
            throw .usage("--quota-units-per-minute and --quota-legacy-rpm exclude each other: a project has one kind of quota",
                         command: invocation.command.fullPath)
        }
        let quota = legacy.map { QuotaBudget.legacy(requestsPerMinute: $0) } ?? units.map { QuotaBudget.units(perMinute: $0) } ?? .default
        let writes = WriteBudget(perSecond: invocation.value("write-rate").flatMap(Double.init) ?? WriteBudget.default.perSecond,
                                 burst: invocation.value("write-burst").flatMap(Int.init) ?? WriteBudget.default.burst,
                                 ceiling: invocation.value("write-ceiling").flatMap(Double.init))
        return (quota, writes)
    }

    static func validateUmask(_ text: String) -> String? {
        guard let value = UInt32(text, radix: 8), value <= 0o777 else { return "expected an octal mask such as 022" }
        return nil
    }

    static func validateDuration(_ text: String) -> String? {
        Duration.parse(text) == nil ? "expected a duration such as 30s, 5m, 1h or a number of seconds" : nil
    }

    static func validateMountOptions(_ text: String) -> String? {
        FuseMountOptions.validate(text, readOnlyReason: nil)
    }

    static func run(_ invocation: Invocation) throws -> Int32 {
        if invocation.flag("account") && invocation.value("shared-drive") != nil {
            throw CLIError.usage("--account and --shared-drive exclude each other: --account mounts every shared drive "
                                 + "under 'Shared drives/'", command: invocation.command.fullPath)
        }
        let mountpoint = try MountPoint.prepare(invocation.argument("MOUNTPOINT")!)
        let choice = try DriveOptions.resolve(invocation)
        let foreground = invocation.flag("foreground") || invocation.flag("debug")
        let environment = invocation.environment

        // Logging first: what follows may want to say something.
        let level = invocation.value("log-level").flatMap(Log.Level.init(name:)) ?? .info
        let logFile = foreground ? invocation.value("log-file") : (invocation.value("log-file") ?? defaultLogFile(choice.profile, environment))
        if let logFile { try? FileManager.default.createDirectory(atPath: (logFile as NSString).deletingLastPathComponent,
                                                                  withIntermediateDirectories: true) }
        do {
            try Log.shared.configure(level: level, path: logFile)
        } catch {
            throw CLIError.failure("\(error)", hint: "Choose another file with --log-file.")
        }

        let budgets = try budgets(invocation)
        let connection = try DriveConnection.open(invocation, choice: choice, quota: budgets.quota, writes: budgets.writes)
        var api = invocation.flag("account") ? connection.seeingDriveChanges() : connection.api
        var what = "My Drive"
        var cacheName = choice.profile
        let directories = DrivefsDirectories.fromEnvironment(environment)
        if let wanted = invocation.value("shared-drive") {
            let drive: SharedDrive
            // A drive mounted before is known by name: with Drive away the mount can start offline
            // from that drive's saved index, after the same wait as My Drive's.
            let known = KnownSharedDrives(cacheRoot: directories.cache, profile: choice.profile)
            let remembered = known.find(wanted)
            do {
                let context = RequestContext(priority: .interactive,
                                             deadline: remembered == nil ? nil : Date().timeIntervalSince1970 + offlineStartWait)
                let scoped = api
                drive = try context.scope { try scoped.resolveSharedDrive(wanted) }
                known.remember(drive)
            } catch let error as DriveError where remembered != nil && Self.unreachable(error) {
                drive = remembered!
                Log.shared.info("mount", "Drive cannot be reached to look up '\(wanted)'; it is the shared drive \(drive.id), "
                                + "mounted here before")
            } catch DriveError.notFound {
                throw CLIError.failure("no shared drive called '\(wanted)' is visible to this account",
                                       hint: "Check the name (it is case-sensitive) or pass the drive's ID.")
            } catch DriveError.invalidArgument(let info) {
                throw CLIError.failure(info.message, hint: "Pass the drive's ID instead of its name.")
            } catch {
                throw DriveConnection.failure(error, doing: "cannot list the shared drives")
            }
            api = connection.scoped(.sharedDrive(drive.id))
            what = "shared drive '\(drive.name)'"
            cacheName += "-" + drive.id
        }
        let cacheDirectory = invocation.value("cache-dir").map { URL(fileURLWithPath: $0) }
            ?? directories.cache.appendingPathComponent(cacheName)
        // The root and the change feed's position, before anything is listed (no change is missed);
        // asked for at once, so the mount waits for one round trip, not two. With an index saved in
        // the cache directory, Drive gets `offlineStartWait` seconds: a mount that cannot reach it
        // then starts offline from that index (docs/semantics.md, "Offline").
        let saved = IndexStore.savedRoot(cacheDirectory: cacheDirectory)
        let root: DriveFile
        let startToken: String
        var offline = false
        do {
            let scoped = api
            let context = RequestContext(priority: .interactive, deadline: saved == nil ? nil : Date().timeIntervalSince1970 + offlineStartWait)
            let rootAnswer = Locked<Result<DriveFile, Error>?>(nil)
            let asked = DispatchGroup()
            DispatchQueue.global().async(group: asked) {
                let answer = Result { try context.scope { try scoped.getFile(scoped.scope.rootFolderID) } }
                rootAnswer.withLock { $0 = answer }
            }
            let tokenAnswer = Result { try context.scope { try scoped.changesStartPageToken() } }
            asked.wait()
            let fetched = (root: try rootAnswer.withLock { $0! }.get(), token: try tokenAnswer.get())
            root = fetched.root
            startToken = fetched.token
        } catch let error as DriveError where saved != nil && Self.unreachable(error) {
            var why = "no answer within \(Int(offlineStartWait)) s"
            if case .transport(let failure) = error { why = failure.summary }
            Output.standardError("drivefs: offline: Google Drive cannot be reached (\(why)); mounting from the saved index "
                                 + "and cache; changes are sent when Drive answers again\n")
            api.executor.reachability?.markOffline(why)
            root = DriveFile(id: saved!.rootID, name: "", mimeType: DriveFile.folderMimeType)
            startToken = saved!.changeToken
            offline = true
        } catch {
            throw DriveConnection.failure(error, doing: "cannot reach Google Drive")
        }

        var configuration = DriveFSConfiguration(
            userID: invocation.value("uid").flatMap(UInt32.init) ?? getuid(),
            groupID: invocation.value("gid").flatMap(UInt32.init) ?? getgid(),
            cacheDirectory: cacheDirectory)
        if let mask = invocation.value("umask").flatMap({ UInt32($0, radix: 8) }) { configuration.umask = mask }
        if let size = invocation.value("cache-size").flatMap(ByteSize.parse) { configuration.cacheSize = size }
        if let size = invocation.value("cache-min-free").flatMap(ByteSize.parse) { configuration.cacheMinimumFree = size }
        if let size = invocation.value("random-read-fill").flatMap(ByteSize.parse) { configuration.randomReadFillLimit = size }
        if let ttl = invocation.value("dir-cache-ttl").flatMap { Duration.parse($0) } { configuration.directoryCacheTTL = ttl }
        if let interval = invocation.value("poll-interval").flatMap { Duration.parse($0) } { configuration.pollInterval = interval }
        if let idle = invocation.value("release-idle-after").flatMap({ Duration.parse($0, allowZero: true) }) {
            configuration.releaseIdleAfter = idle
        }
        if let formats = invocation.value("export-formats").flatMap({ ExportFormats.parse($0).formats }) {
            configuration.exportFormats = formats
        }
        let readOnly = invocation.flag("read-only") || FuseMountOptions.asksReadOnly(invocation.values("options"))
        configuration.readOnly = readOnly
        if let transfers = invocation.value("transfers").flatMap(Int.init) { configuration.transfers = transfers }
        configuration.syncClose = invocation.flag("sync-close")
        if let delay = invocation.value("upload-delay").flatMap({ Duration.parse($0, allowZero: true) }) {
            configuration.newFileSettle = delay
        }
        // A file removed and made again within the upload delay is a save (it keeps its Drive ID).
        configuration.removalSettle = configuration.newFileSettle
        // A folder's create and a change of times or mode wait as long: what follows rides along.
        configuration.changeSettle = configuration.newFileSettle
        configuration.deletePermanently = invocation.flag("delete-permanently")
        configuration.posixMetadata = invocation.flag("posix-metadata")
        configuration.indexWholeDrive = !invocation.flag("no-index")

        // Every file closed but not yet on Drive keeps its local copy open (reads are served from
        // it until the upload lands): allow as many descriptors as the system lets us.
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 && limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }

        try waitForCacheDirectory(cacheDirectory, environment: environment)
        let filesystem: DriveFilesystem
        do {
            filesystem = try DriveFilesystem(backend: api, root: root, startPageToken: startToken, configuration: configuration)
        } catch where error.errno == EBUSY {
            throw CLIError.failure("the cache directory \(cacheDirectory.path) is in use by another drivefs mount",
                                   hint: "Each mount needs its own: pass --cache-dir DIR, or unmount the other one first.")
        } catch {
            throw CLIError.failure("cannot use the cache directory \(cacheDirectory.path): \(error)",
                                   hint: "Choose another one with --cache-dir.")
        }

        // The quota the previous mount of this cache directory spent in its last minute counts in
        // this one's (it has finished with the directory: waitForCacheDirectory).
        if let pacer = api.executor.pacer { QuotaCarryOver.load(into: pacer, from: cacheDirectory) }
        // --account: My Drive above is one member; each shared drive is another, made when first used.
        var mounted: any FilesystemOperations = filesystem
        if invocation.flag("account") {
            what = "the account"
            mounted = AccountFilesystem(myDrive: filesystem, sharedDrives: sharedDriveCatalog(
                connection: connection, listing: api, base: configuration, cacheDirectory: cacheDirectory, profile: choice.profile,
                cacheRoot: directories.cache, mountpoint: mountpoint))
        }

        var options = invocation.values("options")
        if invocation.flag("allow-other") { options.append("allow_other") }
        let account = connection.account ?? choice.profile
        let mount = FuseMountConfiguration(
            mountpoint: mountpoint, options: options, readOnly: readOnly, foreground: foreground,
            debug: invocation.flag("debug"), maxThreads: 16, fsName: "drivefs:\(account)")
        Log.shared.info("mount", "mounting \(what) of \(account) (profile \(choice.profile)) at \(mountpoint), cache \(cacheDirectory.path)")
        let identity = StatusIdentity(mountpoint: mountpoint, profile: choice.profile, account: connection.account, drive: what)
        var status: StatusPublisher?
        // Whatever ends the loop (unmount, a signal, a failure), the status file goes with it, and
        // the quota spent in the last minute is left for the next mount (also kept while serving,
        // by the status publisher).
        var serving = false
        defer {
            status?.stop()
            if serving, let pacer = api.executor.pacer { QuotaCarryOver.save(from: pacer, in: cacheDirectory) }
        }
        do {
            try FuseMount.run(mounted, configuration: mount, mounted: {
                Output.standardError("drivefs: \(what) mounted at \(mountpoint)\(readOnly ? " (read-only)" : "")\(offline ? " (offline)" : ""); "
                                     + "unmount with 'drivefs unmount \(mountpoint)'\n")
                // Under systemd (Type=notify, docs/systemd.md): the mount is live, say so once.
                if ServiceNotification.send("READY=1\nSTATUS=\(what) mounted at \(mountpoint)", environment: environment) {
                    Log.shared.info("mount", "told the service manager the mount is ready")
                }
            }, serving: {
                // After the fork: the publisher's thread must live in the daemon (docs/status.md).
                serving = true
                status = startPublishingStatus(of: filesystem, identity, pacer: api.executor.pacer,
                                               reachability: api.executor.reachability, environment: environment,
                                               quotaDirectory: cacheDirectory)
                // Lets a later mount of this cache directory tell this live mount from a daemon
                // that is only finishing (docs/errors.md).
                filesystem.cacheLock.recordHolder(pid: getpid(), mountpoint: mountpoint)
            })
        } catch {
            throw mountFailure(error, mountpoint: mountpoint)
        }
        Log.shared.info("mount", "unmounted \(mountpoint)")
        return ExitStatus.success
    }

    /// The shared drives of `--account`: drives.list through `listing`, and a member per drive over
    /// a client scoped to it, in `<cacheDirectory>-<driveID>` (the directory `--shared-drive` uses,
    /// so the saved index is shared with single-drive mounts of it; a live one refuses).
    static func sharedDriveCatalog(connection: DriveConnection, listing: DriveAPI, base: DriveFSConfiguration, cacheDirectory: URL,
                                   profile: String, cacheRoot: URL, mountpoint: String) -> SharedDriveCatalog {
        SharedDriveCatalog(list: { try listing.listDrives() }, open: { drive in
            let api = connection.scoped(.sharedDrive(drive.id))
            var configuration = base
            configuration.cacheDirectory = URL(fileURLWithPath: cacheDirectory.path + "-" + drive.id)
            KnownSharedDrives(cacheRoot: cacheRoot, profile: profile).remember(drive)
            let saved = IndexStore.savedRoot(cacheDirectory: configuration.cacheDirectory)
            var root: DriveFile
            var token: String
            do {
                let context = RequestContext(priority: .interactive, deadline: saved == nil ? nil : Date().timeIntervalSince1970 + offlineStartWait)
                (root, token) = try context.scope { (try api.getFile(drive.id), try api.changesStartPageToken()) }
            } catch let error as DriveError where saved != nil && unreachable(error) {
                Log.shared.info("account", "Drive cannot be reached: the shared drive \(drive) starts from its saved index")
                root = DriveFile(id: saved!.rootID, name: drive.name, mimeType: DriveFile.folderMimeType)
                token = saved!.changeToken
            }
            do {
                let member = try DriveFilesystem(backend: api, root: root, startPageToken: token, configuration: configuration)
                member.cacheLock.recordHolder(pid: getpid(), mountpoint: mountpoint)
                return member
            } catch let error as FilesystemError where error.errno == EBUSY {
                Log.shared.error("account", "the shared drive \(drive) is not shown: its cache directory "
                                 + "\(configuration.cacheDirectory.path) is in use by another drivefs mount (of that drive "
                                 + "with --shared-drive?); unmount it first")
                throw error
            }
        })
    }

    /// How long a mount with a saved index tries to reach Drive at start before it mounts offline.
    static let offlineStartWait: Double = 10

    /// A start-up failure that means Drive cannot be reached (not one that it answered).
    static func unreachable(_ error: DriveError) -> Bool {
        switch error {
        case .transport(.couldNotConnect), .transport(.timedOut), .cancelled: return true
        default: return false
        }
    }

    /// How long a new mount waits for the daemon of an unmounted mount of the same cache directory.
    static let cacheDirectoryWait: Double = 180

    /// A mount right after an unmount (`fusermount -u DIR && drivefs mount DIR`) finds the old
    /// daemon still finishing with the cache directory (saving its index, draining uploads): it
    /// waits for it, bounded, saying so on standard error with the old daemon's uploads. A cache
    /// directory that serves a live mount is refused at once.
    static func waitForCacheDirectory(_ directory: URL, environment: [String: String]) throws {
        let statuses = StatusDirectory.resolve(environment)
        @Sendable func progress(_ holder: CacheDirectoryLock.Holder?) -> String {
            guard let holder, let status = statuses.entries(removingDead: false).first(where: { $0.status.pid == holder.pid })?.status
            else { return "" }
            let u = status.uploads
            if u.queued == 0 && u.running.isEmpty { return "" }
            let sent = u.running.map {
                ($0.phase == .hashing ? "hashing " : "") + "\($0.path) \(StatusCommand.bytes($0.bytesDone)) of \(StatusCommand.bytes($0.size))"
            }
            return "; uploads: " + StatusCommand.uploads(u) + (sent.isEmpty ? "" : " (" + sent.joined(separator: ", ") + ")")
        }
        @Sendable func who(_ holder: CacheDirectoryLock.Holder?) -> String {
            holder.map { "the drivefs daemon (pid \($0.pid)) that served \($0.mountpoint)" } ?? "another drivefs process"
        }
        let policy = CacheDirectoryLock.WaitPolicy(timeout: cacheDirectoryWait) { event in
            switch event {
            case .waiting(let holder):
                Output.standardError("drivefs: waiting up to \(Int(cacheDirectoryWait)) s for \(who(holder)) to finish with "
                                     + "the cache directory \(directory.path)\(progress(holder))\n")
            case .stillWaiting(let holder, let seconds):
                Output.standardError("drivefs: still waiting for \(who(holder)) (\(Int(seconds)) s)\(progress(holder))\n")
            }
        }
        do {
            try CacheDirectoryLock.waitUntilFree(directory: directory, policy: policy)
        } catch {
            switch error {
            case .serving(let holder):
                throw CLIError.failure("the cache directory \(directory.path) is in use by another drivefs mount, at \(holder.mountpoint) (pid \(holder.pid))",
                                       hint: "Each mount needs its own: pass --cache-dir DIR, or unmount the other one first.")
            case .stillFinishing(let holder):
                throw CLIError.failure("the cache directory \(directory.path) is still in use by \(who(holder)) after \(Int(cacheDirectoryWait)) s",
                                       hint: "'drivefs status' shows what it is doing; mount again when it has exited, or pass --cache-dir DIR.")
            }
        }
    }

    /// `$XDG_STATE_HOME/drivefs/PROFILE.log` (default `~/.local/state/drivefs/PROFILE.log`).
    static func defaultLogFile(_ profile: String, _ environment: [String: String]) -> String {
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        let state = environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home + "/.local/state"
        return state + "/drivefs/" + profile + ".log"
    }

    static func mountFailure(_ error: FuseMountError, mountpoint: String) -> CLIError {
        FuseMountOptions.failure(error, mountpoint: mountpoint, command: "drivefs mount", unmountHint: "drivefs unmount")
    }
}

/// Sizes on the command line: `10G`, `512M`, `64K`, `1048576` (powers of 1024).
enum ByteSize {
    static func parse(_ text: String) -> Int64? {
        let t = text.trimmingCharacters(in: .whitespaces).uppercased()
        let units: [(String, Int64)] = [("TIB", 1 << 40), ("GIB", 1 << 30), ("MIB", 1 << 20), ("KIB", 1 << 10),
                                        ("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10),
                                        ("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10), ("B", 1)]
        for (suffix, factor) in units where t.hasSuffix(suffix) {
            guard let number = Double(t.dropLast(suffix.count)), number >= 0, number * Double(factor) < 9e18 else { return nil }
            return Int64(number * Double(factor))
        }
        return Int64(t).flatMap { $0 >= 0 ? $0 : nil }
    }
}

/// Durations on the command line: `30s`, `5m`, `1h`, `250ms`, or seconds.
enum Duration {
    /// Seconds, from `30s`, `5m`, `1h`, `250ms` or a number; zero only when `allowZero`.
    static func parse(_ text: String, allowZero: Bool = false) -> Double? {
        let t = text.trimmingCharacters(in: .whitespaces).lowercased()
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
        func valid(_ n: Double) -> Bool { n.isFinite && (n > 0 || allowZero && n == 0) }
        for (suffix, factor) in units where t.hasSuffix(suffix) {
            guard let number = Double(t.dropLast(suffix.count)), valid(number) else { return nil }
            return number * factor
        }
        return Double(t).flatMap { valid($0) ? $0 : nil }
    }
}
