import Foundation
import TDS

/// A destination column of `SQLConnection.bulkInsert(into:columns:rows:options:)`: its name and,
/// optionally, its type. Columns without a type take it from the table's own metadata.
public struct SQLBulkColumn: Sendable, Hashable, ExpressibleByStringLiteral {
    /// The column's name in the destination table (sent bracket-quoted in INSERT BULK).
    public var name: String
    /// The SQL type values are sent as; nil to read it from the table (`SELECT TOP 0 * FROM table`).
    public var type: TypeInfo?
    /// Whether NULL may be sent for the column (COLMETADATA's nullable flag).
    public var isNullable: Bool

    /// A column named `name`, of `type` (nil: the table's own), nullable unless told otherwise.
    public init(_ name: String, type: TypeInfo? = nil, nullable: Bool = true) {
        self.name = name
        self.type = type
        self.isNullable = nullable
    }

    public init(stringLiteral name: String) { self.init(name) }
}

/// Options of a bulk load: the `INSERT BULK … WITH (…)` options ([MS-TDS] 2.2.1.5) and how the
/// rows are cut into batches.
public struct SQLBulkCopyOptions: Sendable {
    /// CHECK_CONSTRAINTS: check CHECK and FOREIGN KEY constraints (a bulk load skips them by default).
    public var checkConstraints = false
    /// FIRE_TRIGGERS: run the table's INSERT triggers.
    public var fireTriggers = false
    /// KEEP_NULLS: store NULL rather than the column default for NULL values.
    public var keepNulls = false
    /// TABLOCK: a bulk update lock on the table for the load.
    public var tableLock = false
    /// ORDER(…): the rows come sorted by these columns (name, descending).
    public var order: [(column: String, descending: Bool)] = []
    /// ROWS_PER_BATCH = n: a hint of how many rows the load has.
    public var rowsPerBatch: Int?
    /// KILOBYTES_PER_BATCH = n: a hint of its size.
    public var kilobytesPerBatch: Int?
    /// Rows per batch: each batch is its own INSERT BULK and BULKLOAD message and is committed on
    /// its own (as bcp's `-b`); nil sends all rows in one batch.
    public var batchSize: Int?
    /// With columns read from the table: also send identity columns (otherwise the server numbers them).
    public var keepIdentity = false
    /// Time zone for `Date` values of Encodable rows written to date/time columns without an offset (UTC by default).
    public var timeZone = TimeZone(secondsFromGMT: 0) ?? .current
    /// A query timeout for each request of the load; nil uses the connection's.
    public var timeout: Duration?
    /// Always Encrypted: load ciphertext into encrypted columns as it is, as SqlBulkCopy's
    /// `AllowEncryptedValueModifications` (INSERT BULK … WITH (ALLOW_ENCRYPTED_VALUE_MODIFICATIONS)):
    /// to move encrypted data between tables or databases without its keys. Each value of an
    /// encrypted column is the ciphertext (`.bytes`, or NULL), sent as varbinary; nothing checks it,
    /// so bytes that are not a ciphertext of the column's key cannot be decrypted later. Copy over a
    /// connection without ``SQLConnectionConfiguration/columnEncryption``, where encrypted columns
    /// read as their varbinary ciphertext (SqlClient's workflow); the database user needs
    /// `ALLOW_ENCRYPTED_VALUE_MODIFICATIONS = ON`. Off (the default), a load into a column the
    /// table's metadata marks encrypted is refused with `.bulkCopyEncryptedColumn`.
    public var allowEncryptedValueModifications = false

    /// Options as INSERT BULK's WITH hints and the batching of the load; every default is the server's.
    public init(checkConstraints: Bool = false, fireTriggers: Bool = false, keepNulls: Bool = false,
                tableLock: Bool = false, order: [(column: String, descending: Bool)] = [], rowsPerBatch: Int? = nil,
                kilobytesPerBatch: Int? = nil, batchSize: Int? = nil, keepIdentity: Bool = false,
                timeout: Duration? = nil, allowEncryptedValueModifications: Bool = false) {
        self.allowEncryptedValueModifications = allowEncryptedValueModifications
        self.checkConstraints = checkConstraints
        self.fireTriggers = fireTriggers
        self.keepNulls = keepNulls
        self.tableLock = tableLock
        self.order = order
        self.rowsPerBatch = rowsPerBatch
        self.kilobytesPerBatch = kilobytesPerBatch
        self.batchSize = batchSize
        self.keepIdentity = keepIdentity
        self.timeout = timeout
    }

