import XCTest
@testable import TDS

/// Every client-request example of [MS-TDS] section 4 (and the real client packets of
/// pySQLbridge), fed through the packet assembler whole, byte by byte and in random splits,
/// then decoded by packet type: the three must agree, and re-encoding must decode the same.
final class SpecExamplesClientRequestTests: XCTestCase {
    static let files: [(path: String, version: TDSVersion)] = [
        ("ms-tds-spec/01-pre-login-request.hex", .v7_2),
        ("ms-tds-spec/02-login-request.hex", .v7_2),
        ("ms-tds-spec/03-login-request-federated-auth.hex", .v7_4),
        ("ms-tds-spec/06-sql-batch-client-request.hex", .v7_2),
        ("ms-tds-spec/08-rpc-client-request.hex", .v7_2),
        ("ms-tds-spec/10-attention-request.hex", .v7_2),
        ("ms-tds-spec/11-sspi-message.hex", .v7_2),
        ("ms-tds-spec/13-transaction-manager-request.hex", .v7_2),
        ("ms-tds-spec/14-tvp-insert-statement.hex", .v7_3B),
        ("ms-tds-spec/16-featureext-sessionrecovery.hex", .v7_4),
        ("ms-tds-spec/20-featureext-azuresqlsupport.hex", .v7_4),
        ("pysqlbridge/client_prelogin.hex", .v7_4),
        ("pysqlbridge/sql_batch.hex", .v7_4),
    ]

    private func messages(_ stream: [UInt8], chunk: (inout SplitMix64) -> Int, seed: UInt64) throws -> [TDSMessage] {
        var rng = SplitMix64(seed: seed)
        var a = PacketAssembler()
        var out: [TDSMessage] = []
        var i = 0
        while i < stream.count {
            let n = min(max(chunk(&rng), 1), stream.count - i)
            a.append(stream[i..<(i + n)])
            i += n
            out += try a.nextMessages()
        }
        return out
    }

    func testEveryClientExampleWholeBytewiseAndSplit() throws {
        for (path, version) in Self.files {
            let bytes = try MessageFixtures.hex(path)
            let whole = try messages(bytes, chunk: { _ in Int.max }, seed: 0)
            XCTAssertEqual(whole.count, 1, path)
            let message = try XCTUnwrap(whole.first)
            XCTAssertEqual(try messages(bytes, chunk: { _ in 1 }, seed: 0), whole, path)
            for seed in 1...5 {
                XCTAssertEqual(try messages(bytes, chunk: { Int.random(in: 1...40, using: &$0) }, seed: UInt64(seed)), whole, path)
            }
            let request = try ClientRequest.decode(message, version: version)
            XCTAssertEqual(request.packetType, message.type, path)
            // Re-split at the smallest packet size, reassemble, decode: same request.
            let resplit = Packet.encode(message: message.payload, type: message.type, packetSize: 512)
            let again = try messages(resplit, chunk: { Int.random(in: 1...700, using: &$0) }, seed: 9)
            XCTAssertEqual(again.map(\.payload), [message.payload], path)
            // Re-encode and decode.
            let reencoded = try request.encode(version: version)
            XCTAssertEqual(try ClientRequest.decode(type: message.type, payload: reencoded, version: version), request, path)
        }
    }

    func testDecodedKinds() throws {
        func decode(_ path: String, _ v: TDSVersion) throws -> ClientRequest {
            let (h, body) = try MessageFixtures.packet(path)
            return try ClientRequest.decode(type: h.type, payload: body, version: v)
        }
        guard case .prelogin = try decode("ms-tds-spec/01-pre-login-request.hex", .v7_2) else { return XCTFail("01") }
        guard case .login7(let l) = try decode("ms-tds-spec/02-login-request.hex", .v7_2), l.hostName == "skostov1" else { return XCTFail("02") }
        guard case .sqlBatch = try decode("ms-tds-spec/06-sql-batch-client-request.hex", .v7_2) else { return XCTFail("06") }
        guard case .rpc = try decode("ms-tds-spec/08-rpc-client-request.hex", .v7_2) else { return XCTFail("08") }
        XCTAssertEqual(try decode("ms-tds-spec/10-attention-request.hex", .v7_2), .attention)
        guard case .sspi(let p) = try decode("ms-tds-spec/11-sspi-message.hex", .v7_2) else { return XCTFail("11") }
        XCTAssertEqual(Array(p.prefix(8)), Array("NTLMSSP\0".utf8))
        guard case .transactionManager = try decode("ms-tds-spec/13-transaction-manager-request.hex", .v7_2) else { return XCTFail("13") }
    }

    func testTLSRecordsInPreloginAreNotPrelogin() throws {
        // A ClientHello record header: handshake (0x16), TLS 1.0 record version, length 5.
        let record: [UInt8] = [0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00]
        XCTAssertEqual(try ClientRequest.decode(type: .prelogin, payload: record, version: .v7_4), .tlsPayload(record))
        let (_, body) = try MessageFixtures.packet("ms-tds-spec/01-pre-login-request.hex")
        XCTAssertFalse(ClientRequest.looksLikeTLSRecord(body))
    }

    func testAllHeadersDetection() throws {
        for path in ["ms-tds-spec/06-sql-batch-client-request.hex", "ms-tds-spec/08-rpc-client-request.hex",
                     "ms-tds-spec/13-transaction-manager-request.hex", "pysqlbridge/sql_batch.hex"] {
            let body = try MessageFixtures.packet(path).1   // outside the assertion: its XCTSkip must skip
            XCTAssertTrue(AllHeaders.isLikelyPresent(in: body), path)
        }
        for name in ["RpcQueryMessageFlowUnitTests_shouldEncodeSpExecuteSql", "RpcQueryMessageFlowUnitTests_shouldEncodeSpCursorOpen"] {
            let payload = try MessageFixtures.hex("r2dbc-mssql/client-requests/\(name).hex")
            XCTAssertFalse(AllHeaders.isLikelyPresent(in: payload), name)
        }
        XCTAssertFalse(AllHeaders.isLikelyPresent(in: utf16le("SELECT 1")))
        XCTAssertFalse(AllHeaders.isLikelyPresent(in: []))
    }

    /// Recipe: flip every byte of each client example (XOR 0xFF) one at a time; decoding must
    /// return or throw `TDSDecodingError`, never trap.
    func testMutatedExamplesNeverTrap() throws {
        for (path, version) in Self.files {
            let (h, body) = try MessageFixtures.packet(path)
            for i in body.indices {
                var m = body
                m[i] ^= 0xFF
                _ = try? ClientRequest.decode(type: h.type, payload: m, version: version)
            }
        }
    }

    /// Random bytes of every length 0...64 (and a few longer) for every client packet type:
    /// each decoder returns or throws `TDSDecodingError`, never traps.
    func testRandomBytesNeverTrap() {
        var rng = SplitMix64(seed: 2024)
        let types: [PacketType] = [.prelogin, .login7, .sqlBatch, .rpc, .attention, .transactionManager, .federatedAuthToken]
        for type in types {
            for version in [TDSVersion.v7_1_1, .v7_4] {
                for n in Array(0...64) + [100, 300, 1000] {
                    for _ in 0..<8 {
                        let bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
                        _ = try? ClientRequest.decode(type: type, payload: bytes, version: version)
                    }
                }
            }
        }
    }
}
