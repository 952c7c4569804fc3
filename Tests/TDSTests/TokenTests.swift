import XCTest
@testable import TDS
import SQLClientTesting
import TDS

/// Unit tests of each token decoder ([MS-TDS] 2.2.7), on bytes built in the test.
final class TokenTests: XCTestCase {
    /// Decodes a whole stream three ways (DecoderVerifier) and returns the tokens.
    func tokens(_ bytes: [UInt8], version: TDSVersion = .v7_4, options: TokenStreamDecoder.Options = .init()) throws -> [Token] {
        try DecoderVerifier.verify(bytes, version: version, options: options, randomSplits: 8, seed: 7)
    }

    func outcome(_ bytes: [UInt8], version: TDSVersion = .v7_4, options: TokenStreamDecoder.Options = .init()) throws -> DecoderVerifier.Outcome {
        try DecoderVerifier.outcome(bytes, version: version, options: options, randomSplits: 8, seed: 9)
    }

    func build(_ body: (inout ByteWriter) throws -> Void) rethrows -> [UInt8] {
        var w = ByteWriter()
        try body(&w)
        return w.bytes
    }

    // MARK: DONE family

    func testDoneLongAndShortRowCounts() throws {
        let b74: [UInt8] = [0xFD, 0x11, 0x00, 0xC1, 0x00, 0x05, 0, 0, 0, 0x01, 0, 0, 0]
        guard case .done(let d) = try tokens(b74).first else { return XCTFail() }
        XCTAssertEqual(d.status, [.more, .count])
        XCTAssertEqual(d.status.description, "MORE|COUNT")
        XCTAssertEqual(d.currentCommand, 0xC1)
        XCTAssertEqual(d.rowCount, 0x1_0000_0005)
        XCTAssertEqual(d.affectedRows, 0x1_0000_0005)
        // TDS 7.1: 4-byte DoneRowCount, so the same first 9 bytes are a whole token.
        let b71: [UInt8] = [0xFD, 0x10, 0x00, 0xC1, 0x00, 0x07, 0, 0, 0]
        guard case .done(let d71) = try tokens(b71, version: .v7_1_1).first else { return XCTFail() }
        XCTAssertEqual(d71.rowCount, 7)
        // …and with 7.4 the same bytes are a partial token.
        let partial = try outcome(b71)
        XCTAssertEqual(partial.error?.code, .truncated)
        XCTAssertEqual(partial.error?.context, "DONE")
        XCTAssertEqual(partial.error?.offset, 0)
    }

    func testDoneStatusNames() {
        XCTAssertEqual(DoneStatus(rawValue: 0).description, "FINAL")
        XCTAssertEqual(DoneStatus(rawValue: 0x0002 | 0x0100).description, "ERROR|SRVERROR")
        XCTAssertEqual(DoneStatus(rawValue: 0x0020 | 0x0004).flagNames, ["INXACT", "ATTN"])
        XCTAssertEqual(DoneStatus(rawValue: 0x0001 | 0x0800).description, "MORE|0x800")
        XCTAssertNil(Done(status: [.more], rowCount: 3).affectedRows)
    }

    func testDoneProcAndDoneInProcRoundTrip() throws {
        let bytes = build { w in
            DoneInProc(status: [.more, .count], currentCommand: 0xC3, rowCount: 2).encode(into: &w, version: .v7_4)
            DoneProc(status: [.error, .inTransaction], currentCommand: 0xE0, rowCount: 0).encode(into: &w, version: .v7_4)
            Done(status: [.attention], currentCommand: 0, rowCount: 0).encode(into: &w, version: .v7_4)
        }
        XCTAssertEqual(bytes.count, 39)
        let t = try tokens(bytes)
        XCTAssertEqual(t.names, ["DONEINPROC", "DONEPROC", "DONE"])
        XCTAssertEqual(t[0], .doneInProc(DoneInProc(status: [.more, .count], currentCommand: 0xC3, rowCount: 2)))
        XCTAssertEqual(t[1].doneStatus?.status, [.error, .inTransaction])
        XCTAssertEqual(t[2].doneStatus?.status.description, "ATTN")
    }

    // MARK: ERROR / INFO / LOGINACK

