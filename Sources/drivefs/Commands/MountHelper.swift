import CommandLineKit

/// drivefs run as a mount(8) helper: installed (a link to the `drivefs` binary) as
/// `/sbin/mount.fuse.drivefs` for the fstab type `fuse.drivefs`, or as `/sbin/mount.drivefs` for
/// the type `drivefs`. mount(8) calls it as
///
///     mount.fuse.drivefs SOURCE MOUNTPOINT [-sfnv] [-N NAMESPACE] [-t TYPE] [-o OPTIONS]
///
/// and it runs `drivefs mount MOUNTPOINT ...`, which returns once the mount is live (what mount(8)
/// waits for). SOURCE is the profile: `work`, `drivefs#work` (the old mount.fuse spelling), or
/// `drivefs` for the default profile. Every `drivefs mount` option has an `-o` spelling: its long
/// name with `_` for `-` (`cache_size=20G`, `poll_interval=30s`, `allow_other`, `profile=work`).
/// The options that belong to mount(8) or systemd (`noauto`, `user`, `_netdev`, `nofail`, `x-*`...)
/// are dropped; `ro` means `--read-only` (a later `rw` undoes it, as mount(8) reads them); anything else is handed to
/// FUSE as `--options` (`default_permissions`, `auto_unmount`, `nosuid`...), which libfuse checks.
enum MountHelper {
    static let programNames: Set<String> = ["mount.drivefs", "mount.fuse.drivefs"]

    /// What mount(8), fstab or systemd mean for themselves (`ro`/`rw` are read, not dropped).
    static let droppedOptions: Set<String> = ["defaults", "auto", "noauto", "user", "users", "nouser", "owner", "group",
                                               "_netdev", "nofail", "loop", "comment"]
    /// `drivefs mount` options that make no sense under mount(8), which waits for the helper.
    static let excludedSpecs: Set<String> = ["foreground", "debug", "options"]

    enum Outcome: Equatable {
        /// The `drivefs` command line to run.
        case run([String])
        /// `-f` (fake): do everything but mount.
        case fake([String])
    }

    static func isHelper(_ program: String?) -> Bool {
        guard let program else { return false }
        return programNames.contains(String(program.split(separator: "/").last ?? ""))
    }

    /// The `-o` spelling of each mount option: `cache-size` → `cache_size`.
    static func optionName(_ spec: OptionSpec) -> String { spec.long.replacingOccurrences(of: "-", with: "_") }

    static func translate(_ arguments: [String], mount: Command) throws(CLIError) -> (outcome: Outcome, verbose: Bool) {
        let usageOf = "drivefs mount"
        var positional: [String] = []
        var options: [String] = []
        var fake = false, verbose = false
        var index = 0
        while index < arguments.count {
            let word = arguments[index]
            index += 1
            func value() throws(CLIError) -> String {
                guard index < arguments.count else { throw .usage("\(word) needs a value", command: usageOf) }
                defer { index += 1 }
                return arguments[index]
            }
            switch word {
            case "-o": options += try value().split(separator: ",", omittingEmptySubsequences: true).map(String.init)
            case "-t", "-N": _ = try value()
            case "-f": fake = true
            case "-v": verbose = true
            case "-s", "-n": break // sloppy, no mtab: nothing to do
            default:
                if word.hasPrefix("-o"), word.count > 2 {
                    options += word.dropFirst(2).split(separator: ",").map(String.init)
                } else if word.hasPrefix("-") && word.count > 1 {
                    throw .usage("unknown mount helper flag '\(word)' (expected -o, -t, -s, -f, -n, -v)", command: usageOf)
                } else {
                    positional.append(word)
                }
            }
        }
        guard positional.count == 2 else {
            throw .usage("expected SOURCE MOUNTPOINT (as mount(8) passes them), got \(positional.count) words", command: usageOf)
        }
        var words = ["mount", positional[1]]
        var source = positional[0]
        if source.hasPrefix("drivefs#") { source.removeFirst("drivefs#".count) }
        var profile: String? = (source.isEmpty || source == "drivefs") ? nil : source

        let specs = Dictionary(uniqueKeysWithValues: mount.allOptions.filter { !excludedSpecs.contains($0.long) }.map { (optionName($0), $0) })
        var fuse: [String] = []
        var readOnly = false
        for option in options {
            let parts = option.split(separator: "=", maxSplits: 1).map(String.init)
            let name = parts[0]
            if droppedOptions.contains(name) || name.hasPrefix("x-") { continue }
            if name == "ro" || name == "rw" {
                readOnly = name == "ro"
                continue
            }
            guard let spec = specs[name] else {
                fuse.append(option)
                continue
            }
            if spec.takesValue {
                guard parts.count == 2 else { throw .usage("the mount option '\(name)' needs a value (\(name)=\(spec.valueName!))", command: usageOf) }
                if spec.long == "profile" { profile = parts[1]; continue }
                words.append("--\(spec.long)=\(parts[1])")
            } else {
                guard parts.count == 1 else { throw .usage("the mount option '\(name)' takes no value", command: usageOf) }
                words.append("--\(spec.long)")
            }
        }
        if readOnly && !words.contains("--read-only") { words.append("--read-only") }
        if let profile { words.append("--profile=\(profile)") }
        if !fuse.isEmpty { words.append("--options=\(fuse.joined(separator: ","))") }
        return (fake ? .fake(words) : .run(words), verbose)
    }
}
