import Foundation
import TDS

/// The conformance oracle's generated fixtures: result streams for every SQL Server type, with
/// NULL, minimum, maximum, zero and the values that have broken drivers, as ROW and NBCROW, at
/// TDS 7.1, 7.2, 7.3 and 7.4, following [MS-TDS]'s rules for what each version may carry:
///
/// - NBCROW only from 7.3 (older versions get ROW only);
/// - PLP, max types and xml from 7.2: a 7.1 client gets text (varchar(max)), ntext
///   (nvarchar(max), xml) and image (varbinary(max));
/// - date, time, datetime2 and datetimeoffset from 7.3: older clients get nvarchar holding the
///   value's text (as SQL Server sends it to down-level clients), also inside sql_variant;
/// - UTF-8 collations only with UTF8_SUPPORT acknowledged (7.4 sessions say `@utf8 on`); below
///   7.4 a UTF-8 varchar is sent as nvarchar;
/// - DONE row counts of 32 bits before 7.2 (see ``ServerTokens/done(token:status:currentCommand:rowCount:version:)``).
///
/// ``sessions()`` builds every session in memory; ``write(to:)`` writes them as `.tdssession`
/// files (committed under `Fixtures/sessions/oracle`, so changes are reviewable diffs).
public enum OracleFixtures {
    /// One value of a type case, with a label for reports ("min", "tick .003", …).
    public struct ValueCase: Hashable, Sendable {
        /// A label for reports ("min", "tick .003", …).
        public var label: String
        /// The value sent.
        public var value: SQLValue
        /// PLP chunking for this value (max types only).
        public var chunking: ServerTokens.PLPChunking?
        /// A value case.
        public init(_ label: String, _ value: SQLValue, chunking: ServerTokens.PLPChunking? = nil) {
            self.label = label; self.value = value; self.chunking = chunking
        }
    }

    /// A column type and its values, declared as SQL Server 2019+ would send it at TDS 7.4.
    public struct TypeCase: Hashable, Sendable {
        /// The SQL type as declared, e.g. "datetime2(3)", "varchar(40) Cyrillic_General_CI_AS".
        public var name: String
        /// The TYPE_INFO sent in COLMETADATA.
        public var type: TypeInfo
        /// COLMETADATA UserType (for example 0x50 for timestamp).
        public var userType: UInt32
        /// The values, one row each.
        public var values: [ValueCase]
        /// A type case.
        public init(_ name: String, _ type: TypeInfo, userType: UInt32 = 0, _ values: [ValueCase]) {
            self.name = name; self.type = type; self.userType = userType; self.values = values
        }
    }

    /// Row token format.
    public enum RowFormat: String, Hashable, Sendable, CaseIterable {
        /// ROW tokens, or NBCROW tokens (NULL bitmap).
        case row, nbcrow
    }

    /// What a client should decode from one exchange: column names and, per row, the
    /// canonical text of each value (nil = NULL), with the value labels.
    public struct Expectation: Hashable, Sendable {
        /// A result set (`SELECT`), or output parameters (RETURNVALUE tokens answering an RPC).
        public enum Kind: String, Hashable, Sendable {
            /// COLMETADATA and ROW tokens: the columns and rows of a `SELECT`.
            case resultSet
            /// RETURNVALUE tokens: the OUTPUT parameters of an RPC to `procedure`.
            case outputParameters
        }
        /// A result set or output parameters.
        public var kind: Kind = .resultSet
        /// The SQL text; for output parameters `-- @@rpc <procedure>` (how the FreeTDS program
        /// is told to make an RPC call).
        public var sql: String
        /// The procedure called, for output parameters.
        public var procedure: String?
        /// Per column, a label for the value (output parameters: which value of which type).
        public var columnLabels: [String]?
        /// The type case name (as declared at 7.4), or "all types" for the wide result.
        public var typeName: String
        /// The SQL type actually sent at this version (e.g. "nvarchar(27)" for datetime2 at 7.2).
        public var sentTypeName: String
        /// The column names.
        public var columns: [String]
        /// Per column, the type case it shows (for the wide result) or `typeName`.
        public var columnTypeNames: [String]
        /// Per row, each value's canonical text (nil = NULL).
        public var rows: [[String?]]
        /// Per row, the value case's label.
        public var labels: [String]
        /// The count DONE reports.
        public var rowCount: Int
        /// Per column, the TYPE_INFO actually sent at this version (how a peer binds an output
        /// parameter of it).
        public var sentTypes: [TypeInfo] = []
    }

