import Foundation
import TDS

/// One parameter of a remote procedure call ([MS-TDS] 2.2.6.6 ParameterData): an optional
/// name, a value, an optional explicit SQL type, and a direction.
///
/// When ``type`` is nil the TYPE_INFO is inferred from the value with
/// `TypeInfo/parameter(for:version:collation:)` (strings as `nvarchar(4000)` or
/// `nvarchar(max)`, binary as `varbinary(8000)` or `varbinary(max)`, decimals with their own
/// precision and scale, time types with their own scale, NULL as `nvarchar(4000)`). Use the typed
/// constructors (``varchar(_:length:collation:)``, ``decimal(_:precision:scale:)``,
/// ``datetime2(_:scale:timeZone:)``…) when inference would pick the wrong type, for example to
/// compare with a `varchar` column without an implicit conversion.
///
/// ```swift
/// let result = try await connection.callProcedure("dbo.transfer", parameters: [
///     .input("@from", Int32(1)), .input("@amount", .decimal(Decimal(string: "12.50"), precision: 10, scale: 2)),
///     .output("@balance", type: .money),
/// ])
/// print(result.outputs["@balance"] ?? .null, result.returnStatus ?? 0)
/// ```
public struct SQLParameter: Sendable, Hashable, CustomStringConvertible {
    /// Whether the procedure reads the value, writes it back (RETURNVALUE), or both.
    public enum Direction: Sendable, Hashable {
        /// Input only (StatusFlags 0).
        case input
        /// An OUTPUT parameter whose input value is NULL (fByRefValue).
        case output
        /// An OUTPUT parameter that also passes its value in (fByRefValue).
        case inputOutput
    }

    /// The parameter name with its `@` (added when missing), or nil for a positional parameter.
    public var name: String?
    /// The value sent (NULL for a pure output parameter or a default).
    public var value: SQLValue
    /// The TYPE_INFO to send; nil to infer it from ``value``.
    public var type: TypeInfo?
    /// Input, output or both (StatusFlags fByRefValue for the last two).
    public var direction: Direction
    /// Send fDefaultValue: the procedure uses the parameter's declared default ([MS-TDS] 2.2.6.6 StatusFlags).
    public var usesDefault: Bool
    /// Why a typed constructor could not convert its Swift value (sending then fails with `.invalidParameter`).
    public internal(set) var conversionFailure: String?
    /// The table of a table-valued parameter (``table(_:columns:rows:)``); nil for scalar parameters.
    public internal(set) var table: TableValuedParameter?
    /// The character type was given without a collation: it is sent with the session's
    /// (`rpcParameter(version:collation:types:)`'s `collation`).
    public internal(set) var usesSessionCollation = false

    /// A parameter with an explicit value and, optionally, an explicit type.
    public init(_ value: SQLValue, type: TypeInfo? = nil, name: String? = nil, direction: Direction = .input,
                usesDefault: Bool = false) {
        self.value = value
        self.type = type
        self.name = name.map(SQLParameter.normalizedName)
        self.direction = direction
        self.usesDefault = usesDefault
        self.conversionFailure = nil
    }

    /// A typed parameter: `converted` is the SQL value of `swiftValue` (nil when it does not fit `type`).
    static func typed<T>(_ swiftValue: T?, _ type: TypeInfo, _ convert: (T) -> SQLValue?) -> SQLParameter {
        guard let swiftValue else { return SQLParameter(.null, type: type) }
        guard let v = convert(swiftValue) else {
            var p = SQLParameter(.null, type: type)
            p.conversionFailure = "\(swiftValue) does not fit \(type.sqlTypeName)"
            return p
        }
        return SQLParameter(v, type: type)
    }

    /// `@` prepended when missing; empty stays empty.
    static func normalizedName(_ name: String) -> String {
        name.isEmpty || name.hasPrefix("@") ? name : "@" + name
    }

    /// `@name type = value[ OUTPUT| INOUT][ DEFAULT]` (the value's text included: not for logs).
    public var description: String {
        if let table {
            return "\(name ?? "?") TABLE \(table.schemaName.isEmpty ? "" : table.schemaName + ".")\(table.typeName) (\(table.rows.count) rows)"
        }
        let t = type?.sqlTypeName ?? "(inferred)"
        let dir: String
        switch direction {
        case .input: dir = ""
        case .output: dir = " OUTPUT"
        case .inputOutput: dir = " INOUT"
        }
        return "\(name ?? "?") \(t) = \(value)\(dir)\(usesDefault ? " DEFAULT" : "")"
    }

