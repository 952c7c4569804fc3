import Foundation
import TDS

/// One value of a row, where it is: the row's block, the row and the column. What
/// ``SQLCellDecodable`` types decode from (`SQLRow.decode((A, B).self)`, `Decodable`).
///
/// A cell of a row that arrived as wire bytes ([MS-TDS] 2.2.7.20 ROW, 2.2.7.15 NBCROW) is read
/// straight from them by the standard types' decoders (no ``SQLValue`` made); ``value`` decodes it
/// as an ``SQLValue`` for any other reader.
public struct SQLCell: Sendable {
    @usableFromInline let storage: SQLRowStorage
    @usableFromInline let row: Int
    /// The column's 0-based index in the row.
    public let index: Int

    /// The cell of `column` in row `row` of `storage` (`column` < the storage's width: the caller checks).
    @inlinable @inline(__always)
    init(storage: SQLRowStorage, row: Int, column: Int) {
        self.storage = storage
        self.row = row
        self.index = column
    }

    /// The value, decoded as an ``SQLValue`` (lossless; `SQLValue.null` for NULL).
    public var value: SQLValue { storage.value(row: row, column: index) }

    /// Whether the value is NULL (read without decoding it).
    public var isNull: Bool { storage.isNull(row: row, column: index) }

    /// The column's metadata (name, wire type), nil for a row built by code with more values than columns.
    public var column: SQLColumn? { index >= 0 && index < storage.columns.count ? storage.columns[index] : nil }

    /// The error for a cell that cannot be decoded as `type`: NULL for a non-optional type, or a
    /// value that does not convert. Throw it from ``SQLCellDecodable/init(sqlCell:)``.
    /// - Returns: ``SQLClientError`` `.decodingFailed` whose ``SQLClientError/decodingFailure``
    ///   names the column (name, index, SQL type) and the Swift type.
    public func failure<T>(_ type: T.Type) -> SQLClientError {
        failure(swiftType: String(describing: type))
    }

    /// ``failure(_:)`` for what `swiftType` names (`"an array"`).
    func failure(swiftType: String) -> SQLClientError {
        let v = value
        let kind: SQLDecodingFailure.Reason = v.isNull ? .null : .notConvertible
        let text = v.isNull ? "NULL" : ("\(v)".count > 40 ? "a value" : "value \(v)")
        return SQLDecodingFailure(columnName: column?.name ?? "", columnIndex: index, sqlType: column?.typeName ?? "",
                                  swiftType: swiftType, reason: kind).error(detail: text)
    }

    /// The value of the cell, `.other` for a cell that is not wire bytes or whose type `read` does not take.
    @inline(__always)
    func typed<W>(_ read: (borrowing WireRowBlock, Int, Int) -> WireTypedValue<W>) -> WireTypedValue<W> {
        let column = index
        return storage.typed(row: row) { read($0, $1, column) }
    }

    /// The cell as `R`: the typed read `fast` of the block when it gives a value `exact` takes,
    /// else the ``SQLValue`` converted by `convert` (nil: the value does not convert, or is
    /// NULL). A typed read gives exactly the value the ``SQLValue`` holds, so both ways agree.
    @inline(__always)
    func read<W, R>(_ fast: (borrowing WireRowBlock, Int, Int) -> WireTypedValue<W>, _ exact: (W) -> R?,
                    _ convert: (SQLValue) -> R?) throws -> R {
        if case .value(let w) = typed(fast), let r = exact(w) { return r }
        if let r = convert(value) { return r }
        throw failure(R.self)
    }

    /// As ``read(_:_:_:)``, nil for NULL (seen by the typed read, without decoding anything).
    @inline(__always)
    func readIfPresent<W, R>(_ fast: (borrowing WireRowBlock, Int, Int) -> WireTypedValue<W>, _ exact: (W) -> R?,
                             _ convert: (SQLValue) -> R?) throws -> R? {
        switch typed(fast) {
        case .value(let w): if let r = exact(w) { return r }
        case .null: return nil
        case .other: break
        }
        let v = value
        if v.isNull { return nil }
        if let r = convert(v) { return r }
        throw failure(R.self)
    }

