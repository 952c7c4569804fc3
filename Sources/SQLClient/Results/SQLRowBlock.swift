import TDS

/// Rows of one result set stored together: consecutive rows in one block, shared by the rows'
/// ``SQLRow`` views. Returned by ``SQLConnection/rowBlocks(_:timeout:)``, the fastest way to read a large
/// result: one allocation per block, none per row (a row is a view of its block; values are
/// decoded when they are read, strings transcoded and binary values copied only then).
public struct SQLRowBlock: Sendable, RandomAccessCollection {
    let storage: SQLRowStorage
    /// The block's rows in `storage`.
    let rows: Range<Int>

    init(columns: SQLColumns, values: [SQLValue]) {
        self.init(storage: SQLRowStorage(columns: columns, values: values, width: columns.count))
    }

    init(storage: SQLRowStorage, rows: Range<Int>? = nil) {
        self.storage = storage
        self.rows = rows ?? 0 ..< storage.count
    }

    /// The columns, shared by every row of the result set.
    public var columns: SQLColumns { storage.columns }
    /// Every value of the block, row by row: row `i`, column `c` is `values[i * columns.count + c]`
    /// (decoded into one array of their own: iterating the rows decodes only what is read).
    public var values: [SQLValue] { storage.values(rows: rows) }
    /// Values per row (at least 1).
    public var width: Int { Swift.max(storage.width, 1) }

    public var startIndex: Int { 0 }
    /// The number of rows.
    public var endIndex: Int { rows.count }

    /// Row `position` (0-based), a view of the block.
    public subscript(position: Int) -> SQLRow {
        precondition(position >= 0 && position < rows.count, "SQLRowBlock index \(position) out of range 0..<\(rows.count)")
        return SQLRow(storage: storage, index: rows.lowerBound + position)
    }

    /// Row `position` as an ``SQLRow`` (a view of the block: nothing is copied).
    public func row(_ position: Int) -> SQLRow { self[position] }

    /// The rows from `position` on (a view of the same block).
    func dropping(_ position: Int) -> SQLRowBlock {
        SQLRowBlock(storage: storage, rows: rows.lowerBound + Swift.min(position, rows.count) ..< rows.upperBound)
    }
}

extension SQLConnection {
    /// Streams the rows of `query` (of all its result sets) in blocks: each ``SQLRowBlock`` holds
    /// consecutive rows of one result set that had been received when it was made (at most 4,096), the
    /// socket being read as blocks are consumed, at most one block ahead. Breaking out of the loop cancels the rest of
    /// the request (ATTENTION), as with ``query(_:timeout:)``.
    ///
    /// ```swift
    /// for try await block in connection.rowBlocks("SELECT id, name FROM customers") {
    ///     for row in block { print(row[0].intValue ?? 0, row[1].stringValue ?? "NULL") }
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
    /// The transaction the request belongs to: the one the creating task worked under (inside
    /// ``SQLConnection/withTransaction(isolationLevel:isolation:_:)``, or an ``SQLTransaction``'s
    /// request), else the iterating task's.
    let reservation: SQLConnection.ReservationID? = SQLConnection.currentReservation

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(cursor: ResponseCursor(connection: connection, request: .query(query), timeout: timeout,
                                             reservation: reservation))
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
