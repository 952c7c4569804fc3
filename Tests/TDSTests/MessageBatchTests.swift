import XCTest
@testable import TDS

final class MessageBatchTests: XCTestCase {
    func testAllHeadersRoundTripAndLayout() throws {
        let h = AllHeaders(headers: [.transactionDescriptor(descriptor: 0x0102_0304_0506_0708, outstandingRequestCount: 3),
                                     .traceActivity(Array(0..<20)), .other(type: 1, data: [9, 9])])
        let bytes = h.bytes
        XCTAssertEqual(bytes.count, 4 + 18 + 26 + 8)
        XCTAssertEqual(Array(bytes[0..<4]), [UInt8(bytes.count), 0, 0, 0])
        XCTAssertEqual(Array(bytes[4..<10]), [18, 0, 0, 0, 2, 0])
        XCTAssertEqual(Array(bytes[10..<18]), [8, 7, 6, 5, 4, 3, 2, 1])
        var r = ByteReader(bytes + [0xAA])
        XCTAssertEqual(try AllHeaders.decode(from: &r), h)
        XCTAssertEqual(r.remaining, 1)
        XCTAssertEqual(h.transactionDescriptor?.outstandingRequestCount, 3)
    }

    func testAllHeadersHostileLengths() {
        for bad: [UInt8] in [[3, 0, 0, 0], [10, 0, 0, 0, 5, 0, 0, 0, 2, 0], [10, 0, 0, 0, 0xFF, 0, 0, 0, 2, 0]] {
            var r = ByteReader(bad)
            XCTAssertThrowsError(try AllHeaders.decode(from: &r)) { e in
                XCTAssertEqual((e as? TDSDecodingError)?.code, .invalidLength)
                XCTAssertEqual((e as? TDSDecodingError)?.context, "ALL_HEADERS")
            }
        }
        var r = ByteReader([0x40, 0, 0, 0, 1])
        XCTAssertThrowsError(try AllHeaders.decode(from: &r)) { e in
            XCTAssertEqual((e as? TDSDecodingError)?.code, .truncated)
        }
    }

    func testSQLBatchAllHeadersFrom72Only() throws {
        let batch = SQLBatch(text: "SELECT N'ü😀'", allHeaders: .transaction(descriptor: 5, outstandingRequestCount: 1))
        let v74 = batch.encode(version: .v7_4)
        XCTAssertEqual(Array(v74.prefix(4)), [22, 0, 0, 0])
        XCTAssertEqual(try SQLBatch.decode(from: v74, version: .v7_4), batch)
        let v71 = batch.encode(version: .v7_1_1)
        XCTAssertEqual(v71, utf16le("SELECT N'ü😀'"))
        let d71 = try SQLBatch.decode(from: v71, version: .v7_1_1)
        XCTAssertNil(d71.allHeaders)
        XCTAssertEqual(d71.text, batch.text)
        // Odd text length is a typed error.
        XCTAssertThrowsError(try SQLBatch.decode(from: v71 + [0x41], version: .v7_1_1)) { e in
            XCTAssertEqual((e as? TDSDecodingError)?.code, .invalidLength)
        }
    }

    func testSpecSQLBatch() throws {
        let (header, body) = try MessageFixtures.packet("ms-tds-spec/06-sql-batch-client-request.hex")
        XCTAssertEqual(header.type, .sqlBatch)
        let b = try SQLBatch.decode(from: body, version: .v7_2)
        // [MS-TDS] 4.6 documents TransactionDescriptor bytes 00 00 00 00 00 00 00 01 and
        // OutstandingRequestCount 00 00 00 00.
        XCTAssertEqual(b.allHeaders?.headers.count, 1)
        XCTAssertEqual(b.allHeaders?.transactionDescriptor?.descriptor, 0x0100_0000_0000_0000)
        XCTAssertEqual(b.allHeaders?.transactionDescriptor?.outstandingRequestCount, 0)
        XCTAssertEqual(b.text, "\nselect 'foo' as 'bar'\n        ")
        XCTAssertEqual(b.encode(version: .v7_2), body)
    }

