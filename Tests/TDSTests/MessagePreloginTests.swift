import XCTest
@testable import TDS

final class MessagePreloginTests: XCTestCase {
    func testRoundTripEveryOption() throws {
        var p = Prelogin(version: .init(major: 17, minor: 0, build: 1000, subBuild: 7),
                         encryption: Prelogin.Encryption.on.withClientCertificate,
                         threadID: 0xDEADBEEF, mars: 1,
                         traceID: .init(connectionID: Array(1...16), activityID: Array(17...32), activitySequence: 0x01020304),
                         fedAuthRequired: 1, nonce: Array(repeating: 0x5A, count: 32),
                         unknownOptions: [.init(token: 0x42, data: [9, 8, 7])])
        p.setInstanceName("MSSQLSERVER")
        let bytes = p.encode()
        // 9 options * 5 + terminator = 46 bytes of table; VERSION data starts there.
        XCTAssertEqual(Array(bytes[0..<5]), [0x00, 0x00, 46, 0x00, 0x06])
        XCTAssertEqual(bytes[45], 0xFF)
        XCTAssertEqual(Array(bytes[46..<52]), [17, 0, 0x03, 0xE8, 0x00, 0x07])
        let d = try Prelogin.decode(from: bytes)
        XCTAssertEqual(d, p)
        XCTAssertEqual(d.instanceName, "MSSQLSERVER")
        XCTAssertEqual(d.encryption?.mode, .on)
        XCTAssertTrue(d.encryption?.clientCertificate ?? false)
        XCTAssertEqual(d.encryption?.description, "ENCRYPT_ON|ENCRYPT_CLIENT_CERT")
        XCTAssertTrue(d.isMARSEnabled)
        XCTAssertEqual(d.encode(), bytes)
    }

    /// PL_OFFSET is a USHORT: options whose data would start past offset 65,535 are left out
    /// (their offsets once wrapped, so the encoding decoded to other options).
    func testEncodingLeavesOutOptionsPastOffset65535() throws {
        let big = (0..<3).map { Prelogin.RawOption(token: 0x40 + UInt8($0), data: Array(repeating: UInt8($0), count: 33_000)) }
        let p = Prelogin(encryption: .off, unknownOptions: big)
        let bytes = p.encode()
        // With all four options 0x42 would start at 4 * 5 + 1 + 1 + 66,000 = 66,022: left out.
        // Three entries and the terminator (16 bytes), then ENCRYPTION at 16, 0x40 at 17, 0x41 at 33,017.
        XCTAssertEqual(Array(bytes[0..<5]), [0x01, 0x00, 16, 0x00, 0x01])
        XCTAssertEqual(Array(bytes[5..<10]), [0x40, 0x00, 17, 0x80, 0xE8])
        XCTAssertEqual(Array(bytes[10..<15]), [0x41, 0x80, 0xF9, 0x80, 0xE8])
        XCTAssertEqual(bytes[15], 0xFF)
        XCTAssertEqual(bytes.count, 16 + 1 + 66_000)
        let d = try Prelogin.decode(from: bytes)
        XCTAssertEqual(d.encryption, .off)
        XCTAssertEqual(d.unknownOptions, Array(big.prefix(2)))
        XCTAssertEqual(d.encode(), bytes)
    }

    func testEncryptionValues() throws {
        for (e, raw) in [(Prelogin.Encryption.off, 0), (.on, 1), (.notSupported, 2), (.required, 3)] as [(Prelogin.Encryption, UInt8)] {
            XCTAssertEqual(e.rawValue, raw)
            let d = try Prelogin.decode(from: Prelogin(encryption: e).encode())
            XCTAssertEqual(d.encryption, e)
            XCTAssertFalse(d.encryption?.clientCertificate ?? true)
        }
        XCTAssertEqual(Prelogin.Encryption(rawValue: 0x83).mode, .required)
    }