    /// A generated session and its expectations.
    public struct Fixture: Sendable {
        /// The `.tdssession` file's name.
        public var fileName: String
        /// The TDS version the session is generated for.
        public var version: TDSVersion
        /// ROW or NBCROW.
        public var format: RowFormat
        /// The session the replay server plays.
        public var session: ReplaySession
        /// What a client must decode from each exchange.
        public var expectations: [Expectation]
    }

    /// The four TDS versions the oracle covers, as LOGIN7 would request them.
    public static let versions: [TDSVersion] = [.v7_1_1, .v7_2, .v7_3B, .v7_4]

    /// "7.1" … "7.4".
    public static func versionName(_ v: TDSVersion) -> String {
        switch v.generation {
        case 0x71: return "7.1"
        case 0x72: return "7.2"
        case 0x73: return "7.3"
        default: return "7.4"
        }
    }

    // MARK: - Collations

    /// Cyrillic_General_CI_AS (code page 1251).
    public static let cyrillic = Collation(lcid: 0x0419, flags: [.ignoreCase, .ignoreKana, .ignoreWidth], version: 0, sortID: 0)
    /// Latin1_General_CI_AS (code page 1252, a Windows collation).
    public static let latin1 = Collation(lcid: 0x0409, flags: [.ignoreCase, .ignoreKana, .ignoreWidth], version: 0, sortID: 0)
    /// Japanese_CI_AS (code page 932).
    public static let japanese = Collation(lcid: 0x0411, flags: [.ignoreCase, .ignoreKana, .ignoreWidth], version: 0, sortID: 0)
    /// Chinese_PRC_CI_AS (code page 936).
    public static let chinese = Collation(lcid: 0x0804, flags: [.ignoreCase, .ignoreKana, .ignoreWidth], version: 0, sortID: 0)
    /// Latin1_General_100_CI_AS_SC_UTF8 (UTF-8).
    public static let utf8 = Collation(lcid: 0x0409, flags: [.ignoreCase, .ignoreKana, .ignoreWidth, .utf8], version: 2, sortID: 0)

    // MARK: - Value helpers

    static func date(_ y: Int, _ m: Int, _ d: Int) -> SQLDate { SQLDate(year: y, month: m, day: d) ?? .min }
    static let day1900 = date(1900, 1, 1).days

    /// datetime from a date and 1/300 s ticks.
    static func dt(_ y: Int, _ m: Int, _ d: Int, ticks: UInt32) -> SQLValue {
        .datetime(SQLDateTime(days: date(y, m, d).days - day1900, ticks: ticks))
    }
    static func ticks(_ h: UInt32, _ m: UInt32, _ s: UInt32, _ t300: UInt32 = 0) -> UInt32 { (h * 3600 + m * 60 + s) * 300 + t300 }

    static func pow10(_ n: Int) -> UInt64 { var p: UInt64 = 1; for _ in 0..<n { p *= 10 }; return p }

    /// A time of day at `scale`: h:m:s plus the first `scale` digits of `fraction7` (7 digits).
    static func time(_ h: UInt64, _ m: UInt64, _ s: UInt64, fraction7: UInt64, scale: UInt8) -> SQLTime {
        let secs = h * 3600 + m * 60 + s
        return SQLTime(ticks: secs * pow10(Int(scale)) + fraction7 / pow10(7 - Int(scale)), scale: scale)
    }

    static func dt2(_ d: SQLDate, _ t: SQLTime) -> SQLDateTime2 { SQLDateTime2(date: d, time: t) }

    static func dec(_ text: String, _ p: UInt8) -> SQLValue {
        .decimal(SQLDecimal(text, precision: p) ?? SQLDecimal(precision: p, scale: 0, magnitude: 0))
    }