    func testPySQLBridgeSQLBatch() throws {
        let (header, body) = try MessageFixtures.packet("pysqlbridge/sql_batch.hex")
        XCTAssertEqual(header.type, .sqlBatch)
        let b = try SQLBatch.decode(from: body, version: .v7_4)
        XCTAssertEqual(b.allHeaders?.transactionDescriptor?.descriptor, 0)
        XCTAssertEqual(b.allHeaders?.transactionDescriptor?.outstandingRequestCount, 1)
        XCTAssertTrue(b.text.hasPrefix("SELECT CAST(42 AS int) AS answer, CAST('hello' AS nvarchar(20))"))
        XCTAssertTrue(b.text.hasSuffix("CAST(NULL AS int) AS missing"))
        XCTAssertEqual(b.encode(version: .v7_4), body)
        // Inside ALL_HEADERS (22 bytes) every cut fails; after it, odd cuts split a UTF-16 unit.
        for cut in Array(0..<22) + [23, 25, body.count - 1] {
            XCTAssertThrowsError(try SQLBatch.decode(from: Array(body.prefix(cut)), version: .v7_4), "cut \(cut)")
        }
        XCTAssertEqual(try SQLBatch.decode(from: Array(body.prefix(24)), version: .v7_4).text, "S")
    }

    func testAttention() throws {
        let (header, body) = try MessageFixtures.packet("ms-tds-spec/10-attention-request.hex")
        XCTAssertEqual(header.type, .attention)
        XCTAssertEqual(try Attention.decode(from: body), Attention())
        XCTAssertEqual(Attention().encode(), [])
        XCTAssertEqual(Packet.encode(message: Attention().encode(), type: .attention, packetSize: 4096),
                       try MessageFixtures.hex("ms-tds-spec/10-attention-request.hex"))
        XCTAssertThrowsError(try Attention.decode(from: [0])) { e in
            XCTAssertEqual((e as? TDSDecodingError)?.code, .invalidLength)
        }
    }

    func testTransactionManagerRoundTrips() throws {
        let requests: [TransactionManagerRequest.Request] = [
            .getDTCAddress, .propagate(cookie: [1, 2, 3, 4]),
            .begin(isolationLevel: .serializable, name: "tx1"), .begin(isolationLevel: .noChange, name: ""),
            .promote, .commit(name: "tx1", thenBegin: nil),
            .commit(name: "", thenBegin: .init(isolationLevel: .snapshot, name: "next")),
            .rollback(name: "tx1", thenBegin: nil), .rollback(name: "", thenBegin: .init(isolationLevel: .readCommitted, name: "")),
            .save(name: "sp1"), .unknown(type: 0x16, payload: [7, 7]),
        ]
        for req in requests {
            for v in [TDSVersion.v7_1_1, .v7_4] {
                let m = TransactionManagerRequest(req, allHeaders: v >= .v7_2 ? .transaction(descriptor: 9, outstandingRequestCount: 1) : nil)
                let bytes = m.encode(version: v)
                XCTAssertEqual(try TransactionManagerRequest.decode(from: bytes, version: v), m, "\(req) \(v)")
                for cut in 0..<bytes.count where req.type != 6 && req.type < 10 {
                    // Every strict prefix of a known request fails (promote has no payload; the
                    // DTC-address payload is optional).
                    if req.type == 0 && cut == bytes.count - 2 { continue }
                    XCTAssertThrowsError(try TransactionManagerRequest.decode(from: Array(bytes.prefix(cut)), version: v), "\(req) cut \(cut)")
                }
            }
        }
        // Known layouts.
        XCTAssertEqual(TransactionManagerRequest(.begin(isolationLevel: .readCommitted, name: "t"), allHeaders: nil).encode(version: .v7_1_1),
                       [5, 0, 2, 2, 0x74, 0])  // B_VARBYTE: 2 bytes of UTF-16
        XCTAssertEqual(TransactionManagerRequest(.commit(name: "", thenBegin: .init(isolationLevel: .serializable, name: "")), allHeaders: nil).encode(version: .v7_1_1),
                       [7, 0, 0, 1, 4, 0])
        XCTAssertEqual(TransactionManagerRequest(.getDTCAddress, allHeaders: nil).encode(version: .v7_1_1), [0, 0, 0, 0])
    }

    func testSpecTransactionManagerRequest() throws {
        let (header, body) = try MessageFixtures.packet("ms-tds-spec/13-transaction-manager-request.hex")
        XCTAssertEqual(header.type, .transactionManager)
        let m = try TransactionManagerRequest.decode(from: body, version: .v7_2)
        XCTAssertEqual(m.allHeaders?.transactionDescriptor?.descriptor, 0x0100_0000_0000_0000)
        XCTAssertEqual(m.allHeaders?.transactionDescriptor?.outstandingRequestCount, 0)
        // The published example's RequestType bytes are 16 00, which [MS-TDS] 2.2.6.9 does not
        // define: kept raw, not guessed.
        XCTAssertEqual(m.request, .unknown(type: 0x0016, payload: []))
        XCTAssertEqual(m.encode(version: .v7_2), body)
    }
}