    // MARK: - Named constructors

    /// An input parameter named `name`.
    public static func input(_ name: String, _ value: some SQLParameterConvertible) -> SQLParameter {
        var p = value.sqlParameter
        p.name = normalizedName(name)
        p.direction = .input
        return p
    }

    /// An input parameter named `name` with a typed value: `.input("@code", .varchar(code, length: 10))`.
    public static func input(_ name: String, _ parameter: SQLParameter) -> SQLParameter {
        var p = parameter
        p.name = normalizedName(name)
        p.direction = .input
        return p
    }

    /// An OUTPUT parameter that also passes a typed value in: `.inputOutput("@note", .nvarchar("x", length: nil))`.
    public static func inputOutput(_ name: String, _ parameter: SQLParameter) -> SQLParameter {
        var p = parameter
        p.name = normalizedName(name)
        p.direction = .inputOutput
        return p
    }

    /// An OUTPUT parameter of `type` sent with a NULL value.
    public static func output(_ name: String, type: TypeInfo) -> SQLParameter {
        SQLParameter(.null, type: type, name: name, direction: .output)
    }

    /// An OUTPUT parameter that also passes `value` in; its type is inferred unless `value` is typed.
    public static func inputOutput(_ name: String, _ value: some SQLParameterConvertible) -> SQLParameter {
        var p = value.sqlParameter
        p.name = normalizedName(name)
        p.direction = .inputOutput
        return p
    }

    /// A parameter that asks for the procedure's declared default (fDefaultValue, NULL value).
    public static func useDefault(_ name: String, type: TypeInfo = .int) -> SQLParameter {
        SQLParameter(.null, type: type, name: name, usesDefault: true)
    }

    /// NULL of an explicit type.
    public static func null(_ type: TypeInfo) -> SQLParameter { SQLParameter(.null, type: type) }

    /// The same value with its TYPE_INFO inferred (``type`` nil) unless the value is NULL.
    func inferringType() -> SQLParameter {
        var p = self
        if !p.value.isNull { p.type = nil }
        return p
    }

    /// This parameter with another name.
    public func named(_ name: String) -> SQLParameter {
        var p = self
        p.name = SQLParameter.normalizedName(name)
        return p
    }

    // MARK: - Typed constructors (when inference is wrong). A nil value sends NULL of the type.

    /// `varchar(length)` (1...8000 bytes), `varchar(max)` when `length` is nil: the text in the
    /// collation's code page. `collation` nil (the default) declares the parameter with the
    /// session's collation (ENVCHANGE type 7 at login, `session.collation`) and encodes it with that
    /// collation's code page, as SQL Server converts a varchar parameter by its declared collation:
    /// on a Cyrillic_General_CI_AS session "Привет" goes as cp1251 bytes. Encoding fails
    /// (`.invalidParameter`) when a character has no representation in that code page; send such
    /// text as ``nvarchar(_:length:collation:)`` (or an interpolated `String`, which is nvarchar).
    public static func varchar(_ value: String?, length: Int? = 8000, collation: TDS.Collation? = nil) -> SQLParameter {
        sessionCollated(value, .varchar(length, collation: collation ?? .sqlLatin1GeneralCP1CIAS), collation)
    }

    /// `nvarchar(length)` (1...4000 characters), `nvarchar(max)` when `length` is nil; `collation`
    /// nil declares the session's collation.
    public static func nvarchar(_ value: String?, length: Int? = 4000, collation: TDS.Collation? = nil) -> SQLParameter {
        sessionCollated(value, .nvarchar(length, collation: collation ?? .sqlLatin1GeneralCP1CIAS), collation)
    }

    /// `char(length)` in bytes, in the code page of `collation` (nil: the session's, as for ``varchar(_:length:collation:)``).
    public static func char(_ value: String?, length: Int, collation: TDS.Collation? = nil) -> SQLParameter {
        sessionCollated(value, .char(length, collation: collation ?? .sqlLatin1GeneralCP1CIAS), collation)
    }

    /// `nchar(length)` in characters; `collation` nil declares the session's collation.
    public static func nchar(_ value: String?, length: Int, collation: TDS.Collation? = nil) -> SQLParameter {
        sessionCollated(value, .nchar(length, collation: collation ?? .sqlLatin1GeneralCP1CIAS), collation)
    }

