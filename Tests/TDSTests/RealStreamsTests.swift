import XCTest
import TDS
import SQLClientTesting

/// Real SQL Server token streams from ../shared/captures, each decoded whole, byte by byte and
/// in seeded random splits (DecoderVerifier), then asserted value by value.
final class RealStreamsTests: XCTestCase {
    private func verified(_ bytes: [UInt8], version: TDSVersion = .v7_4,
                          options: TokenStreamDecoder.Options = .init(),
                          configure: (inout TokenStreamDecoder) -> Void = { _ in },
                          file: StaticString = #filePath, line: UInt = #line) throws -> [Token] {
        try DecoderVerifier.verify(bytes, version: version, options: options, randomSplits: 24, seed: 20261130,
                                   configure: configure)
    }

    private func rows(_ tokens: [Token]) -> [[SQLValue]] { tokens.compactMap(\.rowValues) }
    private func texts(_ row: [SQLValue]) -> [String?] { row.map(\.canonicalText) }

    // MARK: Result sets

    /// SQL Server 2025: SELECT 42, N'hello', 1.5e0, NULL — COLMETADATA, ROW, DONE(COUNT 1).
    func testPySQLBridgeResult2025() throws {
        let tokens = try verified(try TokenCaptures.hex("pysqlbridge/result.hex"))
        XCTAssertEqual(tokens.names, ["COLMETADATA", "ROW", "DONE"])
        guard case .colMetadata(let meta) = tokens[0] else { return XCTFail("no COLMETADATA") }
        XCTAssertEqual(meta.columns.map(\.name), ["answer", "greeting", "ratio", "missing"])
        XCTAssertEqual(meta.columns.map(\.typeInfo.sqlTypeName), ["int", "nvarchar(20)", "float", "int"])
        XCTAssertEqual(rows(tokens), [[.int(42), .string("hello"), .float(1.5), .null]])
        guard case .done(let done) = tokens[2] else { return XCTFail("no DONE") }
        XCTAssertEqual(done.status, [.count])
        XCTAssertEqual(done.rowCount, 1)
        XCTAssertEqual(done.currentCommand, 0xC1)
    }

    /// SQL Server 2022: an INTN and a DATETIME column (packet header skipped).
    func testPacketbeatDatetime2022() throws {
        let tokens = try verified(try TokenCaptures.packetPayloads("packetbeat/packetbeat_test_16x_datetimeResponse_1.hex"))
        XCTAssertEqual(tokens.names, ["COLMETADATA", "ROW", "DONE"])
        guard case .colMetadata(let meta) = tokens[0] else { return XCTFail() }
        XCTAssertEqual(meta.columns.map(\.name), ["id", "created"])
        XCTAssertEqual(meta.columns.map(\.typeInfo.type), [.intN, .datetime])
        let row = rows(tokens)[0]
        XCTAssertEqual(row[0], .int(32))
        XCTAssertEqual(row[1].canonicalText, "2022-08-07 20:57:45.927")
        XCTAssertEqual(tokens.last?.doneStatus?.rowCount, 1)
    }

    /// SQL Server 2022: NTEXT, NCHAR, CHAR, TEXT, VARCHAR, NUMERIC, FLOAT, INTN; two rows;
    /// TableName after the text/ntext TYPE_INFO.
    func testPacketbeatTypes2022() throws {
        let tokens = try verified(try TokenCaptures.packetPayloads("packetbeat/packetbeat_test_16x_typesResponse_1.hex"))
        XCTAssertEqual(tokens.names, ["COLMETADATA", "ROW", "ROW", "DONE"])
        guard case .colMetadata(let meta) = tokens[0] else { return XCTFail() }
        XCTAssertEqual(meta.columns.map(\.name), ["id", "val1", "val2", "val3", "val4", "val5", "val6", "val7"])
        XCTAssertEqual(meta.columns.map(\.typeInfo.sqlTypeName),
                       ["int", "ntext", "nchar(1)", "char(1)", "text", "varchar(1)", "numeric(18,0)", "float"])
        XCTAssertEqual(meta.columns[1].tableName, ["example4"])
        XCTAssertEqual(meta.columns[4].tableName, ["example4"])
        XCTAssertNil(meta.columns[2].tableName)
        let r = rows(tokens)
        XCTAssertEqual(texts(r[0]), ["10", "text 1", "a", "b", "text 4", "c", "43", "3.14"])
        XCTAssertEqual(texts(r[1]), ["15", "ex 1", "x", "y", "ex 4", "z", "500", "0.25"])
        XCTAssertEqual(r[0][7], .float(3.14))
        XCTAssertEqual(tokens.last?.doneStatus?.status, [.count])
        XCTAssertEqual(tokens.last?.doneStatus?.rowCount, 2)
    }

