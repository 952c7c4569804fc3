import TDS

/// The request methods that take a query: buffered (``SQLConnection/execute(_:timeout:)``) and
/// streamed (``SQLConnection/events(_:timeout:)``, ``SQLConnection/query(_:timeout:)``,
/// ``SQLConnection/rowBlocks(_:timeout:)``). Every shape reads through the one ``ResponseCursor``.
///
/// Each takes an ``SQLQuery``: a string literal whose interpolations become parameters (sent
/// through `sp_executesql`, [MS-TDS] 2.2.6.6), or, without interpolations, a plain SQL batch
/// ([MS-TDS] 2.2.6.7). A `String` variable is not a query: SQL text built at run time needs
/// ``SQLQuery/init(unsafeSQL:parameters:)``.
extension SQLConnection {
    /// Runs `query` and returns everything it produced, buffered: result sets and counts per
    /// statement in order, messages, return status and OUTPUT values (one ``SQLResult``).
    ///
    /// ```swift
    /// let result = try await connection.execute("SELECT name FROM people WHERE id = \(id)")
    /// print(result.rows.first?["name"]?.stringValue ?? "none")
    /// ```
    /// - Parameter query: the statement: a literal (interpolations are parameters), or ``SQLQuery/init(unsafeSQL:parameters:)``.
    /// - Parameter timeout: overrides ``SQLConnectionConfiguration/queryTimeout`` for this request;
    ///   when it passes, ATTENTION is sent and the request throws `.timeout`.
    /// - Throws: ``SQLClientError`` `.serverError` (number, state, severity, message, procedure,
    ///   line, every ERROR of the request) when the server reported an error, the connection staying
    ///   usable below severity 20; `.invalidParameter` when a value does not fit its type;
    ///   `.timeout`; `.cancelled` when the task was cancelled; connection errors.
    public func execute(_ query: SQLQuery, timeout: Duration? = nil) async throws -> SQLResult {
        do {
            return try await run(.query(query), timeout: timeout)
        } catch let error as SQLClientError where !query.isBatch && ParameterEncryptionPlan.isStale(error) {
            // Always Encrypted: the server refused the statement before running it because the
            // parameters' encryption metadata changed (33514); the cached description is dropped
            // (when the error was read) and the statement described and sent again, once.
            return try await run(.query(query), timeout: timeout)
        }
    }

    /// Streams the events of `query` (result set starts, rows, statement counts, messages, return
    /// statuses, OUTPUT values) as they are read from the socket (at most one batch ahead of the
    /// loop, as ``query(_:timeout:)``). The request is sent when
    /// iteration starts; leaving the loop early cancels the rest (ATTENTION).
    /// - Parameter query: the statement (see ``execute(_:timeout:)``).
    /// - Parameter timeout: overrides ``SQLConnectionConfiguration/queryTimeout`` for this request.
    /// - Throws (from iteration): as ``execute(_:timeout:)``, after the events that came before the error.
    public nonisolated func events(_ query: SQLQuery, timeout: Duration? = nil) -> SQLResponseEventSequence {
        SQLResponseEventSequence(connection: self, source: .query(query), timeout: timeout)
    }

    /// Streams the rows of `query` (of all its result sets), reading from the socket as rows are
    /// consumed: at most one batch ahead of them (up to 4,096 rows, about 1 MB of their bytes,
    /// read and scanned on the connection while the loop takes the rows before). Breaking out of the loop cancels the rest of the request (ATTENTION) when the
    /// iterator is released. A request made while the stream is open waits for it, whichever task
    /// makes it; where the iterator stays alive (top-level code keeps a loop's iterator after
    /// `break`), ``SQLConnection/cancel()`` ends it.
    /// - Parameter query: the statement (see ``execute(_:timeout:)``).
    /// - Parameter timeout: overrides ``SQLConnectionConfiguration/queryTimeout`` for this request.
    /// - Throws (from iteration): as ``execute(_:timeout:)``.
    public nonisolated func query(_ query: SQLQuery, timeout: Duration? = nil) -> SQLRowSequence {
        SQLRowSequence(connection: self, source: .query(query), timeout: timeout)
    }

    // MARK: - Former spellings

    /// Now ``execute(_:timeout:)``, which returns an ``SQLResult``.
    @available(*, unavailable, renamed: "execute(_:timeout:)")
    public func executeBatch(_ sql: String) async throws -> SQLResult { fatalError("unavailable") }

    /// Now ``execute(_:timeout:)``: a literal with interpolations is a parameterized query.
    @available(*, unavailable, renamed: "execute(_:timeout:)")
    public func execute(literal query: SQLQuery, timeout: Duration? = nil) async throws -> SQLResult { fatalError("unavailable") }

