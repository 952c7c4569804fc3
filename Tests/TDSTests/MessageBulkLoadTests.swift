import XCTest
@testable import TDS
import SQLClientTesting
import TDS

/// BulkLoadEncoder, BulkLoadColumn, BulkLoadReader ([MS-TDS] 2.2.6.1) and BulkLoadStatement (2.2.1.5).
final class MessageBulkLoadTests: XCTestCase {
    /// A whole BULKLOAD body for `columns` and `rows`.
    func body(_ columns: [BulkLoadColumn], _ rows: [[SQLValue]], version: TDSVersion = .v7_4) throws -> [UInt8] {
        var encoder = BulkLoadEncoder(columns: columns, version: version, tableName: "dbo.everything")
        var w = ByteWriter()
        encoder.encodeMetadata(into: &w)
        for r in rows { try encoder.encodeRow(r, into: &w) }
        encoder.encodeDone(into: &w)
        XCTAssertEqual(encoder.rowCount, rows.count)
        return w.bytes
    }

    /// Decodes a body fed in pieces of the sizes `cuts` gives (nil: whole).
    func decode(_ bytes: [UInt8], version: TDSVersion = .v7_4, pieces: (() -> Int)? = nil) throws
        -> (columns: [ColumnMetadata], rows: [[SQLValue]], done: Done?) {
        var reader = BulkLoadReader(version: version)
        var columns: [ColumnMetadata] = []
        var rows: [[SQLValue]] = []
        var done: Done?
        var i = 0
        repeat {
            let n = pieces.map { min(max($0(), 1), bytes.count - i) } ?? bytes.count
            reader.append(Array(bytes[i ..< i + n]))
            i += n
            while let item = try reader.next() {
                switch item {
                case .metadata(let c): columns = c
                case .row(let r): rows.append(r)
                case .done(let d): done = d
                }
            }
        } while i < bytes.count
        try reader.finish()
        XCTAssertEqual(reader.rowCount, rows.count)
        return (columns, rows, done)
    }

    func testEveryInsertableTypeRoundTripsWholeByteByByteAndInRandomPieces() throws {
        let columns = BulkLoadFixtures.bulkColumns
        let rows = BulkLoadFixtures.rows
        XCTAssertEqual(columns.count, rows[0].count)
        let bytes = try body(columns, rows)
        var rng = SplitMix64(seed: 15)
        for (label, pieces) in [("whole", nil), ("byte by byte", { 1 }), ("random", { Int(rng.next() % 700) + 1 })]
            as [(String, (() -> Int)?)] {
            let decoded = try decode(bytes, pieces: pieces)
            XCTAssertEqual(decoded.columns.map(\.name), columns.map(\.name), label)
            XCTAssertEqual(decoded.columns.map(\.typeInfo), columns.map(\.typeInfo), label)
            XCTAssertEqual(decoded.done, Done(status: []), label)
            XCTAssertEqual(decoded.rows.count, rows.count, label)
            for (r, (got, sent)) in zip(decoded.rows, rows).enumerated() {
                for (c, (g, s)) in zip(got, sent).enumerated() {
                    XCTAssertEqual(g, BulkLoadFixtures.expectedDecoded(s), "\(label) row \(r + 1) column \(columns[c].name)")
                }
            }
        }
    }

    func testTwoPointTwoSixOneTypeRules() throws {
        let cols = Dictionary(uniqueKeysWithValues: BulkLoadFixtures.bulkColumns.map { ($0.name, $0) })
        XCTAssertNil(cols["id"], "identity left to the server")
        XCTAssertNil(cols["calc"], "computed column not sent")
        XCTAssertNil(cols["rv"], "rowversion not sent")
        XCTAssertEqual(cols["x"]?.typeInfo.type, .nvarchar)
        XCTAssertEqual(cols["x"]?.typeInfo.isPLP, true)
        XCTAssertEqual(cols["x"]?.declaration, "nvarchar(max)")
        XCTAssertEqual(cols["h"]?.typeInfo, .varbinary(892))
        XCTAssertEqual(cols["i"]?.typeInfo, .int, "INT4 goes as INTN(4)")
        XCTAssertEqual(cols["i"]?.flags.contains(.nullable), false)
        XCTAssertEqual(cols["dec"]?.typeInfo.type, .decimalN)
        XCTAssertEqual(BulkLoadColumn(name: "d", type: TypeInfo(type: .decimal, length: 5, precision: 9, scale: 2)).typeInfo.type, .decimalN)
        XCTAssertEqual(BulkLoadColumn(name: "n", type: TypeInfo(type: .numeric, length: 5, precision: 9, scale: 2)).typeInfo.type, .numericN)
        XCTAssertEqual(BulkLoadColumn(name: "u", type: TypeInfo(type: .udt, length: 0xFFFF, isPLP: true)).typeInfo, .varbinary(nil))
        let withIdentity = BulkLoadColumn(tableColumn: BulkLoadFixtures.tableColumns[0].metadata, includeIdentity: true)
        XCTAssertEqual(withIdentity?.name, "id")
    }

