import DriveClient
import DriveEmulator
import DriveSupport
import XCTest

/// A resumable upload begun by one process and finished by another, from the persisted session.
/// The second process is this test binary again, running only `testChildFinishesUpload` with the
/// emulator's URL and the session path in its environment.
final class SecondProcessUploadTests: XCTestCase {
    static let childTest = "DriveClientTests.SecondProcessUploadTests/testChildFinishesUpload"

    func testResumedUploadIsFinishedByASecondProcess() throws {
        let harness = try EmulatorHarness(chunkSize: 1 << 20)
        defer { harness.stop() }
        let (path, md5) = try harness.makeFile("handover", size: (6 << 20) + 3)
        let sessionFile = harness.temp.appendingPathComponent("handover.session").path
        let resultFile = harness.temp.appendingPathComponent("child.result").path
        let root = try harness.api.getFile("root").id

        // This process dies (for the upload's purposes) after two chunks.
        let dying = FailingAfterTransport(inner: harness.transport, allowedPUTs: 2)
        let clientA = DriveAPI(executor: DriveRequestExecutor(transport: dying, tokens: harness.tokens, pacer: nil, retryPolicy: .none),
                               endpoints: harness.endpoints, chunkSize: 1 << 20)
        XCTAssertThrowsError(try clientA.createFile(name: "handover", parent: root, source: .file(path: path), sessionFile: sessionFile))
        let persisted = try ResumableUploadSession.load(from: sessionFile)
        XCTAssertEqual(persisted.confirmedBytes, 2 << 20)

        let child = Process()
        child.executableURL = URL(fileURLWithPath: try Self.testBinary())
        child.arguments = [Self.childTest]
        var environment = ProcessInfo.processInfo.environment
        environment["DRIVEFS_CHILD_API_URL"] = harness.emulator.baseURL
        environment["DRIVEFS_CHILD_SESSION"] = sessionFile
        environment["DRIVEFS_CHILD_RESULT"] = resultFile
        child.environment = environment
        let output = Pipe()
        child.standardOutput = output
        child.standardError = output
        try child.run()
        let finished = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { child.waitUntilExit(); finished.signal() }
        if finished.wait(timeout: .now() + 120) == .timedOut {
            child.terminate()
            XCTFail("the child process did not finish in 120 s")
            return
        }
        let log = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(child.terminationStatus, 0, log)

        let result = try String(contentsOfFile: resultFile, encoding: .utf8).split(separator: " ").map(String.init)
        XCTAssertEqual(result, [persisted.fileId, md5])
        XCTAssertFalse(FileManager.default.fileExists(atPath: sessionFile), "the child removed the finished session")
        XCTAssertEqual(try harness.api.list(query: DriveQuery.child(named: "handover", in: root)).map(\.id), [persisted.fileId])
        XCTAssertEqual(Digest.hex(.md5, of: try harness.api.downloadData(persisted.fileId)), md5)
    }

    /// The child's part; skipped unless started by the test above.
    func testChildFinishesUpload() throws {
        let environment = ProcessInfo.processInfo.environment
        guard let apiURL = environment["DRIVEFS_CHILD_API_URL"], let sessionFile = environment["DRIVEFS_CHILD_SESSION"],
              let resultFile = environment["DRIVEFS_CHILD_RESULT"] else {
            throw XCTSkip("runs only as the child process of testResumedUploadIsFinishedByASecondProcess")
        }
        let endpoints = DriveEndpoints.singleHost(apiURL)
        let transport = try CurlTransport()
        let executor = DriveRequestExecutor(transport: transport,
                                            tokens: TokenManager(grant: EmulatorHarness.grant(tokenURL: endpoints.tokenURL, transport: transport)),
                                            retryPolicy: RetryPolicy(baseDelay: 0.01, maxDelay: 0.2))
        let file = try DriveAPI(executor: executor, endpoints: endpoints).resumeUpload(from: sessionFile)
        try "\(file.id) \(file.md5Checksum ?? "-")".write(toFile: resultFile, atomically: true, encoding: .utf8)
    }

    /// This test binary (the `.xctest` executable `swift test` runs).
    static func testBinary() throws -> String {
        let path = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        guard FileManager.default.isExecutableFile(atPath: path) else { throw XCTSkip("cannot find the test binary") }
        return path
    }
}
