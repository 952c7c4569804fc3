import TDS

/// The isolation level of a transaction begun with a Transaction Manager request
/// ([MS-TDS] 2.2.6.9 ISOLATION_LEVEL).
public enum SQLIsolationLevel: String, Sendable, Hashable, CaseIterable {
    /// Dirty reads allowed (ISOLATION_LEVEL 1).
    case readUncommitted = "READ UNCOMMITTED"
    /// Only committed data is read; SQL Server's default (ISOLATION_LEVEL 2).
    case readCommitted = "READ COMMITTED"
    /// Rows read stay locked until the transaction ends (ISOLATION_LEVEL 3).
    case repeatableRead = "REPEATABLE READ"
    /// As if transactions ran one after another: ranges are locked too (ISOLATION_LEVEL 4).
    case serializable = "SERIALIZABLE"
    /// Reads see the database as of the transaction's start (row versioning; ISOLATION_LEVEL 5).
    case snapshot = "SNAPSHOT"

    /// The ISOLATION_LEVEL byte (1 read uncommitted … 5 snapshot).
    public var wireValue: TransactionManagerRequest.IsolationLevel {
        switch self {
        case .readUncommitted: return .readUncommitted
        case .readCommitted: return .readCommitted
        case .repeatableRead: return .repeatableRead
        case .serializable: return .serializable
        case .snapshot: return .snapshot
        }
    }
}

/// Transactions through Transaction Manager requests ([MS-TDS] 2.2.6.9, packet type 0x0E).
///
/// The server answers a begin with an ENVCHANGE (type 8, BEGIN TRANSACTION) carrying the 8-byte
/// transaction descriptor; SQLClient then sends that descriptor in the ALL_HEADERS of every
/// request until an ENVCHANGE commits or rolls the transaction back (types 9 and 10). A
/// `BEGIN TRAN` / `COMMIT` written in a batch is tracked the same way, from the server's ENVCHANGEs.
///
/// ```swift
/// try await connection.withTransaction(isolationLevel: .serializable) { connection in
///     _ = try await connection.execute("UPDATE accounts SET balance = balance - \(amount) WHERE id = \(from)")
///     _ = try await connection.execute("UPDATE accounts SET balance = balance + \(amount) WHERE id = \(to)")
/// }   // committed; rolled back if the body threw
/// ```
extension SQLConnection {
    /// True while the server reports an open transaction (a descriptor from a BEGIN TRANSACTION ENVCHANGE).
    public var isInTransaction: Bool { session.transactionDescriptor != nil }

    /// The current transaction descriptor as carried in ALL_HEADERS (little-endian), nil outside a transaction.
    public var transactionDescriptor: UInt64? {
        session.transactionDescriptor.map { OutgoingRequest.descriptor(from: $0) }
    }

    /// Begins a transaction (TM_BEGIN_XACT) with an isolation level (nil keeps the session's) and an optional name.
    ///
    /// Before TDS 7.2 (no Transaction Manager requests for local transactions) the same is sent
    /// as T-SQL: `SET TRANSACTION ISOLATION LEVEL …; BEGIN TRANSACTION [name]`. This does not
    /// reserve the connection (``withTransaction(isolationLevel:isolation:_:)`` does).
    /// - Parameter isolationLevel: the transaction's isolation level; nil keeps the session's.
    /// - Parameter name: the transaction's name (bracket-quoted in T-SQL); empty for none.
    /// - Parameter timeout: overrides ``SQLConnectionConfiguration/queryTimeout`` for this request.
    /// - Throws: ``SQLClientError`` `.serverError` when the server refuses; connection errors.
    public func beginTransaction(isolationLevel: SQLIsolationLevel? = nil, name: String = "",
                                 timeout: Duration? = nil) async throws {
        if usesTransactionManager {
            _ = try await run(.transactionManager(.begin(isolationLevel: isolationLevel?.wireValue ?? .noChange, name: name)),
                              timeout: timeout)
        } else {
            let set = isolationLevel.map { "SET TRANSACTION ISOLATION LEVEL \($0.rawValue); " } ?? ""
            _ = try await run(.sqlBatch(set + "BEGIN TRANSACTION" + Self.quotedName(name)), timeout: timeout)
        }
    }

    /// Commits the transaction (TM_COMMIT_XACT); with `thenBegin`, a new one starts at once (fBeginXact).
    /// - Parameter name: the transaction's name; empty for the current one.
    /// - Parameter isolationLevel: when given, a new transaction with this level begins right after.
    /// - Parameter timeout: overrides ``SQLConnectionConfiguration/queryTimeout`` for this request.
    /// - Throws: ``SQLClientError`` `.serverError` when the server refuses; connection errors.
    public func commitTransaction(name: String = "", thenBegin isolationLevel: SQLIsolationLevel? = nil,
                                  timeout: Duration? = nil) async throws {
        if usesTransactionManager {
            let next = isolationLevel.map { TransactionManagerRequest.NewTransaction(isolationLevel: $0.wireValue) }
            _ = try await run(.transactionManager(.commit(name: name, thenBegin: next)), timeout: timeout)
        } else {
            let next = isolationLevel.map { "; SET TRANSACTION ISOLATION LEVEL \($0.rawValue); BEGIN TRANSACTION" } ?? ""
            _ = try await run(.sqlBatch("COMMIT TRANSACTION" + next), timeout: timeout)
        }
    }