    /// [MS-TDS] 4.12: one fixed BIT column "c1" (fNullable|usUpdateable), one row of 0, DONE.
    func testSpecBulkLoadExampleHasOurStructureAndBytes() throws {
        let (header, payload) = try MessageFixtures.packet("ms-tds-spec/12-bulk-load.hex")
        XCTAssertEqual(header.type, .bulkLoad)
        let spec = try decode(payload, version: .v7_2)
        XCTAssertEqual(spec.columns.map(\.name), ["c1"])
        XCTAssertEqual(spec.rows, [[.bit(false)]])
        XCTAssertEqual(spec.done, Done(status: []))
        // Ours for the same column, typed as the example types it (fixed BIT), is byte for byte the example.
        var c = BulkLoadColumn(name: "c1", type: .bit)
        c.typeInfo = TypeInfo(type: .bit, length: 1)
        XCTAssertEqual(c.flags, [.nullable, .updateable])
        XCTAssertEqual(try body([c], [[.bit(false)]], version: .v7_2), payload)
        // Our packet framing of it: one packet, EOM.
        let packets = Packet.split(message: payload, type: .bulkLoad, packetSize: 4096)
        XCTAssertEqual(packets.map(\.bytes), [try MessageFixtures.hex("ms-tds-spec/12-bulk-load.hex")])
    }

    /// pytds's captured message: a BITN column "c1" (fNullable|usUpdateable unknown), one row of 0.
    func testPytdsBulkLoadCaptureHasOurStructureAndBytes() throws {
        let (header, payload) = try MessageFixtures.packet("pytds/unit_test_L719_test_bulk_insert.hex")
        XCTAssertEqual(header.type, .bulkLoad)
        let theirs = try decode(payload, version: .v7_4)
        XCTAssertEqual(theirs.columns.map(\.typeInfo), [.bit])
        XCTAssertEqual(theirs.rows, [[.bit(false)]])
        var c = BulkLoadColumn(name: "c1", type: .bit)
        XCTAssertEqual(c.typeInfo, .bit, "BITN, as pytds sends it")
        c.flags = [.nullable, .updateableUnknown]
        XCTAssertEqual(try body([c], [[.bit(false)]]), payload)
    }

    func testValuesThatDoNotFitNameTheRowAndColumnAndLeaveNothingWritten() throws {
        let columns = [
            BulkLoadColumn(name: "n", type: .nvarchar(3)),
            BulkLoadColumn(name: "v", type: .varchar(4)),
            BulkLoadColumn(name: "d", type: .decimal(precision: 5, scale: 2)),
            BulkLoadColumn(name: "t", type: .tinyint),
            BulkLoadColumn(name: "k", type: .int, nullable: false),
            BulkLoadColumn(name: "b", type: .binary(2)),
            BulkLoadColumn(name: "dt", type: .smallDateTime),
        ]
        let good: [SQLValue] = [.string("abc"), .string("abcd"), .decimal(SQLDecimal("123.45", precision: 5)!), .tinyint(1),
                                .int(1), .binary([1, 2]), .smallDateTime(SQLSmallDateTime(days: 1, minutes: 1))]
        var encoder = BulkLoadEncoder(columns: columns, version: .v7_4, firstRowNumber: 11)
        var w = ByteWriter()
        encoder.encodeMetadata(into: &w)
        try encoder.encodeRow(good, into: &w)
        let before = w.bytes
        let cases: [(Int, SQLValue, String)] = [
            (0, .string("abcd"), "4 UTF-16 code units exceed nvarchar(3)"),
            (1, .string("abcde"), "5 bytes exceed varchar(4)"),
            (1, .string("☃"), "not representable in code page 1252"),
            (2, .decimal(SQLDecimal("1234.5")!), "does not fit decimal(5,2)"),
            (2, .decimal(SQLDecimal("1.234")!), "does not fit decimal(5,2)"),
            (3, .int(256), "256 out of range for tinyint"),
            (4, .null, "NULL in a NOT NULL column"),
            (5, .binary([1, 2, 3]), "3 bytes exceed binary(2)"),
            (3, .string("1"), "cannot encode string as tinyint"),
        ]
        var row = 12
        for (column, value, message) in cases {
            var values = good
            values[column] = value
            XCTAssertThrowsError(try encoder.encodeRow(values, into: &w)) { error in
                let e = error as? BulkLoadValueError
                XCTAssertEqual(e?.row, row)
                XCTAssertEqual(e?.columnIndex, column)
                XCTAssertEqual(e?.columnName, columns[column].name)
                XCTAssertTrue(e?.detail.contains(message) ?? false, "\(e?.detail ?? "nil") lacks \(message)")
                XCTAssertTrue("\(error)".hasPrefix("row \(row), column [\(columns[column].name)]"), "\(error)")
            }
            XCTAssertEqual(w.bytes, before, "nothing written for a bad row")
            row += 1
        }
        XCTAssertThrowsError(try encoder.encodeRow([.int(1)], into: &w)) { error in
            XCTAssertEqual("\(error)", "row \(row): 1 value(s) for 7 column(s)")
        }
        XCTAssertEqual(encoder.rowCount, 1)
    }