    var statementOptions: BulkLoadStatement.Options {
        BulkLoadStatement.Options(checkConstraints: checkConstraints, fireTriggers: fireTriggers, keepNulls: keepNulls,
                                  tableLock: tableLock, order: order, rowsPerBatch: rowsPerBatch,
                                  kilobytesPerBatch: kilobytesPerBatch,
                                  allowEncryptedValueModifications: allowEncryptedValueModifications)
    }
}

/// What a completed bulk load did.
public struct SQLBulkCopyResult: Sendable, Hashable {
    /// Rows the server reported inserted (the sum of each batch's DONE count).
    public var rowsCopied: Int
    /// INSERT BULK/BULKLOAD round trips made.
    public var batches: Int
    /// The columns sent, in order, with the types they were sent as.
    public var columns: [String]
}

/// A bulk load that stopped: why, and how far it got.
public struct SQLBulkCopyError: Error, Sendable, CustomStringConvertible {
    /// Rows of the batches the server committed before the failure (0 when the load is one batch,
    /// which the server then rolls back whole).
    public var rowsCommitted: Int
    /// The 1-based row number of the value that did not fit its column, when that was the cause.
    public var row: Int?
    /// The column of that value.
    public var column: String?
    /// The cause: `.invalidParameter` for a value that does not fit (nothing of its batch was
    /// sent), `.serverError` with the server's messages, connection errors.
    public var error: SQLClientError

    public var description: String {
        "bulk copy failed after \(rowsCommitted) committed row(s): \(error)"
    }
}

extension SQLConnection {
    /// Loads rows into `table` with `INSERT BULK` and a BULKLOAD message ([MS-TDS] 2.2.1.5, 2.2.6.1).
    ///
    /// ```swift
    /// let result = try await connection.bulkInsert(into: "dbo.people", columns: ["id", "name"],
    ///                                              rows: [[.int(1), .string("Ada")], [.int(2), .string("Grace")]])
    /// print(result.rowsCopied)   // 2
    /// ```
    /// - Parameters:
    ///   - table: a one- to four-part name (`people`, `dbo.people`, `[my db].dbo.[people]`); each part is bracket-quoted.
    ///   - columns: the destination columns in the order of each row's values; nil for every column
    ///     of the table that a bulk load can write (not timestamp/rowversion, computed, or identity
    ///     unless ``SQLBulkCopyOptions/keepIdentity``). Columns without a type take the table's.
    ///   - rows: one array of values per row, in `columns` order. They are encoded as they are
    ///     taken from the sequence, a row at a time.
    ///   - options: INSERT BULK hints, batching and the timeout (see ``SQLBulkCopyOptions``).
    /// - Returns: the rows the server reported inserted and the number of batches.
    /// - Throws: ``SQLBulkCopyError``: a value that does not fit its column (length, precision,
    ///   range, code page, NULL in a NOT NULL column) names its 1-based row and column, and nothing
    ///   of its batch is inserted; a server error mid-load reports the rows of earlier batches
    ///   the server committed. A column that the table's metadata marks encrypted (Always
    ///   Encrypted) is refused before anything is sent, with `.bulkCopyEncryptedColumn` naming it,
    ///   unless ``SQLBulkCopyOptions/allowEncryptedValueModifications``.
    // Inlinable so that reading `rows` is specialized for the caller's sequence type (an
    // unspecialized iterator costs generic-metadata lookups per row); the iterator lives in a
    // BulkRowIterator (no exclusivity check per row).
    @inlinable
    public func bulkInsert<Rows: Sequence>(into table: String, columns: [SQLBulkColumn]? = nil, rows: Rows,
                                           options: SQLBulkCopyOptions = SQLBulkCopyOptions()) async throws -> SQLBulkCopyResult
    where Rows.Element == [SQLValue] {
        let iterator = BulkRowIterator(rows.makeIterator())
        return try await runBulkCopy(table: table, columns: columns, options: options,
                                     next: .sync { _ in iterator.pointer.pointee.next() })
    }

