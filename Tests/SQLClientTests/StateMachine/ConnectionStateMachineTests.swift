import XCTest
@testable import SQLClient

/// The connection state machine as tables of events and expected actions (no I/O).
final class ConnectionStateMachineTests: XCTestCase {
    enum Event {
        case connected
        case prelogin(Prelogin.Encryption?)
        case tlsEstablished
        case token(Token)
        case messageEnded
        case requestStarted
        case cancel
        case close
        case transportFailed
    }

    /// A short, comparable description of an action.
    static func summary(_ action: ConnectionStateMachine.Action) -> String {
        switch action {
        case .none: return "none"
        case .sendPrelogin(let e): return "sendPrelogin(\(e))"
        case .startTLSHandshake(let full, let verify): return "startTLS(full: \(full), verify: \(verify))"
        case .sendLogin7(let tls): return "sendLogin7(tls: \(tls))"
        case .loginSucceeded(let s): return "loginSucceeded(db: \(s.database), \(s.tdsVersion), packet: \(s.packetSize))"
        case .closeConnection(let e): return "close(\(e.code)\(e.number.map { " \($0)" } ?? ""))"
        case .sendRequest: return "sendRequest"
        case .sendAttention: return "sendAttention"
        case .forwardColumns(let c): return "columns(\(c.map(\.name).joined(separator: ",")))"
        case .forwardRow(let v): return "row(\(v.map(\.description).joined(separator: ",")))"
        case .forwardStatementDone(let n): return "statementDone(\(n.map(String.init) ?? "nil"))"
        case .forwardMessage(let m): return "message(\(m.isError ? "error" : "info") \(m.number))"
        case .forwardReturnStatus(let s): return "returnStatus(\(s))"
        case .packetSizeChanged(let n): return "packetSize(\(n))"
        case .sessionChanged(let s): return "session(db: \(s.database))"
        case .requestCompleted(let e): return "completed(\(e.map { "\($0.code) \($0.number ?? 0)" } ?? "ok"))"
        case .requestCancelled: return "cancelled"
        }
    }

    func run(_ machine: inout ConnectionStateMachine, _ events: [Event]) -> [String] {
        events.map { event in
            let action: ConnectionStateMachine.Action
            switch event {
            case .connected: action = machine.connected()
            case .prelogin(let e): action = machine.preloginReceived(Prelogin(encryption: e))
            case .tlsEstablished: action = machine.tlsEstablished()
            case .token(let t): action = machine.tokenReceived(t)
            case .messageEnded: action = machine.messageEnded()
            case .requestStarted: action = machine.requestStarted()
            case .cancel: action = machine.cancelRequested()
            case .close: action = machine.closeRequested()
            case .transportFailed: action = machine.transportFailed(SQLClientError(.connectionClosed, "gone"))
            }
            return Self.summary(action)
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
    static let columns = Token.colMetadata(ColMetadata(columns: [
        ColumnMetadata(typeInfo: .int, name: "id"), ColumnMetadata(typeInfo: .int, name: "n"),
    ]))
    static func row(_ a: Int32, _ b: SQLValue) -> Token { .row(Row(values: [.int(a), b])) }

    static let login: [Event] = [
        .connected, .prelogin(.on), .tlsEstablished,
        .token(ack), .token(env(.database, "shop", "master")), .token(info(5701)),
        .token(env(.packetSize, "8192", "4096")), .token(done([])), .messageEnded,
    ]

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
            let actions = run(&machine, [.connected, .prelogin(server)])
            XCTAssertEqual(actions, ["sendPrelogin(\(setting.preloginValue))", expected], "\(setting) vs \(String(describing: server))")
        }
        var verifying = ConnectionStateMachine(encryption: .off, trustServerCertificate: false, verifyWhenLoginOnly: true)
        XCTAssertEqual(run(&verifying, [.connected, .prelogin(.off)]).last, "startTLS(full: false, verify: true)")
    }

