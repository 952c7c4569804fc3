import TDS

/// An OUTPUT parameter's value (or a user-defined function's result) as the server returned it
/// in a RETURNVALUE token ([MS-TDS] 2.2.7.19).
public struct SQLOutputValue: Sendable, Hashable, CustomStringConvertible {
    /// The parameter name with its `@`; empty when the server sent none (for example the handle
    /// of `sp_prepexec`, or a UDF result).
    public var name: String
    /// ParamOrdinal: the parameter's position in the call (0-based, as the server numbers it).
    public var ordinal: Int
    /// The type the server returned it as.
    public var typeInfo: TypeInfo
    /// The value (lossless).
    public var value: SQLValue
    /// True for a user-defined function's return value (Status 0x02) rather than an OUTPUT parameter.
    public var isFunctionResult: Bool

    /// An output value from its parts.
    public init(name: String, ordinal: Int, typeInfo: TypeInfo, value: SQLValue, isFunctionResult: Bool = false) {
        self.name = name
        self.ordinal = ordinal
        self.typeInfo = typeInfo
        self.value = value
        self.isFunctionResult = isFunctionResult
    }

    init(_ token: ReturnValue) {
        self.init(name: token.name, ordinal: Int(token.ordinal), typeInfo: token.typeInfo, value: token.value,
                  isFunctionResult: token.status & 0x02 != 0)
    }

    /// `@name type = value` (`#ordinal` when unnamed).
    public var description: String { "\(name.isEmpty ? "#\(ordinal)" : name) \(typeInfo.sqlTypeName) = \(value)" }
}

/// Everything an RPC (a stored procedure, `sp_executesql`, a parameterized ``SQLQuery``)
/// returned: result sets and row counts per statement in order (DONE, DONEINPROC), the OUTPUT
/// parameter values (RETURNVALUE), the procedure's return status (RETURNSTATUS) and the messages.
public struct SQLProcedureResult: Sendable {
    /// Result sets and count-only statements, in the order the server sent them.
    public var statements: [SQLStatementResult]
    /// OUTPUT parameters in the order the server sent them.
    public var outputs: [SQLOutputValue]
    /// Every RETURNSTATUS in order (one per procedure executed; nested calls in one request give several).
    public var returnStatuses: [Int32]
    /// INFO and ERROR messages in arrival order.
    public var messages: [SQLServerMessage]

    /// A procedure result from its parts.
    public init(statements: [SQLStatementResult] = [], outputs: [SQLOutputValue] = [], returnStatuses: [Int32] = [],
                messages: [SQLServerMessage] = []) {
        self.statements = statements
        self.outputs = outputs
        self.returnStatuses = returnStatuses
        self.messages = messages
    }

    /// The result sets only.
    public var resultSets: [SQLResultSet] {
        statements.compactMap { if case .resultSet(let r) = $0 { return r } else { return nil } }
    }

    /// The rows of all result sets.
    public var rows: [SQLRow] { resultSets.flatMap(\.rows) }

    /// The return status of the (last) procedure: `RETURN n`, 0 by default; nil when none was sent.
    public var returnStatus: Int32? { returnStatuses.last }

    /// The row counts the server reported per statement (DONE/DONEINPROC with the COUNT flag), in order.
    public var rowsAffected: [Int] {
        statements.compactMap { s in
            switch s {
            case .resultSet(let r): return r.rowsAffected
            case .rowsAffected(let n): return n
            }
        }
    }

    /// The value of OUTPUT parameter `name` (with or without `@`, case-insensitive), nil when absent.
    public func output(_ name: String) -> SQLValue? {
        let key = SQLParameter.normalizedName(name).lowercased()
        return outputs.first { $0.name.lowercased() == key }?.value
    }

    /// The value of the OUTPUT parameter at call position `ordinal`, nil when absent.
    public func output(ordinal: Int) -> SQLValue? {
        outputs.first { $0.ordinal == ordinal }?.value
    }
}
