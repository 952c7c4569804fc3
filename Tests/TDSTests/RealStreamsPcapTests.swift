import XCTest
import Foundation
import TDS
import TDSCapture
import SQLClientTesting

/// Server token streams cut out of real pcap captures (TCP reassembled and split into TDS
/// messages by TDSCapture), decoded whole, byte by byte and in seeded random splits.
final class RealStreamsPcapTests: XCTestCase {
    /// The server responses of each TDS session: (session, responses), where a response is the
    /// token stream of one TABULAR_RESULT message. PRELOGIN answers (not token streams) are left
    /// out: a server message right after a client PRELOGIN is skipped.
    private func responses(_ file: String) throws -> [(TDSSession, [[UInt8]])] {
        let url = try TokenCaptures.directory().appendingPathComponent(file)
        guard FileManager.default.fileExists(atPath: url.path) else { throw XCTSkip("\(file) is absent") }
        let capture = try CaptureFile(bytes: Array(try Data(contentsOf: url)), fileName: file)
        return try capture.tdsSessions().map { session in
            var out: [[UInt8]] = []
            var lastClientType: PacketType?
            for m in session.messages {
                switch m.direction {
                case .client:
                    if let msg = m.message { lastClientType = msg.type }
                    // TLS inside PRELOGIN packets is still the PRELOGIN exchange; TLS records
                    // sent directly on TCP carry the (encrypted) LOGIN7.
                    if case .tls(_, _, let inPrelogin) = m.content { lastClientType = inPrelogin ? .prelogin : .login7 }
                case .server:
                    guard let msg = m.message, msg.type == .tabularResult else { continue }
                    if lastClientType == .prelogin { continue }
                    out.append(msg.payload)
                }
            }
            return (session, out)
        }
    }

    private func session(_ all: [(TDSSession, [[UInt8]])], clientPort: UInt16) -> (TDSSession, [[UInt8]])? {
        all.first { $0.0.conversation.client.port == clientPort }
    }

    private func decode(_ streams: [[UInt8]], version: TDSVersion) throws -> [[Token]] {
        try streams.map { try DecoderVerifier.verify($0, version: version, randomSplits: 12, seed: 99) }
    }

    /// ndpi (RPC traffic, TDS 7.2+): a result set of char columns, then DONEINPROC,
    /// RETURNSTATUS, RETURNVALUE (an int output parameter) and DONEPROC.
    func testNDPIRPCResponsesWithReturnValues() throws {
        let all = try responses("ndpi_mssql_tds.pcap")
        guard let (s1111, r1111) = session(all, clientPort: 1111) else { return XCTFail("no conversation from port 1111") }
        XCTAssertTrue(s1111.version.version.hasLongRowCounts)
        let t1111 = try decode(r1111, version: s1111.version.version)
        XCTAssertEqual(t1111.map(\.names), [["DONE", "DONE"],
                                            ["COLMETADATA", "ROW", "DONEINPROC", "RETURNSTATUS", "RETURNVALUE", "DONEPROC"]])
        let rpc = t1111[1]
        let row = try XCTUnwrap(rpc[1].rowValues)
        XCTAssertEqual(row.count, 4)
        XCTAssertEqual(row.prefix(3).map { $0.canonicalText?.trimmingCharacters(in: .whitespaces) }, ["zzz", "bbb", "cxxx"])
        XCTAssertEqual(row[0].canonicalText?.count, 30)   // char(30), blank-padded
        XCTAssertEqual(row[3], .int(2))
        guard case .returnValue(let rv) = rpc[4] else { return XCTFail() }
        XCTAssertEqual(rv.typeInfo.sqlTypeName, "int")
        XCTAssertEqual(rv.value, .int(1))
        XCTAssertEqual(rpc[3], .returnStatus(ReturnStatus(value: 0)))

        guard let (s5555, r5555) = session(all, clientPort: 5555) else { return XCTFail("no conversation from port 5555") }
        let t5555 = try decode(r5555, version: s5555.version.version)
        let outputs = t5555.flatMap { $0 }.compactMap { t -> SQLValue? in
            if case .returnValue(let rv) = t { return rv.value } else { return nil }
        }
        XCTAssertEqual(outputs, [.int(1), .int(2), .int(3), .int(4)])
        let rows = t5555.flatMap { $0 }.compactMap(\.rowValues)
        XCTAssertEqual(rows.count, 6)
        XCTAssertTrue(rows.allSatisfy { $0.map { $0.canonicalText?.trimmingCharacters(in: .whitespaces) } == ["first", "second", "third"] })
    }

    /// ndpi, the conversation from port 2222: a TDS 7.0/7.1 DONE with a 4-byte row count.
    func testNDPIShortDoneRowCount() throws {
        let all = try responses("ndpi_mssql_tds.pcap")
        guard let (s, r) = session(all, clientPort: 2222) else { return XCTFail("no conversation from port 2222") }
        XCTAssertFalse(s.version.version.hasLongRowCounts)
        let t = try decode(r, version: s.version.version)
        XCTAssertEqual(t.map(\.names), [["DONE"]])
        XCTAssertEqual(r.first?.count, 9)
        // Decoded as 7.2+, the same 9 bytes are an incomplete DONE.
        let wrong = DecoderVerifier.decode(r[0], pieces: [9], version: .v7_4)
        XCTAssertEqual(wrong.error?.code, .truncated)
        XCTAssertEqual(wrong.error?.context, "DONE")
    }

    /// packetbeat sessions with SQL Server 2022: login response, SESSIONSTATE after SET
    /// batches, a SELECT and an INSERT.
    func testPacketbeatSessions2022() throws {
        let select = try responses("packetbeat_mssql_login_and_select.pcap")
        XCTAssertEqual(select.count, 1)
        guard let (s, r) = select.first else { return }
        let t = try decode(r, version: s.version.version)
        XCTAssertEqual(t.map(\.names), [
            ["ENVCHANGE", "INFO", "ENVCHANGE", "ENVCHANGE", "INFO", "LOGINACK", "ENVCHANGE", "FEATUREEXTACK", "DONE"],
            ["SESSIONSTATE", "DONE"], ["SESSIONSTATE", "DONE"], ["COLMETADATA", "ROW", "DONE"],
        ])
        guard t.count == 4, t[0].count == 9, t[1].count == 2, t[3].count == 3 else { return XCTFail("unexpected shape") }
        guard case .loginAck(let ack) = t[0][5] else { return XCTFail() }
        XCTAssertEqual(ack.tdsVersion, .v7_4)
        XCTAssertEqual(ack.serverVersion.major, 16)
        guard case .sessionState(let state) = t[1][0] else { return XCTFail() }
        XCTAssertTrue(state.isRecoverable)
        XCTAssertFalse(state.states.isEmpty)
        XCTAssertEqual(t[3][1].rowValues, [.int(2), .string("orange"), .int(154)])

        let insert = try responses("packetbeat_mssql_login_and_insert.pcap")
        guard let (si, ri) = insert.first else { return XCTFail() }
        let ti = try decode(ri, version: si.version.version)
        XCTAssertEqual(ti.last?.names, ["DONE"])
        XCTAssertEqual(ti.last?.first?.doneStatus?.status.contains(.count), true)
        XCTAssertEqual(ti.last?.first?.doneStatus?.rowCount, 1)
    }
}
