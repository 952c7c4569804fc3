import XCTest
@testable import SQLClient
import TDS

/// The pool's decisions without I/O or a clock: each test feeds events with times of its own and
/// checks the actions.
final class PoolStateMachineTests: XCTestCase {
    typealias Machine = PoolStateMachine

    static func machine(max: Int = 2, min: Int = 0, leaseTimeout: Duration = .seconds(10),
                        idle: Duration? = nil, lifetime: Duration? = nil, validation: Duration? = nil,
                        pooling: Bool = true, closeTimeout: Duration = .seconds(30)) -> Machine {
        let options = SQLConnectionPool.Options(pooling: pooling, minimumConnections: min, maximumConnections: max,
                                                leaseTimeout: leaseTimeout, idleTimeout: idle, maximumLifetime: lifetime,
                                                validationThreshold: validation, closeTimeout: closeTimeout)
        return Machine(options: options, leaseTimeout: leaseTimeout)
    }

    /// A compact, comparable spelling of actions.
    static func describe(_ actions: [Machine.Action]) -> [String] {
        actions.map { action in
            switch action {
            case .lend(let lease, let id, let reset, let validate):
                return "lend \(lease)→c\(id)" + (reset ? " reset" : "") + (validate ? " validate" : "")
            case .failLease(let lease, let error): return "fail \(lease) \(error.code)"
            case .connect(let id): return "connect c\(id)"
            case .close(let id, let reason): return "close c\(id) \(reason)"
            case .shutdownComplete: return "shutdown"
            }
        }
    }

    func at(_ seconds: Double) -> Duration { .milliseconds(Int64(seconds * 1000)) }

    // MARK: - Leasing

    func testFirstLeaseOpensAConnectionAndGetsItWithoutReset() {
        var m = Self.machine()
        XCTAssertEqual(Self.describe(m.start(now: .zero)), [])
        XCTAssertEqual(Self.describe(m.leaseRequested(1, now: .zero)), ["connect c1"])
        XCTAssertEqual(m.waiters.map(\.id), [1])
        XCTAssertEqual(Self.describe(m.connected(1, now: at(0.2))), ["lend 1→c1"])
        XCTAssertEqual(m.counters.created, 1)
        XCTAssertEqual(m.counters.leaseWaitTotal, at(0.2))
        XCTAssertEqual(m.leasedCount, 1)
    }

    func testReturnedConnectionIsLentAgainWithResetOnlyOnce() {
        var m = Self.machine()
        _ = m.leaseRequested(1, now: .zero)
        _ = m.connected(1, now: .zero)
        XCTAssertEqual(Self.describe(m.released(1, health: .reusable, now: at(1))), [])
        XCTAssertEqual(m.idleCount, 1)
        XCTAssertEqual(Self.describe(m.leaseRequested(2, now: at(2))), ["lend 2→c1 reset"])
        // Returned without having been used by anyone else since: still one reset per return.
        _ = m.released(1, health: .reusable, now: at(3))
        XCTAssertEqual(Self.describe(m.leaseRequested(3, now: at(4))), ["lend 3→c1 reset"])
        XCTAssertEqual(m.counters.created, 1, "one connection served all three")
    }

    func testWaitersAreServedInRequestOrderWithinTheMaximum() {
        var m = Self.machine(max: 2)
        XCTAssertEqual(Self.describe(m.leaseRequested(1, now: .zero)), ["connect c1"])
        XCTAssertEqual(Self.describe(m.leaseRequested(2, now: .zero)), ["connect c2"])
        XCTAssertEqual(Self.describe(m.leaseRequested(3, now: .zero)), [], "the maximum is reached: no third connection")
        XCTAssertEqual(Self.describe(m.leaseRequested(4, now: .zero)), [])
        // The second connection logs in first: it goes to the first waiter.
        XCTAssertEqual(Self.describe(m.connected(2, now: at(0.1))), ["lend 1→c2"])
        XCTAssertEqual(Self.describe(m.connected(1, now: at(0.1))), ["lend 2→c1"])
        XCTAssertEqual(Self.describe(m.released(1, health: .reusable, now: at(1))), ["lend 3→c1 reset"])
        XCTAssertEqual(Self.describe(m.released(2, health: .reusable, now: at(1))), ["lend 4→c2 reset"])
        XCTAssertEqual(m.waiters.count, 0)
    }