    /// The cell as `R` converted from its ``SQLValue`` (types without a typed read).
    @inline(__always)
    func converted<R>(_ convert: (SQLValue) -> R?) throws -> R {
        let v = value
        if let r = convert(v) { return r }
        throw failure(R.self)
    }

    /// The error for column `index` of a row that has no such column (fewer values than asked for).
    @usableFromInline
    static func missing<T>(_ type: T.Type, _ storage: SQLRowStorage, _ index: Int) -> SQLClientError {
        let column = index >= 0 && index < storage.columns.count ? storage.columns[index] : nil
        return SQLDecodingFailure(columnName: column?.name ?? "", columnIndex: index, sqlType: column?.typeName ?? "",
                                  swiftType: String(describing: type), reason: .noColumn)
            .error(detail: "the row has only \(storage.width) values")
    }
}

/// Why a cell could not be decoded, with the column and the Swift type: the
/// ``SQLClientError/underlying`` (and ``SQLClientError/decodingFailure``) of a `.decodingFailed`
/// error thrown by `SQLRow.decode((A, B).self)`, the typed row sequences and `Decodable`.
public struct SQLDecodingFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public enum Reason: Sendable, Hashable {
        /// The value is NULL and the Swift type is not optional.
        case null
        /// The value does not convert to the Swift type (an integer out of range, a fraction asked
        /// for as an integer, text that is not a number, an unrelated type).
        case notConvertible
        /// The row has no such column (more types asked for than the row has values, or no column
        /// of a coding key's name).
        case noColumn
    }

    /// The column's name ("" for an unnamed expression or no such column).
    public var columnName: String
    /// The column's 0-based index in the row (-1 when a column name was not found).
    public var columnIndex: Int
    /// The column's SQL type as SQL Server declares it (`int`, `nvarchar(20)`), "" when there is no such column.
    public var sqlType: String
    /// The Swift type asked for (`Int`, `String`).
    public var swiftType: String
    /// Why the value could not be decoded.
    public var reason: Reason

    /// A failure for column `columnName` (index `columnIndex`, SQL type `sqlType`) decoded as `swiftType`.
    public init(columnName: String, columnIndex: Int, sqlType: String, swiftType: String, reason: Reason) {
        self.columnName = columnName
        self.columnIndex = columnIndex
        self.sqlType = sqlType
        self.swiftType = swiftType
        self.reason = reason
    }

    /// `column "name" (index i, type t): null|not convertible|no such column as Swift`.
    public var description: String {
        let why: String
        switch reason {
        case .null: why = "NULL"
        case .notConvertible: why = "not convertible"
        case .noColumn: why = "no such column"
        }
        return "column \"\(columnName)\" (index \(columnIndex), \(sqlType.isEmpty ? "no type" : sqlType)): \(why) as \(swiftType)"
    }

    /// The `.decodingFailed` error carrying this failure: `column "name" (index i): cannot convert
    /// <detail> to Swift (the column is t)`, or for no column, `the row has no column …`.
    func error(detail: String) -> SQLClientError {
        let message: String
        switch reason {
        case .noColumn:
            message = columnIndex < 0
                ? "the row has no column named \"\(columnName)\" (for \(swiftType))"
                : "the row has no column at index \(columnIndex) (for \(swiftType)): \(detail)"
        case .null, .notConvertible:
            message = "column \"\(columnName)\" (index \(columnIndex)): cannot convert \(detail) to \(swiftType)"
                + (sqlType.isEmpty ? "" : " (the column is \(sqlType))")
        }
        return SQLClientError(.decodingFailed, message, underlying: self)
    }
}

extension SQLClientError {
    /// For a `.decodingFailed` error of a cell: the column (name, index, SQL type), the Swift
    /// type and why; nil for any other error.
    public var decodingFailure: SQLDecodingFailure? { underlying as? SQLDecodingFailure }
}