    func testLoginTracksEnvChangesAndSucceedsAtTheEndOfTheMessage() {
        var machine = ConnectionStateMachine(encryption: .on, trustServerCertificate: false)
        let actions = run(&machine, Self.login)
        XCTAssertEqual(actions, [
            "sendPrelogin(ENCRYPT_ON)", "startTLS(full: true, verify: true)", "sendLogin7(tls: true)",
            "none", "none", "message(info 5701)", "packetSize(8192)", "none",
            "loginSucceeded(db: shop, 7.4, packet: 8192)",
        ])
        XCTAssertEqual(machine.state, .ready)
        XCTAssertEqual(machine.session.database, "shop")
        XCTAssertEqual(machine.session.encryption, "full")
    }

    func testLoginAt71() {
        var machine = ConnectionStateMachine(encryption: .notSupported, trustServerCertificate: false)
        let actions = run(&machine, [.connected, .prelogin(.notSupported), .token(Self.ack71), .token(Self.done([])), .messageEnded])
        XCTAssertEqual(actions.last, "loginSucceeded(db: , 7.1, packet: 4096)")
    }

    func testFailedLoginIsTypedWithTheServerNumber() {
        var machine = ConnectionStateMachine(encryption: .on, trustServerCertificate: true)
        let actions = run(&machine, [.connected, .prelogin(.on), .tlsEstablished,
                                     .token(Self.error(18456, severity: 14)), .token(Self.done([.error])), .messageEnded,
                                     .requestStarted])
        XCTAssertEqual(Array(actions.suffix(4)), ["message(error 18456)", "none", "close(loginFailed 18456)",
                                                  "close(connectionClosed)"])
        XCTAssertEqual(machine.state, .closed)
    }

    func testLoginResponseWithoutLoginAckOrErrorFails() {
        var machine = ConnectionStateMachine(encryption: .off, trustServerCertificate: false)
        let actions = run(&machine, [.connected, .prelogin(.notSupported), .token(Self.done([])), .messageEnded])
        XCTAssertEqual(actions.last, "close(loginFailed)")
    }

    func testTokensBeforeLoginAreAProtocolError() {
        var machine = ConnectionStateMachine(encryption: .on, trustServerCertificate: false)
        XCTAssertEqual(run(&machine, [.connected, .token(Self.done([]))]), ["sendPrelogin(ENCRYPT_ON)", "close(protocolError)"])
        var other = ConnectionStateMachine(encryption: .on, trustServerCertificate: false)
        XCTAssertEqual(run(&other, [.tlsEstablished]), ["close(invalidState)"])
    }

    func testBatchWithTwoResultSetsCountsAndMessagesBetweenRows() {
        var machine = ConnectionStateMachine(encryption: .on, trustServerCertificate: false)
        _ = run(&machine, Self.login)
        let actions = run(&machine, [
            .requestStarted,
            .token(Self.columns), .token(Self.row(1, .int(10))), .token(Self.info(0)), .token(Self.row(2, .null)),
            .token(Self.done([.more, .count], 2)),
            .token(Self.done([.more, .count], 3)),            // an INSERT of 3 rows
            .token(Self.done([.more])),                      // a SET: no count
            .token(Self.columns), .token(Self.row(3, .int(30))), .token(Self.done([.count], 1)),
            .messageEnded,
        ])
        XCTAssertEqual(actions, [
            "sendRequest",
            "columns(id,n)", "row(1,10)", "message(info 0)", "row(2,NULL)", "statementDone(2)",
            "statementDone(3)", "statementDone(nil)",
            "columns(id,n)", "row(3,30)", "statementDone(1)",
            "completed(ok)",
        ])
        XCTAssertEqual(machine.state, .ready)
    }

    func testErrorMidBatchCompletesWithTheErrorAndStaysUsable() {
        var machine = ConnectionStateMachine(encryption: .on, trustServerCertificate: false)
        _ = run(&machine, Self.login)
        let actions = run(&machine, [
            .requestStarted,
            .token(Self.columns), .token(Self.row(1, .int(1))), .token(Self.done([.more, .count], 1)),
            .token(Self.error(208)), .token(Self.done([.more, .error])),
            .token(Self.error(50000, severity: 11)), .token(Self.done([.error])),
            .messageEnded,
            .requestStarted,
        ])
        XCTAssertEqual(actions, [
            "sendRequest", "columns(id,n)", "row(1,1)", "statementDone(1)",
            "message(error 208)", "statementDone(nil)", "message(error 50000)", "statementDone(nil)",
            "completed(serverError 208)", "sendRequest",
        ])
    }