    /// Now ``query(_:timeout:)``.
    @available(*, unavailable, renamed: "query(_:timeout:)")
    public nonisolated func query(literal query: SQLQuery, timeout: Duration? = nil) -> SQLRowSequence { fatalError("unavailable") }

    /// Now ``events(_:timeout:)``.
    @available(*, unavailable, renamed: "events(_:timeout:)")
    public nonisolated func events(literal query: SQLQuery, timeout: Duration? = nil) -> SQLResponseEventSequence {
        fatalError("unavailable")
    }
}

/// The events of one request, streamed. See ``SQLConnection/events(_:timeout:)``.
public struct SQLResponseEventSequence: AsyncSequence, Sendable {
    /// ``SQLResponseEvent``.
    public typealias Element = SQLResponseEvent
    let connection: SQLConnection
    let source: ResponseCursor.Source
    let timeout: Duration?
    /// The transaction the request belongs to: the one the creating task worked under (inside
    /// ``SQLConnection/withTransaction(isolationLevel:isolation:_:)``, or an ``SQLTransaction``'s
    /// request), else the iterating task's.
    let reservation: SQLConnection.ReservationID? = SQLConnection.currentReservation

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(cursor: ResponseCursor(connection: connection, request: source, timeout: timeout,
                                             reservation: reservation))
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

/// The rows of one request (all its result sets), streamed: a connection's
/// (``SQLConnection/query(_:timeout:)``, ``SQLTransaction/query(_:timeout:)``) or a pool's
/// (``SQLConnectionPool/query(_:timeout:)``, on a connection leased for the request alone).
public struct SQLRowSequence: AsyncSequence, Sendable {
    /// ``SQLRow``.
    public typealias Element = SQLRow
    /// Who runs the request: a connection, or a pool that leases one when iteration starts (and
    /// takes it back when the rows end, iteration throws, or the iterator is dropped).
    enum Origin: Sendable {
        case connection(SQLConnection)
        case pool(SQLConnectionPool)
    }
    let origin: Origin
    let source: ResponseCursor.Source
    let timeout: Duration?
    /// The transaction the request belongs to: the one the creating task worked under (inside
    /// ``SQLConnection/withTransaction(isolationLevel:isolation:_:)``, or an ``SQLTransaction``'s
    /// request), else the iterating task's.
    let reservation: SQLConnection.ReservationID? = SQLConnection.currentReservation
    /// Read by a typed read (``SQLTypedRowSequence``): large binary values assembled as `Data`,
    /// which its `Data` reads share.
    var assemblesData = false

    init(connection: SQLConnection, source: ResponseCursor.Source, timeout: Duration?) {
        self.origin = .connection(connection)
        self.source = source
        self.timeout = timeout
    }

    init(pool: SQLConnectionPool, query: SQLQuery, timeout: Duration?) {
        self.origin = .pool(pool)
        self.source = .query(query)
        self.timeout = timeout
    }

    public func makeAsyncIterator() -> AsyncIterator {
        switch origin {
        case .connection(let connection):
            AsyncIterator(cursor: ResponseCursor(connection: connection, request: source, timeout: timeout,
                                                 assemblesData: assemblesData, reservation: reservation))
        case .pool(let pool):
            AsyncIterator(pooled: PooledRows(pool: pool, source: source, timeout: timeout))
        }
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        /// The connection's cursor; nil for a pool's request (its rows come from ``pooled``).
        @usableFromInline let cursor: ResponseCursor?
        /// A pool's request: its lease and the leased connection's rows.
        let pooled: PooledRows?
        init(cursor: ResponseCursor) {
            self.cursor = cursor
            self.pooled = nil
        }
        init(pooled: PooledRows) {
            self.cursor = nil
            self.pooled = pooled
        }

        @inlinable
        public mutating func next() async throws -> SQLRow? {
            if let row = try cursor?.takeBufferedRow() { return row }
            return try await fetch()
        }

        /// As ``next()``, run in the caller's isolation (`for try await` calls this): rows
        /// already fetched are taken without leaving the caller's executor (inlined into the
        /// caller's loop: no asynchronous call per row; the one `await` is the batch fetch, so
        /// that the inliner keeps taking it).
        @inlinable
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> SQLRow? {
            if let row = try cursor?.takeBufferedRow() { return row }
            return try await fetch(isolation: actor)
        }

        /// The next batch's first row: the connection's cursor fetches it, or for a pool's
        /// request the leased connection's rows (the lease is taken at the first row).
        @usableFromInline func fetch(isolation actor: isolated (any Actor)? = #isolation) async throws -> SQLRow? {
            if let cursor { return try await cursor.nextRow(isolation: actor) }
            return try await pooled?.next(isolation: actor)
        }
    }
}