/// What every ``SQLCellDecodable`` type's metatype is: `SendableMetatype` (SE-0470) where the
/// standard library has it, so that the typed row sequences' `@Sendable` decode closures may use
/// the types they decode; `Any` (no requirement) where it may not (Apple SDKs: Xcode 16's
/// standard library is Swift 6.1's). Not for use outside this module: adopt ``SQLCellDecodable``.
#if compiler(>=6.2) && !canImport(Darwin)
public typealias _SQLCellDecodableMetatype = SendableMetatype
#else
public typealias _SQLCellDecodableMetatype = Any
#endif

/// A Swift type a cell of a row decodes to: what `SQLRow.decode((A, B).self)`,
/// `SQLRowSequence.decode((A, B).self)` and `Decodable` rows read.
///
/// The standard types adopt it: every fixed-width integer, `Bool`, `Double`, `Float`, `Decimal`,
/// `String`, `Data`, `[UInt8]`, `Date`, `UUID`, ``SQLValue``, the SQL date and time value types
/// (``SQLDate``, ``SQLTime``, ``SQLDateTime2``, ``SQLDateTimeOffset``, ``SQLDateTime``,
/// ``SQLSmallDateTime``), ``SQLDecimal``, ``SQLMoney``, and `Optional` of any of them (NULL is
/// nil). Conversions are exact or fail: an integer that does not fit, text that is not a number,
/// a fractional value asked for as an integer throw. Your own type adopts it by reading
/// ``SQLCell/value`` and throwing ``SQLCell/failure(_:)``.
public protocol SQLCellDecodable: _SQLCellDecodableMetatype {
    /// The cell's value as `Self`.
    /// - Throws: ``SQLClientError`` `.decodingFailed` (``SQLCell/failure(_:)``) when the value is
    ///   NULL (and `Self` cannot hold NULL) or does not convert.
    init(sqlCell cell: SQLCell) throws

    /// The cell's value as `Self`, nil for NULL (what `Optional<Self>` decodes with).
    /// - Throws: as ``init(sqlCell:)`` for a value that does not convert.
    static func decodeIfPresent(sqlCell cell: SQLCell) throws -> Self?

    /// The cell's value as `Self`: what typed decoding reads each cell with. The default is
    /// ``init(sqlCell:)``; `Optional`'s is its wrapped type's ``decodeIfPresent(sqlCell:)``.
    /// (A static function returns its value in place: code generic over the type, such as the
    /// parameter-pack `decode`, looks up no `Optional` metadata per cell, as an `init` does.)
    /// - Throws: as ``init(sqlCell:)``.
    static func decode(sqlCell cell: SQLCell) throws -> Self
}

extension SQLCellDecodable {
    /// nil for NULL, else ``init(sqlCell:)``.
    public static func decodeIfPresent(sqlCell cell: SQLCell) throws -> Self? {
        cell.isNull ? nil : try Self(sqlCell: cell)
    }

    /// ``init(sqlCell:)``.
    @inlinable @inline(__always)
    public static func decode(sqlCell cell: SQLCell) throws -> Self { try Self(sqlCell: cell) }
}

extension Optional: SQLCellDecodable where Wrapped: SQLCellDecodable {
    /// nil for NULL, else the wrapped type's value.
    /// - Throws: as `Wrapped`'s ``SQLCellDecodable/init(sqlCell:)`` for a value that does not convert.
    @inlinable
    public init(sqlCell cell: SQLCell) throws { self = try Wrapped.decodeIfPresent(sqlCell: cell) }

    /// nil for NULL, else the wrapped type's value: `Wrapped`'s ``SQLCellDecodable/decodeIfPresent(sqlCell:)``.
    /// - Throws: as `Wrapped`'s ``SQLCellDecodable/init(sqlCell:)`` for a value that does not convert.
    @inlinable @inline(__always)
    public static func decode(sqlCell cell: SQLCell) throws -> Wrapped? { try Wrapped.decodeIfPresent(sqlCell: cell) }
}

// MARK: - The standard types

extension SQLValue: SQLCellDecodable {
    /// The cell's value as decoded (``SQLValue/null`` for NULL: never throws).
    public init(sqlCell cell: SQLCell) throws { self = cell.value }
    /// nil for NULL, else the value.
    public static func decodeIfPresent(sqlCell cell: SQLCell) throws -> SQLValue? {
        let v = cell.value
        return v.isNull ? nil : v
    }
}