    func testErrorAndInfoBothLineNumberSizes() throws {
        let msg = ServerMessage(number: 2627, state: 1, severity: 14, message: "Violation of PRIMARY KEY constraint 'PK_t'.",
                                serverName: "srv", procedureName: "p_insert", lineNumber: 70000)
        let b74 = build { w in ErrorToken(msg).encode(into: &w, version: .v7_4); InfoToken(msg).encode(into: &w, version: .v7_4) }
        let t = try tokens(b74)
        XCTAssertEqual(t, [.error(ErrorToken(msg)), .info(InfoToken(msg))])
        XCTAssertEqual(msg.description, "Msg 2627, Level 14, State 1, Procedure p_insert, Line 70000\nViolation of PRIMARY KEY constraint 'PK_t'.")
        let flags: [Bool?] = t.map { token -> Bool? in
            switch token {
            case .error(let e): return e.message.isError
            case .info(let i): return i.message.isError
            default: return nil
            }
        }
        XCTAssertEqual(flags, [true, false])
        var short = msg
        short.lineNumber = 12
        let b71 = build { w in ErrorToken(short).encode(into: &w, version: .v7_1_1) }
        XCTAssertEqual(b71.count, b74.count / 2 - 2)
        XCTAssertEqual(try tokens(b71, version: .v7_1_1), [.error(ErrorToken(short))])
    }

    func testInfoFromA71ServerBeforeItsLoginAckDecodesWithA74Decoder() throws {
        // A SQL Server 2000 answers a 7.4 LOGIN7 with 7.1 tokens: 2-byte LineNumber in INFO
        // (told apart by the token length), then LOGINACK 7.1, then a DONE with a 4-byte count.
        let info = ServerMessage(number: 5701, state: 2, severity: 0, message: "Changed database context to 'pubs'.",
                                 serverName: "OLDBOX", lineNumber: 1)
        let bytes = build { w in
            InfoToken(info).encode(into: &w, version: .v7_1_1)
            LoginAck(tdsVersion: .v7_1_1, programName: "Microsoft SQL Server", serverVersion: .init(major: 8, minor: 0, build: 2039)).encode(into: &w)
            Done(status: [], currentCommand: 0, rowCount: 0).encode(into: &w, version: .v7_1_1)
        }
        let t = try tokens(bytes, version: .v7_4)
        XCTAssertEqual(t.names, ["INFO", "LOGINACK", "DONE"])
        XCTAssertEqual(t[0], .info(InfoToken(info)))
        XCTAssertEqual(t[2].doneStatus?.status, [])
    }

