import XCTest
@testable import SQLClient
import TDS

/// The connection state machine as tables of events and expected actions (no I/O, no sleeping:
/// time is a number the table moves forward).
final class ConnectionStateMachineTests: XCTestCase {
    enum Event {
        case connected(deadline: Duration? = nil)
        case prelogin(Prelogin.Encryption?)
        case tlsEstablished
        case token(Token)
        case messageEnded
        /// A request wants to run (`timeout`: its query timeout).
        case enqueue(UInt64, timeout: Duration? = nil)
        /// The writer starts writing request n (its query timeout starts).
        case writing(UInt64)
        /// Packets of request n were written; `complete`: its last packet among them.
        case written(UInt64, complete: Bool)
        case cancel(UInt64?)
        case abandon(UInt64)
        /// The clock moves forward by this much; what is due fires (`tick`).
        case advance(Duration)
        /// The driver reports that timer fired (possibly stale, or early).
        case fired(TimerID)
        case close
        case transportFailed
    }

    static func seconds(_ d: Duration) -> String {
        let (s, atto) = d.components
        return atto == 0 ? "\(s)s" : "\(s * 1000 + atto / 1_000_000_000_000_000)ms"
    }

    /// A short, comparable description of an action.
    static func summary(_ action: ConnectionStateMachine.Action) -> String {
        switch action {
        case .none: return "none"
        case .sendPrelogin(let e): return "sendPrelogin(\(e))"
        case .startTLSHandshake(let full, let verify): return "startTLS(full: \(full), verify: \(verify))"
        case .sendLogin7(let tls): return "sendLogin7(tls: \(tls))"
        case .loginSucceeded(let s): return "loginSucceeded(db: \(s.database), \(s.tdsVersion), packet: \(s.packetSize))"
        case .loginRouted(let r): return "routed(\(r.server):\(r.port))"
        case .sspiChallenge(let b): return "sspi(\(b.count) bytes)"
        case .fedAuthInfoReceived(let info): return "fedAuthInfo(\(info.spn ?? ""))"
        case .startRequest(let id): return "start\(id)"
        case .failRequest(let id, let e): return "fail\(id)(\(e.code))"
        case .scheduleTimeout(let t, let deadline): return "schedule(\(t)@\(seconds(deadline)))"
        case .cancelTimeout(let t): return "stop(\(t))"
        case .endRequestWithIgnore(let id): return "ignore\(id)"
        case .sendAttention(let id): return "attention\(id)"
        case .drainRequest(let id): return "drain\(id)"
        case .closeConnection(let c):
            let failing = c.failedRequests.isEmpty ? "" : "; failing \(c.failedRequests.map(\.description).joined(separator: ","))"
            return "close(\(c.error.code)\(c.error.number.map { " \($0)" } ?? "")\(failing))"
        case .forwardColumns(let c): return "columns(\(c.columns.map(\.name).joined(separator: ",")))"
        case .forwardRow(let v): return "row(\(v.map(\.description).joined(separator: ",")))"
        case .forwardStatementDone(let n): return "statementDone(\(n.map(String.init) ?? "nil"))"
        case .forwardMessage(let m): return "message(\(m.isError ? "error" : "info") \(m.number))"
        case .forwardReturnStatus(let s): return "returnStatus(\(s))"
        case .packetSizeChanged(let n): return "packetSize(\(n))"
        case .sessionChanged(let s): return "session(db: \(s.database))"
        case .requestCompleted(let id, let e, _): return "completed\(id)(\(e.map { "\($0.code) \($0.number ?? 0)" } ?? "ok"))"
        case .requestCancelled(let id, let e): return "cancelled\(id)(\(e.code))"
        case .reservationGranted(let key): return "granted(\(key))"
        case .failReservation(let key, let e): return "failReservation(\(key))(\(e.code))"
        }
    }

    /// Runs the events, each giving its actions joined by "; " ("-" for none). `now` is the clock.
    func run(_ machine: inout ConnectionStateMachine, _ events: [Event], now: inout Duration) -> [String] {
        events.map { event in
            let actions: [ConnectionStateMachine.Action]
            switch event {
            case .connected(let deadline): actions = machine.connected(now: now, deadline: deadline.map { now + $0 })
            case .prelogin(let e): actions = [machine.preloginReceived(Prelogin(encryption: e))]
            case .tlsEstablished: actions = [machine.tlsEstablished()]
            case .token(let t): actions = [machine.tokenReceived(t)]
            case .messageEnded: actions = machine.messageEnded(now: now)
            case .enqueue(let n, let timeout):
                actions = machine.enqueue(RequestID(value: n), timeout: timeout, now: now)
            case .writing(let n): actions = machine.writingStarted(RequestID(value: n), now: now)
            case .written(let n, let complete): actions = machine.packetsWritten(RequestID(value: n), complete: complete)
            case .cancel(let n): actions = machine.cancelRequested(n.map { RequestID(value: $0) }, now: now)
            case .abandon(let n): actions = machine.requestAbandoned(RequestID(value: n), now: now)
            case .advance(let d):
                now += d
                actions = machine.tick(now: now)
            case .fired(let t): actions = machine.timeoutFired(t, now: now)
            case .close: actions = machine.closeRequested()
            case .transportFailed: actions = [machine.transportFailed(SQLClientError(.connectionClosed, "gone"))]
            }
            let shown = actions.map(Self.summary).filter { $0 != "none" }
            return shown.isEmpty ? "-" : shown.joined(separator: "; ")
        }
    }

