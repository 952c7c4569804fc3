import XCTest
import TDS
import SQLClientTesting

/// [MS-TDS] section 4 protocol examples (server responses) from ../shared/captures/ms-tds-spec,
/// decoded whole, byte by byte and in seeded random splits. Each file is one whole packet: the
/// test skips its 8-byte header.
final class RealStreamsSpecExamplesTests: XCTestCase {
    private func body(_ name: String) throws -> [UInt8] {
        let raw = try TokenCaptures.hex("ms-tds-spec/\(name).hex")
        guard raw.count > 8 else { throw XCTSkip("\(name) is shorter than a packet header") }
        return Array(raw[8...])
    }

    private func verified(_ bytes: [UInt8], version: TDSVersion = .v7_4) throws -> [Token] {
        try DecoderVerifier.verify(bytes, version: version, randomSplits: 16, seed: 4)
    }

    func testSQLBatchServerResponse() throws {
        let t = try verified(try body("07-sql-batch-server-response"))
        XCTAssertEqual(t.names, ["COLMETADATA", "ROW", "DONE"])
        guard case .colMetadata(let m) = t[0] else { return XCTFail() }
        XCTAssertEqual(m.columns.map(\.name), ["bar"])
        XCTAssertEqual(m.columns[0].typeInfo.sqlTypeName, "varchar(3)")
        XCTAssertEqual(t[1].rowValues, [.string("foo")])
        XCTAssertEqual(t[2].doneStatus?.rowCount, 1)
    }

    func testRPCServerResponse() throws {
        let t = try verified(try body("09-rpc-server-response"))
        XCTAssertEqual(t, [
            .doneInProc(DoneInProc(status: [.more, .count], currentCommand: 0xC1, rowCount: 1)),
            .returnStatus(ReturnStatus(value: 0)),
            .doneProc(DoneProc(status: [], currentCommand: 0xE0, rowCount: 0)),
        ])
    }

    func testSparseColumnSelectWithXMLAndNBCRows() throws {
        let t = try verified(try body("15-sparse-column-select"))
        XCTAssertEqual(t.names, ["COLMETADATA"] + Array(repeating: "ROW", count: 3) + Array(repeating: "NBCROW", count: 7) + ["DONE"])
        guard case .colMetadata(let m) = t[0] else { return XCTFail() }
        XCTAssertEqual(m.columns.map(\.name), ["id", "sparsePropertySet"])
        XCTAssertTrue(m.columns[1].flags.contains(.sparseColumnSet))
        XCTAssertEqual(m.columns[1].typeInfo.type, .xml)
        XCTAssertEqual(t[1].rowValues?[1].canonicalText, "<sparseProp1>1000</sparseProp1><sparseProp2>foo</sparseProp2>")
        XCTAssertEqual(t[3].rowValues?[1].canonicalText, "<sparseProp2>abcd</sparseProp2>")
        XCTAssertEqual(t[10].rowValues, [.int(10), .null])
        XCTAssertEqual(t[11].doneStatus?.rowCount, 10)
    }

    /// The published example has a stray 0x00 after the collation ENVCHANGE (body offset 132).
    func testFeatureExtAckSessionRecoveryErrataIsAClearError() throws {
        let out = try DecoderVerifier.outcome(try body("17-featureextack-sessionrecovery"), version: .v7_4)
        XCTAssertEqual(out.tokens.names, ["ENVCHANGE", "INFO", "ENVCHANGE"])
        XCTAssertEqual(out.error?.code, .unknownToken)
        XCTAssertEqual(out.error?.offset, 132)
    }

    func testTableResponseWithSessionState() throws {
        let t = try verified(try body("18-table-response-sessionstate"))
        XCTAssertEqual(t.names, ["DONE", "SESSIONSTATE", "DONE"])
        guard case .sessionState(let s) = t[1] else { return XCTFail() }
        XCTAssertEqual(s.sequenceNumber, 1)
        XCTAssertTrue(s.isRecoverable)
        XCTAssertEqual(s.states, [.init(id: 9, value: [0xFF, 0xFF, 0xFF, 0xFF])])
    }

    func testLoginResponsesWithFeatureExtAcks() throws {
        let fed = try verified(try body("05-login-response-federated-auth"))
        guard case .featureExtAck(let ack) = fed[7] else { return XCTFail() }
        XCTAssertEqual(ack.features.map(\.id), [.fedAuth])
        XCTAssertEqual(ack.features[0].data.count, 64)
        let azure = try verified(try body("21-featureextack-azuresqlsupport"))
        XCTAssertEqual(Array(azure.names.prefix(14)), Array(repeating: "DONEINPROC", count: 14))
        guard case .loginAck(let login) = azure[19] else { return XCTFail() }
        XCTAssertEqual(login.serverVersion.description, "12.0.1000")
        guard case .envChange(let db) = azure[14] else { return XCTFail() }
        XCTAssertEqual(db.newText, "testdb")
        XCTAssertEqual(db.oldValue, .text("master"))
        let v72 = try verified(try body("04-login-response"), version: .v7_2)
        guard case .loginAck(let ack72) = v72[6] else { return XCTFail() }
        XCTAssertEqual(ack72.tdsVersion, .v7_2)
    }
}
