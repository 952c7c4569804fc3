import TDS

/// Everything one request returned, buffered: the one result shape of a SQL batch, a
/// parameterized query and a stored procedure call.
///
/// - ``statements``: each statement's outcome in order, a result set (COLMETADATA, ROW… then
///   DONE/DONEINPROC, [MS-TDS] 2.2.7.4, 2.2.7.19, 2.2.7.6) or a count-only statement (INSERT,
///   UPDATE, DELETE: DONE with DONE_COUNT and no result set);
/// - ``messages``: PRINT/INFO and ERROR messages in arrival order (2.2.7.13, 2.2.7.10);
/// - ``returnStatus``: a procedure's `RETURN n` (RETURNSTATUS, 2.2.7.18);
/// - ``outputs``: OUTPUT parameters and UDF results (RETURNVALUE, 2.2.7.19).
///
/// ```swift
/// let result = try await connection.execute("SELECT id, name FROM people WHERE id = \(id)")
/// for row in result.rows { print(row["name"]?.stringValue ?? "NULL") }
/// let call = try await connection.callProcedure("dbo.transfer", parameters: [.output("@balance", type: .money)])
/// print(call.output("@balance") ?? .null, call.returnStatus ?? 0)
/// let n = try await connection.execute("UPDATE t SET x = 1 WHERE y = \(y)").rowsAffected
/// ```
///
/// It is the fold of the streamed events (``SQLResponseEvent``): ``append(_:)`` each event, then
/// ``finish()``; the connection builds it that way, so a buffered and a streamed read of a request
/// always agree.
public struct SQLResult: Sendable, CustomStringConvertible {
    /// Result sets and count-only statements, in the order the server sent them.
    public var statements: [SQLStatementResult]
    /// INFO and ERROR messages, in arrival order.
    public var messages: [SQLServerMessage]
    /// Every RETURNSTATUS in order (one per procedure run; nested calls in one request give several).
    public var returnStatuses: [Int32]
    /// OUTPUT parameter values (and UDF results), in the order the server sent them.
    public var outputs: [SQLOutputValue]
    /// The result set being read while events are appended (closed by its DONE or by ``finish()``).
    private var open: SQLResultSet?

    /// A result from its parts (for tests and for code that builds results of its own).
    public init(statements: [SQLStatementResult] = [], messages: [SQLServerMessage] = [],
                returnStatuses: [Int32] = [], outputs: [SQLOutputValue] = []) {
        self.statements = statements
        self.messages = messages
        self.returnStatuses = returnStatuses
        self.outputs = outputs
    }

    // MARK: Reading

    /// The result sets only, in order.
    public var resultSets: [SQLResultSet] {
        statements.compactMap { if case .resultSet(let r) = $0 { return r } else { return nil } }
    }

    /// Every row of every result set, in order (for a one-SELECT request: its rows).
    public var rows: [SQLRow] { resultSets.flatMap(\.rows) }

    /// The rows of every result set decoded into `type` (see ``SQLRow/decode(_:)-(T.Type)``).
    /// - Throws: ``SQLClientError`` `.decodingFailed` naming the column.
    public func decode<T: Decodable>(_ type: T.Type = T.self) throws -> [T] {
        try rows.map { try $0.decode(T.self) }
    }

    /// The rows affected by the statements that returned no result set (INSERT, UPDATE,
    /// DELETE, MERGE…): the sum of their DONE counts; 0 when none reported one. A SELECT's
    /// count is its result set's ``SQLResultSet/rowsAffected``, not added here.
    public var rowsAffected: Int {
        statements.reduce(0) { sum, s in
            if case .rowsAffected(let n) = s { return sum &+ (n ?? 0) }
            return sum
        }
    }

    /// The count each statement reported (DONE/DONEINPROC with DONE_COUNT), in order, nil for
    /// a statement that reported none; one entry per element of ``statements``.
    public var rowCounts: [Int?] { statements.map(\.rowCount) }

    /// The return status of the last procedure run (`RETURN n`; 0 when it returned without a
    /// value); nil when the request ran no procedure.
    public var returnStatus: Int32? { returnStatuses.last }

    /// The value of OUTPUT parameter `name` (with or without `@`, case-insensitive); nil when absent.
    public func output(_ name: String) -> SQLValue? {
        let key = SQLParameter.normalizedName(name).lowercased()
        return outputs.first { $0.name.lowercased() == key }?.value
    }

    /// The value of the OUTPUT parameter at call position `ordinal` (0-based); nil when absent.
    public func output(ordinal: Int) -> SQLValue? {
        outputs.first { $0.ordinal == ordinal }?.value
    }

    /// The messages that came in ERROR tokens (not INFO), in order.
    public var errors: [SQLServerMessage] { messages.filter(\.isError) }

    // MARK: Building from events

    /// Adds one streamed event: a result set opens at `.columns` and closes at the next
    /// `.statementDone` (taking its count); a count without a result set is a count-only
    /// statement; messages and return statuses are kept in order. A row arriving without
    /// columns opens a result set with the row's own columns (never dropped).
    public mutating func append(_ event: SQLResponseEvent) {
        switch event {
        case .columns(let columns):
            if let current = open { statements.append(.resultSet(current)) }
            open = SQLResultSet(columns: columns)
        case .row(let row):
            if open == nil { open = SQLResultSet(columns: row.columns) }
            open?.rows.append(row)
        case .statementDone(let count):
            if var current = open {
                current.rowsAffected = count
                statements.append(.resultSet(current))
                open = nil
            } else if count != nil {
                statements.append(.rowsAffected(count))
            }
        case .message(let message):
            messages.append(message)
        case .returnStatus(let status):
            returnStatuses.append(status)
        case .outputValue(let value):
            outputs.append(value)
        }
    }

    /// Adds consecutive blocks of rows of the open result set (as ``append(_:)`` adds `.row`
    /// events, one by one), the rows kept as views of the blocks and the rows array grown once
    /// to its new size rather than doubling as the blocks come.
    mutating func append(rows blocks: [SQLRowBlock]) {
        guard let first = blocks.first else { return }
        var set = open ?? SQLResultSet(columns: first.columns)
        open = nil   // `set` holds the only reference to the rows: grown in place
        // At least doubling: rows flushed a few at a time (events between them) stay linear.
        let needed = blocks.reduce(set.rows.count) { $0 + $1.count }
        if needed > set.rows.capacity { set.rows.reserveCapacity(Swift.max(needed, 2 * set.rows.capacity)) }
        for block in blocks { set.rows.append(contentsOf: block) }
        open = set
    }

    /// Closes a result set left open (a response that ended without its DONE). Call once, after the last event.
    public mutating func finish() {
        if let current = open {
            statements.append(.resultSet(current))
            open = nil
        }
    }

    /// `SQLResult(N statements, R result sets, M messages[, return status S][, K outputs])`.
    public var description: String {
        var parts = ["\(statements.count) statements", "\(resultSets.count) result sets", "\(messages.count) messages"]
        if let returnStatus { parts.append("return status \(returnStatus)") }
        if !outputs.isEmpty { parts.append("\(outputs.count) outputs") }
        return "SQLResult(" + parts.joined(separator: ", ") + ")"
    }
}

extension SQLStatementResult {
    /// The count the statement's DONE reported (rows of a result set, or rows affected), nil when none.
    public var rowCount: Int? {
        switch self {
        case .resultSet(let r): return r.rowsAffected
        case .rowsAffected(let n): return n
        }
    }

    /// The result set, nil for a count-only statement.
    public var resultSet: SQLResultSet? {
        if case .resultSet(let r) = self { return r }
        return nil
    }
}