    func run(_ machine: inout ConnectionStateMachine, _ events: [Event]) -> [String] {
        var now = Duration.zero
        return run(&machine, events, now: &now)
    }

    /// Checks a table of (event, expected actions) rows, naming the row that differs.
    func check(_ machine: inout ConnectionStateMachine, _ table: [(Event, String)],
               file: StaticString = #filePath, line: UInt = #line) {
        var now = Duration.zero
        for (i, (event, expected)) in table.enumerated() {
            let got = run(&machine, [event], now: &now)[0]
            XCTAssertEqual(got, expected, "row \(i): \(event) at \(Self.seconds(now))", file: file, line: line)
        }
    }

    // Tokens used in the tables.
    static let ack = Token.loginAck(LoginAck(tdsVersion: .v7_4, programName: "Microsoft SQL Server",
                                             serverVersion: .init(major: 16, minor: 0, build: 4135)))
    static let ack71 = Token.loginAck(LoginAck(tdsVersion: .v7_1_1, programName: "Microsoft SQL Server",
                                               serverVersion: .init(major: 8, minor: 0, build: 2039)))
    static func env(_ type: EnvChangeType, _ new: String, _ old: String = "") -> Token {
        .envChange(EnvChange(type: type, newValue: .text(new), oldValue: .text(old)))
    }
    static func info(_ n: Int32, severity: UInt8 = 0) -> Token {
        .info(InfoToken(ServerMessage(number: n, state: 1, severity: severity, message: "info \(n)")))
    }
    static func error(_ n: Int32, severity: UInt8 = 16) -> Token {
        .error(ErrorToken(ServerMessage(number: n, state: 1, severity: severity, message: "error \(n)", lineNumber: 1)))
    }
    static func done(_ status: DoneStatus, _ count: UInt64 = 0) -> Token { .done(Done(status: status, rowCount: count)) }
    static let attentionAck = done([.attention])
    static let columns = Token.colMetadata(ColMetadata(columns: [
        ColumnMetadata(typeInfo: .int, name: "id"), ColumnMetadata(typeInfo: .int, name: "n"),
    ]))
    static func row(_ a: Int32, _ b: SQLValue) -> Token { .row(Row(values: [.int(a), b])) }

    static let login: [Event] = [
        .connected(), .prelogin(.on), .tlsEstablished,
        .token(ack), .token(env(.database, "shop", "master")), .token(info(5701)),
        .token(env(.packetSize, "8192", "4096")), .token(done([])), .messageEnded,
    ]

    func loggedIn(cancelTimeout: Duration = .seconds(5)) -> ConnectionStateMachine {
        var machine = ConnectionStateMachine(encryption: .on, trustServerCertificate: false, cancelTimeout: cancelTimeout)
        _ = run(&machine, Self.login)
        XCTAssertEqual(machine.state, .ready)
        return machine
    }

    // MARK: - Login

    func testEncryptionNegotiationTable() {
        // (client setting, server answer) -> the first two actions.
        let table: [(SQLEncryption, Prelogin.Encryption?, trust: Bool, expected: String)] = [
            (.on, .on, false, "startTLS(full: true, verify: true)"),
            (.on, .required, false, "startTLS(full: true, verify: true)"),
            (.on, .on, true, "startTLS(full: true, verify: false)"),
            (.on, .off, false, "close(encryptionNotAvailable)"),
            (.on, .notSupported, false, "close(encryptionNotAvailable)"),
            (.on, nil, false, "close(encryptionNotAvailable)"),
            (.required, .on, false, "startTLS(full: true, verify: true)"),
            (.required, .notSupported, false, "close(encryptionNotAvailable)"),
            (.off, .off, false, "startTLS(full: false, verify: false)"),
            (.off, .on, false, "startTLS(full: true, verify: false)"),
            (.off, .required, false, "startTLS(full: true, verify: false)"),
            (.off, .notSupported, false, "sendLogin7(tls: false)"),
            (.notSupported, .notSupported, false, "sendLogin7(tls: false)"),
            (.notSupported, .off, false, "sendLogin7(tls: false)"),
            (.notSupported, .required, false, "close(encryptionNotAvailable)"),
            // [MS-TDS] 2.2.6.5: ENCRYPT_ON is no answer to ENCRYPT_NOT_SUP: never LOGIN7 in the clear.
            (.notSupported, .on, false, "close(encryptionNotAvailable)"),
        ]
        for (setting, server, trust, expected) in table {
            var machine = ConnectionStateMachine(encryption: setting, trustServerCertificate: trust)
            let actions = run(&machine, [.connected(), .prelogin(server)])
            XCTAssertEqual(actions, ["sendPrelogin(\(setting.preloginValue))", expected], "\(setting) vs \(String(describing: server))")
        }
        var verifying = ConnectionStateMachine(encryption: .off, trustServerCertificate: false, verifyWhenLoginOnly: true)
        XCTAssertEqual(run(&verifying, [.connected(), .prelogin(.off)]).last, "startTLS(full: false, verify: true)")
    }