    func testSeverity20ClosesTheConnection() {
        var machine = ConnectionStateMachine(encryption: .on, trustServerCertificate: false)
        _ = run(&machine, Self.login)
        let actions = run(&machine, [.requestStarted, .token(Self.error(605, severity: 21)), .token(Self.done([.error])),
                                     .messageEnded, .requestStarted])
        XCTAssertEqual(actions, ["sendRequest", "message(error 605)", "statementDone(nil)", "close(serverError 605)",
                                 "close(connectionClosed)"])
    }

    func testOneRequestAtATime() {
        var machine = ConnectionStateMachine(encryption: .on, trustServerCertificate: false)
        _ = run(&machine, Self.login)
        XCTAssertEqual(run(&machine, [.requestStarted, .requestStarted]), ["sendRequest", "completed(invalidState 0)"])
    }

    func testAttentionDiscardsTheRestAndWaitsForTheAcknowledgement() {
        var machine = ConnectionStateMachine(encryption: .on, trustServerCertificate: false)
        _ = run(&machine, Self.login)
        let actions = run(&machine, [
            .requestStarted, .token(Self.columns), .token(Self.row(1, .int(1))),
            .cancel, .cancel,
            .token(Self.row(2, .int(2))), .token(Self.done([.more, .count], 2)), .messageEnded,  // the response's end
            .token(Self.done([.attention])), .messageEnded,                                     // the acknowledgement
            .requestStarted,
        ])
        XCTAssertEqual(actions, [
            "sendRequest", "columns(id,n)", "row(1,1)",
            "sendAttention", "none",
            "none", "none", "none",
            "none", "cancelled",
            "sendRequest",
        ])
    }

    func testEnvChangesDuringARequestUpdateTheSession() {
        var machine = ConnectionStateMachine(encryption: .on, trustServerCertificate: false)
        _ = run(&machine, Self.login)
        let begin = Token.envChange(EnvChange(type: .beginTransaction, newValue: .bytes([1, 0, 0, 0, 0, 0, 0, 0]),
                                              oldValue: .bytes([])))
        let commit = Token.envChange(EnvChange(type: .commitTransaction, newValue: .bytes([]),
                                               oldValue: .bytes([1, 0, 0, 0, 0, 0, 0, 0])))
        let actions = run(&machine, [.requestStarted, .token(Self.env(.database, "archive", "shop")), .token(Self.info(5701)),
                                     .token(begin), .token(Self.done([]))])
        XCTAssertEqual(actions, ["sendRequest", "session(db: archive)", "message(info 5701)", "session(db: archive)",
                                 "statementDone(nil)"])
        XCTAssertEqual(machine.session.database, "archive")
        XCTAssertEqual(machine.session.transactionDescriptor, [1, 0, 0, 0, 0, 0, 0, 0])
        _ = run(&machine, [.token(commit), .messageEnded])
        XCTAssertNil(machine.session.transactionDescriptor)
        XCTAssertEqual(machine.state, .ready)
    }

    func testTransportFailureAndCloseAreTerminal() {
        var machine = ConnectionStateMachine(encryption: .on, trustServerCertificate: false)
        _ = run(&machine, Self.login)
        XCTAssertEqual(run(&machine, [.requestStarted, .transportFailed, .transportFailed, .close]),
                       ["sendRequest", "close(connectionClosed)", "none", "none"])
        var other = ConnectionStateMachine(encryption: .on, trustServerCertificate: false)
        _ = run(&other, Self.login)
        XCTAssertEqual(run(&other, [.close, .requestStarted]), ["close(connectionClosed)", "close(connectionClosed)"])
    }

    /// The session's server program name comes without LOGINACK's NUL padding.
    func testServerProgramNameIsTrimmedOfNULPadding() {
        var machine = ConnectionStateMachine(encryption: .notSupported, trustServerCertificate: false)
        let ack = Token.loginAck(LoginAck(tdsVersion: .v7_4, programName: "Microsoft SQL Server\0\0",
                                          serverVersion: .init(major: 16, minor: 0, build: 4135)))
        _ = run(&machine, [.connected, .prelogin(.notSupported), .token(ack), .token(Self.done([])), .messageEnded])
        XCTAssertEqual(machine.state, .ready)
        XCTAssertEqual(machine.session.serverProgramName, "Microsoft SQL Server")
    }
}
