import Foundation
import SQLClientTesting
import TDS
import XCTest

/// Messages of one connection turned into a session: what is kept, what never is.
final class ReplaySessionBuilderTests: XCTestCase {
    static let version = TDSVersion.v7_4

    /// The offset of the first DONE with DONE_ATTN in a token stream, or nil.
    static func doneAttentionOffset(_ bytes: [UInt8], version: TDSVersion = .v7_4) -> Int? {
        var decoder = TokenStreamDecoder(version: version)
        decoder.append(bytes)
        while true {
            let start = decoder.offset
            guard let token = try? decoder.next() else { return nil }
            if case .done(let d) = token, d.status.contains(.attention) { return start }
        }
    }

    static func oneRow(_ value: Int32) throws -> [UInt8] {
        let c = ColumnMetadata(flags: [.nullable], typeInfo: .int, name: "c")
        return ServerTokens.colMetadata([c], version: version) + (try ServerTokens.row([.int(value)], columns: [c]))
            + ServerTokens.done(status: .count, currentCommand: 0xC1, rowCount: 1, version: version)
    }

    static func login(password: String, sspi: [UInt8] = [], fedAuth: Bool = false) -> [UInt8] {
        var login = Login7(tdsVersion: version, packetSize: 8000, hostName: "host", userName: "alice",
                           password: RedactedPassword(password), appName: "app", database: "db")
        login.sspi = sspi
        if fedAuth { login.featureExt = [Login7Feature(id: Login7Feature.fedAuthID, data: Array("token-bytes-here".utf8))] }
        return login.encode(version: version)
    }

    static var loginResponse: [UInt8] {
        ServerTokens.loginResponse(clientVersion: version, packetSize: 8000, utf8: false).flatMap(\.bytes)
    }

    func testRequestsAndResponsesBecomeCommentedExchanges() throws {
        var builder = ReplaySessionBuilder(name: "t")
        builder.clientMessage(type: .prelogin, payload: Prelogin(encryption: .on).encode())
        builder.serverMessage(Prelogin(encryption: .on).encode())
        builder.clientMessage(type: .login7, payload: Self.login(password: "pa55word-x"))
        builder.serverMessage(Self.loginResponse)
        builder.clientMessage(type: .sqlBatch, payload: SQLBatch(text: "SELECT 1 AS c").encode(version: Self.version))
        builder.serverMessage(try Self.oneRow(1))
        let call = RPCCall(procedure: .id(.spExecuteSQL), parameters: [
            RPCParameter(typeInfo: .nvarchar(nil), value: .string("SELECT @P1")),
            RPCParameter(typeInfo: .nvarchar(4000), value: .string("@P1 int")),
            RPCParameter(name: "@P1", typeInfo: .int, value: .int(42)),
        ])
        builder.clientMessage(type: .rpc, payload: try RPCRequest(call).encode(version: Self.version))
        builder.serverMessage(try Self.oneRow(42))
        builder.clientMessage(type: .transactionManager,
                              payload: TransactionManagerRequest(.begin(isolationLevel: .readCommitted, name: "t1")).encode(version: Self.version))
        builder.serverMessage(ServerTokens.done(version: Self.version))
        let session = builder.build()

        XCTAssertEqual(session.version, .v7_4)
        XCTAssertEqual(session.packetSize, 8000)
        XCTAssertEqual(session.exchanges.map(\.request), [
            .login7, .sqlBatch("SELECT 1 AS c"),
            .rpc(procedure: "sp_executesql", parameters: [.init(name: "", value: "SELECT @P1"), .init(name: "", value: "@P1 int"),
                                                          .init(name: "@P1", value: "42")]),
            .transactionManager(type: "TM_BEGIN_XACT", parameters: [.init(name: "isolation", value: "2"), .init(name: "name", value: "t1")]),
        ])
        let login = session.exchanges[0]
        XCTAssertEqual(login.responseBytes, Self.loginResponse)
        XCTAssertEqual(login.comment, """
            PRELOGIN: client ENCRYPTION ENCRYPT_ON
            PRELOGIN: server ENCRYPTION ENCRYPT_ON
            LOGIN7 TDS 7.4, user "alice", database "db", app "app", packet size 8000; password not recorded
            """)
        XCTAssertEqual(session.exchanges[1].response.map(\.comment),
                       ["COLMETADATA 1 column: c int", "ROW \"1\"", "DONE COUNT rows=1"])
        // The text form parses back to the same session.
        XCTAssertEqual(try ReplaySession(text: session.text), session)
        XCTAssertFalse(session.text.contains("pa55word-x"))
    }