    /// SQL Server 2022: 16 varchar(1) columns, one NBCROW with 13 NULLs in its bitmap.
    func testPacketbeatNullColumnsNBCRow2022() throws {
        let tokens = try verified(try TokenCaptures.packetPayloads("packetbeat/packetbeat_test_16x_nullColsResponse_1.hex"))
        XCTAssertEqual(tokens.names, ["COLMETADATA", "NBCROW", "DONE"])
        guard case .colMetadata(let meta) = tokens[0] else { return XCTFail() }
        XCTAssertEqual(meta.columns.map(\.name), "abcdefghijklmnop".map(String.init))
        XCTAssertTrue(meta.columns.allSatisfy { $0.typeInfo.sqlTypeName == "varchar(1)" && $0.isNullable })
        XCTAssertEqual(texts(rows(tokens)[0]),
                       ["A", nil, nil, nil, nil, nil, "G", "H", nil, nil, nil, nil, nil, nil, nil, nil])
        XCTAssertEqual(tokens.last?.doneStatus?.rowCount, 1)
    }

    /// SQL Server 2022 and 2019: INTN + NVARCHAR result sets.
    func testPacketbeatSelectResponses() throws {
        let t16 = try verified(try TokenCaptures.packetPayloads("packetbeat/packetbeat_test_16x_selectResponse_1.hex"))
        XCTAssertEqual(t16.names, ["COLMETADATA", "ROW", "DONE"])
        XCTAssertEqual(rows(t16), [[.int(2), .string("orange"), .int(154)]])
        let t15 = try verified(try TokenCaptures.packetPayloads("packetbeat/packetbeat_test_15x_response_1.hex"))
        XCTAssertEqual(t15.names, ["COLMETADATA", "ROW", "DONE"])
        guard case .colMetadata(let meta) = t15[0] else { return XCTFail() }
        XCTAssertEqual(meta.columns.map(\.typeInfo.sqlTypeName), ["int", "nvarchar(100)"])
        XCTAssertEqual(rows(t15), [[.int(10), .string("Fast & Furious")]])
    }

    /// SQL Server 2017 (r2dbc): tinyint, nvarchar, varchar, money, uniqueidentifier, float,
    /// real. r2dbc negotiated column encryption, so COLMETADATA carries an (empty) CEK table.
    func testR2DBCRowWithMoneyGuidFloatReal2017() throws {
        let bytes = try TokenCaptures.hex("r2dbc-mssql/server-tokens/RowTokenUnitTests_shouldDecodeRow.hex")
        let tokens = try verified(bytes, options: .init(columnEncryption: true))
        XCTAssertEqual(tokens.names, ["COLMETADATA", "ROW"])
        guard case .colMetadata(let meta) = tokens[0] else { return XCTFail() }
        XCTAssertEqual(meta.cekTable, [])
        XCTAssertEqual(meta.columns.map(\.name), ["employee_id", "last_name", "first_name", "salary", "foo", "flt", "bar"])
        XCTAssertEqual(meta.columns.map(\.typeInfo.sqlTypeName),
                       ["tinyint", "nvarchar(50)", "varchar(50)", "money", "uniqueidentifier", "float", "real"])
        let row = rows(tokens)[0]
        XCTAssertEqual(row[0], .tinyint(1))
        XCTAssertEqual(row[1], .string("paluch"))
        XCTAssertEqual(row[2], .string("mark"))
        XCTAssertEqual(row[3].canonicalText, "50.0000")
        XCTAssertEqual(row[4].canonicalText, "C70D7BF1-E5C7-40C5-98C7-A12F7E686724")
        XCTAssertEqual(row[5], .float(11344.554))
        XCTAssertEqual(row[6], .real(11344.5537109375))
        // Without the CEK option the same bytes are misread: the option matters.
        let plain = DecoderVerifier.decode(bytes, pieces: [bytes.count], version: .v7_4)
        XCTAssertNotEqual(plain.tokens, tokens)
    }

