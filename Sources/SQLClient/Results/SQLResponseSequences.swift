import TDS

/// SQL batches: buffered (`execute`, `executeBatch`) and streamed (`events`, `query`). Every shape
/// reads through the one ``ResponseCursor``.
extension SQLConnection {
    /// Runs a batch and returns every result set, buffered.
    /// - Throws: ``SQLClientError`` `.serverError` (number, state, severity, message, procedure,
    ///   line) when the server reported an error; the connection stays usable below severity 20.
    public func execute(_ sql: String) async throws -> [SQLResultSet] {
        try await executeBatch(sql).resultSets
    }

    /// Runs a batch and returns everything it produced: result sets and counts in order, messages,
    /// return statuses.
    /// - Throws: ``SQLClientError`` `.serverError` as ``execute(_:)`` does.
    public func executeBatch(_ sql: String) async throws -> SQLBatchResult {
        let result = try await run(.sqlBatch(sql), timeout: nil)
        return SQLBatchResult(statements: result.statements, messages: result.messages,
                              returnStatuses: result.returnStatuses)
    }

    /// Streams the events of a batch (result set starts, rows, statement counts, messages) as
    /// they are read from the socket. The batch is sent when iteration starts.
    public nonisolated func events(_ sql: String) -> SQLResponseEventSequence {
        SQLResponseEventSequence(connection: self, source: .request(.sqlBatch(sql)), timeout: nil)
    }

    /// Streams the rows of a batch (of all its result sets), reading from the socket only as rows
    /// are consumed. Breaking out of the loop cancels the rest of the batch (ATTENTION) when the
    /// iterator is released; if it stays alive (top-level code keeps it), the batch is cancelled
    /// when the same task starts its next request on the connection.
    /// - Throws (from iteration): ``SQLClientError`` `.serverError` when the batch reports an error.
    public nonisolated func query(_ sql: String) -> SQLRowSequence {
        SQLRowSequence(connection: self, source: .request(.sqlBatch(sql)), timeout: nil)
    }
}

/// The events of one batch, streamed. See ``SQLConnection/events(_:)``.
public struct SQLResponseEventSequence: AsyncSequence, Sendable {
    public typealias Element = SQLResponseEvent
    let connection: SQLConnection
    let source: ResponseCursor.Source
    let timeout: Duration?

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(cursor: ResponseCursor(connection: connection, request: source, timeout: timeout))
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let cursor: ResponseCursor
        public mutating func next() async throws -> SQLResponseEvent? {
            if let event = try cursor.takeBufferedEvent() { return event }
            return try await cursor.nextEvent()
        }

        /// As ``next()``, run in the caller's isolation (`for try await` calls this): events
        /// already fetched are taken without leaving the caller's executor.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> SQLResponseEvent? {
            if let event = try cursor.takeBufferedEvent() { return event }
            return try await cursor.nextEvent(isolation: actor)
        }
    }
}

/// The rows of one batch, streamed. See ``SQLConnection/query(_:)``.
public struct SQLRowSequence: AsyncSequence, Sendable {
    public typealias Element = SQLRow
    let connection: SQLConnection
    let source: ResponseCursor.Source
    let timeout: Duration?

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(cursor: ResponseCursor(connection: connection, request: source, timeout: timeout))
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let cursor: ResponseCursor
        public mutating func next() async throws -> SQLRow? {
            if let row = try cursor.takeBufferedRow() { return row }
            return try await cursor.nextRow()
        }

        /// As ``next()``, run in the caller's isolation (`for try await` calls this): rows
        /// already fetched are taken without leaving the caller's executor.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> SQLRow? {
            if let row = try cursor.takeBufferedRow() { return row }
            return try await cursor.nextRow(isolation: actor)
        }
    }
}
