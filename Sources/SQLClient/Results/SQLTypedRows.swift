import TDS

extension SQLRow {
    /// The row's first values as the Swift types of `types`, in column order: one
    /// ``SQLCellDecodable`` read per cell, straight from the row's wire bytes for the standard types
    /// (no ``SQLValue`` made).
    ///
    /// ```swift
    /// let (id, name, created) = try row.decode((Int, String?, Date).self)
    /// ```
    /// The row may have more values than types (the rest are not read).
    /// - Parameter types: a tuple of ``SQLCellDecodable`` types (an `Optional` for a column that may be NULL).
    /// - Returns: the values, as a tuple of `types`.
    /// - Throws: ``SQLClientError`` `.decodingFailed` whose ``SQLClientError/decodingFailure`` names
    ///   the column (name, index, SQL type) and the Swift type: NULL for a non-optional type, a
    ///   value that does not convert, or fewer values than types.
    @inlinable
    public func decode<each T: SQLCellDecodable>(_ types: (repeat each T).Type) throws -> (repeat each T) {
        var column = 0
        return (repeat try SQLRow.decodeCell((each T).self, storage, index, &column))
    }

    /// Column `column` of row `row` as `C`, and `column` moved to the next: the one per-cell read
    /// of every typed decode (this pack form, the fixed-arity overloads, the row sequences), through
    /// ``SQLCellDecodable/decode(sqlCell:)`` (a static function: `Optional`'s returns its wrapped
    /// type's value in place, with no generic metadata looked up).
    @inlinable @inline(__always)
    static func decodeCell<C: SQLCellDecodable>(_ type: C.Type, _ storage: SQLRowStorage, _ row: Int,
                                                _ column: inout Int) throws -> C {
        let i = column
        column = i &+ 1
        guard i < storage.width else { throw SQLCell.missing(C.self, storage, i) }
        return try C.decode(sqlCell: SQLCell(storage: storage, row: row, column: i))
    }
}

extension SQLRowSequence {
    /// The rows as tuples of `types` (`SQLRow.decode((A, B).self)` per row),
    /// streamed as ``SQLConnection/query(_:timeout:)`` streams them.
    ///
    /// ```swift
    /// for try await (id, name) in connection.query("SELECT id, name FROM people").decode((Int, String?).self) {
    ///     print(id, name ?? "NULL")
    /// }
    /// ```
    /// - Parameter types: a tuple of ``SQLCellDecodable`` types.
    /// - Throws (from iteration): as ``SQLConnection/query(_:timeout:)``, and ``SQLClientError``
    ///   `.decodingFailed` for a row that does not decode (see `SQLRow.decode((A, B).self)`).
    @inlinable
    public func decode<each T: SQLCellDecodable>(_ types: (repeat each T).Type) -> SQLTypedRowSequence<(repeat each T)> {
        SQLTypedRowSequence(rows: self) { try $0.decode((repeat each T).self) }
    }
}

/// The rows of one request as tuples of Swift values (`Element`: the tuple of the Swift types,
/// or the one type). See `SQLRowSequence.decode((A, B).self)`.
///
/// Generic over the tuple as one type, not over a parameter pack: the caller specializes its
/// iterator for the concrete tuple (a pack-generic iterator copies and destroys each tuple
/// through the runtime's tuple value witnesses).
public struct SQLTypedRowSequence<Element>: AsyncSequence, Sendable {
    @usableFromInline let rows: SQLRowSequence
    /// The row's decode for these types: the fixed-arity `SQLRow.decode((A, B).self)` where there
    /// is one (specialized where the sequence was made), else the parameter-pack one.
    @usableFromInline let decodeRow: @Sendable (SQLRow) throws -> Element

    @usableFromInline init(rows: SQLRowSequence, decodeRow: @escaping @Sendable (SQLRow) throws -> Element) {
        // Large binary values as `Data`: a `Data` cell takes the value with no copy (issue 43).
        var rows = rows
        rows.assemblesData = true
        self.rows = rows
        self.decodeRow = decodeRow
    }

    /// An iterator that sends the request when first advanced.
    @inlinable
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(rows: rows.makeAsyncIterator(), decodeRow: decodeRow)
    }

    /// Reads the rows one at a time and decodes each. Dropping it before the end cancels the rest
    /// of the request (ATTENTION), as ``SQLRowSequence``'s.
    public struct AsyncIterator: AsyncIteratorProtocol {
        @usableFromInline var rows: SQLRowSequence.AsyncIterator
        @usableFromInline let decodeRow: @Sendable (SQLRow) throws -> Element

        @usableFromInline init(rows: SQLRowSequence.AsyncIterator, decodeRow: @escaping @Sendable (SQLRow) throws -> Element) {
            self.rows = rows
            self.decodeRow = decodeRow
        }

        /// The next row's values, nil after the last row.
        /// - Throws: as ``SQLConnection/query(_:timeout:)``, and `.decodingFailed`.
        @inlinable
        public mutating func next() async throws -> Element? {
            guard let row = try await rows.next() else { return nil }
            return try decodeRow(row)
        }

        /// As ``next()``, run in the caller's isolation (`for try await` calls this): rows
        /// already fetched are decoded without leaving the caller's executor.
        @inlinable
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> Element? {
            guard let row = try await rows.next(isolation: actor) else { return nil }
            return try decodeRow(row)
        }
    }
}