    /// The int + varchar(max) COLMETADATA (r2dbc file without its 0x81 byte) then the ROW body
    /// (another file, without its 0xD1 byte): 10,000 'A' in several PLP chunks. The test gives
    /// both their missing token bytes.
    func testR2DBCVarcharMaxPLPRow2017() throws {
        let meta = try TokenCaptures.hex("r2dbc-mssql/server-tokens/ColumnMetadataTokenUnitTests_shouldDecodeIntAndVarcharMaxColumns.hex")
        let body = try TokenCaptures.hex("r2dbc-mssql/server-tokens/int-varcharmax-row-plp.hex")
        let nullBody = try TokenCaptures.hex("r2dbc-mssql/server-tokens/RowTokenUnitTests_shouldDecodeIntAndVarcharMaxNull.hex")
        let stream = [0x81] + meta + [0xD1] + body + [0xD1] + nullBody
        let tokens = try verified(stream, options: .init(columnEncryption: true))
        XCTAssertEqual(tokens.names, ["COLMETADATA", "ROW", "ROW"])
        guard case .colMetadata(let m) = tokens[0] else { return XCTFail() }
        XCTAssertEqual(m.columns.map(\.name), ["id", "content"])
        XCTAssertEqual(m.columns.map(\.typeInfo.sqlTypeName), ["int", "varchar(max)"])
        XCTAssertTrue(m.columns[1].typeInfo.isPLP)
        let r = rows(tokens)
        XCTAssertEqual(r[0][0], .int(1))
        XCTAssertEqual(r[0][1], .string(String(repeating: "A", count: 10000)))
        XCTAssertEqual(r[1], [.int(1), .null])
        // More than one chunk in the capture: the first chunk is 0x1EF7 bytes.
        XCTAssertEqual(Array(body[13..<17]), [0xF7, 0x1E, 0x00, 0x00])
    }

    /// r2dbc TabularUnitTests: a second COLMETADATA replaces the first; the ROW that follows is
    /// decoded with the new columns (tinyint 66, int 1).
    func testR2DBCColMetadataReplacesPrevious2017() throws {
        let base = "r2dbc-mssql/server-tokens/TabularUnitTests_colMetadataShouldReplacePreviousMetadata"
        let stream = try TokenCaptures.hex(base + ".hex") + TokenCaptures.hex(base + "_2.hex") + TokenCaptures.hex(base + "_3.hex")
        let tokens = try verified(stream, options: .init(columnEncryption: true))
        XCTAssertEqual(tokens.names, ["COLMETADATA", "COLMETADATA", "ROW"])
        guard case .colMetadata(let m) = tokens[1] else { return XCTFail() }
        XCTAssertEqual(m.columns.map(\.name), ["nullable_col", "ROWSTAT"])
        XCTAssertEqual(rows(tokens), [[.tinyint(66), .int(1)]])
    }

