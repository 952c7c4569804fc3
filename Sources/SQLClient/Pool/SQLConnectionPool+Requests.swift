/// One request through a pool: each leases a connection for that request alone, as
/// ``SQLConnectionPool/withConnection(isolation:_:)`` does, with the same shapes as
/// ``SQLConnection``'s request methods.
extension SQLConnectionPool {
    /// Runs `query` on a pooled connection and returns everything it produced, buffered (see
    /// ``SQLConnection/execute(_:timeout:)``); the connection goes back when it ends.
    /// - Parameter query: the statement: a literal (interpolations are parameters), or
    ///   ``SQLQuery/init(unsafeSQL:parameters:)``.
    /// - Parameter timeout: overrides ``SQLConnectionConfiguration/queryTimeout`` for this request
    ///   (the wait for a connection is bounded by ``Options/leaseTimeout``).
    /// - Throws: the lease's errors (``withConnection(isolation:_:)``), then the request's.
    public func execute(_ query: SQLQuery, timeout: Duration? = nil) async throws -> SQLResult {
        try await withConnection { connection in
            try await connection.execute(query, timeout: timeout)
        }
    }

    /// Streams the rows of `query` from a pooled connection, leased when iteration starts and
    /// returned when the rows end, iteration throws, or the iterator is dropped (breaking out of
    /// the loop cancels the rest with ATTENTION first, as on a connection). The same
    /// ``SQLRowSequence`` as ``SQLConnection/query(_:timeout:)`` (`decode((A, B).self)` included).
    public func query(_ query: SQLQuery, timeout: Duration? = nil) -> SQLRowSequence {
        SQLRowSequence(pool: self, query: query, timeout: timeout)
    }

    /// Runs `body` in a transaction on a pooled connection (``SQLConnection/withTransaction(isolationLevel:isolation:_:)``):
    /// begins it, commits when `body` returns, rolls back when it throws; the connection goes
    /// back after the commit or rollback.
    ///
    /// ```swift
    /// try await pool.withTransaction { tx in
    ///     try await tx.execute("INSERT INTO audit (id) VALUES (\(id))")
    /// }
    /// ```
    /// - Throws: the lease's errors (``withConnection(isolation:_:)``), then the body's error, else
    ///   ``SQLClientError`` from the begin or the commit.
    public func withTransaction<T>(isolationLevel: SQLIsolationLevel? = nil,
                                   isolation: isolated (any Actor)? = #isolation,
                                   _ body: (SQLTransaction) async throws -> T) async throws -> T {
        try await withConnection { connection in
            try await connection.withTransaction(isolationLevel: isolationLevel, body)
        }
    }
}

/// The lease behind one pooled row sequence: taken at the first row, given back at the end, on
/// an error, or when the iterator is dropped.
final class PooledRows {
    let pool: SQLConnectionPool
    let source: ResponseCursor.Source
    let timeout: Duration?
    private var lease: SQLConnectionPool.Lease?
    private var rows: SQLRowSequence.AsyncIterator?
    private var finished = false

    init(pool: SQLConnectionPool, source: ResponseCursor.Source, timeout: Duration?) {
        self.pool = pool
        self.source = source
        self.timeout = timeout
    }

    /// The next row, in the caller's isolation (the rows' iterator is this object's, not sent
    /// anywhere): the lease is taken at the first row and given back after the last one.
    func next(isolation actor: isolated (any Actor)? = #isolation) async throws -> SQLRow? {
        if finished { return nil }
        if lease == nil {
            let granted = try await pool.observedLease()
            lease = granted
            rows = SQLRowSequence(connection: granted.connection, source: source, timeout: timeout).makeAsyncIterator()
        }
        do {
            if let row = try await rows?.next(isolation: actor) { return row }
        } catch {
            await giveBack()
            throw error
        }
        await giveBack()
        return nil
    }

    private func giveBack(isolation actor: isolated (any Actor)? = #isolation) async {
        finished = true
        rows = nil
        if let lease {
            self.lease = nil
            await pool.release(lease)
        }
    }

    deinit {
        // Dropped mid-way: the connection's cursor goes first (its request is cancelled and
        // drained), then the connection goes back.
        rows = nil
        if let lease {
            let pool = self.pool
            // Unstructured: a deinit cannot await; the release is the pool's and needs nothing of this object.
            Task { await pool.release(lease) }
        }
    }
}
