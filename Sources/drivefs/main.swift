import Foundation

// Keep this file to the call below: top-level code here is @MainActor, and C callbacks must not
// live in it (see docs/architecture.md, "Threading model").
exit(DriveFSCommandLine.main(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment,
                             program: CommandLine.arguments.first))