    /// r2dbc: ERROR 207 and RETURNVALUE (an int output parameter) from SQL Server 2017.
    func testR2DBCErrorAndReturnValue2017() throws {
        let err = try verified(try TokenCaptures.hex("r2dbc-mssql/server-tokens/ErrorTokenUnitTests_shouldDecodeErrorToken.hex"))
        guard case .error(let e) = err.first else { return XCTFail("no ERROR") }
        XCTAssertEqual(e.message.number, 207)
        XCTAssertEqual(e.message.state, 1)
        XCTAssertEqual(e.message.severity, 16)
        XCTAssertEqual(e.message.message, "Invalid column name 'fsdf'.")
        XCTAssertEqual(e.message.serverName, "a688092a79f5")
        XCTAssertEqual(e.message.procedureName, "")
        XCTAssertEqual(e.message.lineNumber, 1)
        let rv = try verified(try TokenCaptures.hex("r2dbc-mssql/server-tokens/ReturnValueUnitTests_shouldDecode.hex"))
        guard case .returnValue(let v) = rv.first else { return XCTFail("no RETURNVALUE") }
        XCTAssertEqual(v.ordinal, 0)
        XCTAssertEqual(v.name, "")
        XCTAssertEqual(v.status, 1)
        XCTAssertEqual(v.typeInfo.sqlTypeName, "int")
        XCTAssertEqual(v.value, .int(0x0ABC_DEF3))
    }

    // MARK: Login responses

    private struct LoginSummary {
        var tdsVersion: TDSVersion?
        var serverVersion: String?
        var program: String?
        var database: String?
        var collation: Collation?
        var packetSize: Int?
        var language: String?
        var names: [String] = []
    }

    private func summarize(_ tokens: [Token]) -> LoginSummary {
        var s = LoginSummary()
        s.names = tokens.names
        for t in tokens {
            switch t {
            case .loginAck(let ack):
                s.tdsVersion = ack.tdsVersion
                s.serverVersion = ack.serverVersion.description
                s.program = ack.trimmedProgramName
            case .envChange(let env):
                switch env.type {
                case .database: s.database = env.newText
                case .sqlCollation: s.collation = env.newCollation
                case .packetSize: s.packetSize = env.newPacketSize
                case .language: s.language = env.newText
                default: break
                }
            default: break
            }
        }
        return s
    }

    private func assertSQLLatin1CIAS(_ c: Collation?, file: StaticString = #filePath, line: UInt = #line) {
        guard let c else { return XCTFail("no collation", file: file, line: line) }
        XCTAssertEqual(c.lcid, 0x0409, file: file, line: line)
        XCTAssertEqual(c.sortID, 52, file: file, line: line)
        XCTAssertEqual(c.codePage, 1252, file: file, line: line)
        XCTAssertTrue(c.flags.contains(.ignoreCase), file: file, line: line)
    }

    /// SQL Server 2008 (pytds): TDS 7.3B, 10.0.5512, database SubmissionPortal.
    func testLoginResponse2008() throws {
        let tokens = try verified(try TokenCaptures.packetPayloads("pytds/unit_test_L194_test_login.hex"), version: .v7_3B)
        let s = summarize(tokens)
        XCTAssertEqual(s.names, ["ENVCHANGE", "INFO", "ENVCHANGE", "ENVCHANGE", "INFO", "LOGINACK", "ENVCHANGE", "DONE"])
        XCTAssertEqual(s.tdsVersion, .v7_3B)
        XCTAssertEqual(s.serverVersion, "10.0.5512")
        XCTAssertEqual(s.program, "Microsoft SQL Server")
        XCTAssertEqual(s.database, "SubmissionPortal")
        XCTAssertEqual(s.language, "us_english")
        XCTAssertEqual(s.packetSize, 4096)
        XCTAssertEqual(s.collation?.lcid, 0x0409)
        XCTAssertEqual(s.collation?.sortID, 0)
        XCTAssertEqual(s.collation?.codePage, 1252)
        guard case .info(let info) = tokens[1] else { return XCTFail() }
        XCTAssertEqual(info.message.number, 5701)
        XCTAssertEqual(info.message.message, "Changed database context to 'SubmissionPortal'.")
    }