/// The fixed-width integers: tinyint, smallint, int and bigint read as `Int64` from the wire
/// bytes and narrowed exactly; any other value through ``SQLValueConversion/integer(_:_:)``.
extension SQLCellDecodable where Self: FixedWidthInteger {
    @inline(__always)
    static func decodeInteger(_ cell: SQLCell) throws -> Self {
        try cell.read({ $0.integer(row: $1, column: $2) }, { Self(exactly: $0) }, { SQLValueConversion.integer($0, Self.self) })
    }
    @inline(__always)
    static func decodeIntegerIfPresent(_ cell: SQLCell) throws -> Self? {
        try cell.readIfPresent({ $0.integer(row: $1, column: $2) }, { Self(exactly: $0) }, { SQLValueConversion.integer($0, Self.self) })
    }
}

extension Int: SQLCellDecodable {
    /// The integer value, exactly (bit as 0/1, a decimal without fraction, numeric text).
    /// - Throws: `.decodingFailed` for NULL or a value that does not fit.
    public init(sqlCell cell: SQLCell) throws { self = try Self.decodeInteger(cell) }
    /// As ``init(sqlCell:)``, nil for NULL.
    public static func decodeIfPresent(sqlCell cell: SQLCell) throws -> Self? { try decodeIntegerIfPresent(cell) }
}
extension Int8: SQLCellDecodable {
    /// The integer value, exactly. - Throws: `.decodingFailed` for NULL or a value that does not fit.
    public init(sqlCell cell: SQLCell) throws { self = try Self.decodeInteger(cell) }
    /// As ``init(sqlCell:)``, nil for NULL.
    public static func decodeIfPresent(sqlCell cell: SQLCell) throws -> Self? { try decodeIntegerIfPresent(cell) }
}
extension Int16: SQLCellDecodable {
    /// The integer value, exactly. - Throws: `.decodingFailed` for NULL or a value that does not fit.
    public init(sqlCell cell: SQLCell) throws { self = try Self.decodeInteger(cell) }
    /// As ``init(sqlCell:)``, nil for NULL.
    public static func decodeIfPresent(sqlCell cell: SQLCell) throws -> Self? { try decodeIntegerIfPresent(cell) }
}
extension Int32: SQLCellDecodable {
    /// The integer value, exactly. - Throws: `.decodingFailed` for NULL or a value that does not fit.
    public init(sqlCell cell: SQLCell) throws { self = try Self.decodeInteger(cell) }
    /// As ``init(sqlCell:)``, nil for NULL.
    public static func decodeIfPresent(sqlCell cell: SQLCell) throws -> Self? { try decodeIntegerIfPresent(cell) }
}
extension Int64: SQLCellDecodable {
    /// The integer value, exactly. - Throws: `.decodingFailed` for NULL or a value that does not fit.
    public init(sqlCell cell: SQLCell) throws { self = try Self.decodeInteger(cell) }
    /// As ``init(sqlCell:)``, nil for NULL.
    public static func decodeIfPresent(sqlCell cell: SQLCell) throws -> Self? { try decodeIntegerIfPresent(cell) }
}
extension UInt: SQLCellDecodable {
    /// The integer value, exactly. - Throws: `.decodingFailed` for NULL or a value that does not fit.
    public init(sqlCell cell: SQLCell) throws { self = try Self.decodeInteger(cell) }
    /// As ``init(sqlCell:)``, nil for NULL.
    public static func decodeIfPresent(sqlCell cell: SQLCell) throws -> Self? { try decodeIntegerIfPresent(cell) }
}
extension UInt8: SQLCellDecodable {
    /// The integer value, exactly. - Throws: `.decodingFailed` for NULL or a value that does not fit.
    public init(sqlCell cell: SQLCell) throws { self = try Self.decodeInteger(cell) }
    /// As ``init(sqlCell:)``, nil for NULL.
    public static func decodeIfPresent(sqlCell cell: SQLCell) throws -> Self? { try decodeIntegerIfPresent(cell) }
}
extension UInt16: SQLCellDecodable {
    /// The integer value, exactly. - Throws: `.decodingFailed` for NULL or a value that does not fit.
    public init(sqlCell cell: SQLCell) throws { self = try Self.decodeInteger(cell) }
    /// As ``init(sqlCell:)``, nil for NULL.
    public static func decodeIfPresent(sqlCell cell: SQLCell) throws -> Self? { try decodeIntegerIfPresent(cell) }
}
extension UInt32: SQLCellDecodable {
    /// The integer value, exactly. - Throws: `.decodingFailed` for NULL or a value that does not fit.
    public init(sqlCell cell: SQLCell) throws { self = try Self.decodeInteger(cell) }
    /// As ``init(sqlCell:)``, nil for NULL.
    public static func decodeIfPresent(sqlCell cell: SQLCell) throws -> Self? { try decodeIntegerIfPresent(cell) }
}
extension UInt64: SQLCellDecodable {
    /// The integer value, exactly. - Throws: `.decodingFailed` for NULL or a value that does not fit.
    public init(sqlCell cell: SQLCell) throws { self = try Self.decodeInteger(cell) }
    /// As ``init(sqlCell:)``, nil for NULL.
    public static func decodeIfPresent(sqlCell cell: SQLCell) throws -> Self? { try decodeIntegerIfPresent(cell) }
}