    /// The direct writes of INTN, BITN and FLTN values (BulkValueShortcut) give the bytes and the
    /// errors of the general encoder (BulkLoadEncoder.encode), for edge values, NULL in nullable
    /// and NOT NULL columns, and value cases of another width (which go the general way).
    func testFixedWidthShortcutsWriteTheGeneralEncodersBytesAndErrors() throws {
        let cases: [(TypeInfo, [SQLValue])] = [
            (.tinyint, [.tinyint(0), .tinyint(255), .int(7), .int(256), .bit(true), .null, .string("x")]),
            (.smallint, [.smallint(.min), .smallint(.max), .smallint(-1), .tinyint(9), .bigint(40_000), .null]),
            (.int, [.int(.min), .int(.max), .int(0), .int(-2), .smallint(-3), .bigint(5), .bigint(1 << 40), .null, .float(1)]),
            (.bigint, [.bigint(.min), .bigint(.max), .bigint(-1), .int(-7), .null, .real(1)]),
            (.bit, [.bit(true), .bit(false), .int(1), .int(2), .null]),
            (.real, [.real(1.5), .real(-.infinity), .real(.nan), .real(-0.0), .float(2.25), .int(3), .null]),
            (.float, [.float(.pi), .float(-.greatestFiniteMagnitude), .float(.nan), .real(0.1), .bigint(-9), .null, .bit(true)]),
        ]
        for (type, values) in cases {
            for nullable in [true, false] {
                let column = BulkLoadColumn(name: "c", type: type, nullable: nullable)
                for value in values {
                    var expected = ByteWriter()
                    expected.writeUInt8(TokenType.row.rawValue)
                    var expectedError: String?
                    do { try BulkLoadEncoder.encode(value, column: column, into: &expected) } catch { expectedError = error.detail }
                    var encoder = BulkLoadEncoder(columns: [column], version: .v7_4)
                    var w = ByteWriter()
                    w.writeUInt8(0xAA)
                    do {
                        try encoder.encodeRow([value], into: &w)
                        XCTAssertNil(expectedError, "\(type.sqlTypeName) \(value) nullable \(nullable)")
                        XCTAssertEqual(w.bytes, [0xAA] + expected.bytes, "\(type.sqlTypeName) \(value) nullable \(nullable)")
                        XCTAssertEqual(encoder.rowCount, 1)
                    } catch {
                        XCTAssertEqual(error.detail, expectedError, "\(type.sqlTypeName) \(value) nullable \(nullable)")
                        XCTAssertEqual(error.row, 1)
                        XCTAssertEqual(error.columnIndex, 0)
                        XCTAssertEqual(w.bytes, [0xAA], "nothing of the refused row is left")
                        XCTAssertEqual(encoder.rowCount, 0)
                    }
                }
            }
        }
    }

