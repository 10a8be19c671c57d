import CommandLineKit
import XCTest

/// The one grammar both executables are read with (drivefs's command tree, drivefs-emulator's one
/// command), pinned where the emulator's own parser used to differ: `--name=VALUE` and
/// `--name VALUE`, a value that starts with `-`, an option given twice, an unknown option.
final class CommandLineParserTests: XCTestCase {
    /// A program of one command, as drivefs-emulator is.
    private func single() -> Command {
        Command(
            name: "prog", summary: "A program of one command.",
            options: [
                .value("port", valueName: "PORT", help: "port", conversion: .integer(in: 0...65535)),
                .value("cost", valueName: "N", repeatable: true, help: "cost", conversion: .integer(in: 0...9)),
                .value("name", short: "n", valueName: "NAME", help: "name"),
                .flag("verbose", short: "v", help: "talk"),
            ],
            run: { _ in 0 })
    }

    /// A tree, as drivefs is: a group and a leaf that takes a shared option group.
    private func tree() -> Command {
        let root = Command(name: "tool", summary: "A tree.")
        let group = root.add(Command(name: "auth", summary: "Sign in"))
        let shared = OptionGroup(name: "Remote options", purpose: "for a test server", takers: "Commands that talk",
                                 specs: [.value("api-url", valueName: "URL", help: "where")])
        group.add(Command(name: "login", summary: "Sign in now", options: [.flag("no-browser", help: "no browser")],
                          arguments: [ArgumentSpec(name: "WHO", help: "who", optional: true)],
                          sharedOptions: shared, run: { _ in 0 }))
        return root
    }

    private func run(_ root: Command, _ words: [String], file: StaticString = #filePath, line: UInt = #line) -> Invocation? {
        do {
            guard case .run(let invocation) = try CommandLineParser(root: root, environment: [:]).parse(words) else {
                XCTFail("\(words) did not reach a command", file: file, line: line)
                return nil
            }
            return invocation
        } catch {
            XCTFail("\(words): \(error.message(program: root.name))", file: file, line: line)
            return nil
        }
    }

    /// The message the words are refused with.
    private func refusal(_ root: Command, _ words: [String], file: StaticString = #filePath, line: UInt = #line) -> String {
        do {
            let outcome = try CommandLineParser(root: root, environment: [:]).parse(words)
            XCTFail("\(words) was accepted: \(outcome)", file: file, line: line)
            return ""
        } catch {
            XCTAssertEqual(error.exitStatus, ExitStatus.usage, file: file, line: line)
            return error.message(program: root.name)
        }
    }

    func testALongOptionTakesItsValueAfterEqualsOrAsTheNextWord() {
        XCTAssertEqual(run(single(), ["--port=8080"])?.value("port"), "8080")
        XCTAssertEqual(run(single(), ["--port", "8080"])?.value("port"), "8080")
        XCTAssertEqual(run(single(), ["-n", "x"])?.value("name"), "x")
        XCTAssertEqual(run(single(), ["-nx"])?.value("name"), "x")
        XCTAssertEqual(run(single(), ["--name="])?.value("name"), "", "an empty value after '=' is a value")
        XCTAssertEqual(run(single(), ["--name", "-"])?.value("name"), "-", "'-' alone (standard input) is a value")
    }

    func testASeparateValueThatStartsWithADashIsRefusedWithTheWayToGiveIt() {
        XCTAssertEqual(refusal(single(), ["--name", "-5"]),
                       "prog: option '--name' needs a value (--name=NAME); to give '-5', write '--name=-5' (see 'prog --help')")
        XCTAssertEqual(refusal(single(), ["-n", "-5"]),
                       "prog: option '-n' needs a value (-n NAME); to give '-5', write '-n-5' (see 'prog --help')")
        // The next word is an option of the command: the value was forgotten, no hint.
        XCTAssertEqual(refusal(single(), ["--name", "--verbose"]), "prog: option '--name' needs a value (--name=NAME) (see 'prog --help')")
        XCTAssertEqual(refusal(single(), ["--port"]), "prog: option '--port' needs a value (--port=PORT) (see 'prog --help')")
        XCTAssertEqual(run(single(), ["--name=-5"])?.value("name"), "-5")
        XCTAssertEqual(run(single(), ["-n-5"])?.value("name"), "-5")
    }