    func testErrorWhoseLengthIsTooShortIsInvalidLength() throws {
        var bytes = build { w in ErrorToken(ServerMessage(number: 1, state: 1, severity: 16, message: "abc")).encode(into: &w, version: .v7_4) }
        bytes[1] -= 3   // declared length 3 bytes short: neither LineNumber size fits
        let out = try outcome(bytes + [0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
        XCTAssertEqual(out.error?.code, .invalidLength)
        XCTAssertEqual(out.error?.context, "ERROR")
        XCTAssertEqual(out.tokens, [])
    }

    func testLoginAck() throws {
        let ack = LoginAck(interface: 1, tdsVersion: .v7_4, programName: "Microsoft SQL Server\0\0",
                           serverVersion: .init(major: 16, minor: 0, build: 4135))
        let bytes = build { ack.encode(into: &$0) }
        XCTAssertEqual(Array(bytes[4...7]), [0x74, 0x00, 0x00, 0x04])   // TDSVersion is big-endian
        guard case .loginAck(let got) = try tokens(bytes).first else { return XCTFail() }
        XCTAssertEqual(got, ack)
        XCTAssertEqual(got.serverVersion.description, "16.0.4135")
        XCTAssertEqual(got.trimmedProgramName, "Microsoft SQL Server")
        // The decoder adopts the acknowledged version.
        var d = TokenStreamDecoder(version: .v7_4)
        d.append(build { LoginAck(tdsVersion: .v7_1_1, programName: "x", serverVersion: .init(major: 8, minor: 0, build: 2039)).encode(into: &$0) })
        _ = try d.next()
        XCTAssertEqual(d.version, .v7_1_1)
    }

    // MARK: ENVCHANGE, every type

    func testEnvChangeEveryType() throws {
        let txn: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        let changes: [EnvChange] = [
            EnvChange(type: .database, newValue: .text("tempdb"), oldValue: .text("master")),
            EnvChange(type: .language, newValue: .text("Deutsch"), oldValue: .text("us_english")),
            EnvChange(type: .charset, newValue: .text("iso_1"), oldValue: .text("")),
            EnvChange(type: .packetSize, newValue: .text("8000"), oldValue: .text("4096")),
            EnvChange(type: .unicodeSortLocale, newValue: .text("1033"), oldValue: .text("")),
            EnvChange(type: .unicodeSortFlags, newValue: .text("196609"), oldValue: .text("")),
            EnvChange(type: .sqlCollation, newValue: .bytes([0x09, 0x04, 0xD0, 0x00, 0x34]), oldValue: .bytes([])),
            EnvChange(type: .beginTransaction, newValue: .bytes(txn), oldValue: .bytes([])),
            EnvChange(type: .commitTransaction, newValue: .bytes([]), oldValue: .bytes(txn)),
            EnvChange(type: .rollbackTransaction, newValue: .bytes([]), oldValue: .bytes(txn)),
            EnvChange(type: .enlistDTCTransaction, newValue: .bytes([]), oldValue: .bytes(txn)),
            EnvChange(type: .defectTransaction, newValue: .bytes(txn), oldValue: .bytes([])),
            EnvChange(type: .mirrorPartner, newValue: .text("mirror-host"), oldValue: .text("")),
            EnvChange(type: .promoteTransaction, newValue: .bytes(Array(repeating: 0xAB, count: 300)), oldValue: .bytes([])),
            EnvChange(type: .transactionManagerAddress, newValue: .bytes([10, 0, 0, 1]), oldValue: .bytes([])),
            EnvChange(type: .transactionEnded, newValue: .bytes([]), oldValue: .bytes(txn)),
            EnvChange(type: .resetConnectionAck, newValue: .bytes([]), oldValue: .bytes([])),
            EnvChange(type: .userInstance, newValue: .text("\\\\.\\pipe\\LOCALDB#1\\tsql\\query"), oldValue: .text("")),
            EnvChange(type: .routing, newValue: .routing(.init(protocol: 0, port: 11000, server: "db2.example.net")), oldValue: .routing(nil)),
            EnvChange(type: EnvChangeType(rawValue: 99), newValue: .bytes([1, 2, 3]), oldValue: .bytes([])),
        ]
        let bytes = build { w in for c in changes { c.encode(into: &w) } }
        let t = try tokens(bytes)
        XCTAssertEqual(t, changes.map { .envChange($0) })
        XCTAssertEqual(changes[3].newPacketSize, 4096 + 3904)
        XCTAssertEqual(changes[6].newCollation?.sortID, 52)
        XCTAssertEqual(changes[7].transactionDescriptor, txn)
        XCTAssertEqual(changes[8].transactionDescriptor, txn)
        XCTAssertEqual(changes[18].routing?.port, 11000)
        XCTAssertEqual(changes[18].routing?.server, "db2.example.net")
        XCTAssertEqual(EnvChangeType.promoteTransaction.name, "Promote Transaction")
        // Promote transaction uses a 4-byte length for its new value.
        let promote = build { changes[13].encode(into: &$0) }
        XCTAssertEqual(Array(promote[4..<8]), [0x2C, 0x01, 0x00, 0x00])
    }

    func testEnvChangeRoutingWireShape() throws {
        // Length, type 20, RoutingDataValueLength, protocol 0, port 1433, US_VARCHAR "ab", old 0x0000.
        let bytes: [UInt8] = [0xE3, 0x0E, 0x00, 0x14, 0x09, 0x00, 0x00, 0x99, 0x05, 0x02, 0x00, 0x61, 0x00, 0x62, 0x00, 0x00, 0x00]
        guard case .envChange(let e) = try tokens(bytes).first else { return XCTFail() }
        XCTAssertEqual(e.routing, EnvChange.Routing(protocol: 0, port: 1433, server: "ab"))
    }

    // MARK: small tokens

    func testOrderReturnStatusOffset() throws {
        let bytes: [UInt8] = [0xA9, 0x04, 0x00, 0x02, 0x00, 0x01, 0x00,
                              0x79, 0xFE, 0xFF, 0xFF, 0xFF,
                              0x78, 0x03, 0x00, 0x10, 0x00]
        let t = try tokens(bytes, version: .v7_1_1)
        XCTAssertEqual(t, [.order(Order(columns: [2, 1])), .returnStatus(ReturnStatus(value: -2)),
                           .offset(Offset(identifier: 3, offset: 16))])
        let odd = try outcome([0xA9, 0x03, 0x00, 0x02, 0x00, 0x01])
        XCTAssertEqual(odd.error?.code, .invalidLength)
        XCTAssertEqual(odd.error?.context, "ORDER")
    }

    func testTabNameBothForms() throws {
        let multi = build { w in
            w.writeUInt8(0xA4)
            var body = ByteWriter()
            body.writeUInt8(2); body.writeUSVarChar("dbo"); body.writeUSVarChar("orders")
            body.writeUInt8(1); body.writeUSVarChar("lines")
            w.writeUInt16LE(UInt16(body.count)); w.writeBytes(body.bytes)
        }
        XCTAssertEqual(try tokens(multi), [.tabName(TabName(tables: [["dbo", "orders"], ["lines"]]))])
        let single = build { w in
            w.writeUInt8(0xA4)
            var body = ByteWriter()
            body.writeUSVarChar("orders")
            w.writeUInt16LE(UInt16(body.count)); w.writeBytes(body.bytes)
        }
        XCTAssertEqual(try tokens(single, version: .v7_0), [.tabName(TabName(tables: [["orders"]]))])
        // The token length bounds the names: the single form is still understood at 7.4.
        XCTAssertEqual(try tokens(single, version: .v7_4), [.tabName(TabName(tables: [["orders"]]))])
        // …and garbage in either form is an error naming TABNAME.
        let bad = try outcome([0xA4, 0x03, 0x00, 0x05, 0x01, 0x00])
        XCTAssertEqual(bad.error?.context, "TABNAME")
        XCTAssertEqual(bad.error?.code, .invalidLength)
    }

    func testColInfo() throws {
        let bytes: [UInt8] = [0xA5, 0x0B, 0x00, 0x01, 0x01, 0x00, 0x02, 0x01, 0x28, 0x02, 0x41, 0x00, 0x42, 0x00]
        guard case .colInfo(let c) = try tokens(bytes).first else { return XCTFail() }
        XCTAssertEqual(c.columns.count, 2)
        XCTAssertEqual(c.columns[0], ColInfo.Column(columnNumber: 1, tableNumber: 1, status: []))
        XCTAssertEqual(c.columns[1].status, [.key, .differentName])
        XCTAssertEqual(c.columns[1].baseName, "AB")
    }

    func testSSPIAndSessionStateAndFeatureExtAck() throws {
        var bytes: [UInt8] = [0xED, 0x03, 0x00, 0x4E, 0x54, 0x4C]
        // SESSIONSTATE: SeqNo 5, recoverable, state 0 (1 byte), state 9 with a 0xFF DWORD length of 300.
        var ss = ByteWriter()
        ss.writeUInt32LE(5); ss.writeUInt8(1)
        ss.writeUInt8(0); ss.writeUInt8(1); ss.writeUInt8(0x42)
        ss.writeUInt8(9); ss.writeUInt8(0xFF); ss.writeUInt32LE(300); ss.writeBytes(Array(repeating: 7, count: 300))
        bytes += [0xE4]
        bytes += build { $0.writeUInt32LE(UInt32(ss.count)) } + ss.bytes
        let ack = FeatureExtAck(features: [.init(id: .columnEncryption, data: [2]), .init(id: .dataClassification, data: [2, 1]),
                                           .init(id: .utf8Support, data: [1])])
        bytes += build { ack.encode(into: &$0) }
        let t = try tokens(bytes)
        XCTAssertEqual(t.names, ["SSPI", "SESSIONSTATE", "FEATUREEXTACK"])
        XCTAssertEqual(t[0], .sspi(SSPIToken(buffer: [0x4E, 0x54, 0x4C])))
        guard case .sessionState(let s) = t[1] else { return XCTFail() }
        XCTAssertEqual(s.sequenceNumber, 5)
        XCTAssertTrue(s.isRecoverable)
        XCTAssertEqual(s.states.map(\.id), [0, 9])
        XCTAssertEqual(s.states[1].value.count, 300)
        XCTAssertEqual(t[2], .featureExtAck(ack))
        XCTAssertEqual(ack.columnEncryptionVersion, 2)
        XCTAssertEqual(ack.dataClassificationVersion, 2)
        XCTAssertTrue(ack.utf8Supported)
    }

    func testFedAuthInfo() throws {
        let sts = Array("https://login.example/".utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })
        let spn = Array("https://db.example/".utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })
        var body = ByteWriter()
        body.writeUInt32LE(2)
        let dataStart = 4 + 2 * 9
        body.writeUInt8(0x02); body.writeUInt32LE(UInt32(spn.count)); body.writeUInt32LE(UInt32(dataStart + sts.count))
        body.writeUInt8(0x01); body.writeUInt32LE(UInt32(sts.count)); body.writeUInt32LE(UInt32(dataStart))
        body.writeBytes(sts); body.writeBytes(spn)
        let bytes = [0xEE] + build { $0.writeUInt32LE(UInt32(body.count)) } + body.bytes
        guard case .fedAuthInfo(let f) = try tokens(bytes).first else { return XCTFail() }
        XCTAssertEqual(f.stsURL, "https://login.example/")
        XCTAssertEqual(f.spn, "https://db.example/")
        // An offset outside the token is rejected.
        var bad = bytes
        bad[5 + 4 + 5] = 0xF0
        let out = try outcome(bad)
        XCTAssertEqual(out.error?.code, .invalidLength)
        XCTAssertEqual(out.error?.context, "FEDAUTHINFO")
    }