    func testLoginTracksEnvChangesAndSucceedsAtTheEndOfTheMessage() {
        var machine = ConnectionStateMachine(encryption: .on, trustServerCertificate: false)
        let actions = run(&machine, Self.login)
        XCTAssertEqual(actions, [
            "sendPrelogin(ENCRYPT_ON)", "startTLS(full: true, verify: true)", "sendLogin7(tls: true)",
            "-", "-", "message(info 5701)", "packetSize(8192)", "-",
            "loginSucceeded(db: shop, 7.4, packet: 8192)",
        ])
        XCTAssertEqual(machine.state, .ready)
        XCTAssertEqual(machine.session.database, "shop")
        XCTAssertEqual(machine.session.encryption, .full)
    }

    /// One budget for the whole login: its timer is armed at `connected`, stopped at LOGINACK's
    /// message end; if it fires first the connection closes with `.timeout`.
    func testLoginTimeout() {
        var finished = ConnectionStateMachine(encryption: .notSupported, trustServerCertificate: false)
        check(&finished, [
            (.connected(deadline: .seconds(15)), "sendPrelogin(ENCRYPT_NOT_SUP); schedule(login@15s)"),
            (.prelogin(.notSupported), "sendLogin7(tls: false)"),
            (.advance(.seconds(14)), "-"),
            (.token(Self.ack), "-"), (.token(Self.done([])), "-"),
            (.messageEnded, "loginSucceeded(db: , 7.4, packet: 4096); stop(login)"),
            (.advance(.seconds(5)), "-"),
            (.fired(.login), "-"),   // a stale firing does nothing
        ])
        var stalled = ConnectionStateMachine(encryption: .on, trustServerCertificate: false)
        check(&stalled, [
            (.connected(deadline: .seconds(15)), "sendPrelogin(ENCRYPT_ON); schedule(login@15s)"),
            (.prelogin(.on), "startTLS(full: true, verify: true)"),
            (.fired(.login), "-"),   // early: not due yet
            (.advance(.seconds(15)), "close(timeout)"),
            (.tlsEstablished, "-"),   // closed: the first reason stays
        ])
        XCTAssertEqual(stalled.closeError?.code, .timeout)
        XCTAssertTrue(stalled.closeError?.message.contains("within 15.0 seconds") ?? false, "\(String(describing: stalled.closeError))")
    }

    // MARK: - Strict, routing, SSPI, FEATUREEXTACK

    static func routing(_ server: String, _ port: UInt16) -> Token {
        .envChange(EnvChange(type: .routing, newValue: .routing(EnvChange.Routing(port: port, server: server)), oldValue: .routing(nil)))
    }

    func testStrictSendsNotSupportedAndIgnoresTheServersAnswer() {
        for answer in [Prelogin.Encryption.on, .off, .notSupported, .required] {
            var machine = ConnectionStateMachine(encryption: .strict, trustServerCertificate: true)
            check(&machine, [
                (.connected(), "sendPrelogin(ENCRYPT_NOT_SUP)"),
                (.prelogin(answer), "sendLogin7(tls: false)"),
                (.token(Self.ack), "-"), (.token(Self.done([])), "-"),
                (.messageEnded, "loginSucceeded(db: , 7.4, packet: 4096)"),
            ])
            XCTAssertEqual(machine.session.encryption, .strict)
        }
    }

    func testRoutingDuringLoginEndsTheAttemptAndAfterLoginIsAProtocolError() {
        var machine = ConnectionStateMachine(encryption: .notSupported, trustServerCertificate: false)
        check(&machine, [
            (.connected(deadline: .seconds(15)), "sendPrelogin(ENCRYPT_NOT_SUP); schedule(login@15s)"),
            (.prelogin(.notSupported), "sendLogin7(tls: false)"),
            (.token(Self.ack), "-"), (.token(Self.routing("replica", 11433)), "-"), (.token(Self.done([])), "-"),
            (.messageEnded, "routed(replica:11433); stop(login)"),
        ])
        XCTAssertEqual(machine.state, .closed)
        var ready = loggedIn()
        check(&ready, [
            (.enqueue(1), "start#1"), (.writing(1), "-"), (.written(1, complete: true), "-"),
            (.token(Self.routing("elsewhere", 1)), "close(protocolError)"),
        ])
        XCTAssertTrue(ready.closeError?.message.contains("after the login") ?? false)
    }

