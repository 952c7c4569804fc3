import TDS

/// A transaction open on one connection: what ``SQLConnection/withTransaction(isolationLevel:isolation:_:)``
/// hands its closure. Every request made through it runs inside the transaction, whichever task
/// makes it (a `Task.detached` too): the handle, not the calling task, says which transaction a
/// request belongs to.
///
/// ```swift
/// try await connection.withTransaction { tx in
///     try await tx.execute("UPDATE accounts SET balance = balance - \(amount) WHERE id = \(from)")
///     try await tx.execute("UPDATE accounts SET balance = balance + \(amount) WHERE id = \(to)")
/// }
/// ```
///
/// The convenience: requests made on the connection itself from inside the closure (and from
/// tasks it starts, which inherit it; not `Task.detached`) run inside the transaction too, as
/// before handles existed. Requests of other tasks wait until the transaction ends.
///
/// The handle is valid until the closure returns: a request made through it afterwards (or
/// by a task the closure started that outlives it) fails with ``SQLClientError`` `.invalidState`,
/// never runs outside the transaction unnoticed.
public struct SQLTransaction: Sendable {
    /// The connection the transaction is open on.
    public let connection: SQLConnection
    /// The reservation that holds the connection for the transaction.
    let reservation: SQLConnection.ReservationID

    init(connection: SQLConnection, reservation: SQLConnection.ReservationID) {
        self.connection = connection
        self.reservation = reservation
    }

    /// Runs `body` with the transaction's reservation as the task's (so the requests it makes
    /// belong to the transaction).
    private func inside<T>(isolation: isolated (any Actor)? = #isolation,
                           _ body: () async throws -> T) async throws -> T {
        try await SQLConnection.$currentReservation.withValue(reservation, operation: body)
    }

    // MARK: - Requests

    /// ``SQLConnection/execute(_:timeout:)`` inside the transaction.
    /// - Throws: as ``SQLConnection/execute(_:timeout:)``.
    public func execute(_ query: SQLQuery, timeout: Duration? = nil) async throws -> SQLResult {
        try await inside { try await connection.execute(query, timeout: timeout) }
    }

    /// ``SQLConnection/query(_:timeout:)`` inside the transaction (the request is sent when
    /// iteration starts, from any task).
    public func query(_ query: SQLQuery, timeout: Duration? = nil) -> SQLRowSequence {
        SQLConnection.$currentReservation.withValue(reservation) { connection.query(query, timeout: timeout) }
    }

    /// ``SQLConnection/events(_:timeout:)`` inside the transaction.
    public func events(_ query: SQLQuery, timeout: Duration? = nil) -> SQLResponseEventSequence {
        SQLConnection.$currentReservation.withValue(reservation) { connection.events(query, timeout: timeout) }
    }

    /// ``SQLConnection/rowBlocks(_:timeout:)`` inside the transaction.
    public func rowBlocks(_ query: SQLQuery, timeout: Duration? = nil) -> SQLRowBlockSequence {
        SQLConnection.$currentReservation.withValue(reservation) { connection.rowBlocks(query, timeout: timeout) }
    }

    /// ``SQLConnection/streamingValues(_:timeout:)`` inside the transaction.
    public func streamingValues(_ query: SQLQuery, timeout: Duration? = nil) -> SQLStreamedPartSequence {
        SQLConnection.$currentReservation.withValue(reservation) { connection.streamingValues(query, timeout: timeout) }
    }

    /// `SQLConnection.callProcedure(_:parameters:options:timeout:)` (by name) inside the transaction.
    /// - Throws: as ``SQLConnection/execute(_:timeout:)``.
    public func callProcedure(_ name: String, parameters: [SQLParameter] = [], options: TDS.RPCCall.Options = [],
                              timeout: Duration? = nil) async throws -> SQLResult {
        try await inside {
            try await connection.callProcedure(name, parameters: parameters, options: options, timeout: timeout)
        }
    }

