import Foundation
import XCTest
@testable import SQLClient
import TDS

/// The connection state machine's part in RPC: RETURNVALUE tokens are collected for the request
/// (and dropped while a cancelled request is drained), RETURNSTATUS and DONEINPROC counts are
/// forwarded, DONEPROC with DONE_ATTN acknowledges a cancellation, transaction ENVCHANGEs update
/// the descriptor.
final class RPCStateMachineTests: XCTestCase {
    private func loggedIn() -> ConnectionStateMachine {
        var m = ConnectionStateMachine(encryption: .notSupported, trustServerCertificate: true)
        _ = m.connected()
        _ = m.preloginReceived(Prelogin(encryption: .notSupported))
        _ = m.tokenReceived(.loginAck(LoginAck(tdsVersion: .v7_4, programName: "Microsoft SQL Server",
                                               serverVersion: .init(major: 16, minor: 0, build: 1))))
        _ = m.tokenReceived(.done(Done(status: [])))
        guard case .loginSucceeded? = m.messageEnded().first else { XCTFail("login did not succeed"); return m }
        return m
    }

    private func returnValue(_ ordinal: UInt16, _ name: String, _ value: SQLValue) -> Token {
        .returnValue(ReturnValue(ordinal: ordinal, name: name, typeInfo: .int, value: value))
    }

    private func start(_ m: inout ConnectionStateMachine, _ n: UInt64) -> RequestID {
        let id = RequestID(value: n)
        guard case .startRequest(id)? = m.enqueue(id, timeout: nil, now: .zero).first else {
            XCTFail("request \(n) did not start")
            return id
        }
        _ = m.packetsWritten(id, complete: true)
        return id
    }

    func testReturnValuesAreCollectedPerRequest() {
        var m = loggedIn()
        let first = start(&m, 1)
        guard case .forwardStatementDone(rowsAffected: 4) = m.tokenReceived(.doneInProc(DoneInProc(status: [.more, .count], rowCount: 4))) else {
            return XCTFail("DONEINPROC count")
        }
        guard case .forwardReturnStatus(3) = m.tokenReceived(.returnStatus(ReturnStatus(value: 3))) else { return XCTFail("RETURNSTATUS") }
        guard case .none = m.tokenReceived(returnValue(1, "@a", .int(10))) else { return XCTFail() }
        guard case .none = m.tokenReceived(returnValue(2, "@b", .null)) else { return XCTFail() }
        guard case .none = m.tokenReceived(.doneProc(DoneProc(status: []))) else { return XCTFail("DONEPROC") }
        guard case .requestCompleted(first, error: nil, let values)? = m.messageEnded().first else { return XCTFail() }
        XCTAssertEqual(values.map(\.name), ["@a", "@b"])
        XCTAssertEqual(values.map(\.value), [.int(10), .null])
        // A new request starts with none.
        let second = start(&m, 2)
        guard case .requestCompleted(second, error: nil, let none)? = m.messageEnded().first else { return XCTFail() }
        XCTAssertTrue(none.isEmpty)
    }

    func testCancelledRequestDropsReturnValuesAndDoneProcAttentionAcknowledges() {
        var m = loggedIn()
        let id = start(&m, 1)
        guard case .sendAttention(id)? = m.cancelRequested(id, now: .zero).first else { return XCTFail() }
        _ = m.tokenReceived(returnValue(1, "@a", .int(10)))
        guard case .none = m.tokenReceived(.returnStatus(ReturnStatus(value: 1))) else { return XCTFail("discarded while cancelling") }
        _ = m.tokenReceived(.doneProc(DoneProc(status: [.attention])))
        guard case .requestCancelled(id, _)? = m.messageEnded().first else { return XCTFail("DONEPROC with ATTN acknowledges") }
        XCTAssertEqual(m.state, .ready)
    }

    func testTransactionEnvChangesTrackTheDescriptor() {
        var m = loggedIn()
        _ = start(&m, 1)
        let d: [UInt8] = [1, 0, 0, 0, 0, 0, 0, 0x80]
        guard case .sessionChanged(let s) = m.tokenReceived(.envChange(EnvChange(type: .beginTransaction, newValue: .bytes(d), oldValue: .bytes([])))) else {
            return XCTFail()
        }
        XCTAssertEqual(s.transactionDescriptor, d)
        XCTAssertEqual(OutgoingRequest.descriptor(from: s.transactionDescriptor), 0x8000_0000_0000_0001)
        guard case .sessionChanged(let after) = m.tokenReceived(.envChange(EnvChange(type: .rollbackTransaction, newValue: .bytes([]), oldValue: .bytes(d)))) else {
            return XCTFail()
        }
        XCTAssertNil(after.transactionDescriptor)
    }
}
