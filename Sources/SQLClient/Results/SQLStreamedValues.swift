import TDS

/// One piece of a response read with ``SQLConnection/streamingValues(_:timeout:)``, in the order
/// the server sent it: a row is its values one at a time, a large value the chunks of its bytes
/// as they arrive, then `.rowEnd`.
public enum SQLStreamedPart: Sendable {
    /// Anything but a row: a result set starts (`.columns`), a statement's count, a message,
    /// a return status (never `.row`: rows come as the parts below).
    case event(SQLResponseEvent)
    /// The whole value of `column` (0-based) of the current row: every column but the large
    /// ones, and a large value that is NULL.
    case value(column: Int, SQLValue)
    /// The next bytes of the large value of `column` of the current row, in order: varbinary(max),
    /// image and UDT values as they are, varchar(max) and text in the column's code page
    /// (``SQLColumn/typeInfo``'s collation), nvarchar(max), ntext and xml as UTF-16LE, json as
    /// UTF-8 (a chunk may end inside a character: decode the concatenation, or carry the odd byte over). Each
    /// chunk is at most about one packet ([MS-TDS] 2.2.5.2.3 PLP chunks, concatenated).
    case chunk(column: Int, [UInt8])
    /// The large value of `column` is complete (after its chunks; an empty value has none).
    case valueEnd(column: Int)
    /// The current row is complete: every column gave a `.value` or a `.valueEnd`.
    case rowEnd
}

extension SQLConnection {
    /// Streams a request's response with each large value — varchar(max), nvarchar(max),
    /// varbinary(max), xml, UDT (PLP, [MS-TDS] 2.2.5.2.3), text, ntext, image — in chunks of
    /// bytes as they arrive, never held whole: a 100 MB value passes through in bounded memory,
    /// whatever ``SQLConnectionConfiguration/maximumValueSize`` (which bounds buffered reads).
    /// Other values come whole, one part each. The socket is read as parts are consumed
    /// (backpressure), at most one batch ahead of them (up to 512 parts, about 1 MB of chunks,
    /// read while the loop takes the parts before); breaking out of the loop cancels the rest (ATTENTION), as with
    /// ``query(_:timeout:)``.
    ///
    /// ```swift
    /// for try await part in connection.streamingValues("SELECT name, data FROM files WHERE id = \(id)") {
    ///     switch part {
    ///     case .value(0, let name): print("file", name.stringValue ?? "")
    ///     case .chunk(1, let bytes): try file.write(contentsOf: bytes)
    ///     case .valueEnd(1): try file.close()
    ///     default: break
    ///     }
    /// }
    /// // Or only the chunks of one column:
    /// for try await bytes in connection.streamingValues("SELECT data FROM files WHERE id = \(id)").chunks(ofColumn: 0) { … }
    /// ```
    /// - Parameter query: the statement (see ``execute(_:timeout:)``): a literal whose
    ///   interpolations are parameters, or ``SQLQuery/init(unsafeSQL:parameters:)``.
    /// - Parameter timeout: overrides ``SQLConnectionConfiguration/queryTimeout`` for this request.
    /// - Throws (from iteration): ``SQLClientError`` `.serverError` when the request reports an
    ///   error, `.protocolError` for malformed data, `.cancelled`, `.timeout`.
    public nonisolated func streamingValues(_ query: SQLQuery, timeout: Duration? = nil) -> SQLStreamedPartSequence {
        SQLStreamedPartSequence(connection: self, query: query, timeout: timeout)
    }
}

/// The parts of one response. See ``SQLConnection/streamingValues(_:timeout:)``.
public struct SQLStreamedPartSequence: AsyncSequence, Sendable {
    public typealias Element = SQLStreamedPart
    let connection: SQLConnection
    let query: SQLQuery
    let timeout: Duration?
    /// The transaction the request belongs to: the one the creating task worked under (inside
    /// ``SQLConnection/withTransaction(isolationLevel:isolation:_:)``, or an ``SQLTransaction``'s
    /// request), else the iterating task's.
    let reservation: SQLConnection.ReservationID? = SQLConnection.currentReservation

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(cursor: ResponseCursor(connection: connection, request: .query(query), timeout: timeout,
                                             readsParts: true, reservation: reservation))
    }

    /// Only the chunks of column `column`'s large values (of every row, in order).
    public func chunks(ofColumn column: Int) -> SQLValueChunks {
        SQLValueChunks(parts: self, column: column)
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let cursor: ResponseCursor
        public mutating func next() async throws -> SQLStreamedPart? {
            try await cursor.nextPart()
        }

        /// As ``next()``, run in the caller's isolation (`for try await` calls this).
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> SQLStreamedPart? {
            try await cursor.nextPart(isolation: actor)
        }
    }
}

/// The chunks of one column's large values, as they arrive. See
/// ``SQLStreamedPartSequence/chunks(ofColumn:)``.
public struct SQLValueChunks: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    let parts: SQLStreamedPartSequence
    let column: Int

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(parts: parts.makeAsyncIterator(), column: column)
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var parts: SQLStreamedPartSequence.AsyncIterator
        let column: Int

        public mutating func next() async throws -> [UInt8]? {
            while let part = try await parts.next() {
                if case .chunk(column, let bytes) = part { return bytes }
            }
            return nil
        }

        /// As ``next()``, run in the caller's isolation (`for try await` calls this).
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> [UInt8]? {
            while let part = try await parts.next(isolation: actor) {
                if case .chunk(column, let bytes) = part { return bytes }
            }
            return nil
        }
    }
}