    func testSSPIAndFedAuthDataAreNeverRecorded() throws {
        let ntlm = Array("NTLMSSP\u{0}".utf8) + [1, 0, 0, 0] + Array(repeating: 0x41, count: 24)
        let challenge = Array("NTLMSSP\u{0}".utf8) + [2, 0, 0, 0] + Array(repeating: 0x42, count: 24)
        var sspiToken: [UInt8] = [0xED, UInt8(challenge.count), 0]
        sspiToken += challenge
        let response = Array("NTLMSSP\u{0}".utf8) + [3, 0, 0, 0] + Array(repeating: 0x43, count: 24)
        var builder = ReplaySessionBuilder(name: "sspi")
        builder.clientMessage(type: .login7, payload: Self.login(password: "", sspi: ntlm, fedAuth: true))
        builder.serverMessage(sspiToken)
        builder.clientMessage(type: .sspi, payload: response)
        builder.clientMessage(type: .federatedAuthToken, payload: FedAuthTokenMessage(token: Array("eyJ-access-token".utf8)).encode())
        builder.serverMessage(Self.loginResponse)
        let session = builder.build()
        XCTAssertEqual(session.exchanges.map(\.request), [.login7])
        let text = session.text
        XCTAssertFalse(text.contains("NTLMSSP"))
        for blob in [ntlm, challenge, response, Array("eyJ-access-token".utf8), Array("token-bytes-here".utf8)] {
            XCTAssertFalse(session.exchanges[0].responseBytes.contains(subsequence: blob))
            XCTAssertFalse(Array(text.utf8).contains(subsequence: blob))
            let hex = blob.prefix(12).map { String(format: "%02X", $0) }.joined(separator: " ")
            XCTAssertFalse(text.contains(hex), "the hex of a secret blob is in the file")
        }
        XCTAssertEqual(session.exchanges[0].responseBytes, Self.loginResponse, "the SSPI token is left out of the login response")
        let comment = session.exchanges[0].comment ?? ""
        XCTAssertTrue(comment.contains("SSPI data (\(ntlm.count) bytes) not recorded"), comment)
        XCTAssertTrue(comment.contains("FEDAUTH feature not recorded"), comment)
        XCTAssertTrue(comment.contains("SSPI message (\(response.count) bytes) not recorded"), comment)
        XCTAssertTrue(comment.contains("FEDAUTH_TOKEN message"), comment)
        XCTAssertTrue(session.exchanges[0].response.contains { $0.comment == "SSPI token (\(challenge.count) bytes) not recorded" && $0.bytes.isEmpty })
    }

    func testAnAttentionTakesTheServerBytesFromItsDoneAttn() throws {
        let c = ColumnMetadata(flags: [.nullable], typeInfo: .int, name: "c")
        var rows = ServerTokens.colMetadata([c], version: Self.version)
        for i in 0 ..< 5 { rows += try ServerTokens.row([.int(Int32(i))], columns: [c]) }
        let ack = ServerTokens.done(status: .attention, version: Self.version)
        for split in [true, false] {
            var builder = ReplaySessionBuilder(name: "attn")
            builder.clientMessage(type: .sqlBatch, payload: SQLBatch(text: "SELECT big").encode(version: Self.version))
            builder.clientMessage(type: .attention, payload: [])
            if split {
                builder.serverMessage(rows)       // the interrupted response ends; the acknowledgement comes alone
                builder.serverMessage(ack)
            } else {
                builder.serverMessage(rows + ack) // both in one message
            }
            builder.clientMessage(type: .sqlBatch, payload: SQLBatch(text: "SELECT 1 AS c").encode(version: Self.version))
            builder.serverMessage(try Self.oneRow(1))
            let session = builder.build()
            XCTAssertEqual(session.exchanges.map(\.request), [.sqlBatch("SELECT big"), .attention, .sqlBatch("SELECT 1 AS c")])
            XCTAssertEqual(session.exchanges[0].responseBytes, rows)
            XCTAssertEqual(session.exchanges[1].responseBytes, ack)
        }
    }

    func testServerMessagesWithoutTheirRequestAreKept() throws {
        var builder = ReplaySessionBuilder(name: "mid")
        builder.serverMessage(Self.loginResponse)
        builder.serverMessage(try Self.oneRow(7))
        let session = builder.build()
        XCTAssertEqual(session.exchanges.map(\.request), [.login7, .sqlBatch("-- response 1 (its request was not captured)")])
        XCTAssertEqual(session.exchanges[1].responseBytes, try Self.oneRow(7))
    }

    func testAnUndecodableResponseIsKeptWholeWithTheReason() {
        var builder = ReplaySessionBuilder(name: "bad")
        builder.clientMessage(type: .sqlBatch, payload: SQLBatch(text: "x").encode(version: Self.version))
        builder.serverMessage([0x81, 0xFF])   // COLMETADATA cut short
        let session = builder.build()
        XCTAssertEqual(session.exchanges.first?.responseBytes, [0x81, 0xFF])
        XCTAssertEqual(session.exchanges.first?.response.count, 1)
    }
}