    func testSSPIChallengeIsAnsweredAndTheLoginGoesOn() {
        var machine = ConnectionStateMachine(encryption: .notSupported, trustServerCertificate: false, expectsSSPI: true)
        check(&machine, [
            (.connected(), "sendPrelogin(ENCRYPT_NOT_SUP)"),
            (.prelogin(.notSupported), "sendLogin7(tls: false)"),
            (.token(.sspi(SSPIToken(buffer: [1, 2, 3]))), "sspi(3 bytes)"),
            (.messageEnded, "-"),
            (.token(Self.ack), "-"), (.token(Self.done([])), "-"),
        ])
        XCTAssertEqual(machine.login?.sspiAnswered, true)
        check(&machine, [(.messageEnded, "loginSucceeded(db: , 7.4, packet: 4096)")])
        XCTAssertNil(machine.login, "the login exists only in the login states")
        var twice = ConnectionStateMachine(encryption: .notSupported, trustServerCertificate: false, expectsSSPI: true)
        check(&twice, [
            (.connected(), "sendPrelogin(ENCRYPT_NOT_SUP)"), (.prelogin(.notSupported), "sendLogin7(tls: false)"),
            (.token(.sspi(SSPIToken(buffer: [1]))), "sspi(1 bytes)"), (.messageEnded, "-"),
            (.token(.sspi(SSPIToken(buffer: [2]))), "close(protocolError)"),
        ])
        var unasked = ConnectionStateMachine(encryption: .notSupported, trustServerCertificate: false)
        check(&unasked, [
            (.connected(), "sendPrelogin(ENCRYPT_NOT_SUP)"), (.prelogin(.notSupported), "sendLogin7(tls: false)"),
            (.token(.sspi(SSPIToken(buffer: [1]))), "close(protocolError)"),
        ])
    }

    func testFeatureExtAckIsKeptForTheDriversCheck() {
        var machine = ConnectionStateMachine(encryption: .notSupported, trustServerCertificate: false)
        let ack = FeatureExtAck(features: [.init(id: .utf8Support, data: [1])])
        _ = run(&machine, [.connected(), .prelogin(.notSupported), .token(.featureExtAck(ack)), .token(Self.ack),
                           .token(Self.done([])), .messageEnded])
        XCTAssertEqual(machine.featureExtAck, ack)
        XCTAssertEqual(machine.state, .ready)
    }

    func testLoginAt71() {
        var machine = ConnectionStateMachine(encryption: .notSupported, trustServerCertificate: false)
        let actions = run(&machine, [.connected(), .prelogin(.notSupported), .token(Self.ack71), .token(Self.done([])), .messageEnded])
        XCTAssertEqual(actions.last, "loginSucceeded(db: , 7.1, packet: 4096)")
    }

    /// LOGINACK's TDS version decides how every later token is decoded: one this client does not
    /// speak (0x00000000, 0xFFFFFFFF, 7.0) or newer than LOGIN7 asked for is a protocol error
    /// naming it, before the login succeeds. Older versions it speaks are taken.
    func testLoginAckWithATDSVersionTheClientDoesNotSpeakIsAProtocolError() {
        func login(ack raw: UInt32, requested: TDSVersion = .v7_4) -> (String?, SQLClientError?) {
            var machine = ConnectionStateMachine(encryption: .notSupported, trustServerCertificate: false,
                                                 requestedVersion: requested)
            let ack = Token.loginAck(LoginAck(tdsVersion: TDSVersion(rawValue: raw), programName: "Microsoft SQL Server",
                                              serverVersion: .init(major: 16, minor: 0, build: 1)))
            let actions = run(&machine, [.connected(), .prelogin(.notSupported), .token(ack), .token(Self.done([])), .messageEnded])
            return (actions.first { $0.hasPrefix("close") || $0.hasPrefix("loginSucceeded") }, machine.closeError)
        }
        for raw: UInt32 in [0, 0xFFFF_FFFF, 0x7000_0000, 0x0700_0000, 0x7500_0005, 0x0800_0000] {
            let (outcome, error) = login(ack: raw)
            XCTAssertEqual(outcome, "close(protocolError)", String(raw, radix: 16))
            XCTAssertEqual(error?.message.contains("0x" + String(raw, radix: 16, uppercase: true)), true, "\(String(describing: error))")
        }
        XCTAssertEqual(login(ack: TDSVersion.v7_4.rawValue, requested: .v7_2).0, "close(protocolError)")
        XCTAssertEqual(login(ack: TDSVersion.v7_4.rawValue).0, "loginSucceeded(db: , 7.4, packet: 4096)")
        XCTAssertEqual(login(ack: TDSVersion.v7_2.rawValue).0, "loginSucceeded(db: , 7.2, packet: 4096)")
        XCTAssertEqual(login(ack: TDSVersion.v7_1_1.rawValue, requested: .v7_1_1).0, "loginSucceeded(db: , 7.1, packet: 4096)")
        XCTAssertEqual(login(ack: 0x0701_0000).0, "loginSucceeded(db: , 0x7010000, packet: 4096)")   // SQL Server 2000
    }

