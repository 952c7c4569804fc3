import Foundation
import Synchronization
import TDS

/// One column of a result set ([MS-TDS] 2.2.7.4 COLMETADATA).
public struct SQLColumn: Sendable, Hashable {
    /// The column name ("" for an unnamed expression).
    public var name: String
    /// The wire type: TYPE_INFO with length, precision, scale and collation.
    public var typeInfo: TypeInfo
    /// Whether the column may hold NULL.
    public var isNullable: Bool

    /// COLMETADATA UserType as the server sent it: 0 for base types, 0x50 for timestamp/rowversion
    /// ([MS-TDS] 2.2.7.4).
    public internal(set) var userType: UInt32 = 0
    /// COLMETADATA Flags: nullable, identity, computed, updatable… ([MS-TDS] 2.2.7.4).
    public internal(set) var flags: TDS.ColumnFlags = []

    /// A column as COLMETADATA describes it.
    public init(name: String, typeInfo: TypeInfo, isNullable: Bool) {
        self.name = name
        self.typeInfo = typeInfo
        self.isNullable = isNullable
    }

    init(_ metadata: ColumnMetadata) {
        self.init(name: metadata.name, typeInfo: metadata.typeInfo, isNullable: metadata.isNullable)
        userType = metadata.userType
        flags = metadata.flags
    }

    /// The type as SQL Server would declare it: `int`, `nvarchar(20)`, `decimal(10,3)`, `datetime2(7)`.
    public var typeName: String { typeInfo.sqlTypeName }
}

/// The columns of one result set, shared by all of its rows, with lookup by name.
public final class SQLColumns: Sendable, RandomAccessCollection {
    /// The columns in result-set order.
    public let columns: [SQLColumn]
    private let exactIndex: [String: Int]
    private let foldedIndex: [String: Int]
    /// One distinct key per column, in column order, for ``SQLRow/dictionary``.
    ///
    /// The rule (never a trap, whatever the names):
    /// - a column whose name is not empty and is the first of its exact spelling keeps its name;
    /// - a column with an empty name (`SELECT COUNT(*)`) gets `column<n>`, n its 1-based position;
    /// - a later column repeating a name gets `<name>_<k>`, k its occurrence (2 for the second);
    /// - when a generated key is already taken, `_<k>` counts up (`column2_2`, `a_3`…) until it is free.
    ///
    /// Names compare exactly (case-sensitive): `a` and `A` are two keys.
    /// `SELECT COUNT(*), MAX(id), 1 AS x, 2 AS x` gives `["column1", "column2", "x", "x_2"]`.
    public let dictionaryKeys: [String]
    /// What ``SQLRow/decode(_:)`` keeps for these columns: the column of each coding key per key
    /// type and a reused decoder (see ``SQLRowDecoding``).
    let decoding = SQLRowDecoding()

    /// Columns in result-set order; lookup tables and ``dictionaryKeys`` are built once here.
    public init(_ columns: [SQLColumn]) {
        self.columns = columns
        var exact: [String: Int] = [:]
        var folded: [String: Int] = [:]
        for (i, c) in columns.enumerated() {
            if exact[c.name] == nil { exact[c.name] = i }
            let key = c.name.lowercased()
            if folded[key] == nil { folded[key] = i }
        }
        exactIndex = exact
        foldedIndex = folded
        dictionaryKeys = Self.distinctKeys(columns.map(\.name))
    }

    /// See ``dictionaryKeys``.
    static func distinctKeys(_ names: [String]) -> [String] {
        var keys = [String?](repeating: nil, count: names.count)
        var taken = Set<String>()
        for (i, name) in names.enumerated() where !name.isEmpty && !taken.contains(name) {
            keys[i] = name
            taken.insert(name)
        }
        var occurrences: [String: Int] = [:]
        for (i, name) in names.enumerated() {
            occurrences[name, default: 0] += 1
            if keys[i] != nil { continue }
            let base = name.isEmpty ? "column\(i + 1)" : name
            var k = name.isEmpty ? 1 : occurrences[name, default: 1]
            var candidate = k == 1 ? base : "\(base)_\(k)"
            while taken.contains(candidate) {
                k += 1
                candidate = "\(base)_\(k)"
            }
            keys[i] = candidate
            taken.insert(candidate)
        }
        return keys.map { $0 ?? "" }
    }

    /// 0.
    public var startIndex: Int { columns.startIndex }
    /// The number of columns.
    public var endIndex: Int { columns.endIndex }
    /// The column at `position` (0-based).
    public subscript(position: Int) -> SQLColumn { columns[position] }

    /// The index of the first column named `name` (exact match first, then case-insensitive).
    public func index(of name: String) -> Int? {
        exactIndex[name] ?? foldedIndex[name.lowercased()]
    }
}

/// One row: ordered values with their columns. Values stay as decoded (lossless `SQLValue`)
/// until asked for as Swift types.
///
/// A row is a view of the block of rows it arrived in (shared, never copied): taking a row from
/// ``SQLConnection/query(_:timeout:)`` or ``SQLResultSet/rows`` allocates nothing, and a value is decoded
/// when it is read (`row[i]`, `row["name"]`, iterating the row, ``decode(_:)-(T.Type)``, `decode((A, B).self)`). ``values`` copies
/// them into an array of their own.
public struct SQLRow: Sendable, RandomAccessCollection, CustomStringConvertible {
    @usableFromInline let storage: SQLRowStorage
    /// The row's index in `storage`.
    @usableFromInline let index: Int

