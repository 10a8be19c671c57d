import CommandLineKit
import DriveEmulator
import Foundation

// drivefs-emulator: parse flags, start the emulator, print the ready line, wait for SIGINT/SIGTERM.
// Exit status: 0 after a signal, 1 when it cannot start, 2 for a usage error.

TerminationSignals.block()

/// Runs the emulator until SIGINT or SIGTERM; an error starting it is reported with status 1.
func serve(_ config: EmulatorConfig) throws -> Int32 {
    let emulator = try Emulator(config: config)
    try emulator.start()
    // Written straight to the descriptor: print() would sit in a buffer when stdout is a pipe.
    Output.standardOutput("listening on \(emulator.baseURL)/\n")
    let signal = TerminationSignals.wait()
    if config.logLevel == .debug {
        Output.standardError("drivefs-emulator: signal \(signal), stopping\n")
    }
    emulator.stop()
    return ExitStatus.success
}

exit(CommandLineProgram.main(EmulatorCommandLine.command(serve: serve), Array(CommandLine.arguments.dropFirst()),
                             environment: ProcessInfo.processInfo.environment, version: EmulatorCommandLine.version))