    func testFailedLoginIsTypedWithTheServerNumber() {
        var machine = ConnectionStateMachine(encryption: .on, trustServerCertificate: true)
        let actions = run(&machine, [.connected(), .prelogin(.on), .tlsEstablished,
                                     .token(Self.error(18456, severity: 14)), .token(Self.done([.error])), .messageEnded,
                                     .enqueue(1)])
        XCTAssertEqual(Array(actions.suffix(4)), ["message(error 18456)", "-", "close(loginFailed 18456)",
                                                  "fail#1(connectionClosed)"])
        XCTAssertEqual(machine.state, .closed)
    }

    func testLoginResponseWithoutLoginAckOrErrorFails() {
        var machine = ConnectionStateMachine(encryption: .off, trustServerCertificate: false)
        let actions = run(&machine, [.connected(), .prelogin(.notSupported), .token(Self.done([])), .messageEnded])
        XCTAssertEqual(actions.last, "close(loginFailed)")
    }

    func testTokensBeforeLoginAreAProtocolError() {
        var machine = ConnectionStateMachine(encryption: .on, trustServerCertificate: false)
        XCTAssertEqual(run(&machine, [.connected(), .token(Self.done([]))]), ["sendPrelogin(ENCRYPT_ON)", "close(protocolError)"])
        var other = ConnectionStateMachine(encryption: .on, trustServerCertificate: false)
        XCTAssertEqual(run(&other, [.tlsEstablished]), ["close(invalidState)"])
    }

    /// The session's server program name comes without LOGINACK's NUL padding.
    func testServerProgramNameIsTrimmedOfNULPadding() {
        var machine = ConnectionStateMachine(encryption: .notSupported, trustServerCertificate: false)
        let ack = Token.loginAck(LoginAck(tdsVersion: .v7_4, programName: "Microsoft SQL Server\0\0",
                                          serverVersion: .init(major: 16, minor: 0, build: 4135)))
        _ = run(&machine, [.connected(), .prelogin(.notSupported), .token(ack), .token(Self.done([])), .messageEnded])
        XCTAssertEqual(machine.state, .ready)
        XCTAssertEqual(machine.session.serverProgramName, "Microsoft SQL Server")
    }

    // MARK: - Responses

    func testBatchWithTwoResultSetsCountsAndMessagesBetweenRows() {
        var machine = loggedIn()
        check(&machine, [
            (.enqueue(1), "start#1"),
            (.written(1, complete: true), "-"),
            (.token(Self.columns), "columns(id,n)"), (.token(Self.row(1, .int(10))), "row(1,10)"),
            (.token(Self.info(0)), "message(info 0)"), (.token(Self.row(2, .null)), "row(2,NULL)"),
            (.token(Self.done([.more, .count], 2)), "statementDone(2)"),
            (.token(Self.done([.more, .count], 3)), "statementDone(3)"),      // an INSERT of 3 rows
            (.token(Self.done([.more])), "statementDone(nil)"),             // a SET: no count
            (.token(Self.columns), "columns(id,n)"), (.token(Self.row(3, .int(30))), "row(3,30)"),
            (.token(Self.done([.count], 1)), "statementDone(1)"),
            (.messageEnded, "completed#1(ok)"),
        ])
        XCTAssertEqual(machine.state, .ready)
    }

    func testErrorMidBatchCompletesWithTheErrorAndStaysUsable() {
        var machine = loggedIn()
        check(&machine, [
            (.enqueue(1), "start#1"), (.written(1, complete: true), "-"),
            (.token(Self.columns), "columns(id,n)"), (.token(Self.row(1, .int(1))), "row(1,1)"),
            (.token(Self.done([.more, .count], 1)), "statementDone(1)"),
            (.token(Self.error(208)), "message(error 208)"), (.token(Self.done([.more, .error])), "statementDone(nil)"),
            (.token(Self.error(50000, severity: 11)), "message(error 50000)"), (.token(Self.done([.error])), "statementDone(nil)"),
            (.messageEnded, "completed#1(serverError 208)"),
            (.enqueue(2), "start#2"),
        ])
    }

    func testSeverity20ClosesTheConnection() {
        var machine = loggedIn()
        check(&machine, [
            (.enqueue(1), "start#1"), (.enqueue(2), "-"), (.written(1, complete: true), "-"),
            (.token(Self.error(605, severity: 21)), "message(error 605)"), (.token(Self.done([.error])), "statementDone(nil)"),
            (.messageEnded, "close(serverError 605; failing #2)"),
            (.enqueue(3), "fail#3(connectionClosed)"),
        ])
    }