    /// A character parameter of `type`; with no explicit collation it takes the session's when sent.
    private static func sessionCollated(_ value: String?, _ type: TypeInfo, _ collation: Collation?) -> SQLParameter {
        var p = SQLParameter(value.map(SQLValue.string) ?? .null, type: type)
        p.usesSessionCollation = collation == nil
        return p
    }

    /// `decimal(precision, scale)`; the value is rounded to `scale` digits (nil → NULL; a value that does not
    /// fit makes the request fail with `.invalidParameter`).
    public static func decimal(_ value: Decimal?, precision: UInt8 = 38, scale: UInt8 = 0) -> SQLParameter {
        typed(value, .decimal(precision: precision, scale: scale)) { SQLParameter.roundedDecimal($0, precision, scale) }
    }

    /// `numeric(precision, scale)`; as ``decimal(_:precision:scale:)``.
    public static func numeric(_ value: Decimal?, precision: UInt8 = 38, scale: UInt8 = 0) -> SQLParameter {
        typed(value, .numeric(precision: precision, scale: scale)) { SQLParameter.roundedDecimal($0, precision, scale) }
    }

    /// `money`, rounded to 4 decimal places (out of range: `.invalidParameter` when sent).
    public static func money(_ value: Decimal?) -> SQLParameter {
        typed(value, .money) { d in SQLMoney(SQLParameter.rounded(d, 4)).map(SQLValue.money) }
    }

    /// `smallmoney` (±214,748.3647).
    public static func smallMoney(_ value: Decimal?) -> SQLParameter {
        typed(value, .smallMoney) { d in
            SQLMoney(SQLParameter.rounded(d, 4)).flatMap { abs($0.units) <= Int64(Int32.max) ? SQLValue.smallMoney($0) : nil }
        }
    }

    /// `datetime2(scale)`: the wall-clock time of `value` in `timeZone` (UTC by default), rounded to `scale`.
    public static func datetime2(_ value: Date?, scale: UInt8 = 7,
                                 timeZone: TimeZone = TimeZone(secondsFromGMT: 0) ?? .current) -> SQLParameter {
        typed(value, .datetime2(scale: scale)) { SQLDateTime2($0, in: timeZone, scale: scale).map(SQLValue.datetime2) }
    }

    /// `datetime`: the wall-clock time in `timeZone`, rounded to 1/300 s.
    public static func datetime(_ value: Date?, timeZone: TimeZone = TimeZone(secondsFromGMT: 0) ?? .current) -> SQLParameter {
        typed(value, .datetime) { SQLDateTime($0, in: timeZone).map(SQLValue.datetime) }
    }

    /// `smalldatetime`: the wall-clock time in `timeZone`, rounded to the minute.
    public static func smallDateTime(_ value: Date?, timeZone: TimeZone = TimeZone(secondsFromGMT: 0) ?? .current) -> SQLParameter {
        typed(value, .smallDateTime) { SQLSmallDateTime($0, in: timeZone).map(SQLValue.smallDateTime) }
    }

    /// `date`: the calendar day of `value` in `timeZone`.
    public static func date(_ value: Date?, timeZone: TimeZone = TimeZone(secondsFromGMT: 0) ?? .current) -> SQLParameter {
        typed(value, .date) { SQLDate($0, in: timeZone).map(SQLValue.date) }
    }

    /// `time(scale)`: the time of day of `value` in `timeZone`.
    public static func time(_ value: Date?, scale: UInt8 = 7,
                            timeZone: TimeZone = TimeZone(secondsFromGMT: 0) ?? .current) -> SQLParameter {
        typed(value, .time(scale: scale)) { SQLDateTime2($0, in: timeZone, scale: scale).map { SQLValue.time($0.time) } }
    }

    /// `datetimeoffset(scale)`: the instant with an offset of `offsetMinutes` (-840...840).
    public static func datetimeOffset(_ value: Date?, offsetMinutes: Int16 = 0, scale: UInt8 = 7) -> SQLParameter {
        typed(value, .datetimeOffset(scale: scale)) {
            SQLDateTimeOffset($0, offsetMinutes: offsetMinutes, scale: scale).map(SQLValue.datetimeOffset)
        }
    }

