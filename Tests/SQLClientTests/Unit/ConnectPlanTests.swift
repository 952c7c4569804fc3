import XCTest
import TDS
@testable import SQLClient

/// The decisions between login attempts: one redirect, transient-error retries inside the budget.
final class ConnectPlanTests: XCTestCase {
    func loginFailed(_ number: Int32) -> SQLClientError {
        let m = SQLServerMessage(number: number, state: 1, severity: 20, message: "error \(number)", isError: true)
        return SQLClientError(.loginFailed, m.message, serverMessage: m)
    }

    func testOneRedirectIsFollowedWithTheRoutedNameAndASecondIsRefused() {
        var plan = ConnectPlan(host: "listener", port: 1433, serverName: "listener", policy: SQLConnectRetryPolicy())
        let first = plan.next(after: .routed(EnvChange.Routing(port: 11_433, server: #"replica1\SQL2"#)), remaining: .seconds(10))
        XCTAssertEqual(first, .follow(.init(host: "replica1", port: 11_433, serverName: #"replica1\SQL2"#, routed: true)))
        guard case .fail(let error) = plan.next(after: .routed(EnvChange.Routing(port: 1, server: "x")), remaining: .seconds(10)) else {
            return XCTFail("a second redirect was followed")
        }
        XCTAssertEqual(error.code, .protocolError)
        XCTAssertTrue(error.message.contains("only one redirection per login"), error.message)
        XCTAssertEqual(plan.next(after: .connected, remaining: .seconds(1)), .done)
    }

    func testMalformedRoutingTargets() {
        for routing in [EnvChange.Routing(port: 0, server: "h"), EnvChange.Routing(port: 1, server: ""),
                        EnvChange.Routing(protocol: 1, port: 1, server: "h"), EnvChange.Routing(port: 1, server: #"\inst"#)] {
            var plan = ConnectPlan(host: "h", port: 1433, serverName: "h", policy: SQLConnectRetryPolicy())
            guard case .fail(let e) = plan.next(after: .routed(routing), remaining: .seconds(10)) else { return XCTFail("\(routing)") }
            XCTAssertEqual(e.code, .protocolError)
        }
    }

    /// A routing ENVCHANGE names up to 65,535 characters: a host longer than a DNS name (253
    /// bytes) or an instance over 255 is a protocol error that does not echo it; 253 is followed.
    func testRoutedHostLongerThanADNSNameIsRefusedWithoutEchoingIt() {
        var plan = ConnectPlan(host: "h", port: 1433, serverName: "h", policy: SQLConnectRetryPolicy())
        let long = String(repeating: "h", count: 10_000)
        guard case .fail(let e) = plan.next(after: .routed(EnvChange.Routing(port: 1433, server: long + #"\inst"#)),
                                             remaining: .seconds(10)) else { return XCTFail("followed") }
        XCTAssertEqual(e.code, .protocolError)
        XCTAssertEqual(e.message, "the server redirected the login to a server name of 10005 bytes "
                       + "(a DNS name has at most 253, an instance name 255)")
        var fits = ConnectPlan(host: "h", port: 1433, serverName: "h", policy: SQLConnectRetryPolicy())
        let name = String(repeating: "a", count: 253)
        XCTAssertEqual(fits.next(after: .routed(EnvChange.Routing(port: 1433, server: name)), remaining: .seconds(10)),
                       .follow(.init(host: name, port: 1433, serverName: name, routed: true)))
        // A second redirect to a long instance name: refused for its length, still not echoed.
        guard case .fail(let again) = fits.next(after: .routed(EnvChange.Routing(port: 1, server: "h\\" + long)), remaining: .seconds(10))
        else { return XCTFail("followed") }
        XCTAssertFalse(again.message.contains(long), again.message)
    }

    func testTransientErrorsAreRetriedCountTimesInsideTheBudget() {
        var plan = ConnectPlan(host: "db", port: 1433, serverName: "db",
                               policy: SQLConnectRetryPolicy(count: 2, interval: .seconds(1)))
        XCTAssertEqual(plan.next(after: .failed(loginFailed(40613)), remaining: .seconds(10)), .retry(after: .seconds(1)))
        XCTAssertEqual(plan.next(after: .failed(loginFailed(4060)), remaining: .seconds(8)), .retry(after: .seconds(1)))
        XCTAssertEqual(plan.next(after: .failed(loginFailed(40613)), remaining: .seconds(6)), .fail(loginFailed(40613)))
    }

    func testNonTransientErrorsAndAShortBudgetAreNotRetried() {
        var plan = ConnectPlan(host: "db", port: 1433, serverName: "db", policy: SQLConnectRetryPolicy(count: 5, interval: .seconds(10)))
        XCTAssertEqual(plan.next(after: .failed(loginFailed(18456)), remaining: .seconds(60)), .fail(loginFailed(18456)))
        XCTAssertEqual(plan.next(after: .failed(loginFailed(49918)), remaining: .seconds(60)), .fail(loginFailed(49918)))
        XCTAssertEqual(plan.next(after: .failed(loginFailed(40613)), remaining: .seconds(10)), .fail(loginFailed(40613)),
                       "less than the interval left")
        let refused = SQLClientError(.connectionFailed, "refused")
        XCTAssertEqual(plan.next(after: .failed(refused), remaining: .seconds(60)), .fail(refused))
        // Opt-in numbers are retried once added.
        var optIn = ConnectPlan(host: "db", port: 1433, serverName: "db", policy: SQLConnectRetryPolicy(
            count: 1, interval: .seconds(1), errorNumbers: SQLConnectRetryPolicy.transientErrorNumbers.union(SQLConnectRetryPolicy.optInErrorNumbers)))
        XCTAssertEqual(optIn.next(after: .failed(loginFailed(49918)), remaining: .seconds(60)), .retry(after: .seconds(1)))
        // Count 0: never.
        var none = ConnectPlan(host: "db", port: 1433, serverName: "db", policy: SQLConnectRetryPolicy(count: 0))
        XCTAssertEqual(none.next(after: .failed(loginFailed(40613)), remaining: .seconds(60)), .fail(loginFailed(40613)))
    }
}