    func testEnvChangesDuringARequestUpdateTheSession() {
        var machine = loggedIn()
        let begin = Token.envChange(EnvChange(type: .beginTransaction, newValue: .bytes([1, 0, 0, 0, 0, 0, 0, 0]),
                                              oldValue: .bytes([])))
        let commit = Token.envChange(EnvChange(type: .commitTransaction, newValue: .bytes([]),
                                               oldValue: .bytes([1, 0, 0, 0, 0, 0, 0, 0])))
        check(&machine, [
            (.enqueue(1), "start#1"), (.written(1, complete: true), "-"),
            (.token(Self.env(.database, "archive", "shop")), "session(db: archive)"),
            (.token(Self.info(5701)), "message(info 5701)"), (.token(begin), "session(db: archive)"),
            (.token(Self.done([])), "statementDone(nil)"),
        ])
        XCTAssertEqual(machine.session.database, "archive")
        XCTAssertEqual(machine.session.transactionDescriptor, [1, 0, 0, 0, 0, 0, 0, 0])
        _ = run(&machine, [.token(commit), .messageEnded])
        XCTAssertNil(machine.session.transactionDescriptor)
        XCTAssertEqual(machine.state, .ready)
    }

    func testTransportFailureAndCloseAreTerminal() {
        var machine = loggedIn()
        check(&machine, [
            (.enqueue(1), "start#1"), (.transportFailed, "close(connectionClosed)"), (.transportFailed, "-"), (.close, "-"),
        ])
        var other = loggedIn()
        check(&other, [(.close, "close(connectionClosed)"), (.enqueue(1), "fail#1(connectionClosed)")])
    }

    // MARK: - The request lifecycle

    /// Requests wait for their turn in order; each starts when the one before completes.
    func testRequestsQueueInOrder() {
        var machine = loggedIn()
        check(&machine, [
            (.enqueue(1), "start#1"), (.enqueue(2), "-"), (.enqueue(3), "-"),
            (.written(1, complete: true), "-"), (.token(Self.done([])), "statementDone(nil)"),
            (.messageEnded, "completed#1(ok); start#2"),
            (.written(2, complete: true), "-"), (.messageEnded, "completed#2(ok); start#3"),
        ])
        XCTAssertEqual(machine.queuedRequests, [])
    }

    /// Must show: a query timeout while a multi-packet request is being written. The timeout is
    /// only noted (and the ATTENTION bound armed); after the packets in flight the writer ends
    /// the message with EOM|IGNORE and sends ATTENTION; the acknowledgement ends the request
    /// with `.timeout`, and the connection runs the next request.
    func testTimeoutWhileWritingAMultiPacketRequest() {
        var machine = loggedIn()
        check(&machine, [
            (.enqueue(1, timeout: .seconds(2)), "start#1"),
            (.advance(.seconds(1)), "-"),                            // encoding: not counted
            (.writing(1), "schedule(query#1@3s)"),
            (.written(1, complete: false), "-"),
            (.advance(.seconds(1)), "-"),
            (.written(1, complete: false), "-"),
            (.advance(.seconds(1)), "schedule(cancel#1@8s)"),       // due: noted, nothing written now
            (.cancel(1), "-"),                                       // a second cancel changes nothing
            (.written(1, complete: false), "ignore#1; attention#1"), // after the packets in flight
            (.written(1, complete: false), "-"),
            (.token(Self.done([])), "-"),                             // the DONE for the ignored message
            (.messageEnded, "-"),
            (.token(Self.attentionAck), "-"),
            (.messageEnded, "cancelled#1(timeout); stop(cancel#1)"),
            (.advance(.seconds(10)), "-"),                           // no stale timer fires
            (.enqueue(2), "start#2"),
        ])
    }

    /// Must show: a cancel while writing. In the middle: IGNORE then ATTENTION after the packets
    /// in flight; during the last packets: the message is complete, ATTENTION follows it.
    func testCancelWhileWriting() {
        var middle = loggedIn()
        check(&middle, [
            (.enqueue(1), "start#1"), (.written(1, complete: false), "-"),
            (.cancel(nil), "schedule(cancel#1@5s)"),
            (.written(1, complete: false), "ignore#1; attention#1"),
            (.token(Self.attentionAck), "-"), (.messageEnded, "cancelled#1(cancelled); stop(cancel#1)"),
        ])
        var last = loggedIn()
        check(&last, [
            (.enqueue(1), "start#1"), (.written(1, complete: false), "-"),
            (.cancel(1), "schedule(cancel#1@5s)"),
            (.written(1, complete: true), "attention#1"),
            (.token(Self.columns), "-"), (.token(Self.row(1, .int(1))), "-"),   // discarded
            (.token(Self.done([.count], 1)), "-"), (.messageEnded, "-"),
            (.token(Self.attentionAck), "-"), (.messageEnded, "cancelled#1(cancelled); stop(cancel#1)"),
            (.enqueue(2), "start#2"),
        ])
    }

    /// Must show: a cancel (or its timer) after the response finished does nothing: no ATTENTION,
    /// no bound armed for a request that is over.
    func testCancelAfterTheResponseFinished() {
        var machine = loggedIn()
        check(&machine, [
            (.enqueue(1, timeout: .seconds(3)), "start#1"), (.writing(1), "schedule(query#1@3s)"),
            (.written(1, complete: true), "-"),
            (.token(Self.done([.count], 1)), "statementDone(1)"),
            (.messageEnded, "completed#1(ok); stop(query#1)"),
            (.cancel(1), "-"), (.cancel(nil), "-"), (.abandon(1), "-"),
            (.fired(.query(RequestID(value: 1))), "-"),
            (.advance(.seconds(60)), "-"),
            (.enqueue(2), "start#2"),
        ])
    }