    func testDataClassificationVersions() throws {
        func body(rank: Bool) -> [UInt8] {
            build { w in
                w.writeUInt8(0xA3)
                w.writeUInt16LE(1); w.writeBVarChar("Confidential"); w.writeBVarChar("L1")
                w.writeUInt16LE(1); w.writeBVarChar("Financial"); w.writeBVarChar("T1")
                if rank { w.writeInt32LE(20) }
                w.writeUInt16LE(2)
                w.writeUInt16LE(0)
                w.writeUInt16LE(1); w.writeUInt16LE(0); w.writeUInt16LE(0); if rank { w.writeInt32LE(30) }
            }
        }
        guard case .dataClassification(let v1) = try tokens(body(rank: false)).first else { return XCTFail() }
        XCTAssertEqual(v1.labels, [.init(name: "Confidential", id: "L1")])
        XCTAssertEqual(v1.informationTypes, [.init(name: "Financial", id: "T1")])
        XCTAssertNil(v1.rank)
        XCTAssertEqual(v1.columns, [[], [.init(labelIndex: 0, informationTypeIndex: 0)]])
        // Version 2 negotiated by FEATUREEXTACK in the same stream.
        let ack = build { FeatureExtAck(features: [.init(id: .dataClassification, data: [2, 1])]).encode(into: &$0) }
        let t = try tokens(ack + body(rank: true))
        guard case .dataClassification(let v2) = t.last else { return XCTFail() }
        XCTAssertEqual(v2.rank, 20)
        XCTAssertEqual(v2.columns[1], [.init(labelIndex: 0, informationTypeIndex: 0, rank: 30)])
    }

