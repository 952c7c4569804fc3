import TDS

/// Rows of one result set stored together: the values of `count` rows in one flat array, row
/// after row (`columns.count` values each). Returned by ``SQLConnection/rowBlocks(_:timeout:)``, the
/// fastest way to read a large result: one allocation per block instead of one per row (values
/// of fixed-width columns need none of their own; strings and binary values still do).
public struct SQLRowBlock: Sendable, RandomAccessCollection {
    /// The columns, shared by every row of the result set.
    public let columns: SQLColumns
    /// Every value of the block, row by row: row `i`, column `c` is `values[i * columns.count + c]`.
    public let values: [SQLValue]
    /// Values per row.
    public let width: Int

    init(columns: SQLColumns, values: [SQLValue]) {
        self.columns = columns
        self.values = values
        self.width = Swift.max(columns.count, 1)
    }

    public var startIndex: Int { 0 }
    /// The number of rows.
    public var endIndex: Int { values.count / width }

    /// The values of row `position` (0-based), in column order.
    public subscript(position: Int) -> ArraySlice<SQLValue> {
        values[position * width ..< (position + 1) * width]
    }

    /// Row `position` as an ``SQLRow`` (copies its values into an array of their own).
    public func row(_ position: Int) -> SQLRow {
        SQLRow(columns: columns, values: Array(self[position]))
    }
}

extension SQLConnection {
    /// Streams the rows of `query` (of all its result sets) in blocks: each ``SQLRowBlock`` holds
    /// consecutive rows of one result set that had been received when it was made (at most 4,096), the
    /// socket being read only as blocks are consumed. Breaking out of the loop cancels the rest of
    /// the request (ATTENTION), as with ``query(_:timeout:)``.
    ///
    /// ```swift
    /// for try await block in connection.rowBlocks("SELECT id, name FROM customers") {
    ///     for row in block { print(row[row.startIndex].intValue ?? 0) }
    /// }
    /// ```
    /// - Parameter query: the statement (see ``execute(_:timeout:)``).
    /// - Parameter timeout: overrides ``SQLConnectionConfiguration/queryTimeout`` for this request.
    /// - Throws (from iteration): as ``execute(_:timeout:)``.
    public nonisolated func rowBlocks(_ query: SQLQuery, timeout: Duration? = nil) -> SQLRowBlockSequence {
        SQLRowBlockSequence(connection: self, query: query, timeout: timeout)
    }
}

/// The rows of one request in blocks. See ``SQLConnection/rowBlocks(_:timeout:)``.
public struct SQLRowBlockSequence: AsyncSequence, Sendable {
    /// ``SQLRowBlock``.
    public typealias Element = SQLRowBlock
    let connection: SQLConnection
    let query: SQLQuery
    let timeout: Duration?

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(cursor: ResponseCursor(connection: connection, request: .query(query), timeout: timeout))
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let cursor: ResponseCursor
        public mutating func next() async throws -> SQLRowBlock? {
            try await cursor.nextBlock()
        }

        /// As ``next()``, run in the caller's isolation (`for try await` calls this).
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> SQLRowBlock? {
            try await cursor.nextBlock(isolation: actor)
        }
    }
}
