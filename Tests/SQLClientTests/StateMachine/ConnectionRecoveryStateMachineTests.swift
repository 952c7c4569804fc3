import XCTest
@testable import SQLClient
import TDS

/// Idle connection recovery (SESSIONRECOVERY) in the connection state machine, as tables of
/// events and expected steps, with the injected clock (``ManualConnectionClock``): the retry
/// interval and the attempt budget are moved through by hand, nothing sleeps.
final class ConnectionRecoveryStateMachineTests: XCTestCase {
    typealias T = ConnectionStateMachineTests

    enum Event {
        /// The idle check found the connection dropped before request n's first byte.
        case lost(UInt64)
        /// The recovery login failed.
        case attemptFails
        /// The recovery login succeeded; `acknowledged`: its FEATUREEXTACK has SESSIONRECOVERY.
        case attemptSucceeds(acknowledged: Bool)
        /// The clock moves forward.
        case advance(Duration)
        /// The driver wakes from its wait.
        case retryDue
    }

    static func summary(_ step: RecoveryStep?) -> String {
        guard let step else { return "not due" }
        switch step {
        case .reconnect(let attempt, let feature):
            let states = feature.toBe.states.map { "\($0.id)" }.joined(separator: ",")
            return "reconnect(\(attempt); db \(feature.initial.database)→\(feature.toBe.database);"
                + " lang \(feature.toBe.language); states \(states))"
        case .wait(let until, let next): return "wait(until \(T.seconds(until)), next \(next))"
        case .recovered(let attempts, let duration, let session):
            return "recovered(\(attempts) attempts, \(T.seconds(duration)); db \(session.database), lang \(session.language))"
        case .failed(let error, let close):
            guard case .closeConnection = close else { return "failed(\(error.code)) without close" }
            return "failed(\(error.code) \(error.sessionRecoveryError?.reason.rawValue ?? "-"))"
        }
    }

    static func featureExtAck(_ states: [SessionState.State]) -> Token {
        var w = ByteWriter()
        SessionRecoveryData.encodeStates(states, into: &w)
        return .featureExtAck(FeatureExtAck(features: [.init(id: .sessionRecovery, data: w.bytes)]))
    }

    /// A connection logged in (database shop, us_english; the initial state list [0: 01]) that ran
    /// one request changing the database, the language and state 0, then started request 2.
    func machine(retryCount: Int = 3, interval: Duration = .seconds(10), acknowledged: Bool = true,
                 extraTokens: [Token] = []) -> ConnectionStateMachine {
        var m = ConnectionStateMachine(encryption: .notSupported, trustServerCertificate: false,
                                       recovery: ConnectionRecoveryStateMachine(retryCount: retryCount, interval: interval))
        if retryCount > 0 { m.sessionRecoveryRequested() }
        _ = m.connected(now: .zero)
        _ = m.preloginReceived(Prelogin(encryption: .notSupported))
        var login = [T.ack, T.env(.database, "shop", "master"), T.env(.language, "us_english")]
        if acknowledged { login.append(Self.featureExtAck([.init(id: 0, value: [1])])) }
        for token in login + [T.done([])] { _ = m.tokenReceived(token) }
        _ = m.messageEnded(now: .zero)
        XCTAssertEqual(m.state, .ready)
        _ = m.enqueue(RequestID(value: 1), timeout: nil, now: .zero)
        _ = m.packetsWritten(RequestID(value: 1), complete: true)
        let changes: [Token] = [
            T.env(.database, "archive", "shop"), T.env(.language, "Deutsch", "us_english"),
            .sessionState(SessionState(sequenceNumber: 1, status: 1, states: [.init(id: 0, value: [2])])),
        ] + extraTokens + [T.done([])]
        for token in changes { _ = m.tokenReceived(token) }
        _ = m.messageEnded(now: .zero)
        _ = m.enqueue(RequestID(value: 2), timeout: nil, now: .zero)
        XCTAssertEqual(m.state, .executing)
        return m
    }

    func check(_ m: inout ConnectionStateMachine, _ table: [(Event, String)], file: StaticString = #filePath, line: UInt = #line) {
        let clock = ManualConnectionClock()
        for (i, (event, expected)) in table.enumerated() {
            let got: String
            switch event {
            case .lost(let n):
                got = Self.summary(m.idleConnectionLost(RequestID(value: n), cause: "FIN", reconnectable: true, now: clock.now()))
            case .attemptFails:
                got = Self.summary(m.recoveryAttemptFailed(SQLClientError(.connectionFailed, "refused"), now: clock.now()))
            case .attemptSucceeds(let acknowledged):
                var restored = SQLSessionInfo()
                restored.database = "archive"
                restored.language = "Deutsch"
                restored.packetSize = 8192
                let ack = acknowledged
                    ? FeatureExtAck(features: [.init(id: .sessionRecovery, data: [0, 1, 2])]) : FeatureExtAck(features: [])
                got = Self.summary(m.recoveryLoggedIn(restored, ack: ack, now: clock.now()))
            case .advance(let d):
                clock.advance(by: d)
                got = "at \(T.seconds(clock.now()))"
            case .retryDue:
                got = Self.summary(m.recoveryRetryDue(now: clock.now()))
            }
            XCTAssertEqual(got, expected, "row \(i): \(event)", file: file, line: line)
        }
    }

