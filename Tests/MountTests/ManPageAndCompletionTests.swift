import Foundation
import XCTest

/// The man page and the completion scripts come from the same tables as `--help`: every option
/// any command's help shows is in both; `man -l` renders the page without warnings; the scripts
/// parse, and bash's completes commands, options and option values.
final class ManPageAndCompletionTests: XCTestCase {
    private var temp: URL!

    override func setUpWithError() throws {
        temp = FileManager.default.temporaryDirectory.appendingPathComponent("drivefs-man-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: temp, withIntermediateDirectories: true)
    }

    override func tearDown() {
        if let temp { try? FileManager.default.removeItem(at: temp) }
        super.tearDown()
    }

    private func output(_ arguments: [String]) throws -> String {
        let result = try DriveFSBinary.run(arguments, environment: ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
                                                                    "SOURCE_DATE_EPOCH": "1767225600"])
        XCTAssertEqual(result.status, 0, "\(arguments): \(result.summary)")
        return result.output
    }

    /// Every visible command's path and the option words (`--name`, `-x`) its help shows.
    private func optionsInHelp() throws -> [(path: [String], options: Set<String>)] {
        var result: [([String], Set<String>)] = []
        var queue: [[String]] = [[]]
        while let path = queue.popLast() {
            let help = try output(path + ["--help"])
            var words: Set<String> = []
            var inOptions = false
            for line in help.split(separator: "\n", omittingEmptySubsequences: false) {
                if line == "Options:" || line.hasPrefix("Drive options") { inOptions = true; continue }
                if line.isEmpty || !line.hasPrefix(" ") { inOptions = false; continue }
                // An option row is "  -f, --foreground  ..." or "      --read-only  ..."; help
                // text that continues on the next lines is indented further.
                let indent = line.prefix { $0 == " " }.count
                guard inOptions, indent == 2 || indent == 6, line.dropFirst(indent).hasPrefix("-") else { continue }
                let synopsis = line.split(separator: " ").prefix(2)
                for word in synopsis where word.hasPrefix("-") {
                    words.insert(String(word.split(separator: "=").first!).trimmingCharacters(in: CharacterSet(charactersIn: ",")))
                }
            }
            result.append((path, words))
            queue += CommandLineTests.subcommands(inHelp: help).map { path + [$0] }
        }
        return result
    }

    func testEveryOptionInTheHelpIsInTheManPageAndTheCompletions() throws {
        let page = try output(["debug", "man"])
        let bash = try output(["completion", "bash"])
        let zsh = try output(["completion", "zsh"])
        let commands = try optionsInHelp()
        XCTAssertGreaterThanOrEqual(commands.count, 7, "the root, mount, unmount, auth and its three, completion, help")
        for (path, options) in commands {
            XCTAssertFalse(options.isEmpty, "\(path): no options parsed from the help")
            if !path.isEmpty {
                XCTAssertTrue(page.contains(".SS \"drivefs \(path.joined(separator: " "))\""), "the man page lacks 'drivefs \(path)'")
            }
            for option in options {
                XCTAssertTrue(page.contains(option.replacingOccurrences(of: "-", with: "\\-")), "\(path) \(option) is not in the man page")
                XCTAssertTrue(bash.contains(option), "\(path) \(option) is not in the bash completion")
                XCTAssertTrue(zsh.contains(option), "\(path) \(option) is not in the zsh completion")
            }
        }
        XCTAssertFalse(page.contains(".SS \"drivefs debug"), "hidden developer commands stay out of the page")
        XCTAssertFalse(bash.contains("\" debug\""), "and out of the completion")
    }

    func testManRendersThePageWithoutWarnings() throws {
        guard ExternalCommand.which("man") != nil else {
            throw MountedDriveFS.missingRequirement("man is missing: install man-db ('make deps') to check the page")
        }
        let file = temp.appendingPathComponent("drivefs.1")
        try output(["debug", "man"]).write(to: file, atomically: true, encoding: .utf8)
        let man = try ExternalCommand.run("/bin/sh", ["-c", "MANWIDTH=80 man --warnings -E UTF-8 -l '\(file.path)'"], timeout: 30)
        XCTAssertEqual(man.status, 0, man.summary)
        XCTAssertEqual(man.errorOutput, "", "groff warnings: \(man.summary)")
        XCTAssertTrue(man.output.contains("DRIVEFS(1)"), man.summary)
        XCTAssertTrue(man.output.contains("--cache-size=SIZE"), man.summary)
        XCTAssertTrue(man.output.contains("2026-01-01"), "the date is SOURCE_DATE_EPOCH's: \(man.output.suffix(200))")
    }