    /// SQL Server 2017 (r2dbc): TDS 7.4, 14.0.3038, packet size 4096 -> 8000, COLUMNENCRYPTION ack.
    func testLoginResponse2017() throws {
        let tokens = try verified(try TokenCaptures.hex("r2dbc-mssql/server-tokens/TabularUnitTests_shouldDecodeLoginAck.hex"))
        let s = summarize(tokens)
        XCTAssertEqual(s.names, ["ENVCHANGE", "INFO", "ENVCHANGE", "ENVCHANGE", "INFO", "LOGINACK", "ENVCHANGE", "FEATUREEXTACK", "DONE"])
        XCTAssertEqual(s.tdsVersion, .v7_4)
        XCTAssertEqual(s.serverVersion, "14.0.3038")
        XCTAssertEqual(s.database, "master")
        XCTAssertEqual(s.packetSize, 8000)
        assertSQLLatin1CIAS(s.collation)
        guard case .envChange(let ps) = tokens[6] else { return XCTFail() }
        XCTAssertEqual(ps.oldValue, .text("4096"))
        guard case .featureExtAck(let ack) = tokens[7] else { return XCTFail() }
        XCTAssertEqual(ack.columnEncryptionVersion, 1)
    }

    /// SQL Server 2019 and 2022 (packetbeat): TDS 7.4, 15.0.4236 and 16.0.600.
    func testLoginResponses2019And2022() throws {
        for (file, version, features) in [
            ("packetbeat/packetbeat_test_15x_Login_2.hex", "15.0.4236", ["DATACLASSIFICATION", "UTF8_SUPPORT", "SESSIONRECOVERY"]),
            ("packetbeat/packetbeat_test_16x_Login_2.hex", "16.0.600", ["AZURESQLDNSCACHING", "DATACLASSIFICATION", "UTF8_SUPPORT", "SESSIONRECOVERY"]),
        ] {
            let tokens = try verified(try TokenCaptures.packetPayloads(file))
            let s = summarize(tokens)
            XCTAssertEqual(s.names, ["ENVCHANGE", "INFO", "ENVCHANGE", "ENVCHANGE", "INFO", "LOGINACK", "ENVCHANGE", "FEATUREEXTACK", "DONE"], file)
            XCTAssertEqual(s.tdsVersion, .v7_4, file)
            XCTAssertEqual(s.serverVersion, version, file)
            XCTAssertEqual(s.database, "master", file)
            XCTAssertEqual(s.packetSize, 4096, file)
            assertSQLLatin1CIAS(s.collation)
            guard case .featureExtAck(let ack) = tokens[7] else { return XCTFail(file) }
            XCTAssertEqual(ack.features.map(\.id.name), features, file)
            XCTAssertEqual(ack.dataClassificationVersion, 1, file)
            XCTAssertTrue(ack.utf8Supported, file)
        }
    }

    /// SQL Server 2025 (pySQLbridge): TDS 7.4, 17.0.1000; DATACLASSIFICATION version 2.
    func testLoginResponse2025() throws {
        let bytes = try TokenCaptures.hex("pysqlbridge/login_response.hex")
        let tokens = try verified(bytes)
        let s = summarize(tokens)
        XCTAssertEqual(s.names, ["ENVCHANGE", "INFO", "ENVCHANGE", "ENVCHANGE", "INFO", "LOGINACK", "ENVCHANGE", "FEATUREEXTACK", "DONE"])
        XCTAssertEqual(s.tdsVersion, .v7_4)
        XCTAssertEqual(s.serverVersion, "17.0.1000")
        XCTAssertEqual(s.database, "master")
        XCTAssertEqual(s.packetSize, 4096)
        assertSQLLatin1CIAS(s.collation)
        guard case .featureExtAck(let ack) = tokens[7] else { return XCTFail() }
        XCTAssertEqual(ack.dataClassificationVersion, 2)
        // The decoder follows the ack for later DATACLASSIFICATION tokens.
        var d = TokenStreamDecoder(version: .v7_4)
        d.append(bytes)
        while try d.next() != nil {}
        XCTAssertEqual(d.options.dataClassificationVersion, 2)
        XCTAssertEqual(d.version, .v7_4)
    }
}