    func testRecoveredOnTheFirstAttempt() {
        var m = machine()
        check(&m, [
            (.lost(2), "reconnect(1; db shop→archive; lang Deutsch; states 0)"),
            (.advance(.milliseconds(40)), "at 40ms"),
            (.attemptSucceeds(acknowledged: true), "recovered(1 attempts, 40ms; db archive, lang Deutsch)"),
        ])
        XCTAssertEqual(m.state, .executing, "the request goes out on the recovered session")
        XCTAssertEqual(m.session.packetSize, 8192)
        XCTAssertEqual(m.recovery.recoveries, 1)
    }

    func testRetriesAreAnIntervalApartWithinTheBudget() {
        var m = machine(retryCount: 3, interval: .seconds(10))
        check(&m, [
            (.lost(2), "reconnect(1; db shop→archive; lang Deutsch; states 0)"),
            (.attemptFails, "wait(until 10s, next 2)"),
            (.advance(.seconds(9)), "at 9s"),
            (.retryDue, "not due"),
            (.advance(.seconds(1)), "at 10s"),
            (.retryDue, "reconnect(2; db shop→archive; lang Deutsch; states 0)"),
            (.advance(.seconds(2)), "at 12s"),
            (.attemptFails, "wait(until 22s, next 3)"),
            (.advance(.seconds(10)), "at 22s"),
            (.retryDue, "reconnect(3; db shop→archive; lang Deutsch; states 0)"),
            (.attemptSucceeds(acknowledged: true), "recovered(3 attempts, 22s; db archive, lang Deutsch)"),
        ])
        XCTAssertEqual(m.state, .executing)
    }

    func testTheConnectionIsRecoveringUntilTheSessionIsBack() {
        var m = machine()
        _ = m.idleConnectionLost(RequestID(value: 2), cause: "RST", reconnectable: true, now: .zero)
        XCTAssertEqual(m.state, .recovering)
        _ = m.recoveryAttemptFailed(SQLClientError(.connectionFailed, "refused"), now: .seconds(1))
        XCTAssertEqual(m.state, .recovering)
        XCTAssertEqual(m.recovery.phase, .waiting(attempt: 1, until: .seconds(11)))
        // Requests made meanwhile wait in the queue; they are not failed.
        XCTAssertEqual(m.enqueue(RequestID(value: 3), timeout: nil, now: .seconds(2)).count, 0)
        _ = m.recoveryRetryDue(now: .seconds(11))
        _ = m.recoveryLoggedIn(SQLSessionInfo(), ack: FeatureExtAck(features: [.init(id: .sessionRecovery, data: [])]),
                               now: .seconds(12))
        XCTAssertEqual(m.state, .executing)
        XCTAssertEqual(m.queuedRequests, [RequestID(value: 3)])
    }

    func testBudgetExhausted() {
        var m = machine(retryCount: 2, interval: .seconds(1))
        check(&m, [
            (.lost(2), "reconnect(1; db shop→archive; lang Deutsch; states 0)"),
            (.attemptFails, "wait(until 1s, next 2)"),
            (.advance(.seconds(1)), "at 1s"),
            (.retryDue, "reconnect(2; db shop→archive; lang Deutsch; states 0)"),
            (.attemptFails, "failed(connectionLost retryBudgetExhausted)"),
        ])
        XCTAssertEqual(m.state, .closed)
        XCTAssertEqual(m.closeError?.sessionRecoveryError?.attempts, 2)
    }

    func testNeverRecoveredCasesTable() {
        let begin = Token.envChange(EnvChange(type: .beginTransaction, newValue: .bytes([1, 0, 0, 0, 0, 0, 0, 0]),
                                              oldValue: .bytes([])))
        let unrecoverable = Token.sessionState(SessionState(sequenceNumber: 2, status: 0, states: [.init(id: 5, value: [1])]))
        let cases: [(String, ConnectionStateMachine, [(Event, String)])] = [
            ("inside a transaction", machine(extraTokens: [begin]),
             [(.lost(2), "failed(connectionLost insideTransaction)")]),
            ("not acknowledged at login", machine(acknowledged: false),
             [(.lost(2), "failed(connectionLost notAcknowledged)")]),
            ("unrecoverable state", machine(extraTokens: [unrecoverable]),
             [(.lost(2), "failed(connectionLost unrecoverableState)")]),
            ("recovery off (ConnectRetryCount=0)", machine(retryCount: 0),
             [(.lost(2), "failed(connectionLost disabled)")]),
            ("recovery login without the acknowledgement", machine(),
             [(.lost(2), "reconnect(1; db shop→archive; lang Deutsch; states 0)"),
              (.attemptSucceeds(acknowledged: false), "failed(connectionLost notAcknowledged)")]),
            ("budget of one", machine(retryCount: 1),
             [(.lost(2), "reconnect(1; db shop→archive; lang Deutsch; states 0)"),
              (.attemptFails, "failed(connectionLost retryBudgetExhausted)")]),
        ]
        for (name, start, table) in cases {
            var m = start
            check(&m, table)
            XCTAssertEqual(m.state, .closed, name)
            XCTAssertEqual(m.closeError?.code, .connectionLost, name)
        }
    }