    /// Sources the bash script and asks it what `drivefs WORDS…` completes to.
    private func bashCompletes(_ words: [String], script: URL) throws -> [String] {
        let quoted = words.map { "'\($0)'" }.joined(separator: " ")
        let run = try ExternalCommand.run("/bin/bash", ["-c", """
            cd '\(temp.path)' && source '\(script.path)'
            COMP_WORDS=(\(quoted)); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
            _drivefs; printf '%s\\n' "${COMPREPLY[@]}"
            """], timeout: 20)
        XCTAssertEqual(run.status, 0, run.summary)
        return run.output.split(separator: "\n").map(String.init).sorted()
    }

    func testTheBashCompletionCompletesCommandsOptionsAndValues() throws {
        let script = temp.appendingPathComponent("drivefs.bash")
        try output(["completion", "bash"]).write(to: script, atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(at: temp.appendingPathComponent("gdrive"), withIntermediateDirectories: true)
        try Data().write(to: temp.appendingPathComponent("garden.txt"))
        XCTAssertEqual(try bashCompletes(["drivefs", "mo"], script: script), ["mount"])
        XCTAssertEqual(try bashCompletes(["drivefs", "auth", "lo"], script: script), ["login", "logout"])
        XCTAssertEqual(try bashCompletes(["drivefs", "mount", "--cache-"], script: script), ["--cache-dir", "--cache-min-free", "--cache-size"])
        XCTAssertEqual(try bashCompletes(["drivefs", "pi"], script: script), ["pin"])
        XCTAssertEqual(try bashCompletes(["drivefs", "pin", "--l"], script: script), ["--list"])
        XCTAssertEqual(try bashCompletes(["drivefs", "--profile", "work", "mount", "--poll"], script: script), ["--poll-interval"])
        XCTAssertEqual(try bashCompletes(["drivefs", "mount", "g"], script: script), ["gdrive"], "a mount point is a directory")
        XCTAssertEqual(try bashCompletes(["drivefs", "mount", "x", "--log-file", "g"], script: script), ["garden.txt", "gdrive"])
        XCTAssertEqual(try bashCompletes(["drivefs", "mount", "x", "--cache-dir", "=", "g"], script: script), ["gdrive"])
        XCTAssertEqual(try bashCompletes(["drivefs", "mount", "x", "--cache-size", ""], script: script), [])
        XCTAssertEqual(try bashCompletes(["drivefs", "help", "a"], script: script), ["auth"])
        XCTAssertEqual(try bashCompletes(["drivefs", "completion", "--h"], script: script), ["--help"])
    }

    func testTheZshCompletionParses() throws {
        guard let zsh = ExternalCommand.which("zsh") else {
            throw MountedDriveFS.missingRequirement("zsh is missing: install it ('make deps') to check the zsh completion")
        }
        let script = temp.appendingPathComponent("_drivefs")
        try output(["completion", "zsh"]).write(to: script, atomically: true, encoding: .utf8)
        let check = try ExternalCommand.run(zsh, ["-n", script.path], timeout: 20)
        XCTAssertEqual(check.status, 0, check.summary)
        // Loaded for real: compinit, then the function is defined and bound to drivefs.
        let load = try ExternalCommand.run(zsh, ["-f", "-c", """
            autoload -Uz compinit && compinit -u -d '\(temp.path)/zcompdump'
            source '\(script.path)'
            print -r -- ${_comps[drivefs]}
            """], timeout: 20)
        XCTAssertEqual(load.status, 0, load.summary)
        XCTAssertEqual(load.output, "_drivefs\n", load.summary)
    }

    func testAnUnknownShellIsAUsageError() throws {
        let result = try DriveFSBinary.run(["completion", "fish"])
        XCTAssertEqual(result.status, 2, result.summary)
        XCTAssertTrue(result.errorOutput.contains("unknown shell 'fish'"), result.summary)
    }
}