    func testEmptyMessageAndTruncation() throws {
        XCTAssertEqual(try Prelogin.decode(from: [0xFF]), Prelogin())
        let bytes = Prelogin(version: .init(major: 9, minor: 0, build: 0), encryption: .off, threadID: 1).encode()
        for cut in 0..<bytes.count {
            XCTAssertThrowsError(try Prelogin.decode(from: Array(bytes.prefix(cut)))) { e in
                XCTAssertEqual((e as? TDSDecodingError)?.code, .truncated, "cut at \(cut)")
                XCTAssertEqual((e as? TDSDecodingError)?.context, "PRELOGIN")
            }
        }
        // An option offset past the end (hostile) is a typed error, not a trap.
        XCTAssertThrowsError(try Prelogin.decode(from: [0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]))
    }

    func testSpecPreloginRequest() throws {
        let (header, body) = try MessageFixtures.packet("ms-tds-spec/01-pre-login-request.hex")
        XCTAssertEqual(header.type, .prelogin)
        let p = try Prelogin.decode(from: body)
        // [MS-TDS] 4.1: VERSION 9.0.0.0, ENCRYPTION ENCRYPT_ON... as documented: values below.
        XCTAssertEqual(p.version, .init(major: 9, minor: 0, build: 0, subBuild: 0))
        XCTAssertEqual(p.encryption, .on)
        XCTAssertEqual(p.instanceOption, [0x00])
        XCTAssertEqual(p.instanceName, "")
        XCTAssertEqual(p.threadID, 0x0000_0DB8)  // bytes B8 0D 00 00: 3512
        XCTAssertEqual(p.mars, 0x01)
        XCTAssertTrue(p.unknownOptions.isEmpty)
        XCTAssertEqual(p.encode(), body)
    }

    func testPySQLBridgeClientPrelogin() throws {
        let (header, body) = try MessageFixtures.packet("pysqlbridge/client_prelogin.hex")
        XCTAssertEqual(header.type, .prelogin)
        let p = try Prelogin.decode(from: body)
        XCTAssertEqual(p.version?.major, 18)   // MSOLEDBSQL 18.7.5
        XCTAssertEqual(p.version?.minor, 7)
        XCTAssertEqual(p.version?.build, 5)
        XCTAssertEqual(p.encryption, .off)
        XCTAssertEqual(p.instanceName, "")
        XCTAssertEqual(p.threadID, 0x0000_3E48)  // bytes 48 3E 00 00
        XCTAssertEqual(p.mars, 0)
        let trace = try XCTUnwrap(p.traceID)
        XCTAssertEqual(trace.connectionID.count, 16)
        XCTAssertEqual(Array(trace.connectionID.prefix(4)), [0x4F, 0x9C, 0xCF, 0x1F])
        XCTAssertEqual(trace.activitySequence, 2)
        XCTAssertNil(p.nonce)
        XCTAssertEqual(p.encode(), body)
    }

    func testPySQLBridgeServerPrelogin() throws {
        let (header, body) = try MessageFixtures.packet("pysqlbridge/server_prelogin.hex")
        XCTAssertEqual(header.type, .tabularResult)
        let p = try Prelogin.decode(from: body)
        XCTAssertEqual(p.version, .init(major: 17, minor: 0, build: 1000, subBuild: 0))  // SQL Server 2025 17.0.1000
        XCTAssertEqual(p.encryption, .off)
        XCTAssertEqual(p.instanceOption, [0x00])
        XCTAssertNil(p.threadID)  // sent with length 0, kept raw
        XCTAssertEqual(p.unknownOptions.first(where: { $0.token == Prelogin.Token.threadID })?.data, [])
        XCTAssertEqual(p.mars, 0)
        XCTAssertEqual(p.encode(), body)
    }

    func testPytdsServerPrelogin() throws {
        let bytes = try MessageFixtures.hex("pytds/unit_test_L248_test_prelogin_parsing.hex")
        // Either a whole packet or a bare body.
        let body = bytes.first == 0x04 ? Array(bytes.dropFirst(8)) : bytes
        let p = try Prelogin.decode(from: body)
        XCTAssertNotNil(p.version)
        XCTAssertNotNil(p.encryption)
        XCTAssertEqual(p.encode(), body)
    }
}