    /// `uniqueidentifier`.
    public static func uniqueIdentifier(_ value: UUID?) -> SQLParameter {
        SQLParameter(value.map(SQLValue.uniqueIdentifier) ?? .null, type: .uniqueIdentifier)
    }

    /// `varbinary(length)` (1...8000), `varbinary(max)` when `length` is nil.
    public static func varbinary(_ value: [UInt8]?, length: Int? = 8000) -> SQLParameter {
        SQLParameter(value.map(SQLValue.binary) ?? .null, type: .varbinary(length))
    }

    /// `binary(length)`.
    public static func binary(_ value: [UInt8]?, length: Int) -> SQLParameter {
        SQLParameter(value.map(SQLValue.binary) ?? .null, type: .binary(length))
    }

    /// `xml` (always PLP).
    public static func xml(_ value: String?) -> SQLParameter {
        SQLParameter(value.map(SQLValue.xml) ?? .null, type: .xml)
    }

    /// `json` (SQL Server 2025; PLP UTF-8). Sent as nvarchar(max) text when the session did not
    /// negotiate JSONSUPPORT (``SQLSessionInfo/supportsJSON``); the server converts it.
    public static func json(_ value: String?) -> SQLParameter {
        SQLParameter(value.map(SQLValue.json) ?? .null, type: .json)
    }

    /// `vector(n)` (SQL Server 2025), n = `values.count` (1 to 1,998 float32 or 3,996 float16
    /// elements, all finite; else sending fails with `.invalidParameter`). A NULL needs its
    /// `dimensions` to be declared as `vector(n)`; without them it goes as a NULL nvarchar(max),
    /// which SQL Server converts to any vector. Sent as nvarchar(max) JSON text (`[1.0,2.0]`) when
    /// the session did not negotiate VECTORSUPPORT.
    public static func vector(_ values: [Float]?, dimensions: Int? = nil,
                              elementType: SQLVector.ElementType = .float32) -> SQLParameter {
        guard let values else {
            guard let dimensions, (1 ... elementType.maximumDimensions).contains(dimensions) else { return SQLParameter(.null, type: .nvarchar(nil)) }
            return SQLParameter(.null, type: .vector(dimensions: dimensions, elementType: elementType))
        }
        return vector(SQLVector(values, elementType: elementType))
    }

    /// `vector(n)` of `value` (see ``vector(_:dimensions:elementType:)``).
    public static func vector(_ value: SQLVector) -> SQLParameter {
        var p = SQLParameter(.vector(value), type: .vector(dimensions: value.dimensions, elementType: value.elementType))
        if value.values.isEmpty || value.dimensions > value.elementType.maximumDimensions {
            p.conversionFailure = "a \(value.elementType.name) vector has 1 to \(value.elementType.maximumDimensions) dimensions, not \(value.dimensions)"
        } else if let i = value.values.firstIndex(where: { !$0.isFinite }) {
            p.conversionFailure = "vector element \(i) is not finite"
        } else if value.elementType == .float16, let i = value.values.firstIndex(where: { SQLVector.float16Bits($0) & 0x7C00 == 0x7C00 }) {
            p.conversionFailure = "vector element \(i) is beyond float16's ±65504"
        }
        return p
    }

    // MARK: - Table-valued parameters

    /// A table-valued parameter ([MS-TDS] 2.2.5.5.5 TVP_TYPE_INFO, 2.2.7.24 TVP_ROW; TDS 7.3+), as
    /// Microsoft.Data.SqlClient users pass a DataTable: `typeName` is the user-defined table type
    /// (`IdList`, `dbo.IdList`; each part bracket-quoted in the declaration), `columns` the types
    /// of its columns in order, `rows` one array of values per row.
    ///
    /// ```swift
    /// let ids = SQLParameter.table("dbo.IdList", columns: [.int], rows: [[.int(1)], [.int(2)]])
    /// try await connection.execute("SELECT * FROM people WHERE id IN (SELECT id FROM \(ids))")
    /// // sp_executesql declares it as `@P1 [dbo].[IdList] READONLY`
    /// try await connection.callProcedure("dbo.importPeople", parameters: [.input("@people", ids)])
    /// ```
    /// json and vector columns travel as nvarchar(max) text (see `tvpWireType(_:)`).
    /// A name that is not one or two parts, a row of the wrong width or a value that does not fit
    /// its column fails the request with `.invalidParameter` before it is sent; an empty `rows` sends
    /// an empty table.
    public static func table(_ typeName: String, columns: [TypeInfo], rows: [[SQLValue]]) -> SQLParameter {
        var p = SQLParameter(.null)
        let parts = (try? SQLIdentifier.parts(of: typeName)) ?? []
        guard (1...2).contains(parts.count) else {
            p.conversionFailure = "\"\(typeName)\" is not a table type name (type or schema.type)"
            return p
        }
        guard !columns.isEmpty else {
            p.conversionFailure = "a table-valued parameter needs at least one column"
            return p
        }
        for (i, r) in rows.enumerated() where r.count != columns.count {
            p.conversionFailure = "row \(i + 1) has \(r.count) value(s) for \(columns.count) column(s)"
            return p
        }
        p.table = TableValuedParameter(schemaName: parts.count == 2 ? parts[0] : "", typeName: parts[parts.count - 1],
                                       columns: columns.map { TableValuedParameter.Column(typeInfo: tvpWireType($0)) }, rows: rows)
        return p
    }