    /// A row of `values` in the order of `columns` (one value per column).
    public init(columns: SQLColumns, values: [SQLValue]) {
        self.storage = SQLRowStorage(columns: columns, values: values, width: values.count)
        self.index = 0
    }

    /// Row `index` of `storage`.
    @inlinable @inline(__always)
    init(storage: SQLRowStorage, index: Int) {
        self.storage = storage
        self.index = index
    }

    /// The row's columns (shared with the other rows of its result set).
    public var columns: SQLColumns { storage.columns }

    /// The values, in column order, in an array of their own (each decoded; reading `row[i]` or
    /// iterating the row decodes only what it reads and allocates nothing for fixed-width values).
    public var values: [SQLValue] { storage.values(row: index) }

    /// 0.
    @inlinable
    public var startIndex: Int { 0 }
    /// The number of values.
    @inlinable
    public var endIndex: Int { storage.width }
    /// The value at `position` (0-based, in column order).
    @inlinable
    public subscript(position: Int) -> SQLValue {
        precondition(position >= 0 && position < storage.width, "SQLRow index \(position) out of range 0..<\(storage.width)")
        return storage.value(row: index, column: position)
    }

    /// Whether the value at `position` is NULL, without decoding it.
    func isNull(at position: Int) -> Bool { storage.isNull(row: index, column: position) }

    /// The value of the column named `name` (exact match first, then case-insensitive), nil when no such column.
    public subscript(name: String) -> SQLValue? {
        guard let i = columns.index(of: name), i < storage.width else { return nil }
        return storage.value(row: index, column: i)
    }

    /// (column name, value) pairs in order, names as the server sent them (possibly empty or repeated).
    public var namedValues: [(name: String, value: SQLValue)] {
        zip(columns.columns, self).map { ($0.name, $1) }
    }

    /// The row as a dictionary from column key to value (NULL stays `SQLValue/null`), the
    /// Objective-C SQLClient's row shape. Keys follow ``SQLColumns/dictionaryKeys``: unique
    /// names as they are, `column<n>` for an empty name, `<name>_<k>` for a repeated one, so
    /// `SELECT COUNT(*), MAX(id)` gives `["column1": …, "column2": …]`. Never traps.
    public var dictionary: [String: SQLValue] {
        var out: [String: SQLValue] = [:]
        out.reserveCapacity(count)
        for (key, value) in zip(columns.dictionaryKeys, self) { out[key] = value }
        return out
    }

    /// `[name: value, …]` with each value's canonical text.
    public var description: String {
        "[" + namedValues.map { "\($0.name): \($0.value)" }.joined(separator: ", ") + "]"
    }

    /// Decodes the row into `type`, matching coding keys to column names (exact, then case-insensitive).
    ///
    /// Supported leaf types: `Bool`, all fixed-width integers, `Float`, `Double`, `Decimal`, `String`,
    /// `Date` (datetime/datetime2/smalldatetime/date read as UTC; datetimeoffset exact), `UUID`,
    /// `Data`, `[UInt8]`, `RawRepresentable` enums over these, and Optionals (NULL → nil).
    /// - Throws: ``SQLClientError`` `.decodingFailed` naming the column, its index and the value's type.
    public func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        try SQLRowDecoder.decode(T.self, row: self)
    }
}

/// One buffered result set: its columns, its rows and the statement's row count.
public struct SQLResultSet: Sendable, CustomStringConvertible {
    /// The result set's columns (COLMETADATA).
    public var columns: SQLColumns
    /// Every row, in the order the server sent them.
    public var rows: [SQLRow]
    /// The count DONE reported for the statement (its COUNT flag), nil when none.
    public var rowsAffected: Int?

    /// A result set of `rows` over `columns`, with the count DONE reported.
    public init(columns: SQLColumns, rows: [SQLRow] = [], rowsAffected: Int? = nil) {
        self.columns = columns
        self.rows = rows
        self.rowsAffected = rowsAffected
    }

    /// Every row as a dictionary (see ``SQLRow/dictionary`` for the key rule).
    public var dictionaries: [[String: SQLValue]] { rows.map(\.dictionary) }

    /// `SQLResultSet([column names], N rows, rowsAffected: n)`.
    public var description: String {
        "SQLResultSet(\(columns.map(\.name)), \(rows.count) rows, rowsAffected: \(rowsAffected.map(String.init) ?? "nil"))"
    }
}

/// The outcome of one statement of a batch, in order: a result set, or a count-only statement
/// (INSERT, UPDATE, DELETE, SET NOCOUNT OFF…).
public enum SQLStatementResult: Sendable {
    /// A statement that returned a result set (with its DONE count in ``SQLResultSet/rowsAffected``).
    case resultSet(SQLResultSet)
    /// A statement that returned no result set, with the count its DONE reported (nil when none).
    case rowsAffected(Int?)
}

/// One step of a response, as read from the server: the one streamed element
/// (``SQLConnection/events(_:timeout:)``); ``SQLResult`` is their fold (``SQLResult/append(_:)``).
public enum SQLResponseEvent: Sendable {
    /// A result set starts.
    case columns(SQLColumns)
    /// A row of the current result set.
    case row(SQLRow)
    /// A statement finished, with its count when DONE carried one.
    case statementDone(rowsAffected: Int?)
    /// An INFO or ERROR message from the server.
    case message(SQLServerMessage)
    /// A procedure's return status (RETURNSTATUS, [MS-TDS] 2.2.7.18).
    case returnStatus(Int32)
    /// An OUTPUT parameter's value or a UDF result (RETURNVALUE, [MS-TDS] 2.2.7.19). They come
    /// after the request's last statement, in the order the server sent them.
    case outputValue(SQLOutputValue)
}