    func testANewRequestDoesNotOvertakeAWaiter() {
        var m = Self.machine(max: 1)
        _ = m.leaseRequested(1, now: .zero)
        _ = m.connected(1, now: .zero)
        _ = m.leaseRequested(2, now: .zero)
        // Connection 1 comes back: it goes to lease 2, not to lease 3 requested right after.
        XCTAssertEqual(Self.describe(m.released(1, health: .reusable, now: at(1))), ["lend 2→c1 reset"])
        XCTAssertEqual(Self.describe(m.leaseRequested(3, now: at(1))), [])
        XCTAssertEqual(m.waiters.map(\.id), [3])
    }

    func testIdleConnectionsAreAStackTheMostRecentlyReturnedFirst() {
        var m = Self.machine(max: 2)
        _ = m.leaseRequested(1, now: .zero)
        _ = m.leaseRequested(2, now: .zero)
        _ = m.connected(1, now: .zero)
        _ = m.connected(2, now: .zero)
        _ = m.released(1, health: .reusable, now: at(1))
        _ = m.released(2, health: .reusable, now: at(2))
        XCTAssertEqual(Self.describe(m.leaseRequested(3, now: at(3))), ["lend 3→c2 reset"])
    }

    func testLeaseTimeoutFailsTheWaiterWithTimeoutAndCountsIt() {
        var m = Self.machine(max: 1, leaseTimeout: .seconds(5))
        _ = m.leaseRequested(1, now: .zero)
        _ = m.connected(1, now: .zero)
        _ = m.leaseRequested(2, now: at(1))
        XCTAssertEqual(m.nextDeadline, at(6))
        XCTAssertEqual(Self.describe(m.tick(now: at(5.9))), [])
        let actions = m.tick(now: at(6))
        XCTAssertEqual(Self.describe(actions), ["fail 2 timeout"])
        if case .failLease(_, let error) = actions.first {
            XCTAssertTrue(error.message.contains("1 of at most 1 connections lent"), error.message)
        }
        XCTAssertEqual(m.counters.leaseTimeouts, 1)
        XCTAssertNil(m.nextDeadline)
    }

    func testZeroLeaseTimeoutFailsAtOnceWhenNothingIsFree() {
        var m = Self.machine(max: 1, leaseTimeout: .zero)
        XCTAssertEqual(Self.describe(m.leaseRequested(1, now: .zero)), ["connect c1", "fail 1 timeout"])
        _ = m.connected(1, now: .zero)
        XCTAssertEqual(Self.describe(m.leaseRequested(2, now: .zero)), ["lend 2→c1"])
    }

    func testCancelledWaiterLeavesTheQueue() {
        var m = Self.machine(max: 1)
        _ = m.leaseRequested(1, now: .zero)
        _ = m.connected(1, now: .zero)
        _ = m.leaseRequested(2, now: .zero)
        _ = m.leaseRequested(3, now: .zero)
        XCTAssertEqual(Self.describe(m.leaseCancelled(2, now: at(1))), ["fail 2 cancelled"])
        XCTAssertEqual(Self.describe(m.leaseCancelled(2, now: at(1))), [], "once")
        XCTAssertEqual(Self.describe(m.leaseCancelled(1, now: at(1))), [], "a lent lease is not cancelled here")
        XCTAssertEqual(Self.describe(m.released(1, health: .reusable, now: at(2))), ["lend 3→c1 reset"])
    }

    // MARK: - Health

    func testBrokenConnectionIsDiscardedAndReplacedForTheNextWaiter() {
        var m = Self.machine(max: 1)
        _ = m.leaseRequested(1, now: .zero)
        _ = m.connected(1, now: .zero)
        _ = m.leaseRequested(2, now: .zero)
        XCTAssertEqual(Self.describe(m.released(1, health: .broken, now: at(1))), ["close c1 broken"])
        XCTAssertEqual(m.counters.discarded, 1)
        // It still counts against the maximum until it is closed.
        XCTAssertEqual(Self.describe(m.tick(now: at(1))), [])
        XCTAssertEqual(Self.describe(m.closed(1, now: at(1.1))), ["connect c2"])
        XCTAssertEqual(Self.describe(m.connected(2, now: at(1.2))), ["lend 2→c2"])
    }

