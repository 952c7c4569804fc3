import Foundation
import TDS

/// A destination table with a column of every insertable type, and rows for it, shared by the
/// bulk-load codec tests, the recording server's tests and the conformance tests (FreeTDS's
/// freebcp, Microsoft's mssql-python).
public enum BulkLoadFixtures {
    /// One column of the fixture table: its COLMETADATA as SQL Server reports it for
    /// `SELECT TOP 0 * FROM table`, and its T-SQL type.
    public struct Column: Sendable {
        /// The column's COLMETADATA as SQL Server reports it.
        public var metadata: ColumnMetadata
        /// Its T-SQL type, for example `decimal(10,2)`.
        public var sqlType: String
    }

    static func col(_ name: String, _ type: TypeInfo, _ sqlType: String, nullable: Bool = true,
                    userType: UInt32 = 0, flags: ColumnFlags = []) -> Column {
        var f: ColumnFlags = flags.union(.updateable)
        if nullable { f.insert(.nullable) }
        return Column(metadata: ColumnMetadata(userType: userType, flags: f, typeInfo: type,
                                               tableName: type.type == .text || type.type == .ntext || type.type == .image
                                                   ? ["dbo", "everything"] : nil, name: name),
                      sqlType: sqlType)
    }

    static let udtInfo = UDTInfo(maxByteSize: 892, databaseName: "test", schemaName: "sys", typeName: "hierarchyid",
                                 assemblyQualifiedName: "Microsoft.SqlServer.Types.SqlHierarchyId, Microsoft.SqlServer.Types")

    /// The table `dbo.everything`: every type SQL Server lets a bulk load insert, plus an identity,
    /// a computed and a rowversion column that a bulk load skips.
    public static let tableColumns: [Column] = [
        col("id", TypeInfo(type: .int4, length: 4), "int", nullable: false, flags: .identity),
        col("tiny", .tinyint, "tinyint"),
        col("small", .smallint, "smallint"),
        col("i", TypeInfo(type: .int4, length: 4), "int", nullable: false),
        col("big", .bigint, "bigint"),
        col("flag", .bit, "bit"),
        col("r", .real, "real"),
        col("f", .float, "float"),
        col("dec", .decimal(precision: 18, scale: 4), "decimal(18,4)"),
        col("num", .numeric(precision: 38, scale: 0), "numeric(38,0)"),
        col("m", .money, "money"),
        col("sm", .smallMoney, "smallmoney"),
        col("d", .date, "date"),
        col("t0", .time(scale: 0), "time(0)"),
        col("t7", .time(scale: 7), "time(7)"),
        col("dt2", .datetime2(scale: 3), "datetime2(3)"),
        col("dto", .datetimeOffset(scale: 7), "datetimeoffset(7)"),
        col("dt", .datetime, "datetime"),
        col("sdt", .smallDateTime, "smalldatetime"),
        col("g", .uniqueIdentifier, "uniqueidentifier"),
        col("c", .char(10), "char(10)"),
        col("vc", .varchar(20), "varchar(20)"),
        col("vcmax", .varchar(nil), "varchar(max)"),
        col("nc", .nchar(5), "nchar(5)"),
        col("nvc", .nvarchar(30), "nvarchar(30)"),
        col("nvcmax", .nvarchar(nil), "nvarchar(max)"),
        col("txt", .text(), "text"),
        col("ntxt", .ntext(), "ntext"),
        col("bin", .binary(4), "binary(4)"),
        col("vb", .varbinary(16), "varbinary(16)"),
        col("vbmax", .varbinary(nil), "varbinary(max)"),
        col("img", .image, "image"),
        col("x", .xml, "xml"),
        col("h", TypeInfo(type: .udt, length: 892, isPLP: true, udt: udtInfo), "hierarchyid"),
        col("v", .sqlVariant, "sql_variant"),
        col("calc", .int, "AS (i * 2)", flags: .computed),
        col("rv", .binary(8), "rowversion", nullable: false, userType: BulkLoadColumn.timestampUserType),
    ]

    /// The columns a bulk load sends (identity, computed and rowversion left out).
    public static var bulkColumns: [BulkLoadColumn] {
        tableColumns.compactMap { BulkLoadColumn(tableColumn: $0.metadata) }
    }

    static func dec(_ text: String, _ p: UInt8, _ s: UInt8) -> SQLValue {
        guard let d = SQLDecimal(text, precision: p), let r = d.rescaled(to: s) else { return .null }
        return .decimal(SQLDecimal(isNegative: r.isNegative, precision: p, scale: s, magnitude: r.magnitude))
    }