    // MARK: COLMETADATA / ROW / NBCROW / RETURNVALUE / ALT*

    let columns: [ColumnMetadata] = [
        ColumnMetadata(flags: [], typeInfo: .int, name: "id"),
        ColumnMetadata(typeInfo: .nvarchar(10), name: "name"),
        ColumnMetadata(typeInfo: .varbinary(nil), name: "blob"),
        ColumnMetadata(typeInfo: .ntext(), tableName: ["dbo", "t"], name: "notes"),
        ColumnMetadata(typeInfo: .decimal(precision: 10, scale: 3), name: "amount"),
    ]

    func testColMetadataRowAndNBCRowRoundTrip() throws {
        let rowValues: [SQLValue] = [.int(7), .string("héllo"), .binary([1, 2, 3]), .string("long text"), .null]
        let nbcValues: [SQLValue] = [.int(8), .null, .null, .null, .null]
        let bytes = try build { w in
            ColMetadata(columns: columns).encode(into: &w, version: .v7_4)
            try Row(values: rowValues).encode(into: &w, columns: columns)
            try NBCRow(values: nbcValues).encode(into: &w, columns: columns)
            Done(status: [.count], currentCommand: 0xC1, rowCount: 2).encode(into: &w, version: .v7_4)
        }
        let t = try tokens(bytes)
        XCTAssertEqual(t.names, ["COLMETADATA", "ROW", "NBCROW", "DONE"])
        guard case .colMetadata(let m) = t[0] else { return XCTFail() }
        XCTAssertEqual(m.columns.map(\.name), ["id", "name", "blob", "notes", "amount"])
        XCTAssertEqual(m.columns[3].tableName, ["dbo", "t"])
        XCTAssertEqual(m.columns.map(\.typeInfo.sqlTypeName), ["int", "nvarchar(10)", "varbinary(max)", "ntext", "decimal(10,3)"])
        XCTAssertFalse(m.columns[0].isNullable)
        XCTAssertEqual(t[1].rowValues, rowValues)
        XCTAssertEqual(t[2].rowValues, nbcValues)
        // The NBCROW bitmap marks columns 2-5: 0b0001_1110.
        let nbcStart = bytes.lastIndex(of: 0xD2)
        XCTAssertEqual(nbcStart.map { bytes[$0 + 1] }, 0x1E)
    }