    func testConnectionReturnedInATransactionIsClosedNotLent() {
        var m = Self.machine(max: 2)
        _ = m.leaseRequested(1, now: .zero)
        _ = m.connected(1, now: .zero)
        XCTAssertEqual(Self.describe(m.released(1, health: .inTransaction, now: at(1))), ["close c1 inTransaction"])
        XCTAssertEqual(Self.describe(m.leaseRequested(2, now: at(1))), ["connect c2"])
        XCTAssertEqual(m.counters.discarded, 1)
    }

    func testLendFailedPutsTheLeaseBackAtTheHeadWithItsDeadline() {
        var m = Self.machine(max: 2, leaseTimeout: .seconds(10), validation: .seconds(60))
        _ = m.leaseRequested(1, now: .zero)
        _ = m.leaseRequested(2, now: .zero)
        _ = m.connected(1, now: .zero)
        _ = m.connected(2, now: .zero)
        _ = m.released(1, health: .reusable, now: at(1))
        _ = m.released(2, health: .reusable, now: at(1))
        // Idle for more than the threshold: validate.
        XCTAssertEqual(Self.describe(m.leaseRequested(3, now: at(100))), ["lend 3→c2 reset validate"])
        _ = m.leaseRequested(4, now: at(100))   // gets c1
        _ = m.leaseRequested(5, now: at(101))   // waits
        XCTAssertEqual(Self.describe(m.lendFailed(3, 2, .validationFailed, now: at(101))), ["close c2 validationFailed"])
        XCTAssertEqual(m.waiters.map(\.id), [3, 5], "lease 3 is first again")
        XCTAssertEqual(m.waiters.first?.deadline, at(110))
        XCTAssertEqual(Self.describe(m.closed(2, now: at(101))), ["connect c3"])
        XCTAssertEqual(Self.describe(m.connected(3, now: at(102))), ["lend 3→c3"])
        XCTAssertEqual(m.counters.discarded, 1)
    }

    func testLendFailedPastTheDeadlineTimesOut() {
        var m = Self.machine(max: 1, leaseTimeout: .seconds(1))
        _ = m.leaseRequested(1, now: .zero)
        _ = m.connected(1, now: .zero)
        XCTAssertEqual(Self.describe(m.lendFailed(1, 1, .closed, now: at(2))), ["close c1 broken", "fail 1 timeout"])
    }

    // MARK: - The check at lease (issue 44)

    func testConnectionDroppedWhileIdleIsDiscardedAndTheLeaseTakesTheNextIdleOne() {
        var m = Self.machine(max: 3)
        for lease in 1 ... 3 { _ = m.leaseRequested(UInt64(lease), now: .zero) }
        for id in 1 ... 3 { _ = m.connected(id, now: .zero) }
        for id in 1 ... 3 { _ = m.released(id, health: .reusable, now: at(1)) }
        XCTAssertEqual(m.idleStack, [1, 2, 3])
        // The most recent (c3) is lent; its socket shows a RST: discarded, lease 4 goes on with c2 at once.
        XCTAssertEqual(Self.describe(m.leaseRequested(4, now: at(5))), ["lend 4→c3 reset"])
        XCTAssertEqual(Self.describe(m.lendFailed(4, 3, .droppedWhileIdle, now: at(5))),
                       ["close c3 droppedWhileIdle", "lend 4→c2 reset"])
        XCTAssertEqual(m.counters.discardedAtLease, 1)
        XCTAssertEqual(m.counters.discarded, 1, "counted among the discarded too")
        XCTAssertEqual(m.counters.expired, 0)
        XCTAssertEqual(m.counters.leases, 5, "a lease served again counts twice")
        // c2 dropped as well: then c1.
        XCTAssertEqual(Self.describe(m.lendFailed(4, 2, .droppedWhileIdle, now: at(5))),
                       ["close c2 droppedWhileIdle", "lend 4→c1 reset"])
        XCTAssertEqual(m.counters.discardedAtLease, 2)
        XCTAssertEqual(m.closingCount, 2)
        XCTAssertEqual(m.idleCount, 0)
        XCTAssertEqual(m.leasedCount, 1)
        XCTAssertEqual(Self.describe(m.closed(3, now: at(5))), [])
        XCTAssertEqual(Self.describe(m.closed(2, now: at(5))), [])
        XCTAssertEqual(Self.describe(m.released(1, health: .reusable, now: at(6))), [])
        XCTAssertEqual(m.counters.created, 3, "nothing new was opened while idle ones were left")
    }

