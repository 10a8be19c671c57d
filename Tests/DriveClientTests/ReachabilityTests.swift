import DriveClient
import DriveSupport
import XCTest

/// Offline, as the executor sees it (`Reachability`): only failures to connect count; after
/// `offlineAfter` seconds of them a request is refused unsent and not retried, except one probe per
/// backoff; any answer from a server ends it. All on an injected clock: requests are counted, no
/// time is measured.
final class ReachabilityTests: XCTestCase {
    var time: ManualTimeSource!
    var transport: ScriptedTransport!

    override func setUp() {
        time = ManualTimeSource()
        transport = ScriptedTransport()
    }

    private func executor(_ reachability: Reachability) -> DriveRequestExecutor {
        DriveRequestExecutor(transport: transport, tokens: nil, pacer: nil,
                             retryPolicy: RetryPolicy(maxAttempts: 8, maxElapsed: 10_000, random: FixedRandom(value: 1)),
                             time: time, reachability: reachability)
    }

    private let request = TransportRequest(method: "GET", url: "https://example.test/drive/v3/files")
    private let refused = TransportError.couldNotConnect("Connection refused")

    private func isCouldNotConnect(_ error: Error) -> Bool {
        if case .transport(.couldNotConnect) = error as? DriveError { return true }
        return false
    }

    func testAShortOutageIsRetriedAsBeforeAndEndsOnline() throws {
        let reachability = Reachability(time: time, offlineAfter: 10)
        for _ in 0..<3 { transport.push(error: refused) }
        transport.push(status: 200, json: "{}")
        XCTAssertEqual(try executor(reachability).execute("files.get", request).status, 200)
        XCTAssertEqual(time.sleeps, [1, 2, 4], "retried with backoff: 7 s of failures is not offline")
        XCTAssertFalse(reachability.isOffline)
    }

    func testUnreachableForLongerIsOfflineAndRefusesAtOnceWithoutSending() throws {
        let reachability = Reachability(time: time, offlineAfter: 10, firstProbe: 1, maximumProbe: 60)
        let exec = executor(reachability)
        for _ in 0..<7 { transport.push(error: refused) }
        // 1 + 2 + 4 + 8 s of retries: the fifth failure, 15 s in, is offline, and not retried.
        XCTAssertThrowsError(try exec.execute("files.get", request)) { XCTAssertTrue(self.isCouldNotConnect($0), "\($0)") }
        XCTAssertEqual(transport.requests.count, 5)
        XCTAssertEqual(time.sleeps, [1, 2, 4, 8])
        XCTAssertTrue(reachability.isOffline)

        // Offline: refused at once, nothing sent, nothing slept.
        for _ in 0..<5 {
            XCTAssertThrowsError(try exec.execute("files.list", request)) { error in
                XCTAssertTrue(self.isCouldNotConnect(error))
                XCTAssertTrue("\(error)".contains("offline"), "\(error)")
            }
        }
        XCTAssertEqual(transport.requests.count, 5)
        XCTAssertEqual(time.sleeps.count, 4)

        // After the first probe's wait, one request goes, fails, and the next probe waits twice as long.
        time.advance(1)
        XCTAssertThrowsError(try exec.execute("files.list", request))
        XCTAssertEqual(transport.requests.count, 6, "one probe")
        time.advance(1)
        XCTAssertThrowsError(try exec.execute("files.list", request))
        XCTAssertEqual(transport.requests.count, 6, "the next probe waits 2 s")
        time.advance(1)
        XCTAssertThrowsError(try exec.execute("files.list", request))
        XCTAssertEqual(transport.requests.count, 7)

        // A probe that reaches a server (even one that answers an error) ends it.
        transport.push(status: 503)
        transport.push(status: 200, json: "{}")
        time.advance(4)
        XCTAssertEqual(try exec.execute("files.list", request).status, 200, "the 503 is retried as usual once online")
        XCTAssertFalse(reachability.isOffline)
    }

    func testOfflineFromTheStartProbesAfterItsFirstWait() throws {
        let reachability = Reachability(time: time, offlineAfter: 10, firstProbe: 1)
        reachability.markOffline("test")
        let exec = executor(reachability)
        XCTAssertThrowsError(try exec.execute("files.get", request)) { XCTAssertTrue(self.isCouldNotConnect($0)) }
        XCTAssertTrue(transport.requests.isEmpty)
        transport.push(status: 200, json: "{}")
        time.advance(1)
        XCTAssertEqual(try exec.execute("files.get", request).status, 200)
        XCTAssertFalse(reachability.isOffline)
    }

    func testOtherFailuresAreNotOffline() throws {
        let reachability = Reachability(time: time, offlineAfter: 10)
        let exec = executor(reachability)
        for _ in 0..<8 { transport.push(error: .connectionLost("reset by peer")) }
        XCTAssertThrowsError(try exec.execute("files.get", request))
        for _ in 0..<8 { transport.push(status: 503) }
        XCTAssertThrowsError(try exec.execute("files.get", request))
        XCTAssertFalse(reachability.isOffline, "a failing Drive is not an unreachable one")
    }
}