    /// `SQLConnection.callProcedure(_:parameters:options:timeout:)` (a name or a well-known procedure) inside the transaction.
    /// - Throws: as ``SQLConnection/execute(_:timeout:)``.
    public func callProcedure(_ procedure: TDS.RPCCall.Procedure, parameters: [SQLParameter] = [],
                              options: TDS.RPCCall.Options = [], timeout: Duration? = nil) async throws -> SQLResult {
        try await inside {
            try await connection.callProcedure(procedure, parameters: parameters, options: options, timeout: timeout)
        }
    }

    /// ``SQLConnection/execute(rpc:timeout:)`` inside the transaction.
    /// - Throws: as ``SQLConnection/execute(_:timeout:)``.
    public func execute(rpc calls: [TDS.RPCCall], timeout: Duration? = nil) async throws -> SQLResult {
        try await inside { try await connection.execute(rpc: calls, timeout: timeout) }
    }

    /// ``SQLConnection/prepare(_:timeout:)`` inside the transaction.
    /// - Throws: as ``SQLConnection/prepare(_:timeout:)``.
    public func prepare(_ query: SQLQuery, timeout: Duration? = nil) async throws -> SQLPreparedStatement {
        try await inside { try await connection.prepare(query, timeout: timeout) }
    }

    /// ``SQLConnection/executePrepared(_:parameters:timeout:)`` inside the transaction.
    /// - Throws: as ``SQLConnection/execute(_:timeout:)``.
    public func executePrepared(_ statement: SQLPreparedStatement, parameters: [any SQLParameterConvertible] = [],
                                timeout: Duration? = nil) async throws -> SQLResult {
        try await inside { try await connection.executePrepared(statement, parameters: parameters, timeout: timeout) }
    }

    /// ``SQLConnection/unprepare(_:timeout:)`` inside the transaction.
    /// - Throws: as ``SQLConnection/execute(_:timeout:)``.
    public func unprepare(_ statement: SQLPreparedStatement, timeout: Duration? = nil) async throws {
        try await inside { try await connection.unprepare(statement, timeout: timeout) }
    }

    // MARK: - Savepoints and state

    /// Marks a savepoint (``SQLConnection/saveTransaction(_:timeout:)``).
    /// - Throws: ``SQLClientError`` `.serverError` when the server refuses; connection errors.
    public func save(_ savepoint: String, timeout: Duration? = nil) async throws {
        try await inside { try await connection.saveTransaction(savepoint, timeout: timeout) }
    }

    /// Rolls back to `savepoint` (``SQLConnection/rollbackTransaction(toSavepoint:timeout:)``); the
    /// transaction stays open.
    /// - Throws: ``SQLClientError`` `.serverError` when the server refuses; connection errors.
    public func rollback(toSavepoint savepoint: String, timeout: Duration? = nil) async throws {
        try await inside { try await connection.rollbackTransaction(toSavepoint: savepoint, timeout: timeout) }
    }

    /// Runs `body` inside a savepoint of this transaction: its work is rolled back to the
    /// savepoint when it throws (then the error is rethrown), and kept when it returns; the
    /// outer transaction decides the rest.
    /// - Throws: the body's error, else ``SQLClientError`` from the savepoint; `.invalidState`
    ///   (nothing sent) when the transaction has ended (its closure returned, or a request's
    ///   COMMIT or ROLLBACK ended it on the server).
    public func withSavepoint<T>(isolation: isolated (any Actor)? = #isolation,
                                 _ body: (SQLTransaction) async throws -> T) async throws -> T {
        // A handle kept past its closure: never a new top-level transaction in its name.
        guard await connection.holdsReservation(reservation) else { throw ConnectionStateMachine.endedReservationError }
        return try await inside { try await connection.withTransaction(body) }
    }

    /// True while the transaction is open on the server (a T-SQL `COMMIT` or `ROLLBACK` in a
    /// request ends it early; ``SQLConnection/isInTransaction``).
    public var isActive: Bool {
        get async { await connection.isInTransaction }
    }
}