    func testConnectionDroppedWhileIdleWithNoOtherIdleOneOpensANewOneWithinTheLeaseTimeout() {
        var m = Self.machine(max: 1, leaseTimeout: .seconds(10))
        _ = m.leaseRequested(1, now: .zero)
        _ = m.connected(1, now: .zero)
        _ = m.released(1, health: .reusable, now: at(1))
        XCTAssertEqual(Self.describe(m.leaseRequested(2, now: at(30))), ["lend 2→c1 reset"])
        // The maximum is 1 and c1 still counts while it closes: the new one is opened once c1 is closed.
        XCTAssertEqual(Self.describe(m.lendFailed(2, 1, .droppedWhileIdle, now: at(30))), ["close c1 droppedWhileIdle"])
        XCTAssertEqual(m.waiters.map(\.id), [2])
        XCTAssertEqual(m.waiters.first?.deadline, at(40), "the lease keeps its own deadline")
        XCTAssertEqual(m.nextDeadline, at(40))
        XCTAssertEqual(Self.describe(m.closed(1, now: at(30.01))), ["connect c2"])
        XCTAssertEqual(Self.describe(m.connected(2, now: at(30.5))), ["lend 2→c2"], "a new connection: no reset")
        XCTAssertEqual(m.counters.discardedAtLease, 1)
        XCTAssertEqual(m.counters.leaseTimeouts, 0)
    }

    func testConnectionDroppedWhileIdlePastTheLeaseDeadlineTimesOutTheLease() {
        var m = Self.machine(max: 1, leaseTimeout: .seconds(1))
        _ = m.leaseRequested(1, now: .zero)
        _ = m.connected(1, now: .zero)
        _ = m.released(1, health: .reusable, now: at(0.1))
        _ = m.leaseRequested(2, now: at(1))
        XCTAssertEqual(Self.describe(m.lendFailed(2, 1, .droppedWhileIdle, now: at(2.5))),
                       ["close c1 droppedWhileIdle", "fail 2 timeout"])
        XCTAssertEqual(m.counters.discardedAtLease, 1)
        XCTAssertEqual(m.counters.leaseTimeouts, 1)
    }

    func testOnlyTheDroppedReasonCountsAsDiscardedAtLease() {
        var m = Self.machine(max: 2, validation: .seconds(1))
        _ = m.leaseRequested(1, now: .zero)
        _ = m.leaseRequested(2, now: .zero)
        _ = m.connected(1, now: .zero)
        _ = m.connected(2, now: .zero)
        _ = m.released(1, health: .reusable, now: .zero)
        _ = m.released(2, health: .reusable, now: .zero)
        _ = m.leaseRequested(3, now: at(5))
        XCTAssertEqual(Self.describe(m.lendFailed(3, 2, .validationFailed, now: at(5))),
                       ["close c2 validationFailed", "lend 3→c1 reset validate"])
        XCTAssertEqual(Self.describe(m.lendFailed(3, 1, .closed, now: at(5))), ["close c1 broken"])
        XCTAssertEqual(m.counters.discarded, 2)
        XCTAssertEqual(m.counters.discardedAtLease, 0)
        XCTAssertTrue(Machine.CloseReason.droppedWhileIdle.isDiscard)
    }

    func testConnectFailureFailsTheWaiterWithTheConnectError() {
        var m = Self.machine(max: 1)
        _ = m.leaseRequested(1, now: .zero)
        let refused = SQLClientError(.loginFailed, "Login failed for user 'x'.")
        XCTAssertEqual(Self.describe(m.connectFailed(1, refused, now: at(0.1))), ["fail 1 loginFailed"])
        XCTAssertEqual(m.counters.connectFailures, 1)
        XCTAssertEqual(m.slots.count, 0)
        // The next lease tries again.
        XCTAssertEqual(Self.describe(m.leaseRequested(2, now: at(0.2))), ["connect c2"])
    }

    func testConnectFailureWithAnotherConnectionOpeningKeepsTheWaiter() {
        var m = Self.machine(max: 2)
        _ = m.leaseRequested(1, now: .zero)   // c1
        _ = m.leaseRequested(2, now: .zero)   // c2
        // Lease 1 gets the error (in order); lease 2 keeps waiting for c2, so nothing new is opened.
        XCTAssertEqual(Self.describe(m.connectFailed(1, SQLClientError(.connectionFailed, "refused"), now: at(0.1))),
                       ["fail 1 connectionFailed"])
        XCTAssertEqual(Self.describe(m.connected(2, now: at(0.2))), ["lend 2→c2"])
    }

