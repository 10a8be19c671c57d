@testable import DriveClient
import DriveEmulator
import DriveSupport
import Foundation
import TestSupport
import XCTest

/// The installed-app login end to end over real HTTP: the emulator's consent and token endpoints,
/// libcurl, and the loopback listener. The test plays the browser.
final class AuthLoginFlowTests: XCTestCase {
    private var emulator: Emulator!
    private var transport: CurlTransport!

    override func setUpWithError() throws {
        emulator = try Emulator(config: EmulatorConfig(port: 0))
        try emulator.start()
        transport = try CurlTransport(options: CurlTransport.Options(connectTimeout: 5, stallTimeout: 10))
    }

    override func tearDown() { emulator.stop() }

    private var endpoints: OAuthEndpoints {
        OAuthEndpoints(tokenURL: emulator.baseURL + "/token", authURL: emulator.baseURL + "/o/oauth2/v2/auth")
    }

    private func login(timeout: Double = 20) -> InstalledAppLogin {
        InstalledAppLogin(options: .init(clientID: "test-client", clientSecret: "test-secret",
                                         scopes: ["https://www.googleapis.com/auth/drive"], endpoints: endpoints, timeout: timeout),
                          transport: transport)
    }

    private var browser: TestBrowser { TestBrowser(transport: transport) }

    /// `token` requests the emulator counted. Stats are counted once a response is written, so wait
    /// (bounded) for the count to reach `expected` before reading it.
    private func tokenRequests(expecting expected: Int = 0) -> Int {
        let count = { self.emulator.stats().methods["token"]?.requests ?? 0 }
        waitUntil("\(expected) token requests, have \(count())", timeout: 10) { count() >= expected }
        return count()
    }

    func testLoginEndToEndThenRefresh() throws {
        let page = Locked<(status: Int, body: String)?>(nil)
        let authURL = Locked<String?>(nil)
        let browser = self.browser
        let browserDone = DispatchSemaphore(value: 0)
        let result = try login().run(announce: { url in
            authURL.withLock { $0 = url }
            Thread {
                defer { browserDone.signal() }
                do {
                    let location = try browser.consent(url)
                    // A stray request first (browsers ask for a favicon): answered 404, the listener stays open.
                    let port = URLComponents(string: location)!.port!
                    let stray = try browser.transport.perform(TransportRequest(method: "GET", url: "http://127.0.0.1:\(port)/favicon.ico"))
                    XCTAssertEqual(stray.status, 404)
                    let r = try browser.deliver(location)
                    page.withLock { $0 = (r.status, String(decoding: r.body, as: UTF8.self)) }
                } catch { XCTFail("browser: \(error)") }
            }.start()
        })
        XCTAssertTrue(result.refreshToken.hasPrefix("1//"))
        XCTAssertEqual(result.scopes, ["https://www.googleapis.com/auth/drive"])
        XCTAssertTrue(result.accessToken.value.hasPrefix("ya29."))

        let sent = try XCTUnwrap(authURL.withLock { $0 })
        let params = LoopbackListener.queryParameters(of: sent)
        XCTAssertEqual(params["response_type"], "code")
        XCTAssertEqual(params["access_type"], "offline")
        XCTAssertEqual(params["prompt"], "consent")
        XCTAssertEqual(params["code_challenge_method"], "S256")
        XCTAssertEqual(params["code_challenge"]?.count, 43)
        XCTAssertGreaterThanOrEqual(params["state"]?.count ?? 0, 32)
        XCTAssertTrue(params["redirect_uri"]?.hasPrefix("http://127.0.0.1:") == true)
        XCTAssertEqual(params["scope"], "https://www.googleapis.com/auth/drive")

        // The browser got the closing page; the listener is gone (one-shot).
        XCTAssertEqual(browserDone.wait(timeout: .now() + 20), .success, "the browser got its page")
        XCTAssertEqual(page.withLock { $0?.status }, 200)
        XCTAssertTrue(page.withLock { $0?.body ?? "" }.contains("You may close this tab"))
        let port = URLComponents(string: params["redirect_uri"]!)!.port!
        XCTAssertThrowsError(try transport.perform(TransportRequest(method: "GET", url: "http://127.0.0.1:\(port)/")))

        // The refresh token works with the same client.
        let grant = RefreshTokenGrant(tokenURL: endpoints.tokenURL, clientID: "test-client", clientSecret: "test-secret",
                                      refreshToken: result.refreshToken, transport: transport)
        XCTAssertTrue(try grant.fetchToken().value.hasPrefix("ya29."))
    }

    func testWrongStateIsRejectedAndNothingIsExchanged() throws {
        let page = Locked<Int?>(nil)
        let browser = self.browser
        let browserDone = DispatchSemaphore(value: 0)
        XCTAssertThrowsError(try login().run(announce: { url in
            Thread {
                defer { browserDone.signal() }
                do {
                    let location = try browser.consent(url)
                    var c = URLComponents(string: location)!
                    c.queryItems = c.queryItems!.map { $0.name == "state" ? URLQueryItem(name: "state", value: "forged-state") : $0 }
                    let r = try browser.deliver(c.string!)
                    page.withLock { $0 = r.status }
                } catch { XCTFail("browser: \(error)") }
            }.start()
        })) { error in
            XCTAssertEqual(error as? OAuthError, .stateMismatch)
        }
        XCTAssertEqual(browserDone.wait(timeout: .now() + 20), .success, "the browser got its page")
        XCTAssertEqual(page.withLock { $0 }, 400, "the browser is told it failed")
        XCTAssertEqual(tokenRequests(), 0, "no code exchange after a state mismatch")
    }