    func testAnOptionNotDeclaredRepeatableIsTakenOnce() {
        XCTAssertEqual(refusal(single(), ["--port", "1", "--port=2"]), "prog: option '--port' was given more than once (see 'prog --help')")
        XCTAssertEqual(refusal(single(), ["-v", "--verbose"]), "prog: option '--verbose' was given more than once (see 'prog --help')")
        XCTAssertEqual(run(single(), ["--cost", "1", "--cost=2", "--cost", "3"])?.values("cost"), ["1", "2", "3"])
        XCTAssertEqual(run(single(), ["--cost", "1", "--cost=2"])?.value("cost"), "2", "value() is the last")
    }

    func testAnUnknownOptionIsNamedWithTheNearestKnownOne() {
        XCTAssertEqual(refusal(single(), ["--prot", "1"]),
                       "prog: unknown option '--prot' for 'prog'; did you mean '--port'? (see 'prog --help')")
        XCTAssertEqual(refusal(single(), ["--bogus"]), "prog: unknown option '--bogus' for 'prog' (see 'prog --help')")
        XCTAssertEqual(refusal(single(), ["--verbsoe=1"]),
                       "prog: unknown option '--verbsoe' for 'prog'; did you mean '--verbose'? (see 'prog --help')")
        XCTAssertEqual(refusal(tree(), ["auth", "login", "--api-ulr=http://x"]),
                       "tool: unknown option '--api-ulr' for 'auth login'; did you mean '--api-url'? (see 'tool auth login --help')")
    }

    func testAValueItsConversionRefusesIsNamedWithTheProblem() {
        XCTAssertEqual(refusal(single(), ["--port", "70000"]),
                       "prog: invalid value '70000' for '--port': expected an integer in 0...65535 (see 'prog --help')")
        XCTAssertEqual(refusal(single(), ["--cost=1", "--cost=x"]),
                       "prog: invalid value 'x' for '--cost': expected an integer in 0...9 (see 'prog --help')")
    }

    func testAProgramOfOneCommandTakesNoWordButItsOptions() {
        XCTAssertEqual(refusal(single(), ["stray"]), "prog: unexpected argument 'stray' for 'prog' (see 'prog --help')")
        XCTAssertEqual(refusal(single(), ["--verbose=yes"]), "prog: option '--verbose' does not take a value (see 'prog --help')")
        let invocation = run(single(), [])
        XCTAssertEqual(invocation?.value("port"), nil)
        XCTAssertEqual(invocation?.flag("verbose"), false)
    }

    func testHelpAndVersionAnswerBeforeAnythingElseIsChecked() throws {
        for words in [["--help"], ["-h"], ["--port", "1", "-h"], ["--help", "--bogus-later"]] {
            guard case .help(let command) = try CommandLineParser(root: single(), environment: [:]).parse(words) else {
                return XCTFail("\(words) is not help")
            }
            XCTAssertEqual(command.name, "prog")
        }
        guard case .version = try CommandLineParser(root: single(), environment: [:]).parse(["--version"]) else {
            return XCTFail("--version")
        }
        let root = tree()  // held: a command's parent is weak
        guard case .help(let login) = try CommandLineParser(root: root, environment: [:]).parse(["auth", "login", "-h"]) else {
            return XCTFail("auth login -h")
        }
        XCTAssertEqual(login.fullPath, "tool auth login")
        XCTAssertEqual(refusal(tree(), ["auth", "login", "--version"]),
                       "tool: unknown option '--version' for 'auth login' (see 'tool auth login --help')",
                       "--version is the root's")
    }

    func testADoubleDashEndsTheOptions() {
        XCTAssertEqual(run(tree(), ["auth", "login", "--", "--no-browser"])?.argument("WHO"), "--no-browser")
        XCTAssertEqual(run(tree(), ["auth", "login", "--no-browser", "--api-url", "http://x/"])?.value("api-url"), "http://x/",
                       "a shared option is the command's")
    }

    func testAnOptionBeforeItsCommandSaysWhereItGoes() {
        XCTAssertEqual(refusal(tree(), ["auth", "--no-browser", "login"]),
                       "tool: option '--no-browser' goes after the command, as in 'tool auth login --no-browser' (see 'tool auth --help')")
        XCTAssertEqual(refusal(tree(), ["aut"]), "tool: unknown command 'aut' for 'tool'; did you mean 'auth'? (see 'tool --help')")
        XCTAssertEqual(refusal(tree(), ["auth"]), "tool: 'tool auth' needs a command: login (see 'tool auth --help')")
    }
}