    // MARK: - Minimum, idle timeout, lifetime

    func testMinimumIsOpenedAtStartAndKeptThroughIdleTimeout() {
        var m = Self.machine(max: 4, min: 2, idle: .seconds(60))
        XCTAssertEqual(Self.describe(m.start(now: .zero)), ["connect c1", "connect c2"])
        _ = m.connected(1, now: .zero)
        _ = m.connected(2, now: .zero)
        _ = m.leaseRequested(1, now: .zero)
        _ = m.leaseRequested(2, now: .zero)
        _ = m.leaseRequested(3, now: .zero)   // opens c3
        _ = m.connected(3, now: .zero)
        for id in [2, 1, 3] { _ = m.released(id, health: .reusable, now: at(1)) }
        XCTAssertEqual(m.idleCount, 3)
        XCTAssertEqual(m.nextDeadline, at(61))
        // Past the idle timeout only the one above the minimum closes, oldest idle first.
        XCTAssertEqual(Self.describe(m.tick(now: at(61))), ["close c2 idleTimeout"])
        XCTAssertEqual(m.counters.expired, 1)
        _ = m.closed(2, now: at(61))
        XCTAssertEqual(Self.describe(m.tick(now: at(200))), [])
        XCTAssertEqual(m.openCount, 2)
        XCTAssertNil(m.nextDeadline, "at the minimum nothing is timed")
    }

    func testMinimumIsRefilledAfterADiscard() {
        var m = Self.machine(max: 2, min: 2)
        _ = m.start(now: .zero)
        _ = m.connected(1, now: .zero)
        _ = m.connected(2, now: .zero)
        _ = m.leaseRequested(1, now: .zero)
        XCTAssertEqual(Self.describe(m.released(2, health: .broken, now: at(1))), ["close c2 broken"])
        XCTAssertEqual(Self.describe(m.closed(2, now: at(1))), ["connect c3"])
    }

    func testFailedBackgroundConnectRetriesAfterAGrowingDelay() {
        var m = Self.machine(max: 2, min: 1)
        XCTAssertEqual(Self.describe(m.start(now: .zero)), ["connect c1"])
        XCTAssertEqual(Self.describe(m.connectFailed(1, SQLClientError(.connectionFailed, "refused"), now: .zero)), [])
        XCTAssertEqual(m.nextDeadline, at(0.5))
        XCTAssertEqual(Self.describe(m.tick(now: at(0.4))), [])
        XCTAssertEqual(Self.describe(m.tick(now: at(0.5))), ["connect c2"])
        _ = m.connectFailed(2, SQLClientError(.connectionFailed, "refused"), now: at(0.5))
        XCTAssertEqual(m.nextDeadline, at(1.5), "doubled")
        XCTAssertEqual(Self.describe(m.tick(now: at(1.5))), ["connect c3"])
        _ = m.connected(3, now: at(1.6))
        XCTAssertNil(m.nextDeadline)
    }

    func testLifetimeClosesOnReturnAndWhenIdle() {
        var m = Self.machine(max: 2, lifetime: .seconds(10))
        _ = m.leaseRequested(1, now: .zero)
        _ = m.leaseRequested(2, now: .zero)
        _ = m.connected(1, now: .zero)
        _ = m.connected(2, now: at(5))
        XCTAssertEqual(Self.describe(m.released(1, health: .reusable, now: at(11))), ["close c1 lifetime"])
        XCTAssertEqual(Self.describe(m.released(2, health: .reusable, now: at(11))), [])
        XCTAssertEqual(m.nextDeadline, at(15))
        XCTAssertEqual(Self.describe(m.tick(now: at(15))), ["close c2 lifetime"])
        XCTAssertEqual(m.counters.expired, 2)
    }

    func testPoolingOffClosesEveryReturnedConnection() {
        var m = Self.machine(max: 2, pooling: false)
        _ = m.leaseRequested(1, now: .zero)
        _ = m.connected(1, now: .zero)
        XCTAssertEqual(Self.describe(m.released(1, health: .reusable, now: at(1))), ["close c1 poolingOff"])
        XCTAssertEqual(Self.describe(m.leaseRequested(2, now: at(1))), ["connect c2"])
        XCTAssertEqual(m.counters.discarded, 0)
        XCTAssertEqual(m.counters.expired, 0)
    }

    // MARK: - Shutdown