extension Bool: SQLCellDecodable {
    /// bit, or an integer 0/1 (``SQLValue/boolValue``). - Throws: `.decodingFailed` for NULL or another value.
    public init(sqlCell cell: SQLCell) throws {
        self = try cell.read({ $0.bit(row: $1, column: $2) }, { $0 }, SQLValueConversion.bool)
    }
    /// As ``init(sqlCell:)``, nil for NULL.
    public static func decodeIfPresent(sqlCell cell: SQLCell) throws -> Bool? {
        try cell.readIfPresent({ $0.bit(row: $1, column: $2) }, { $0 }, SQLValueConversion.bool)
    }
}

extension String: SQLCellDecodable {
    /// The text of a character type; any other non-NULL value as its canonical text.
    /// - Throws: `.decodingFailed` for NULL.
    public init(sqlCell cell: SQLCell) throws {
        self = try cell.read({ $0.string(row: $1, column: $2) }, { $0 }, SQLValueConversion.string)
    }
    /// As ``init(sqlCell:)``, nil for NULL.
    public static func decodeIfPresent(sqlCell cell: SQLCell) throws -> String? {
        try cell.readIfPresent({ $0.string(row: $1, column: $2) }, { $0 }, SQLValueConversion.string)
    }
}

extension Double: SQLCellDecodable {
    /// float, real (widened exactly), and the other numeric types (``SQLValue/doubleValue``),
    /// numeric text. - Throws: `.decodingFailed` for NULL or another value.
    public init(sqlCell cell: SQLCell) throws {
        self = try cell.read({ $0.double(row: $1, column: $2) }, { $0 }, SQLValueConversion.double)
    }
    /// As ``init(sqlCell:)``, nil for NULL.
    public static func decodeIfPresent(sqlCell cell: SQLCell) throws -> Double? {
        try cell.readIfPresent({ $0.double(row: $1, column: $2) }, { $0 }, SQLValueConversion.double)
    }
}

extension Float: SQLCellDecodable {
    /// real to the bit; other numeric types rounded to `Float`. - Throws: `.decodingFailed` for NULL or another value.
    public init(sqlCell cell: SQLCell) throws {
        self = try cell.read({ $0.real(row: $1, column: $2) }, { $0 }, SQLValueConversion.float)
    }
    /// As ``init(sqlCell:)``, nil for NULL.
    public static func decodeIfPresent(sqlCell cell: SQLCell) throws -> Float? {
        try cell.readIfPresent({ $0.real(row: $1, column: $2) }, { $0 }, SQLValueConversion.float)
    }
}

