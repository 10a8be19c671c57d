import DriveClient
import DriveSupport
import XCTest

final class TokenManagerTests: XCTestCase {
    func testCachedTokenIsUsedUntilTheMarginThenRefreshed() throws {
        let time = ManualTimeSource()
        let grant = CountingGrant(time: time, lifetime: 3600)
        let tokens = TokenManager(grant: grant, time: time, margin: 60)
        XCTAssertEqual(try tokens.accessToken(), "token-1")
        time.advance(3600 - 61)
        XCTAssertEqual(try tokens.accessToken(), "token-1", "still valid for 61 s > margin")
        time.advance(2)
        XCTAssertEqual(try tokens.accessToken(), "token-2", "valid for 59 s < margin: refreshed first")
        XCTAssertEqual(grant.calls, 2)
    }

    func testShortLivedTokensUseHalfTheirLifetimeAsMargin() throws {
        let time = ManualTimeSource()
        let grant = CountingGrant(time: time, lifetime: 2)
        let tokens = TokenManager(grant: grant, time: time, margin: 60)
        XCTAssertEqual(try tokens.accessToken(), "token-1")
        XCTAssertEqual(try tokens.accessToken(), "token-1", "a 2 s token is not refreshed at once")
        time.advance(1.01)
        XCTAssertEqual(try tokens.accessToken(), "token-2")
    }

    func testInvalidateDropsOnlyTheFailedToken() throws {
        let time = ManualTimeSource()
        let grant = CountingGrant(time: time)
        let tokens = TokenManager(grant: grant, time: time)
        XCTAssertEqual(try tokens.accessToken(), "token-1")
        tokens.invalidate("token-1")
        XCTAssertEqual(try tokens.accessToken(), "token-2")
        tokens.invalidate("token-1") // a late 401 for the old token must not cause another refresh
        XCTAssertEqual(try tokens.accessToken(), "token-2")
        XCTAssertEqual(grant.calls, 2)
    }

    func testRefreshIsSingleFlightAcrossThreads() throws {
        let grant = CountingGrant(time: SystemTimeSource(), delay: 0.3)
        let tokens = TokenManager(grant: grant, time: SystemTimeSource())
        let results = Locked<[String]>([])
        onThreads(16) {
            let value = (try? tokens.accessToken()) ?? "error"
            results.withLock { $0.append(value) }
        }
        XCTAssertEqual(grant.calls, 1)
        XCTAssertEqual(results.withLock { $0 }, Array(repeating: "token-1", count: 16))
    }

    func testWaitersShareTheFlightsFailure() {
        let grant = CountingGrant(time: SystemTimeSource(), delay: 0.3)
        grant.failNext(with: DeadGrantError())
        let tokens = TokenManager(grant: grant, time: SystemTimeSource())
        let failures = Locked(0)
        onThreads(8) {
            if (try? tokens.accessToken()) == nil { failures.withLock { $0 += 1 } }
        }
        XCTAssertEqual(grant.calls, 1)
        XCTAssertEqual(failures.withLock { $0 }, 8)
    }

    /// Runs `body` on `count` dedicated threads at once (not the width-limited Dispatch pool).
    private func onThreads(_ count: Int, _ body: @escaping @Sendable () -> Void) {
        let group = DispatchGroup()
        for _ in 0..<count {
            group.enter()
            Thread { body(); group.leave() }.start()
        }
        XCTAssertEqual(group.wait(timeout: .now() + 10), .success)
    }
}