    func testColMetadataWithCEKTableAndEncryptedColumn() throws {
        let bytes = build { w in
            w.writeUInt8(0x81)
            w.writeUInt16LE(1)
            w.writeUInt16LE(1)                       // EkValueCount
            w.writeUInt32LE(5); w.writeUInt32LE(6); w.writeUInt32LE(1); w.writeUInt64LE(0x0102)
            w.writeUInt8(1)
            w.writeUInt16LE(3); w.writeBytes([9, 9, 9])
            w.writeBVarChar("MSSQL_CERTIFICATE_STORE"); w.writeUSVarChar("CurrentUser/My/ABC"); w.writeBVarChar("RSA_OAEP")
            w.writeUInt32LE(0); w.writeUInt16LE(0x0801)   // nullable + encrypted
            TypeInfo.varbinary(8000).encode(into: &w, version: .v7_4)
            w.writeUInt16LE(0)                          // CryptoMetaData Ordinal
            w.writeUInt32LE(0)
            TypeInfo.int.encode(into: &w, version: .v7_4)
            w.writeUInt8(2); w.writeUInt8(1); w.writeUInt8(1)
            w.writeBVarChar("ssn")
        }
        let t = try tokens(bytes, options: .init(columnEncryption: true))
        guard case .colMetadata(let m) = t.first else { return XCTFail() }
        XCTAssertEqual(m.cekTable?.count, 1)
        XCTAssertEqual(m.cekTable?.first?.values.first?.keyPath, "CurrentUser/My/ABC")
        XCTAssertEqual(m.cekTable?.first?.cekMetadataVersion, 0x0102)
        XCTAssertEqual(m.columns.first?.flags, [.nullable, .encrypted])
        XCTAssertEqual(m.columns.first?.cryptoMetadata?.baseType, .int)
        XCTAssertEqual(m.columns.first?.cryptoMetadata?.encryptionType, 1)
        XCTAssertEqual(m.columns.first?.name, "ssn")
        XCTAssertEqual(m.columns.first?.typeInfo.sqlTypeName, "varbinary(8000)")
    }

    func testNoMetadataKeepsPreviousColumns() throws {
        let bytes = try build { w in
            ColMetadata(columns: [ColumnMetadata(typeInfo: .int, name: "a")]).encode(into: &w, version: .v7_4)
            ColMetadata(columns: [], isNoMetadata: true).encode(into: &w, version: .v7_4)
            try Row(values: [.int(3)]).encode(into: &w, columns: [ColumnMetadata(typeInfo: .int, name: "a")])
        }
        let t = try tokens(bytes)
        XCTAssertEqual(t.names, ["COLMETADATA", "COLMETADATA", "ROW"])
        XCTAssertEqual(t[2].rowValues, [.int(3)])
    }