extension Decimal: SQLCellDecodable {
    /// decimal, numeric, money and smallmoney exactly (``SQLDecimal/decimalValue``,
    /// ``SQLMoney/decimalValue``); integers, bit and floating types (``SQLValue/decimalValue``).
    /// - Throws: `.decodingFailed` for NULL or another value.
    public init(sqlCell cell: SQLCell) throws {
        self = try cell.read({ $0.decimal(row: $1, column: $2) }, { $0 }, SQLValueConversion.decimal)
    }
    /// As ``init(sqlCell:)``, nil for NULL.
    public static func decodeIfPresent(sqlCell cell: SQLCell) throws -> Decimal? {
        try cell.readIfPresent({ $0.decimal(row: $1, column: $2) }, { $0 }, SQLValueConversion.decimal)
    }
}

extension Date: SQLCellDecodable {
    /// date, datetime2, datetime and smalldatetime as their wall-clock time read in UTC; a
    /// datetimeoffset's own instant (``SQLValue/dateValue(in:)`` in UTC, to the bit).
    /// - Throws: `.decodingFailed` for NULL, time, or another type.
    public init(sqlCell cell: SQLCell) throws {
        self = try cell.read({ $0.utcDate(row: $1, column: $2) }, { $0 }, { $0.utcDateValue })
    }
    /// As ``init(sqlCell:)``, nil for NULL.
    public static func decodeIfPresent(sqlCell cell: SQLCell) throws -> Date? {
        try cell.readIfPresent({ $0.utcDate(row: $1, column: $2) }, { $0 }, { $0.utcDateValue })
    }
}

extension UUID: SQLCellDecodable {
    /// uniqueidentifier, or text that holds one (`8-4-4-4-12`).
    /// - Throws: `.decodingFailed` for NULL or another value.
    public init(sqlCell cell: SQLCell) throws {
        self = try cell.read({ $0.uuid(row: $1, column: $2) }, { $0 }, SQLValueConversion.uuid)
    }
    /// As ``init(sqlCell:)``, nil for NULL.
    public static func decodeIfPresent(sqlCell cell: SQLCell) throws -> UUID? {
        try cell.readIfPresent({ $0.uuid(row: $1, column: $2) }, { $0 }, SQLValueConversion.uuid)
    }
}

extension Data: SQLCellDecodable {
    /// The bytes of binary, varbinary, image, timestamp and UDT values (``SQLValue/dataValue``).
    /// - Throws: `.decodingFailed` for NULL or another value.
    public init(sqlCell cell: SQLCell) throws {
        self = try cell.read({ $0.data(row: $1, column: $2) }, { $0 }, { $0.dataValue })
    }
    /// As ``init(sqlCell:)``, nil for NULL.
    public static func decodeIfPresent(sqlCell cell: SQLCell) throws -> Data? {
        try cell.readIfPresent({ $0.data(row: $1, column: $2) }, { $0 }, { $0.dataValue })
    }
}

/// The element of an array a cell decodes to: `UInt8` (the bytes of a binary value) and `Float`
/// (the elements of a vector). One protocol, because `Array` can adopt ``SQLCellDecodable`` once.
public protocol SQLCellArrayElement {
    /// The cell's value as an array of `Self`.
    /// - Throws: `.decodingFailed` for NULL or a value that does not convert.
    static func decodeArray(sqlCell cell: SQLCell) throws -> [Self]
    /// As ``decodeArray(sqlCell:)``, nil for NULL.
    /// - Throws: `.decodingFailed` for a value that does not convert.
    static func decodeArrayIfPresent(sqlCell cell: SQLCell) throws -> [Self]?
}

extension UInt8: SQLCellArrayElement {
    /// The bytes of binary, varbinary, image, timestamp and UDT values (``SQLValue/bytesValue``).
    /// - Throws: `.decodingFailed` for NULL or another value.
    public static func decodeArray(sqlCell cell: SQLCell) throws -> [UInt8] {
        try cell.read({ $0.bytes(row: $1, column: $2) }, { $0 }, SQLValueConversion.bytes)
    }
    /// As ``decodeArray(sqlCell:)``, nil for NULL.
    public static func decodeArrayIfPresent(sqlCell cell: SQLCell) throws -> [UInt8]? {
        try cell.readIfPresent({ $0.bytes(row: $1, column: $2) }, { $0 }, SQLValueConversion.bytes)
    }
}