    func testCloseFailsWaitersClosesIdleAndWaitsForLentOnes() {
        var m = Self.machine(max: 2, closeTimeout: .seconds(30))
        _ = m.leaseRequested(1, now: .zero)
        _ = m.leaseRequested(2, now: .zero)
        _ = m.connected(1, now: .zero)
        _ = m.connected(2, now: .zero)
        _ = m.released(2, health: .reusable, now: at(1))
        _ = m.leaseRequested(3, now: at(1))   // gets c2
        _ = m.leaseRequested(4, now: at(1))   // waits
        XCTAssertEqual(Self.describe(m.closeRequested(now: at(2))), ["fail 4 connectionClosed"])
        XCTAssertEqual(Self.describe(m.leaseRequested(5, now: at(2))), ["fail 5 connectionClosed"])
        XCTAssertEqual(Self.describe(m.released(1, health: .reusable, now: at(3))), ["close c1 shutdown"])
        XCTAssertEqual(Self.describe(m.closed(1, now: at(3))), [])
        XCTAssertEqual(m.nextDeadline, at(32))
        // Lease 3 never comes back: at the bound its connection is closed under it.
        XCTAssertEqual(Self.describe(m.tick(now: at(32))), ["close c2 shutdown"])
        XCTAssertEqual(Self.describe(m.released(2, health: .reusable, now: at(33))), [], "a late return is ignored")
        XCTAssertEqual(Self.describe(m.closed(2, now: at(33))), ["shutdown"])
        XCTAssertEqual(m.phase, .closed)
    }

    func testCloseWithAConnectionStillOpeningWaitsForIt() {
        var m = Self.machine(max: 2)
        _ = m.leaseRequested(1, now: .zero)
        XCTAssertEqual(Self.describe(m.closeRequested(now: .zero)), ["fail 1 connectionClosed"])
        XCTAssertEqual(Self.describe(m.connected(1, now: at(1))), ["close c1 shutdown"])
        XCTAssertEqual(Self.describe(m.closed(1, now: at(1))), ["shutdown"])
    }

    func testCloseOfAnEmptyPoolCompletesAtOnce() {
        var m = Self.machine()
        XCTAssertEqual(Self.describe(m.closeRequested(now: .zero)), ["shutdown"])
        XCTAssertEqual(Self.describe(m.closeRequested(now: .zero)), [])
    }

    // MARK: - Counts under churn

    func testTheMaximumHoldsWhateverTheOrderOfEvents() {
        var rng = SystemRandomNumberGenerator()
        var m = Self.machine(max: 3, min: 1, leaseTimeout: .seconds(2), idle: .seconds(3))
        var now = Duration.zero
        var connecting: [Int] = []
        var lent: [Int] = []
        var closing: [Int] = []
        var nextLease: UInt64 = 0
        func apply(_ actions: [Machine.Action]) {
            for a in actions {
                switch a {
                case .connect(let id): connecting.append(id)
                case .lend(_, let id, _, _): lent.append(id)
                case .close(let id, _): closing.append(id); lent.removeAll { $0 == id }
                default: break
                }
            }
        }
        apply(m.start(now: now))
        for _ in 0 ..< 5_000 {
            now += .milliseconds(Int64.random(in: 0 ... 200, using: &rng))
            switch Int.random(in: 0 ..< 6, using: &rng) {
            case 0, 1:
                nextLease += 1
                apply(m.leaseRequested(nextLease, now: now))
            case 2:
                if let id = connecting.popLast() {
                    apply(Bool.random(using: &rng) ? m.connected(id, now: now)
                          : m.connectFailed(id, SQLClientError(.connectionFailed, "x"), now: now))
                }
            case 3:
                if !lent.isEmpty {
                    let id = lent.remove(at: Int.random(in: 0 ..< lent.count, using: &rng))
                    let health: Machine.ReturnedHealth = [.reusable, .reusable, .broken, .inTransaction].randomElement(using: &rng)!
                    apply(m.released(id, health: health, now: now))
                }
            case 4:
                if let id = closing.popLast() { apply(m.closed(id, now: now)) }
            default:
                apply(m.tick(now: now))
            }
            XCTAssertLessThanOrEqual(m.slots.count, 3, "never more than the maximum, opening and closing included")
            XCTAssertEqual(m.openCount + m.connectingCount + m.closingCount, m.slots.count)
            if m.idleCount > 0 { XCTAssertTrue(m.waiters.isEmpty, "no waiter waits while a connection is idle") }
        }
    }
}