    /// Must show: an ATTENTION never acknowledged: the response ends, no acknowledgement comes;
    /// the cancel bound closes the connection with `.timeout`, failing the queued requests.
    func testAttentionNeverAcknowledged() {
        var machine = loggedIn(cancelTimeout: .seconds(5))
        check(&machine, [
            (.enqueue(1), "start#1"), (.written(1, complete: true), "-"),
            (.token(Self.columns), "columns(id,n)"),
            (.cancel(1), "attention#1; schedule(cancel#1@5s)"),
            (.enqueue(2), "-"),
            (.token(Self.row(2, .int(2))), "-"), (.token(Self.done([.count], 2)), "-"), (.messageEnded, "-"),
            (.advance(.seconds(4)), "-"),
            (.advance(.seconds(1)), "close(timeout; failing #2)"),
            (.token(Self.attentionAck), "-"),
        ])
        XCTAssertEqual(machine.state, .closed)
        XCTAssertTrue(machine.closeError?.message.contains("ATTENTION") ?? false)
    }

    /// A query timeout while reading: ATTENTION at once; the acknowledgement gives `.timeout`.
    func testQueryTimeoutWhileReading() {
        var machine = loggedIn()
        check(&machine, [
            (.enqueue(1, timeout: .milliseconds(300)), "start#1"), (.writing(1), "schedule(query#1@300ms)"),
            (.written(1, complete: true), "-"), (.token(Self.columns), "columns(id,n)"),
            (.advance(.milliseconds(300)), "attention#1; schedule(cancel#1@5300ms)"),
            (.token(Self.row(1, .int(1))), "-"),
            (.token(Self.attentionAck), "-"), (.messageEnded, "cancelled#1(timeout); stop(cancel#1)"),
        ])
    }

    /// A DONE_ATTN that answers no ATTENTION: a server that acknowledges one ATTENTION twice.
    /// The second acknowledgement arrives while the next request runs; taken as its end, that
    /// request would complete empty and its real response would go to the request after it.
    /// It is a protocol error: the connection is closed, the queued request fails.
    func testAttentionAcknowledgementWithoutAttentionIsAProtocolError() {
        var machine = loggedIn()
        check(&machine, [
            (.enqueue(1, timeout: .milliseconds(300)), "start#1"), (.writing(1), "schedule(query#1@300ms)"),
            (.written(1, complete: true), "-"),
            (.advance(.milliseconds(300)), "attention#1; schedule(cancel#1@5300ms)"),
            (.token(Self.attentionAck), "-"), (.messageEnded, "cancelled#1(timeout); stop(cancel#1)"),
            (.enqueue(2), "start#2"), (.written(2, complete: true), "-"), (.enqueue(3), "-"),
            (.token(Self.attentionAck), "close(protocolError; failing #3)"),
        ])
        XCTAssertEqual(machine.state, .closed)
        XCTAssertEqual(machine.closeError?.message.contains("DONE_ATTN"), true, "\(String(describing: machine.closeError))")

        // DONEPROC with DONE_ATTN, and a DONE_ATTN while the request is still being written
        // (no ATTENTION sent yet): the same.
        var proc = loggedIn()
        check(&proc, [
            (.enqueue(1), "start#1"), (.written(1, complete: true), "-"),
            (.token(.doneProc(DoneProc(status: [.attention]))), "close(protocolError)"),
        ])
        var writing = loggedIn()
        check(&writing, [
            (.enqueue(1), "start#1"), (.written(1, complete: false), "-"), (.cancel(1), "schedule(cancel#1@5s)"),
            (.token(Self.attentionAck), "close(protocolError)"),
        ])
    }

    /// Every ERROR token is forwarded as it arrives; the request's error keeps the first 1,000
    /// (`serverMessages`), so endless ERROR tokens do not grow memory.
    func testARequestsErrorKeepsTheFirstThousandServerErrors() {
        var machine = loggedIn()
        XCTAssertEqual(run(&machine, [.enqueue(1), .written(1, complete: true)]), ["start#1", "-"])
        let forwarded = (1 ... 1500).map { run(&machine, [.token(Self.error(Int32($0)))])[0] }
        XCTAssertEqual(forwarded.last, "message(error 1500)")
        XCTAssertEqual(Set(forwarded.map { $0.hasPrefix("message(error ") }), [true])
        let end = machine.messageEnded(now: .zero)
        guard case .requestCompleted(_, let error?, _)? = end.first else { return XCTFail("\(end.map(Self.summary))") }
        XCTAssertEqual(error.serverMessage?.number, 1)
        XCTAssertEqual(error.serverMessages.count, 1000)
        XCTAssertEqual(error.serverMessages.last?.number, 1000)
    }