    static func date(_ y: Int, _ m: Int, _ d: Int) -> SQLDate { SQLDate(year: y, month: m, day: d) ?? SQLDate(days: 0) }
    static func time(_ h: Int, _ m: Int, _ s: Int, _ f: UInt64, _ scale: UInt8) -> SQLTime {
        SQLTime(hour: h, minute: m, second: s, fraction: f, scale: scale) ?? SQLTime(ticks: 0, scale: scale)
    }

    /// Rows for ``bulkColumns``: typical values, extremes, and a row of NULLs (but `i`, NOT NULL).
    public static let rows: [[SQLValue]] = {
        let uuid = UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF") ?? UUID()
        let row1: [SQLValue] = [
            .tinyint(7), .smallint(-300), .int(42), .bigint(9_000_000_000), .bit(true), .real(1.5), .float(-2.25),
            dec("12345.6789", 18, 4), dec("12345678901234567890123456789012345678", 38, 0),
            .money(SQLMoney(units: 123_4567)), .smallMoney(SQLMoney(units: -5_0000)),
            .date(date(2024, 2, 29)), .time(time(23, 59, 59, 0, 0)), .time(time(12, 34, 56, 1_234_567, 7)),
            .datetime2(SQLDateTime2(date: date(1999, 12, 31), time: time(23, 59, 59, 999, 3))),
            .datetimeOffset(SQLDateTimeOffset(local: SQLDateTime2(date: date(2020, 6, 1), time: time(8, 0, 0, 1, 7)),
                                              offsetMinutes: 120)),
            .datetime(SQLDateTime(days: 45_000, ticks: 300 * 3600)), .smallDateTime(SQLSmallDateTime(days: 40_000, minutes: 600)),
            .uniqueIdentifier(uuid),
            .string("fixed"), .string("café"), .string(String(repeating: "L", count: 9000)),
            .string("ñandú"), .string("snowman ☃ and 𝄞"), .string(String(repeating: "Ω", count: 5000)),
            .string("old text"), .string("old ntext ü"),
            .binary([0xDE, 0xAD, 0xBE, 0xEF]), .binary([1, 2, 3]), .binary([UInt8](repeating: 0xAB, count: 10_000)),
            .binary([0, 1, 2, 3, 4]),
            .xml("<doc a=\"1\">x</doc>"), .udt([0x58]),
            .variant(SQLVariant(baseType: TypeInfo(type: .int4, length: 4), value: .int(99))),
        ]
        let row2: [SQLValue] = [
            .tinyint(255), .smallint(Int16.min), .int(Int32.min), .bigint(Int64.max), .bit(false), .real(-0.0), .float(1e308),
            dec("-99999999999999.9999", 18, 4), dec("0", 38, 0),
            .money(SQLMoney(units: Int64.min)), .smallMoney(SQLMoney(units: Int64(Int32.max))),
            .date(date(1, 1, 1)), .time(time(0, 0, 0, 0, 0)), .time(time(23, 59, 59, 9_999_999, 7)),
            .datetime2(SQLDateTime2(date: date(9999, 12, 31), time: time(23, 59, 59, 999, 3))),
            .datetimeOffset(SQLDateTimeOffset(local: SQLDateTime2(date: date(1, 1, 1), time: time(14, 0, 0, 0, 7)),
                                              offsetMinutes: 840)),
            .datetime(SQLDateTime(days: -53_690, ticks: 0)), .smallDateTime(SQLSmallDateTime(days: 65_535, minutes: 0)),
            .uniqueIdentifier(UUID(uuidString: "00000000-0000-0000-0000-000000000001") ?? uuid),
            .string(""), .string(String(repeating: "z", count: 20)), .string(""),
            .string("12345"), .string(String(repeating: "n", count: 30)), .string(""),
            .string(""), .string(""),
            .binary([0, 0, 0, 0]), .binary([]), .binary([]), .binary([0xFF]),
            .xml(""), .udt([]),
            .variant(SQLVariant(baseType: .nvarchar(5), value: .string("abc"))),
        ]
        var nulls = [SQLValue](repeating: .null, count: row1.count)
        nulls[2] = .int(0)
        return [row1, row2, nulls]
    }()

    /// The value a bulk-load reader gives back for `value` sent: xml arrives as nvarchar (a string),
    /// a UDT as varbinary (bytes); everything else unchanged.
    public static func expectedDecoded(_ value: SQLValue) -> SQLValue {
        switch value {
        case .xml(let s): return .string(s)
        case .udt(let b): return .binary(b)
        default: return value
        }
    }
}