    /// A FEATUREEXTACK whose SESSIONRECOVERY data is malformed (a StateLen past its end) counts as
    /// not acknowledged: the loss is then refused, never recovered from a state list half read.
    func testMalformedAcknowledgementIsNotAnAcknowledgement() {
        var r = ConnectionRecoveryStateMachine(retryCount: 1)
        r.featureRequested()
        var session = SQLSessionInfo()
        session.database = "shop"
        r.loggedIn(session: session, ack: FeatureExtAck(features: [.init(id: .sessionRecovery, data: [0x00, 0x09, 1])]))
        XCTAssertFalse(r.acknowledged)
        let action = r.connectionLost(cause: "RST", current: session, inTransaction: false, reconnectable: true, now: .zero)
        guard case .fail(let error) = action else { return XCTFail("\(action)") }
        XCTAssertEqual(error.sessionRecoveryError?.reason, .notAcknowledged)
        // Well-formed data is an acknowledgement.
        var ok = ConnectionRecoveryStateMachine(retryCount: 1)
        ok.featureRequested()
        ok.loggedIn(session: session, ack: FeatureExtAck(features: [.init(id: .sessionRecovery, data: [0x00, 0x01, 1])]))
        XCTAssertTrue(ok.acknowledged)
        XCTAssertEqual(ok.initial.states, [.init(id: 0, value: [1])])
    }

    func testARecoverableStateLaterMakesTheSessionRecoverableAgain() {
        let bad = Token.sessionState(SessionState(sequenceNumber: 2, status: 0, states: [.init(id: 5, value: [1])]))
        let good = Token.sessionState(SessionState(sequenceNumber: 3, status: 1, states: [.init(id: 5, value: [0])]))
        var m = machine(extraTokens: [bad, good])
        check(&m, [(.lost(2), "reconnect(1; db shop→archive; lang Deutsch; states 0,5)")])
    }

    func testAnOlderSequenceNumberDoesNotReplaceANewerValue() {
        var r = ConnectionRecoveryStateMachine(retryCount: 1)
        r.sessionStateReceived(SessionState(sequenceNumber: 5, status: 1, states: [.init(id: 0, value: [5])]))
        r.sessionStateReceived(SessionState(sequenceNumber: 4, status: 1, states: [.init(id: 0, value: [4])]))
        XCTAssertEqual(r.feature(current: SQLSessionInfo()).toBe.states, [.init(id: 0, value: [5])])
        // SeqNo wraps: 0 follows 0xFFFFFFFF.
        r.sessionStateReceived(SessionState(sequenceNumber: 0xFFFF_FFFF, status: 1, states: [.init(id: 1, value: [1])]))
        r.sessionStateReceived(SessionState(sequenceNumber: 0, status: 1, states: [.init(id: 1, value: [2])]))
        XCTAssertEqual(r.feature(current: SQLSessionInfo()).toBe.states.last, .init(id: 1, value: [2]))
    }

    func testRecoveryFeatureCarriesInitialStateAndOnlyWhatChanged() {
        var m = machine()
        let feature = m.recovery.feature(current: m.session)
        XCTAssertEqual(feature.initial.database, "shop")
        XCTAssertEqual(feature.initial.language, "us_english")
        XCTAssertEqual(feature.initial.states, [.init(id: 0, value: [1])])
        XCTAssertEqual(feature.toBe.database, "archive")
        XCTAssertEqual(feature.toBe.language, "Deutsch")
        XCTAssertEqual(feature.toBe.collation, [], "the collation did not change")
        XCTAssertEqual(feature.toBe.states, [.init(id: 0, value: [2])])
        // RESETCONNECTION returns the session to the login's: nothing changed is left to restore.
        _ = m.sessionReset(keepingTransaction: false)
        let reset = m.recovery.feature(current: m.session)
        XCTAssertEqual(reset.toBe, SessionRecoveryData())
    }

    func testALossWhileARequestIsBeingReadIsNotRecovered() {
        var m = machine()
        _ = m.packetsWritten(RequestID(value: 2), complete: true)
        check(&m, [(.lost(2), "failed(connectionLost notIdle)")])
    }
}