    func testWrongPKCEVerifierIsRejectedByTheEmulator() throws {
        let flow = login()
        let sentWith = PKCE()
        let redirect = "http://127.0.0.1:1/"
        let location = try browser.consent(flow.authorizationURL(redirectURI: redirect, pkce: sentWith, state: "s"))
        let params = LoopbackListener.queryParameters(of: location)
        XCTAssertThrowsError(try flow.complete(params, expectedState: "s", redirectURI: redirect, pkce: PKCE())) { error in
            XCTAssertEqual(error as? OAuthError, .invalidGrant(description: "Invalid code verifier."))
            XCTAssertFalse("\(error)".contains(params["code"]!), "the code never appears in an error")
        }
        XCTAssertEqual(tokenRequests(expecting: 1), 1)
        // The right verifier could have worked, but the code is spent now.
        XCTAssertThrowsError(try flow.complete(params, expectedState: "s", redirectURI: redirect, pkce: sentWith))
    }

    func testPastedRedirectURLCompletesTheLogin() throws {
        let pasted = Locked<String?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let browser = self.browser
        let result = try login().run(announce: { url in
            Thread {
                pasted.withLock { $0 = try? browser.consent(url) }
                ready.signal()
            }.start()
        }, pastedURL: {
            ready.wait()
            return pasted.withLock { $0 }.map { "  " + $0 + "\n" }
        })
        XCTAssertTrue(result.refreshToken.hasPrefix("1//"))
    }

    /// A pasted URL from another sign-in (wrong state) is reported and ignored; the login goes on.
    func testPastedURLWithTheWrongStateIsIgnoredAndTheLoginGoesOn() throws {
        let pasted = Locked<String?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let browser = self.browser
        let notices = Locked<[String]>([])
        let calls = Locked(0)
        let result = try login().run(announce: { url in
            Thread {
                pasted.withLock { $0 = try? browser.consent(url) }
                ready.signal()
            }.start()
        }, pastedURL: {
            let call = calls.withLock { c -> Int in c += 1; return c }
            switch call {
            case 1: return "http://127.0.0.1:1/?state=stale-state&code=4/stale&scope=drive"
            case 2: return "just some text"
            default:
                ready.wait()
                return pasted.withLock { $0 }
            }
        }, notice: { text in notices.withLock { $0.append(text) } })
        XCTAssertTrue(result.refreshToken.hasPrefix("1//"))
        XCTAssertEqual(notices.withLock { $0 }, [InstalledAppLogin.wrongStateNotice, InstalledAppLogin.notARedirectNotice])
        XCTAssertEqual(tokenRequests(expecting: 1), 1, "only the right code was exchanged")
    }

    func testDeniedConsentAndTimeout() throws {
        let flow = login(timeout: 0.5)
        XCTAssertThrowsError(try flow.complete(["state": "s", "error": "access_denied"], expectedState: "s", redirectURI: "x", pkce: PKCE())) {
            XCTAssertEqual($0 as? OAuthError, .authorizationDenied("access_denied"))
        }
        let started = Date()
        XCTAssertThrowsError(try flow.run(announce: { _ in })) { XCTAssertEqual($0 as? OAuthError, .loginTimedOut(seconds: 0)) }
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
    }

    /// The login's deadline is on the injected clock: no real waiting for a 300 s timeout.
    func testLoginTimeoutFollowsTheInjectedClock() throws {
        let clock = ManualTimeSource()
        let flow = InstalledAppLogin(options: .init(clientID: "test-client", clientSecret: nil, scopes: ["https://www.googleapis.com/auth/drive"],
                                                    endpoints: endpoints, timeout: 300), transport: transport, clock: clock)
        let started = Date()
        XCTAssertThrowsError(try flow.run(announce: { _ in clock.advance(301) })) {
            XCTAssertEqual($0 as? OAuthError, .loginTimedOut(seconds: 300))
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "ended by the manual clock, not by 300 real seconds")
    }

    func testBrowserOpenerGetsTheSameURL() throws {
        let opened = Locked<[String]>([])
        let announced = Locked<[String]>([])
        _ = try? login(timeout: 0.3).run(announce: { url in announced.withLock { $0.append(url) } },
                                          openBrowser: { url in opened.withLock { $0.append(url) } })
        XCTAssertEqual(opened.withLock { $0 }, announced.withLock { $0 })
        XCTAssertEqual(opened.withLock { $0 }.count, 1)
    }
}

/// Plays the browser: fetches the consent URL without following its redirect, then delivers the
/// redirect to the loopback listener.
struct TestBrowser: Sendable {
    let transport: CurlTransport

    /// GETs the consent URL; returns its `Location`.
    func consent(_ url: String) throws -> String {
        let r = try transport.perform(TransportRequest(method: "GET", url: url))
        XCTAssertEqual(r.status, 302, String(decoding: r.body, as: UTF8.self))
        return try XCTUnwrap(r.headers["location"])
    }

    func deliver(_ location: String) throws -> TransportResponse {
        try transport.perform(TransportRequest(method: "GET", url: location))
    }
}