    /// The TYPE_INFO a TVP column of `type` travels as: json (0xF4 in TVP metadata ends the
    /// session) and vector (which Microsoft.Data.SqlClient does not send in TVPs either) as
    /// nvarchar(max) text (a vector as its JSON array), which SQL Server converts to the table
    /// type's column.
    static func tvpWireType(_ type: TypeInfo) -> TypeInfo {
        type.type == .json || type.type == .vector ? .nvarchar(nil) : type
    }

    /// `value` rounded half away from zero to `scale` digits.
    static func rounded(_ value: Decimal, _ scale: Int) -> Decimal {
        var input = value
        var out = Decimal()
        NSDecimalRound(&out, &input, scale, .plain)
        return out
    }

    static func roundedDecimal(_ value: Decimal, _ precision: UInt8, _ scale: UInt8) -> SQLValue? {
        SQLDecimal(rounded(value, Int(scale)), precision: precision, scale: scale).map(SQLValue.decimal)
    }

    // MARK: - Wire form

    /// The TYPE_INFO this parameter is sent with in `version`.
    package func typeInfo(version: TDSVersion, collation: Collation = .sqlLatin1GeneralCP1CIAS) -> TypeInfo {
        type ?? TypeInfo.parameter(for: value, version: version, collation: collation).0
    }

    /// The TYPE_INFO to send instead of `type` in `version`, nil when `version` has it: before TDS
    /// 7.3 date, time, datetime2 and datetimeoffset go as nvarchar text; before 7.2 the max types
    /// (PLP) go as text, ntext or image, and xml as ntext.
    static func downgraded(_ type: TypeInfo, for version: TDSVersion) -> TypeInfo? {
        switch type.type {
        case .dateN, .timeN, .datetime2N, .datetimeOffsetN:
            return version.generation >= 0x73 ? nil : .nvarchar(4000)
        case .bigVarChar where type.isPLP:
            return version.generation >= 0x72 ? nil : .text(collation: type.collation ?? .sqlLatin1GeneralCP1CIAS)
        case .nvarchar where type.isPLP, .xml:
            return version.generation >= 0x72 ? nil : .ntext(collation: type.collation ?? .sqlLatin1GeneralCP1CIAS)
        case .bigVarBinary where type.isPLP:
            return version.generation >= 0x72 ? nil : .image
        default:
            return nil
        }
    }

    /// The [MS-TDS] ParameterData for `version`: the name, StatusFlags (fByRefValue for output
    /// directions, fDefaultValue), the TYPE_INFO (given or inferred) and the value (NULL for `.output`).
    /// - Throws: ``SQLClientError`` `.invalidParameter` when a typed constructor could not convert its value.
    ///
    /// `types`: the SQL Server 2025 types the session carries; a json or vector parameter goes as
    /// nvarchar(max) text when its type is missing (see ``SQLSessionInfo/serverTypes``).
    package func rpcParameter(version: TDSVersion, collation: Collation = .sqlLatin1GeneralCP1CIAS,
                             types: SQLServerTypes = .all) throws(SQLClientError) -> RPCParameter {
        try rpcParameterAllTypes(version: version, collation: collation).substitutingTypes(missing: types)
    }