    /// Must show: close with queued and running requests: the queued ones fail at once, the
    /// running one's reader gets the error; every timer stops.
    func testCloseWithQueuedAndRunningRequests() {
        var machine = loggedIn()
        check(&machine, [
            (.enqueue(1, timeout: .seconds(30)), "start#1"), (.writing(1), "schedule(query#1@30s)"),
            (.enqueue(2), "-"), (.enqueue(3), "-"),
            (.written(1, complete: true), "-"),
            (.close, "close(connectionClosed; failing #2,#3)"),
            (.advance(.seconds(60)), "-"),
            (.enqueue(4), "fail#4(connectionClosed)"),
            (.messageEnded, "-"),
        ])
        XCTAssertTrue(machine.timers.isEmpty)
        XCTAssertEqual(machine.closeError?.code, .connectionClosed)
    }

    /// A request cancelled while it waits for its turn fails at once; the others keep their order.
    func testCancelWhileQueued() {
        var machine = loggedIn()
        check(&machine, [
            (.enqueue(1), "start#1"), (.enqueue(2), "-"), (.enqueue(3), "-"),
            (.cancel(2), "fail#2(cancelled)"), (.abandon(3), "fail#3(cancelled)"),
            (.written(1, complete: true), "-"), (.messageEnded, "completed#1(ok)"),
        ])
    }

    /// A second request while a stream is held waits for it, whoever asks (no request is
    /// cancelled for another, and nothing depends on the calling task); when the held stream's
    /// iterator is released (abandoned: ATTENTION, drained to its acknowledgement) the next runs.
    func testSecondRequestWhileAStreamIsHeldWaitsUntilItIsReleased() {
        var machine = loggedIn()
        check(&machine, [
            (.enqueue(1), "start#1"), (.written(1, complete: true), "-"),
            (.token(Self.columns), "columns(id,n)"), (.token(Self.row(1, .int(1))), "row(1,1)"),
            (.enqueue(2), "-"), (.enqueue(3), "-"),
            (.token(Self.row(2, .int(2))), "row(2,2)"),
            (.abandon(1), "attention#1; schedule(cancel#1@5s); drain#1"),
            (.token(Self.row(3, .int(3))), "-"),
            (.token(Self.attentionAck), "-"),
            (.messageEnded, "cancelled#1(cancelled); stop(cancel#1); start#2"),
            (.written(2, complete: true), "-"), (.messageEnded, "completed#2(ok); start#3"),
        ])
    }

    /// An abandoned stream (dropped iterator): ATTENTION and a drain; its timers stop at the end.
    func testAbandonedRequestIsCancelledAndDrained() {
        var machine = loggedIn()
        check(&machine, [
            (.enqueue(1, timeout: .seconds(9)), "start#1"), (.writing(1), "schedule(query#1@9s)"),
            (.written(1, complete: true), "-"),
            (.abandon(1), "attention#1; schedule(cancel#1@5s); drain#1"),
            (.abandon(1), "-"),
            (.token(Self.attentionAck), "-"), (.messageEnded, "cancelled#1(cancelled); stop(query#1); stop(cancel#1)"),
        ])
    }

    /// The read-ahead's events (``ReadAheadStateMachine``, only through the connection machine) add
    /// what the machine knows: a cursor reads the socket only while its request runs, not
    /// abandoned; an abandoned request is drained only while it runs on an open connection.
    func testTheReadAheadEventsAddWhetherTheRequestRunsOnAnOpenConnection() {
        func show(_ action: ReadAheadStateMachine.NextAction) -> String {
            switch action {
            case .read: return "read"
            case .take: return "take"
            case .wait: return "wait"
            case .over: return "over"
            }
        }
        let one = RequestID(value: 1), two = RequestID(value: 2)
        var machine = loggedIn()
        check(&machine, [(.enqueue(1), "start#1"), (.written(1, complete: true), "-")])
        XCTAssertEqual(show(machine.nextBatchAsked(two)), "over", "not the running request")
        XCTAssertEqual(show(machine.nextBatchAsked(one)), "read")
        XCTAssertEqual(machine.readAhead.socket, .cursor(one))
        XCTAssertEqual(machine.cursorRead(one, SQLConnection.ResponseBatch(), caller: .connection), ReadAheadStateMachine.ReadEnd.none)
        XCTAssertEqual(machine.readAhead.socket, .free)
        check(&machine, [(.abandon(1), "attention#1; schedule(cancel#1@5s); drain#1")])
        XCTAssertEqual(show(machine.nextBatchAsked(one)), "over", "abandoned: the drain reads it")
        XCTAssertEqual(machine.drainAsked(one), .init(failWaitingCursor: nil, drainNow: true))
        machine.drainEnded()
        XCTAssertEqual(machine.readAhead.socket, .free)
        _ = machine.closeRequested()
        XCTAssertEqual(machine.drainAsked(one), .init(failWaitingCursor: nil, drainNow: false), "closed: nothing to drain")
        XCTAssertEqual(machine.readAhead.socket, .free)
    }
}