    func testReaderRefusesWhatIsNotABulkLoad() throws {
        let c = [BulkLoadColumn(name: "a", type: .int)]
        let good = try body(c, [[.int(1)]])
        func fails(_ bytes: [UInt8], _ code: TDSDecodingError.Code) {
            XCTAssertThrowsError(try decode(bytes)) { XCTAssertEqual(($0 as? TDSDecodingError)?.code, code, "\($0)") }
        }
        fails(Array(good.dropFirst()), .unexpectedToken)                        // no COLMETADATA
        fails(good + ServerTokens.done(version: .v7_4), .unexpectedToken)       // a token after DONE
        fails(Array(good.dropLast(13)) + ServerTokens.message(token: 0xAA, number: 1, text: "x", version: .v7_4), .unexpectedToken)
        fails(Array(good.dropLast(1)), .truncated)
        fails([0x81, 0xFF, 0xFF] + Array(good.dropFirst(3)), .invalidValue)      // NoMetaData
        // No DONE (as FreeTDS's bcp sends it) is accepted, at a token boundary only.
        let noDone = try decode(Array(good.dropLast(13)))
        XCTAssertEqual(noDone.rows, [[.int(1)]])
        XCTAssertNil(noDone.done)
        var short = BulkLoadReader(version: .v7_4)
        short.append(Array(good.dropLast(4)))
        while try short.next() != nil {}
        try short.finish()
        XCTAssertTrue(short.endedWithDone)
        XCTAssertEqual(short.quirks, ["DONE with a 4-byte row count in TDS 7.4"])
        // Every other cut of a good message is an error, never a trap.
        // After COLMETADATA, after the ROW, a 4-byte-count DONE (accepted as a quirk), after DONE.
        let boundaries = [good.count - 13 - 6, good.count - 13, good.count - 4, good.count]
        for cut in 0 ..< good.count where !boundaries.contains(cut) {
            XCTAssertThrowsError(try decode(Array(good.prefix(cut))), "cut \(cut)")
        }
    }

    func testTextColumnsCarryTheTableNameAsOneUSVarChar() throws {
        let c = [BulkLoadColumn(name: "t", type: .text())]
        let bytes = try body(c, [[.string("hi")]])
        // 0x81, count, UserType, Flags, TYPE_INFO (0x23, LONGLEN, collation), then US_VARCHAR "dbo.everything".
        let at = 1 + 2 + 4 + 2 + 1 + 4 + 5
        XCTAssertEqual(Array(bytes[at ..< at + 2]), [14, 0])
        XCTAssertEqual(Array(bytes[at + 2 ..< at + 2 + 28]), utf16le("dbo.everything"))
        XCTAssertEqual(try decode(bytes).columns.first?.tableName, ["dbo.everything"])
    }

    func testInsertBulkStatementText() throws {
        let cols = [BulkLoadColumn(name: "id", type: .int), BulkLoadColumn(name: "we]ird", type: .nvarchar(20)),
                    BulkLoadColumn(name: "x", type: .xml), BulkLoadColumn(name: "d", type: .decimal(precision: 10, scale: 3))]
        XCTAssertEqual(try BulkLoadStatement(table: "dbo.people", columns: cols).text,
                       "INSERT BULK [dbo].[people] ([id] int, [we]]ird] nvarchar(20), [x] nvarchar(max), [d] decimal(10,3))")
        let options = BulkLoadStatement.Options(checkConstraints: true, fireTriggers: true, keepNulls: true, tableLock: true,
                                                order: [("id", false), ("we]ird", true)], rowsPerBatch: 1000,
                                                kilobytesPerBatch: 64)
        XCTAssertEqual(try BulkLoadStatement(table: "[my db].\"s\".t;DROP", columns: [cols[0]], options: options).text,
                       "INSERT BULK [my db].[s].[t;DROP] ([id] int) WITH (CHECK_CONSTRAINTS, FIRE_TRIGGERS, KEEP_NULLS, "
                           + "KILOBYTES_PER_BATCH = 64, ROWS_PER_BATCH = 1000, ORDER([id] ASC, [we]]ird] DESC), TABLOCK)")
        XCTAssertEqual(try BulkLoadStatement(table: "#tmp", columns: [cols[0]]).quotedTable, "[#tmp]")
        XCTAssertEqual(try SQLIdentifier.parts(of: "srv.db..t"), ["srv", "db", "", "t"])
        XCTAssertEqual(try SQLIdentifier.parts(of: "[a.b]]c] . [d]"), ["a.b]c", "d"])
        for bad in ["", "a.", "[a", "a[b", "[a]x", "a.b.c.d.e", "\"a"] {
            XCTAssertThrowsError(try SQLIdentifier.parts(of: bad), bad)
        }
        XCTAssertThrowsError(try BulkLoadStatement(table: "t", columns: []))
        XCTAssertThrowsError(try BulkLoadStatement(table: "t", columns: [BulkLoadColumn(name: "", type: .int)]))
        XCTAssertThrowsError(try BulkLoadStatement(table: "t", columns: [cols[0]], options: .init(rowsPerBatch: 0)))
        XCTAssertThrowsError(try BulkLoadStatement(table: "t", columns: [cols[0]], options: .init(kilobytesPerBatch: Int.max)))
    }
}