    /// As the `Sequence` form of `bulkInsert(into:columns:rows:options:)`, taking rows from an
    /// `AsyncSequence` as they come (a file being read, another query's rows).
    @inlinable
    public func bulkInsert<Rows: AsyncSequence>(into table: String, columns: [SQLBulkColumn]? = nil, rows: Rows,
                                                options: SQLBulkCopyOptions = SQLBulkCopyOptions()) async throws -> SQLBulkCopyResult
    where Rows.Element == [SQLValue] {
        let iterator = BulkRowIterator(rows.makeAsyncIterator())
        return try await runBulkCopy(table: table, columns: columns, options: options,
                                     next: .async { _ in try await iterator.pointer.pointee.next() })
    }

    /// Loads `Encodable` values, each property matched to a column by name (case-insensitive; a
    /// column with no property gets NULL). Swift values convert to the column's type: integers,
    /// `Bool`, `Double`/`Float`, `Decimal` (exact, to the column's precision and scale, or money),
    /// `String`, `Date` (date, time, datetime, smalldatetime, datetime2, datetimeoffset, in
    /// ``SQLBulkCopyOptions/timeZone``), `UUID`, `Data`/`[UInt8]`, `SQLValue`, optionals.
    public func bulkInsert<Rows: Sequence>(into table: String, columns: [SQLBulkColumn]? = nil, values: Rows,
                                           options: SQLBulkCopyOptions = SQLBulkCopyOptions()) async throws -> SQLBulkCopyResult
    where Rows.Element: Encodable {
        var iterator = values.makeIterator()
        return try await runBulkCopy(table: table, columns: columns, options: options, next: .sync { columns in
            guard let value = iterator.next() else { return nil }
            return try BulkCopyRowEncoder.row(value, columns: columns, timeZone: options.timeZone)
        })
    }

    /// As the `Sequence` form of `bulkInsert(into:columns:values:options:)`, from an `AsyncSequence`.
    public func bulkInsert<Rows: AsyncSequence>(into table: String, columns: [SQLBulkColumn]? = nil, values: Rows,
                                                options: SQLBulkCopyOptions = SQLBulkCopyOptions()) async throws -> SQLBulkCopyResult
    where Rows.Element: Encodable {
        var iterator = values.makeAsyncIterator()
        return try await runBulkCopy(table: table, columns: columns, options: options, next: .async { columns in
            guard let value = try await iterator.next() else { return nil }
            return try BulkCopyRowEncoder.row(value, columns: columns, timeZone: options.timeZone)
        })
    }
}

extension SQLConnection {
    /// The columns a bulk load into `table` would send, each with the type its values travel as
    /// ([MS-TDS] 2.2.6.1): those named in `columns` (all loadable ones when nil), typed from the
    /// table's metadata unless the caller gave a type. Pass them back to `bulkInsert` to skip its
    /// metadata query.
    /// Encrypted columns (Always Encrypted) are listed with their ciphertext's varbinary type when
    /// `allowEncryptedValueModifications`, else refused.
    /// - Throws: `.bulkCopyInvalidColumns`, `.bulkCopyEncryptedColumn`, `.serverError` (no such
    ///   table), `.invalidParameter` (bad name).
    public func bulkCopyColumns(for table: String, columns: [SQLBulkColumn]? = nil,
                                keepIdentity: Bool = false, allowEncryptedValueModifications: Bool = false) async throws -> [SQLBulkColumn] {
        let parts: [String]
        do {
            parts = try SQLIdentifier.parts(of: table)
        } catch {
            throw SQLClientError(.invalidParameter, "bad table name: \(error.detail)", underlying: error)
        }
        let resolved: [BulkLoadColumn]
        do {
            resolved = try await bulkColumns(quotedTable: parts.map(SQLIdentifier.quoted).joined(separator: "."),
                                             spec: columns, keepIdentity: keepIdentity,
                                             allowEncrypted: allowEncryptedValueModifications, timeout: nil)
        } catch let e as BulkCopyEncryptedColumnError {
            throw e.error
        }
        return resolved.map { SQLBulkColumn($0.name, type: $0.typeInfo, nullable: $0.flags.contains(.nullable)) }
    }
}

extension SQLClientError.Code {
    /// A bulk load could not start: no such table or column, or a table with no column to load.
    public static let bulkCopyInvalidColumns = SQLClientError.Code("bulkCopyInvalidColumns")
    /// A bulk load names a column encrypted with Always Encrypted: refused unless
    /// ``SQLBulkCopyOptions/allowEncryptedValueModifications`` (the ciphertext is then loaded as
    /// it is); the error's ``SQLBulkCopyError/column`` names the column.
    public static let bulkCopyEncryptedColumn = SQLClientError.Code("bulkCopyEncryptedColumn")
}