    private func rpcParameterAllTypes(version: TDSVersion, collation: Collation) throws(SQLClientError) -> RPCParameter {
        if let conversionFailure {
            throw SQLClientError(.invalidParameter, "parameter \(name ?? "(unnamed)"): \(conversionFailure)")
        }
        if let table {
            guard version.generation >= 0x73 else {
                throw SQLClientError(.invalidParameter, "parameter \(name ?? "(unnamed)"): table-valued parameters need TDS 7.3 or later")
            }
            guard direction == .input else {
                throw SQLClientError(.invalidParameter, "parameter \(name ?? "(unnamed)"): a table-valued parameter is input only (READONLY)")
            }
            return RPCParameter(name: name ?? "", status: usesDefault ? [.defaultValue] : [], table: table)
        }
        var status: RPCParameter.Status = []
        if direction != .input { status.insert(.byRefValue) }
        if usesDefault { status.insert(.defaultValue) }
        let sent: SQLValue = direction == .output || usesDefault ? .null : value
        let info: TypeInfo
        let wireValue: SQLValue
        var type = self.type
        if usesSessionCollation, type?.collation != nil { type?.collation = collation }
        if let type, let older = SQLParameter.downgraded(type, for: version) {
            // A type the TDS version lacks: the form SQL Server converts implicitly.
            if older.type == .nvarchar {
                (info, wireValue) = TypeInfo.parameter(for: sent, version: version, collation: collation)
            } else {
                (info, wireValue) = (older, sent.isNull ? .null : sent.baseValue)
            }
        } else if let type {
            info = type
            wireValue = sent
        } else {
            (info, wireValue) = TypeInfo.parameter(for: sent.isNull ? value : sent, version: version, collation: collation)
        }
        return RPCParameter(name: name ?? "", status: status, typeInfo: info, value: sent.isNull ? .null : wireValue)
    }
}

extension SQLClientError.Code {
    /// A parameter value does not fit its SQL type (or has no representation in its code page).
    public static let invalidParameter = SQLClientError.Code("invalidParameter")
}

// MARK: - Swift values as parameters

/// A Swift value that can be sent as an RPC parameter (and interpolated into a ``SQLQuery``).
///
/// Built-in conformances and the SQL types they infer: `Int`, `Int64`, `UInt32` → bigint; `Int32`,
/// `UInt16` → int; `Int16`, `Int8` → smallint; `UInt8` → tinyint; `Bool` → bit; `Double` → float; `Float` → real;
/// `String` → nvarchar(4000)/nvarchar(max); `Decimal` → decimal(p,s) with the value's own digits;
/// `Date` → datetime2(7) (UTC wall-clock); `UUID` → uniqueidentifier; `Data`, `[UInt8]` →
/// varbinary(8000)/varbinary(max); `SQLValue` → as `TypeInfo/parameter(for:version:collation:)`;
/// ``SQLParameter`` → itself; `Optional` → NULL of the wrapped type when nil.
public protocol SQLParameterConvertible: Sendable {
    /// The parameter this value becomes (unnamed, input).
    var sqlParameter: SQLParameter { get }
    /// The parameter `nil` of an `Optional` of this type becomes (NULL of the inferred type).
    static var sqlNullParameter: SQLParameter { get }
}

extension SQLParameterConvertible {
    public static var sqlNullParameter: SQLParameter { SQLParameter(.null) }
}

extension SQLParameter: SQLParameterConvertible {
    public var sqlParameter: SQLParameter { self }
}

extension SQLValue: SQLParameterConvertible {
    public var sqlParameter: SQLParameter { SQLParameter(self) }
}

extension Optional: SQLParameterConvertible where Wrapped: SQLParameterConvertible {
    public var sqlParameter: SQLParameter {
        switch self {
        case .some(let w): return w.sqlParameter
        case .none: return Wrapped.sqlNullParameter
        }
    }
}

extension Int: SQLParameterConvertible {
    public var sqlParameter: SQLParameter { SQLParameter(.bigint(Int64(self)), type: .bigint) }
    public static var sqlNullParameter: SQLParameter { .null(.bigint) }
}

extension Int64: SQLParameterConvertible {
    public var sqlParameter: SQLParameter { SQLParameter(.bigint(self), type: .bigint) }
    public static var sqlNullParameter: SQLParameter { .null(.bigint) }
}

extension Int32: SQLParameterConvertible {
    public var sqlParameter: SQLParameter { SQLParameter(.int(self), type: .int) }
    public static var sqlNullParameter: SQLParameter { .null(.int) }
}

