import Foundation
import DriveEmulator
import DriveSupport

// drivefs-emulator: parse flags, start the emulator, print the ready line, wait for SIGINT/SIGTERM.
// Exit status: 0 after a signal, 1 when it cannot start, 2 for a usage error.

TerminationSignals.block()

let parsed: EmulatorCommandLine.Parsed
do {
    parsed = try EmulatorCommandLine.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("drivefs-emulator: \(error)\nTry 'drivefs-emulator --help'.\n".utf8))
    exit(2)
}

switch parsed {
case .help:
    print(EmulatorCommandLine.usage)
    exit(0)
case .version:
    print(EmulatorCommandLine.version)
    exit(0)
case .manPage:
    print(EmulatorManPage.page(date: Roff.pageDate(ProcessInfo.processInfo.environment)), terminator: "")
    exit(0)
case .run(let config):
    let emulator: Emulator
    do {
        emulator = try Emulator(config: config)
        try emulator.start()
    } catch {
        FileHandle.standardError.write(Data("drivefs-emulator: \(error)\n".utf8))
        exit(1)
    }
    // Written straight to the descriptor: print() would sit in a buffer when stdout is a pipe.
    FileHandle.standardOutput.write(Data("listening on \(emulator.baseURL)/\n".utf8))
    let signal = TerminationSignals.wait()
    if config.logLevel == .debug {
        FileHandle.standardError.write(Data("drivefs-emulator: signal \(signal), stopping\n".utf8))
    }
    emulator.stop()
    exit(0)
}