    func testReturnValueWithPLPValue() throws {
        let info = TypeInfo.nvarchar(nil)
        let long = String(repeating: "xyz", count: 5000)
        let bytes = try build { w in
            w.writeUInt8(0xAC)
            w.writeUInt16LE(2); w.writeBVarChar("@out"); w.writeUInt8(1)
            w.writeUInt32LE(0); w.writeUInt16LE(1)
            info.encode(into: &w, version: .v7_4)
            try info.encodeValue(.string(long), into: &w)
            ReturnStatus(value: 0).encode(into: &w)
        }
        let t = try tokens(bytes)
        XCTAssertEqual(t.names, ["RETURNVALUE", "RETURNSTATUS"])
        guard case .returnValue(let rv) = t[0] else { return XCTFail() }
        XCTAssertEqual(rv.name, "@out")
        XCTAssertEqual(rv.ordinal, 2)
        XCTAssertEqual(rv.value, .string(long))
        XCTAssertEqual(rv.typeInfo.sqlTypeName, "nvarchar(max)")
    }

    func testAltMetadataAndAltRow() throws {
        let bytes = try build { w in
            ColMetadata(columns: [ColumnMetadata(typeInfo: .int, name: "qty")]).encode(into: &w, version: .v7_1_1)
            try Row(values: [.int(4)]).encode(into: &w, columns: [ColumnMetadata(typeInfo: .int, name: "qty")])
            w.writeUInt8(0x88)
            w.writeUInt16LE(1); w.writeUInt16LE(1); w.writeUInt8(1); w.writeUInt16LE(1)
            w.writeUInt8(0x4D); w.writeUInt16LE(1)        // SUM of column 1
            w.writeUInt16LE(0); w.writeUInt16LE(1)        // UserType (7.1: USHORT), Flags
            TypeInfo.int.encode(into: &w, version: .v7_1_1)
            w.writeBVarChar("sum")
            w.writeUInt8(0xD3); w.writeUInt16LE(1); try TypeInfo.int.encodeValue(.int(4), into: &w)
        }
        let t = try tokens(bytes, version: .v7_1_1)
        XCTAssertEqual(t.names, ["COLMETADATA", "ROW", "ALTMETADATA", "ALTROW"])
        guard case .altMetadata(let m) = t[2] else { return XCTFail() }
        XCTAssertEqual(m.id, 1)
        XCTAssertEqual(m.byColumns, [1])
        XCTAssertEqual(m.columns.first?.op, 0x4D)
        XCTAssertEqual(m.columns.first?.metadata.name, "sum")
        XCTAssertEqual(t[3], .altRow(AltRow(id: 1, values: [.int(4)])))
        // An ALTROW with an unknown Id.
        var bad = bytes
        bad[bad.count - 7] = 9
        let out = try outcome(bad, version: .v7_1_1)
        XCTAssertEqual(out.error?.code, .unexpectedToken)
        XCTAssertEqual(out.error?.context, "ALTROW")
        XCTAssertEqual(out.error?.offset, bad.count - 7)
    }

    func testTokenNames() {
        XCTAssertEqual(TokenType(rawValue: 0xFF).name, "DONEINPROC")
        XCTAssertEqual(TokenType(rawValue: 0xD2).name, "NBCROW")
        XCTAssertEqual(TokenType(rawValue: 0x12).name, "0x12")
        XCTAssertFalse(TokenType(rawValue: 0x12).isKnown)
        XCTAssertEqual(Token.returnStatus(ReturnStatus(value: 1)).name, "RETURNSTATUS")
        XCTAssertEqual(Token.sspi(SSPIToken(buffer: [])).name, "SSPI")
        XCTAssertEqual(Token.done(Done(status: [.count], currentCommand: 0xC1, rowCount: 3)).description, "DONE COUNT rows=3")
        XCTAssertEqual(Token.row(Row(values: [.int(42), .null])).description, "ROW [42, NULL]")
        XCTAssertEqual(Token.envChange(EnvChange(type: .database, newValue: .text("tempdb"), oldValue: .text("master"))).description,
                       "ENVCHANGE Database master -> tempdb")
    }
}