    static func uuid(_ s: String) -> SQLValue { .uniqueIdentifier(UUID(uuidString: s) ?? UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))) }

    static func decimalCase(_ kind: String, _ p: UInt8, _ s: UInt8, _ texts: [(String, String)]) -> TypeCase {
        let info = kind == "numeric" ? TypeInfo.numeric(precision: p, scale: s) : TypeInfo.decimal(precision: p, scale: s)
        return TypeCase("\(kind)(\(p),\(s))", info, [ValueCase("NULL", .null)] + texts.map { ValueCase($0.0, dec($0.1, p)) })
    }

    /// A long string of mixed scripts (for PLP chunking): `count` characters.
    static func longText(_ count: Int, unicode: Bool) -> String {
        let alphabet: [Character] = unicode ? Array("abcÿé€Жж日本😀 ") : Array("abcdefghijklmnopqrstuvwxyz0123456789 ")
        var s = ""
        s.reserveCapacity(count * 2)
        for i in 0..<count { s.append(alphabet[(i * 7 + i / 13) % alphabet.count]) }
        return s
    }

    static func bytes(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) } }

    // MARK: - Version rules

    /// The nvarchar length SQL Server uses when it sends a 7.3 date/time type to an older client.
    static func downlevelLength(_ t: TypeInfo) -> Int {
        let frac = t.scale == 0 ? 0 : Int(t.scale) + 1
        switch t.type {
        case .dateN: return 10
        case .timeN: return 8 + frac
        case .datetime2N: return 19 + frac
        default: return 26 + frac   // datetimeoffset
        }
    }

    static func isDateTimeFamily(_ t: TDSDataType) -> Bool {
        t == .dateN || t == .timeN || t == .datetime2N || t == .datetimeOffsetN
    }

    /// The column and values as a server sends them to a client of `version`.
    public static func adapt(_ c: TypeCase, version: TDSVersion, utf8Acknowledged: Bool)
        -> (type: TypeInfo, values: [ValueCase]) {
        var type = c.type
        var values = c.values
        func textValues() -> [ValueCase] {
            values.map { v in
                var v = v
                if let text = v.value.canonicalText { v.value = .string(text) }
                return v
            }
        }
        if !version.hasDateTimeTypes, isDateTimeFamily(type.type) {
            type = .nvarchar(downlevelLength(type))
            values = textValues()
        }
        if type.type == .ssVariant, !version.hasDateTimeTypes {
            values = values.map { v in
                var v = v
                if case .variant(let x) = v.value, isDateTimeFamily(x.baseType.type), let text = x.value.canonicalText {
                    v.value = .variant(SQLVariant(baseType: .nvarchar(max(1, text.utf16.count)), value: .string(text)))
                }
                return v
            }
        }
        if let collation = type.collation, collation.isUTF8, !(utf8Acknowledged && version.generation >= 0x74) {
            type = type.isPLP ? .nvarchar(nil) : .nvarchar(min(4000, type.length))
        }
        if !version.hasLongRowCounts, type.isPLP {
            switch type.type {
            case .bigVarChar: type = .text(collation: type.collation ?? .sqlLatin1GeneralCP1CIAS)
            case .nvarchar, .xml: type = .ntext(collation: type.collation ?? .sqlLatin1GeneralCP1CIAS)
            default: type = .image
            }
            values = values.map { v in
                var v = v
                v.chunking = nil
                if case .xml(let s) = v.value { v.value = .string(s) }
                return v
            }
        }
        return (type, values)
    }

    // MARK: - Sessions

    static let idColumn = ColumnMetadata(userType: 0, flags: [], typeInfo: TypeInfo(type: .int4, length: 4), name: "id")

    /// The SQL text that asks for one type case.
    public static func sql(for c: TypeCase) -> String { "SELECT id, v FROM oracle.[\(c.name)] ORDER BY id" }
    /// The procedure whose RETURNVALUEs carry every type.
    public static let outputProcedure = "oracle.output_parameters"
    /// The SQL text of the wide result (every type in one row).
    public static let wideSQL = "SELECT * FROM oracle.[all types] ORDER BY id"

    /// Builds the session for `version` and `format` (NBCROW requires 7.3+).
    public static func fixture(version: TDSVersion, format: RowFormat) throws -> Fixture {
        let v = versionName(version)
        let utf8 = version.generation >= 0x74
        var session = ReplaySession(
            name: "oracle-\(v)-\(format.rawValue)",
            comment: """
            Generated by OracleFixtures (Sources/SQLClientTesting/OracleFixtures.swift); do not edit.
            Regenerate: SQLCLIENT_REGENERATE_FIXTURES=1 swift test --filter OracleFixtureFileTests
            Every SQL Server type at TDS \(v), rows as \(format == .row ? "ROW" : "NBCROW").
            """,
            version: version, utf8Support: utf8)
        var expectations: [Expectation] = []
        func encodeFormat(_ values: [SQLValue], _ columns: [ColumnMetadata], _ chunking: [ServerTokens.PLPChunking?]) throws -> [UInt8] {
            format == .nbcrow ? try ServerTokens.nbcRow(values, columns: columns, chunking: chunking)
                              : try ServerTokens.row(values, columns: columns, chunking: chunking)
        }
        let rowName = format == .nbcrow ? "NBCROW" : "ROW"
        var wideColumns: [ColumnMetadata] = [idColumn]
        var wideNames: [String] = ["int"]
        var wideFirst: [SQLValue] = [.int(1)], wideLast: [SQLValue] = [.int(2)], wideNull: [SQLValue] = [.int(3)]
        for c in typeCases() {
            let (type, values) = adapt(c, version: version, utf8Acknowledged: utf8)
            let column = ColumnMetadata(userType: c.userType, flags: [.nullable], typeInfo: type, name: "v")
            let columns = [idColumn, column]
            var segments: [ReplaySession.Segment] = [
                .init(comment: "COLMETADATA id int, v \(type.sqlTypeName)" + (c.userType != 0 ? " (UserType \(c.userType))" : ""),
                      bytes: ServerTokens.colMetadata(columns, version: version)),
            ]
            var rows: [[String?]] = []
            for (i, value) in values.enumerated() {
                let shown = value.value.canonicalText.map { $0.count > 60 ? String($0.prefix(57)) + "..." : $0 }
                segments.append(.init(comment: "\(rowName) \(i + 1): \(value.label) = \(shown.map(JSONText.quote) ?? "NULL")",
                                      bytes: try encodeFormat([.int(Int32(i + 1)), value.value], columns, [nil, value.chunking])))
                rows.append([String(i + 1), value.value.canonicalText])
            }
            segments.append(.init(comment: "DONE count \(values.count)",
                                  bytes: ServerTokens.done(status: .count, currentCommand: 0xC1, rowCount: UInt64(values.count), version: version)))
            session.exchanges.append(.init(request: .sqlBatch(sql(for: c)), response: segments, comment: c.name))
            expectations.append(Expectation(sql: sql(for: c), typeName: c.name, sentTypeName: type.sqlTypeName,
                                            columns: ["id", "v"], columnTypeNames: ["int", c.name],
                                            rows: rows, labels: values.map(\.label), rowCount: values.count,
                                            sentTypes: [idColumn.typeInfo, type]))
            // The wide result: the first and last non-NULL values of every type, and all NULLs.
            let nonNull = values.filter { !$0.value.isNull }
            if let first = nonNull.first, let last = nonNull.last {
                wideColumns.append(ColumnMetadata(userType: c.userType, flags: [.nullable], typeInfo: type, name: "c\(wideColumns.count)"))
                wideNames.append(c.name)
                wideFirst.append(first.value); wideLast.append(last.value); wideNull.append(.null)
            }
        }
        // Output parameters: RETURNSTATUS, then RETURNVALUE for a NULL, the first and the last
        // non-NULL value of every type (values over 2,000 bytes of text and the PLP chunking edge
        // cases, covered by the rows, left out), then DONEPROC.
        var outSegments: [ReplaySession.Segment] = [.init(comment: "RETURNSTATUS 0", bytes: ServerTokens.returnStatus(0))]
        var outNames: [String] = [], outTypes: [String] = [], outLabels: [String] = [], outValues: [String?] = []
        var outSent: [TypeInfo] = []
        for c in typeCases() {
            let (type, values) = adapt(c, version: version, utf8Acknowledged: utf8)
            // text, ntext and image cannot be OUTPUT parameters in SQL Server.
            if type.type == .text || type.type == .ntext || type.type == .image { continue }
            let nonNull = values.filter {
                !$0.value.isNull && $0.chunking == nil && ($0.value.canonicalText?.utf8.count ?? 0) <= 2000
            }
            var picked = values.filter { $0.value.isNull }.prefix(1).map { $0 }
            if let first = nonNull.first { picked.append(first) }
            if let last = nonNull.last, nonNull.count > 1 { picked.append(last) }
            for v in picked {
                // ParamOrdinal counts the RPC's parameters from 0, as SQL Server sends it (the
                // ODBC drivers map RETURNVALUEs to bound parameters by it or by name).
                let ordinal = outNames.count + 1
                let name = "@p\(ordinal)"
                let shown = v.value.canonicalText.map { $0.count > 60 ? String($0.prefix(57)) + "..." : $0 }
                outSegments.append(.init(
                    comment: "RETURNVALUE \(name) \(type.sqlTypeName): \(c.name) \(v.label) = \(shown.map(JSONText.quote) ?? "NULL")",
                    bytes: try ServerTokens.returnValue(ordinal: UInt16(ordinal - 1), name: name, userType: c.userType, type: type,
                                                        value: v.value, chunking: v.chunking, version: version)))
                outNames.append(name); outTypes.append(c.name); outLabels.append("\(c.name) \(v.label)")
                outValues.append(v.value.canonicalText)
                outSent.append(type)
            }
        }
        outSegments.append(.init(comment: "DONEPROC", bytes: ServerTokens.done(token: 0xFE, version: version)))
        session.exchanges.append(.init(request: .rpc(procedure: outputProcedure, parameters: []), response: outSegments,
                                       comment: "output parameters of every type"))
        expectations.append(Expectation(kind: .outputParameters, sql: "-- @@rpc \(outputProcedure)", procedure: outputProcedure,
                                        columnLabels: outLabels, typeName: "output parameters", sentTypeName: "(mixed)",
                                        columns: outNames, columnTypeNames: outTypes, rows: [outValues],
                                        labels: ["RETURNVALUE"], rowCount: 0, sentTypes: outSent))

        var wideSegments: [ReplaySession.Segment] = [
            .init(comment: "COLMETADATA \(wideColumns.count) columns", bytes: ServerTokens.colMetadata(wideColumns, version: version)),
        ]
        let wideRows = [wideFirst, wideLast, wideNull]
        for (i, r) in wideRows.enumerated() {
            wideSegments.append(.init(comment: "\(rowName) \(i + 1)", bytes: try encodeFormat(r, wideColumns, [])))
        }
        wideSegments.append(.init(comment: "DONE count 3",
                                  bytes: ServerTokens.done(status: .count, currentCommand: 0xC1, rowCount: 3, version: version)))
        session.exchanges.append(.init(request: .sqlBatch(wideSQL), response: wideSegments, comment: "all types in one result"))
        expectations.append(Expectation(sql: wideSQL, typeName: "all types", sentTypeName: "(mixed)",
                                        columns: wideColumns.map(\.name), columnTypeNames: wideNames,
                                        rows: wideRows.map { $0.map(\.canonicalText) },
                                        labels: ["first values", "last values", "all NULL"], rowCount: 3,
                                        sentTypes: wideColumns.map(\.typeInfo)))
        return Fixture(fileName: "oracle-\(v)-\(format.rawValue).tdssession", version: version, format: format,
                       session: session, expectations: expectations)
    }

    /// The exchange that answers `expectation` in `fixture`'s session.
    public static func exchange(for expectation: Expectation, in session: ReplaySession) -> ReplaySession.Exchange? {
        switch expectation.kind {
        case .resultSet: return session.exchanges.first { $0.request == .sqlBatch(expectation.sql) }
        case .outputParameters:
            return session.exchanges.first { if case .rpc(let p, _) = $0.request { return p == expectation.procedure } else { return false } }
        }
    }

    /// Every fixture: ROW at every version, NBCROW at 7.3 and 7.4.
    public static func fixtures() throws -> [Fixture] {
        var out: [Fixture] = []
        for v in versions {
            out.append(try fixture(version: v, format: .row))
            if v.hasDateTimeTypes { out.append(try fixture(version: v, format: .nbcrow)) }
        }
        return out
    }

    /// Writes every fixture's session file into `directory`.
    public static func write(to directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for f in try fixtures() {
            try f.session.write(to: directory.appendingPathComponent(f.fileName))
        }
    }

    // MARK: - Length probes

    /// One value whose length is unusual for its type (a decimal of 17 bytes for precision 10, an
    /// INTN of 3 bytes, an nvarchar of an odd byte count, a sql_variant whose data disagrees with
    /// its base type...), as raw ROW bytes, to check each length rule of SQLClient's codec
    /// against what Microsoft's driver accepts.
    public struct LengthProbe: Hashable, Sendable {
        /// A name for reports.
        public var label: String
        /// The column's TYPE_INFO.
        public var type: TypeInfo
        /// The cell as in a ROW token: the type's length prefix and data.
        public var cell: [UInt8]
        /// The SQL text that asks for it.
        public var sql: String { "SELECT v FROM oracle.[probe \(label)]" }
    }

    static func le(_ v: UInt128, _ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
    static func le32(_ v: Int) -> [UInt8] { le(UInt128(v), 4) }

    /// A sql_variant cell: 4-byte length, base type, property bytes, properties, data.
    static func variantCell(_ base: UInt8, _ props: [UInt8], _ data: [UInt8]) -> [UInt8] {
        le32(2 + props.count + data.count) + [base, UInt8(props.count)] + props + data
    }

    /// Every length probe (decimal magnitudes of every length 0-17 bytes in sql_variant and in
    /// DECIMALN columns, values beyond their precision, wrong lengths for every fixed-size type,
    /// character and binary data longer than declared, sql_variant bodies that disagree with
    /// their base type).
    public static func lengthProbes() -> [LengthProbe] {
        var probes: [LengthProbe] = []
        func add(_ label: String, _ type: TypeInfo, _ cell: [UInt8]) { probes.append(LengthProbe(label: label, type: type, cell: cell)) }
        // sql_variant decimal(10,2) holding -123.45 (or -0.99 in one byte) in magnitudes of 0-17 bytes.
        for n in 0...17 {
            let mag: UInt128 = n == 1 ? 99 : 12345
            add("variant decimal(10,2) magnitude \(n) bytes", .sqlVariant, variantCell(0x6A, [10, 2], [0] + le(mag, n)))
        }
        for (p, s) in [(UInt8(1), UInt8(0)), (5, 2), (20, 4), (28, 0), (38, 10)] {
            for n in [4, 8, 12, 16] {
                add("variant decimal(\(p),\(s)) magnitude \(n) bytes", .sqlVariant, variantCell(0x6A, [p, s], [1] + le(7, n)))
            }
        }
        add("variant numeric(10,2) magnitude 16 bytes", .sqlVariant, variantCell(0x6C, [10, 2], [1] + le(12345, 16)))
        // Values beyond what the precision allows.
        add("variant decimal(5,2) value 1234567.89", .sqlVariant, variantCell(0x6A, [5, 2], [1] + le(123_456_789, 4)))
        add("variant decimal(10,0) value 10^10", .sqlVariant, variantCell(0x6A, [10, 0], [1] + le(10_000_000_000, 8)))
        add("variant decimal(10,2) value 10^20 in 16 bytes", .sqlVariant, variantCell(0x6A, [10, 2], [0] + le(100_000_000_000_000_000_000, 16)))
        add("variant decimal(38,0) value 10^38", .sqlVariant, variantCell(0x6A, [38, 0], [1] + le(SQLDecimal.maxMagnitude + 1, 16)))
        add("variant decimal(38,0) value 2^128-1", .sqlVariant, variantCell(0x6A, [38, 0], [1] + le(UInt128.max, 16)))
        add("variant decimal(10,2) sign byte 2", .sqlVariant, variantCell(0x6A, [10, 2], [2] + le(12345, 8)))
        add("variant decimal precision 0", .sqlVariant, variantCell(0x6A, [0, 0], [1] + le(5, 4)))
        add("variant decimal precision 39", .sqlVariant, variantCell(0x6A, [39, 0], [1] + le(5, 16)))
        add("variant decimal scale above precision", .sqlVariant, variantCell(0x6A, [5, 6], [1] + le(5, 4)))
        // DECIMALN columns: the length byte from the value, not the precision.
        let d10 = TypeInfo.decimal(precision: 10, scale: 2)
        for n in [0, 1, 2, 4, 8, 12, 16, 17] {
            add("decimal(10,2) magnitude \(n) bytes", d10, [UInt8(n + 1), 0] + le(n == 1 ? 99 : 12345, n))
        }
        add("decimal(5,2) value 1234567.89", .decimal(precision: 5, scale: 2), [5, 1] + le(123_456_789, 4))
        add("decimal(38,0) value 10^38", .decimal(precision: 38, scale: 0), [17, 1] + le(SQLDecimal.maxMagnitude + 1, 16))
        add("decimal(10,2) sign byte 2", d10, [9, 2] + le(12345, 8))
        // Fixed-size values in the wrong length.
        add("intN(4) holding 1 byte", .int, [1, 7])
        add("intN(4) holding 2 bytes", .int, [2] + le(300, 2))
        add("intN(4) holding 8 bytes", .int, [8] + le(5_000_000_000, 8))
        add("intN(4) holding 3 bytes", .int, [3, 1, 2, 3])
        add("intN(8) holding 4 bytes", .bigint, [4] + le(123_456, 4))
        add("bitN holding 2 bytes", .bit, [2, 1, 0])
        add("bitN byte 2", .bit, [1, 2])
        add("fltN(8) holding 4 bytes", .float, [4] + [0, 0, 0xC0, 0x3F])
        add("fltN(4) holding 8 bytes", .real, [8] + [0, 0, 0, 0, 0, 0, 0xF8, 0x3F])
        add("fltN(8) holding 5 bytes", .float, [5, 0, 0, 0, 0, 0])
        add("moneyN(8) holding 4 bytes", .money, [4] + le(12345, 4))
        add("moneyN(4) holding 8 bytes", .smallMoney, [8] + [0, 0, 0, 0] + le(12345, 4))
        add("moneyN(8) holding 6 bytes", .money, [6, 0, 0, 0, 0, 0, 0])
        add("datetimN(8) holding 4 bytes", .datetime, [4] + le(1, 2) + le(61, 2))
        add("datetimN(4) holding 8 bytes", .smallDateTime, [8] + le(1, 4) + le(300, 4))
        add("datetimN(8) holding 6 bytes", .datetime, [6, 0, 0, 0, 0, 0, 0])
        add("uniqueidentifier of 15 bytes", .uniqueIdentifier, [15] + Array(repeating: 0x11, count: 15))
        add("uniqueidentifier of 17 bytes", .uniqueIdentifier, [17] + Array(repeating: 0x11, count: 17))
        add("date of 4 bytes", .date, [4, 1, 0, 0, 0])
        add("date of 2 bytes", .date, [2, 1, 0])
        add("time(3) of 3 bytes", .time(scale: 3), [3] + le(1000, 3))
        add("time(3) of 5 bytes", .time(scale: 3), [5] + le(1000, 5))
        add("time(7) of 4 bytes", .time(scale: 7), [4] + le(1000, 4))
        add("datetime2(3) of 6 bytes", .datetime2(scale: 3), [6] + le(1000, 3) + le(1, 3))
        add("datetime2(3) of 8 bytes", .datetime2(scale: 3), [8] + le(1000, 5) + le(1, 3))
        add("datetimeoffset(3) of 8 bytes", .datetimeOffset(scale: 3), [8] + le(1000, 3) + le(1, 3) + le(0, 2))
        add("datetimeoffset(3) of 11 bytes", .datetimeOffset(scale: 3), [11] + le(1000, 6) + le(1, 3) + le(0, 2))
        // Character and binary data against the declared length.
        add("nvarchar(50) of 3 bytes", .nvarchar(50), [3, 0, 0x41, 0, 0x42])
        add("nvarchar(5) of 12 bytes", .nvarchar(5), [12, 0] + Array("abcdef".utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }))
        add("varchar(4) of 6 bytes", .varchar(4), [6, 0] + Array("abcdef".utf8))
        add("char(10) of 3 bytes", .char(10), [3, 0] + Array("abc".utf8))
        add("binary(4) of 5 bytes", .binary(4), [5, 0, 1, 2, 3, 4, 5])
        add("binary(4) of 2 bytes", .binary(4), [2, 0, 1, 2])
        add("varbinary(4) of 6 bytes", .varbinary(4), [6, 0, 1, 2, 3, 4, 5, 6])
        // sql_variant bodies that disagree with their base type.
        add("variant int of 2 bytes", .sqlVariant, variantCell(0x38, [], le(300, 2)))
        add("variant int with 1 property byte", .sqlVariant, variantCell(0x38, [0], le(300, 4)))
        add("variant bigint of 4 bytes", .sqlVariant, variantCell(0x7F, [], le(300, 4)))
        add("variant float of 4 bytes", .sqlVariant, variantCell(0x3E, [], [0, 0, 0xC0, 0x3F]))
        add("variant bit of 2 bytes", .sqlVariant, variantCell(0x32, [], [1, 0]))
        add("variant money of 4 bytes", .sqlVariant, variantCell(0x3C, [], le(12345, 4)))
        add("variant datetime of 4 bytes", .sqlVariant, variantCell(0x3D, [], le(1, 2) + le(61, 2)))
        add("variant uniqueidentifier of 15 bytes", .sqlVariant, variantCell(0x24, [], Array(repeating: 0x11, count: 15)))
        add("variant date of 4 bytes", .sqlVariant, variantCell(0x28, [], [1, 0, 0, 0]))
        add("variant time(3) of 5 bytes", .sqlVariant, variantCell(0x29, [3], le(1000, 5)))
        add("variant datetime2(3) of 8 bytes", .sqlVariant, variantCell(0x2A, [3], le(1000, 5) + le(1, 3)))
        let collation: [UInt8] = [0x09, 0x04, 0xD0, 0x00, 0x34]
        add("variant nvarchar(2) of 6 bytes", .sqlVariant, variantCell(0xE7, collation + le(4, 2), Array("abc".utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })))
        add("variant nvarchar of 3 bytes", .sqlVariant, variantCell(0xE7, collation + le(100, 2), [0x41, 0, 0x42]))
        add("variant varchar(2) of 4 bytes", .sqlVariant, variantCell(0xA7, collation + le(2, 2), Array("abcd".utf8)))
        add("variant varbinary(2) of 4 bytes", .sqlVariant, variantCell(0xA5, le(2, 2), [1, 2, 3, 4]))
        add("variant binary(4) of 2 bytes", .sqlVariant, variantCell(0xAD, le(4, 2), [1, 2]))
        add("variant of 1 byte", .sqlVariant, le32(1) + [0x38])
        add("variant property count beyond its length", .sqlVariant, le32(3) + [0x6A, 9, 0])
        return probes
    }

    /// The session that answers every probe (one result of one row each, then DONE) at `version`.
    public static func lengthProbeSession(version: TDSVersion = .v7_4) throws -> ReplaySession {
        var session = ReplaySession(name: "oracle-length-probes",
                                    comment: "Generated by OracleFixtures.lengthProbeSession(); values with unusual lengths.",
                                    version: version)
        for p in lengthProbes() {
            let column = ColumnMetadata(userType: 0, flags: [.nullable], typeInfo: p.type, name: "v")
            session.exchanges.append(.init(request: .sqlBatch(p.sql), response: [
                .init(comment: "COLMETADATA v \(p.type.sqlTypeName)", bytes: ServerTokens.colMetadata([column], version: version)),
                .init(comment: "ROW \(p.label)", bytes: [0xD1] + p.cell),
                .init(comment: "DONE count 1", bytes: ServerTokens.done(status: .count, currentCommand: 0xC1, rowCount: 1, version: version)),
            ], comment: p.label))
        }
        return session
    }
}