extension Int16: SQLParameterConvertible {
    public var sqlParameter: SQLParameter { SQLParameter(.smallint(self), type: .smallint) }
    public static var sqlNullParameter: SQLParameter { .null(.smallint) }
}

extension UInt8: SQLParameterConvertible {
    public var sqlParameter: SQLParameter { SQLParameter(.tinyint(self), type: .tinyint) }
    public static var sqlNullParameter: SQLParameter { .null(.tinyint) }
}

extension Int8: SQLParameterConvertible {
    /// smallint (tinyint is unsigned in SQL Server).
    public var sqlParameter: SQLParameter { SQLParameter(.smallint(Int16(self)), type: .smallint) }
    public static var sqlNullParameter: SQLParameter { .null(.smallint) }
}

extension UInt16: SQLParameterConvertible {
    /// int (the smallest SQL type that holds every UInt16).
    public var sqlParameter: SQLParameter { SQLParameter(.int(Int32(self)), type: .int) }
    public static var sqlNullParameter: SQLParameter { .null(.int) }
}

extension UInt32: SQLParameterConvertible {
    /// bigint (the smallest SQL type that holds every UInt32).
    public var sqlParameter: SQLParameter { SQLParameter(.bigint(Int64(self)), type: .bigint) }
    public static var sqlNullParameter: SQLParameter { .null(.bigint) }
}

extension Bool: SQLParameterConvertible {
    public var sqlParameter: SQLParameter { SQLParameter(.bit(self), type: .bit) }
    public static var sqlNullParameter: SQLParameter { .null(.bit) }
}

extension Double: SQLParameterConvertible {
    public var sqlParameter: SQLParameter { SQLParameter(.float(self), type: .float) }
    public static var sqlNullParameter: SQLParameter { .null(.float) }
}

extension Float: SQLParameterConvertible {
    public var sqlParameter: SQLParameter { SQLParameter(.real(self), type: .real) }
    public static var sqlNullParameter: SQLParameter { .null(.real) }
}

extension String: SQLParameterConvertible {
    public var sqlParameter: SQLParameter { SQLParameter(.string(self)) }
    public static var sqlNullParameter: SQLParameter { .null(.nvarchar(4000)) }
}

extension Substring: SQLParameterConvertible {
    public var sqlParameter: SQLParameter { SQLParameter(.string(String(self))) }
    public static var sqlNullParameter: SQLParameter { .null(.nvarchar(4000)) }
}

extension Decimal: SQLParameterConvertible {
    /// decimal(p,s) with the value's digits (NaN or more than 38 digits fail with `.invalidParameter` when sent).
    public var sqlParameter: SQLParameter {
        SQLParameter.typed(self, .decimal(precision: 38, scale: 0)) { SQLDecimal($0).map(SQLValue.decimal) }.inferringType()
    }
    public static var sqlNullParameter: SQLParameter { .null(.decimal(precision: 38, scale: 0)) }
}

extension Date: SQLParameterConvertible {
    /// datetime2(7), the UTC wall-clock time (out of range: `.invalidParameter` when sent).
    public var sqlParameter: SQLParameter { .datetime2(self) }
    public static var sqlNullParameter: SQLParameter { .null(.datetime2(scale: 7)) }
}

extension UUID: SQLParameterConvertible {
    public var sqlParameter: SQLParameter { SQLParameter(.uniqueIdentifier(self), type: .uniqueIdentifier) }
    public static var sqlNullParameter: SQLParameter { .null(.uniqueIdentifier) }
}

extension Data: SQLParameterConvertible {
    public var sqlParameter: SQLParameter { SQLParameter(.binary([UInt8](self))) }
    public static var sqlNullParameter: SQLParameter { .null(.varbinary(8000)) }
}

extension Array: SQLParameterConvertible where Element == UInt8 {
    public var sqlParameter: SQLParameter { SQLParameter(.binary(self)) }
    public static var sqlNullParameter: SQLParameter { .null(.varbinary(8000)) }
}

extension SQLVector: SQLParameterConvertible {
    /// vector(n) of this value (``SQLParameter/vector(_:)``): `"… WHERE VECTOR_DISTANCE('cosine', v, \(query)) < 0.2"`.
    public var sqlParameter: SQLParameter { .vector(self) }
    /// A NULL nvarchar(max) (SQL Server converts it to any vector).
    public static var sqlNullParameter: SQLParameter { SQLParameter(.null, type: .nvarchar(nil)) }
}