    /// Rolls back the whole transaction (TM_ROLLBACK_XACT), or to `savepoint` when given (the
    /// transaction then stays open).
    /// - Parameter savepoint: the savepoint to roll back to; empty for the whole transaction.
    /// - Parameter timeout: overrides ``SQLConnectionConfiguration/queryTimeout`` for this request.
    /// - Throws: ``SQLClientError`` `.serverError` when the server refuses; connection errors.
    public func rollbackTransaction(toSavepoint savepoint: String = "", timeout: Duration? = nil) async throws {
        if usesTransactionManager {
            _ = try await run(.transactionManager(.rollback(name: savepoint, thenBegin: nil)), timeout: timeout)
        } else {
            _ = try await run(.sqlBatch("ROLLBACK TRANSACTION" + Self.quotedName(savepoint)), timeout: timeout)
        }
    }

    /// Marks a savepoint (TM_SAVE_XACT) to roll back to with ``rollbackTransaction(toSavepoint:timeout:)``.
    /// - Parameter savepoint: the savepoint's name.
    /// - Parameter timeout: overrides ``SQLConnectionConfiguration/queryTimeout`` for this request.
    /// - Throws: ``SQLClientError`` `.serverError` when the server refuses; connection errors.
    public func saveTransaction(_ savepoint: String, timeout: Duration? = nil) async throws {
        if usesTransactionManager {
            _ = try await run(.transactionManager(.save(name: savepoint)), timeout: timeout)
        } else {
            _ = try await run(.sqlBatch("SAVE TRANSACTION" + Self.quotedName(savepoint)), timeout: timeout)
        }
    }

    /// Transaction Manager requests for local transactions exist from TDS 7.2.
    var usesTransactionManager: Bool { session.tdsVersion.generation >= 0x72 }

    /// " [name]" with `]` doubled, or "" for no name.
    static func quotedName(_ name: String) -> String {
        name.isEmpty ? "" : " [" + name.replacingOccurrences(of: "]", with: "]]") + "]"
    }

    /// Runs `body` in a transaction: begins it, commits when `body` returns, rolls back when it
    /// throws (then rethrows the body's error; a failing rollback does not hide it). When the body
    /// itself ended the transaction (a T-SQL `COMMIT` or `ROLLBACK`), nothing more is sent.
    ///
    /// `body` gets the transaction (``SQLTransaction``): requests made through it run inside the
    /// transaction, whichever task makes them. The connection is reserved for the transaction
    /// from before the begin until after the commit or rollback: a request another task sends
    /// meanwhile waits, and runs after the transaction ended, outside it. The convenience:
    /// requests made on the connection itself from inside `body` (and from tasks it starts,
    /// which inherit it; not `Task.detached`) run inside the transaction too. Waiting for the
    /// reservation counts as waiting for a turn: a transaction on the same connection from
    /// another task goes first.
    ///
    /// ```swift
    /// try await connection.withTransaction { tx in
    ///     try await tx.execute("INSERT INTO orders (id) VALUES (\(id))")
    ///     try await tx.execute("UPDATE stock SET count = count - 1 WHERE item = \(item)")
    /// }
    /// ```
    ///
    /// Called from inside an open transaction it nests with a savepoint instead (as
    /// ``SQLTransaction/withSavepoint(isolation:_:)``): the body's work is rolled back to the
    /// savepoint when it throws, and the outer transaction decides the rest.
    /// - Throws: the body's error, else ``SQLClientError`` from the begin or the commit.
    public func withTransaction<T>(isolationLevel: SQLIsolationLevel? = nil,
                                   isolation: isolated (any Actor)? = #isolation,
                                   _ body: (SQLTransaction) async throws -> T) async throws -> T {
        if let outer = Self.currentReservation, await holdsReservation(outer) {
            // The task's own transaction holds the connection: reserving again would wait for
            // itself. A request (a T-SQL COMMIT or ROLLBACK) may have ended it on the server.
            guard await isInTransaction else { throw Self.transactionEndedOnServerError }
            let savepoint = "sqlclient_" + String(UInt32.random(in: 0 ... .max), radix: 16)
            try await saveTransaction(savepoint)
            do {
                return try await body(SQLTransaction(connection: self, reservation: outer))
            } catch {
                if await isInTransaction, await isOpen {
                    try? await rollbackTransaction(toSavepoint: savepoint)
                }
                throw error
            }
        }
        let key = Self.newReservationID()
        try await reserve(key)
        do {
            let value = try await Self.$currentReservation.withValue(key) {
                try await runTransaction(isolationLevel: isolationLevel,
                                         SQLTransaction(connection: self, reservation: key), body)
            }
            await release(key)
            return value
        } catch {
            await release(key)
            throw error
        }
    }

    /// What a savepoint (or a nested ``withTransaction(isolationLevel:isolation:_:)``) asked for
    /// under a transaction that a request ended on the server fails with.
    static let transactionEndedOnServerError = SQLClientError(
        .invalidState, "the transaction this task works under has ended on the server (a COMMIT or ROLLBACK in a request); "
            + "a savepoint needs an open transaction")

    /// Begin, body, commit (or rollback when the body threw), under the reservation.
    private func runTransaction<T>(isolationLevel: SQLIsolationLevel?, _ transaction: SQLTransaction,
                                   isolation: isolated (any Actor)? = #isolation,
                                   _ body: (SQLTransaction) async throws -> T) async throws -> T {
        try await beginTransaction(isolationLevel: isolationLevel)
        let value: T
        do {
            value = try await body(transaction)
        } catch {
            if await isInTransaction, await isOpen {
                try? await rollbackTransaction()
            }
            throw error
        }
        if await isInTransaction {
            try await commitTransaction()
        }
        return value
    }
}
