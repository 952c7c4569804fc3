/// Rows of one result set stored together: the values of `count` rows in one flat array, row
/// after row (`columns.count` values each). Returned by ``SQLConnection/rowBlocks(_:)``, the
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
    /// Streams the rows of a batch (of all its result sets) in blocks: each ``SQLRowBlock`` holds
    /// the rows of one result set that had been received when it was made (at most 4,096), the
    /// socket being read only as blocks are consumed. Breaking out of the loop cancels the rest of
    /// the batch (ATTENTION), as with ``query(_:)``.
    ///
    /// ```swift
    /// for try await block in connection.rowBlocks("SELECT id, name FROM customers") {
    ///     for row in block { print(row[row.startIndex].intValue ?? 0) }
    /// }
    /// ```
    /// - Throws (from iteration): ``SQLClientError`` `.serverError` when the batch reports an error.
    public nonisolated func rowBlocks(_ sql: String) -> SQLRowBlockSequence {
        SQLRowBlockSequence(connection: self, sql: sql)
    }
}

/// The rows of one batch in blocks. See ``SQLConnection/rowBlocks(_:)``.
public struct SQLRowBlockSequence: AsyncSequence, Sendable {
    public typealias Element = SQLRowBlock
    let connection: SQLConnection
    let sql: String

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(cursor: Cursor(connection: connection, sql: sql))
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let cursor: Cursor
        public mutating func next() async throws -> SQLRowBlock? {
            try await cursor.next()
        }
    }

    /// Owns the request: sends it on the first `next()`, and cancels it (ATTENTION) if dropped
    /// before its end.
    final class Cursor: @unchecked Sendable {
        let connection: SQLConnection
        let sql: String
        private var id: UInt64?
        private var finished = false
        private var pendingError: (any Error)?
        static let blockLimit = 4096

        init(connection: SQLConnection, sql: String) {
            self.connection = connection
            self.sql = sql
        }

        func next() async throws -> SQLRowBlock? {
            if let error = pendingError {
                pendingError = nil
                throw error
            }
            if finished { return nil }
            if Task.isCancelled, let id {
                finished = true
                let connection = self.connection
                Task { await connection.abandon(id) }
                throw SQLClientError(.cancelled, "the request was cancelled")
            }
            do {
                if id == nil { id = try await connection.startBatch(sql) }
                guard let id else { return nil }
                let batch = await connection.nextRowBlock(id, limit: Cursor.blockLimit)
                if batch.ended || batch.error != nil { finished = true }
                pendingError = batch.error
                if let columns = batch.columns, batch.rowCount > 0 {
                    return SQLRowBlock(columns: columns, values: batch.values)
                }
                return try await next()
            } catch {
                finished = true
                throw error
            }
        }

        deinit {
            if let id, !finished {
                let connection = self.connection
                Task { await connection.abandon(id) }
            }
        }
    }
}