extension Float: SQLCellArrayElement {
    /// The elements of a vector value, or of a JSON array of numbers held as json or character
    /// text (what a server that did not acknowledge VECTORSUPPORT sends): ``SQLVector``'s read.
    /// - Throws: `.decodingFailed` for NULL or another value.
    /// A vector cell of a row block is read straight from its wire bytes into the array (one
    /// allocation, no ``SQLValue``).
    public static func decodeArray(sqlCell cell: SQLCell) throws -> [Float] {
        if case .value(let f) = cell.typed({ $0.floats(row: $1, column: $2) }) { return f }
        return try SQLVector(sqlCell: cell).values
    }
    /// As ``decodeArray(sqlCell:)``, nil for NULL.
    public static func decodeArrayIfPresent(sqlCell cell: SQLCell) throws -> [Float]? {
        switch cell.typed({ $0.floats(row: $1, column: $2) }) {
        case .value(let f): return f
        case .null: return nil
        case .other: return try SQLVector.decodeIfPresent(sqlCell: cell)?.values
        }
    }
}

extension Array: SQLCellDecodable where Element: SQLCellArrayElement {
    /// `[UInt8]`: the bytes of a binary value; `[Float]`: a vector's elements (``SQLCellArrayElement``).
    /// - Throws: `.decodingFailed` for NULL or another value.
    public init(sqlCell cell: SQLCell) throws { self = try Element.decodeArray(sqlCell: cell) }
    /// As ``init(sqlCell:)``, nil for NULL.
    public static func decodeIfPresent(sqlCell cell: SQLCell) throws -> [Element]? {
        try Element.decodeArrayIfPresent(sqlCell: cell)
    }
}

// The SQL value types: their own case (a sql_variant's too), nothing converted.

extension SQLDecimal: SQLCellDecodable {
    /// A decimal or numeric value. - Throws: `.decodingFailed` for NULL or another type.
    public init(sqlCell cell: SQLCell) throws {
        self = try cell.converted { if case .decimal(let d) = $0.baseValue { return d } else { return nil } }
    }
}
extension SQLMoney: SQLCellDecodable {
    /// A money or smallmoney value. - Throws: `.decodingFailed` for NULL or another type.
    public init(sqlCell cell: SQLCell) throws {
        self = try cell.converted {
            switch $0.baseValue {
            case .money(let m), .smallMoney(let m): return m
            default: return nil
            }
        }
    }
}
extension SQLDate: SQLCellDecodable {
    /// A date value. - Throws: `.decodingFailed` for NULL or another type.
    public init(sqlCell cell: SQLCell) throws {
        self = try cell.converted { if case .date(let d) = $0.baseValue { return d } else { return nil } }
    }
}
extension SQLTime: SQLCellDecodable {
    /// A time value. - Throws: `.decodingFailed` for NULL or another type.
    public init(sqlCell cell: SQLCell) throws {
        self = try cell.converted { if case .time(let t) = $0.baseValue { return t } else { return nil } }
    }
}
extension SQLDateTime2: SQLCellDecodable {
    /// A datetime2 value. - Throws: `.decodingFailed` for NULL or another type.
    public init(sqlCell cell: SQLCell) throws {
        self = try cell.converted { if case .datetime2(let d) = $0.baseValue { return d } else { return nil } }
    }
}
extension SQLDateTimeOffset: SQLCellDecodable {
    /// A datetimeoffset value. - Throws: `.decodingFailed` for NULL or another type.
    public init(sqlCell cell: SQLCell) throws {
        self = try cell.converted { if case .datetimeOffset(let d) = $0.baseValue { return d } else { return nil } }
    }
}
extension SQLDateTime: SQLCellDecodable {
    /// A datetime value. - Throws: `.decodingFailed` for NULL or another type.
    public init(sqlCell cell: SQLCell) throws {
        self = try cell.converted { if case .datetime(let d) = $0.baseValue { return d } else { return nil } }
    }
}
extension SQLSmallDateTime: SQLCellDecodable {
    /// A smalldatetime value. - Throws: `.decodingFailed` for NULL or another type.
    public init(sqlCell cell: SQLCell) throws {
        self = try cell.converted { if case .smallDateTime(let d) = $0.baseValue { return d } else { return nil } }
    }
}
