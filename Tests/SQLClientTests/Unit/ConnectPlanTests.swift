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
