import TDS

/// Remote procedure calls ([MS-TDS] 2.2.6.6): parameterized queries, stored procedures with
/// OUTPUT parameters and return status, and raw RPC requests.
extension SQLConnection {
    // MARK: - Stored procedures

    /// Calls stored procedure `name` (for example `dbo.transfer`) with named or positional parameters.
    ///
    /// Output parameters (``SQLParameter/output(_:type:)``, `SQLParameter.inputOutput`) come
    /// back in ``SQLResult/outputs`` (``SQLResult/output(_:)`` by name); `RETURN n` in
    /// ``SQLResult/returnStatus``.
    ///
    /// ```swift
    /// let call = try await connection.callProcedure("dbo.transfer", parameters: [
    ///     .input("@amount", 10), .output("@balance", type: .money),
    /// ])
    /// print(call.output("@balance") ?? .null, call.returnStatus ?? 0)
    /// ```
    /// - Parameter name: the procedure, for example `dbo.transfer` (sent as the RPC's ProcName).
    /// - Parameter parameters: named (`.input("@x", 1)`, `.output("@y", type: .int)`) or positional parameters.
    /// - Parameter options: RPC OptionFlags (`.withRecompile`, `.noMetadata`, `.reuseMetadata`).
    /// - Parameter timeout: overrides ``SQLConnectionConfiguration/queryTimeout`` for this request.
    /// - Throws: as ``execute(_:timeout:)``.
    public func callProcedure(_ name: String, parameters: [SQLParameter] = [], options: TDS.RPCCall.Options = [],
                              timeout: Duration? = nil) async throws -> SQLResult {
        try await callProcedure(.name(name), parameters: parameters, options: options, timeout: timeout)
    }

    /// Calls a procedure by name or by well-known ProcID (`.id(.spExecuteSQL)`, `.id(.spPrepExec)`…).
    /// - Throws: as ``execute(_:timeout:)``.
    public func callProcedure(_ procedure: TDS.RPCCall.Procedure, parameters: [SQLParameter] = [],
                              options: TDS.RPCCall.Options = [], timeout: Duration? = nil) async throws -> SQLResult {
        let call = try rpcCall(procedure, parameters: parameters, options: options)
        return try await run(.procedure(call), timeout: timeout)
    }

    /// Sends RPC calls as they are (one request, calls separated by their separator flags) and
    /// collects everything they return.
    /// - Throws: as ``execute(_:timeout:)``.
    public func execute(rpc calls: [TDS.RPCCall], timeout: Duration? = nil) async throws -> SQLResult {
        try await run(.rpc(calls), timeout: timeout)
    }

    /// The RPC call SQLClient sends for `procedure` and `parameters` with this connection's TDS
    /// version and collation (what `callProcedure` sends).
    /// - Throws: `.invalidParameter`.
    public func rpcCall(_ procedure: TDS.RPCCall.Procedure, parameters: [SQLParameter],
                        options: TDS.RPCCall.Options = []) throws -> TDS.RPCCall {
        let version = session.tdsVersion
        let collation = session.collation ?? .sqlLatin1GeneralCP1CIAS
        var wire: [RPCParameter] = []
        for p in parameters { wire.append(try p.rpcParameter(version: version, collation: collation, types: session.serverTypes)) }
        return RPCCall(procedure: procedure, options: options, parameters: wire)
    }

    // MARK: - Prepared statements (sp_prepare / sp_execute / sp_unprepare)

    /// Prepares `query` with `sp_prepare` (ProcID 11) and returns the server's handle. The query's
    /// interpolated values only fix the parameter types; pass values to
    /// ``executePrepared(_:parameters:timeout:)``.
    /// - Throws: as ``execute(_:timeout:)``; `.protocolError` when the server returns no handle.
    public func prepare(_ query: SQLQuery, timeout: Duration? = nil) async throws -> SQLPreparedStatement {
        let version = session.tdsVersion
        let collation = session.collation ?? .sqlLatin1GeneralCP1CIAS
        let exec = try query.rpcCall(version: version, collation: collation, types: session.serverTypes)
        // sp_executesql's parameters are (statement, declaration, values…); sp_prepare takes
        // (@handle OUTPUT, declaration, statement, options).
        let declaration = exec.parameters.count > 1 ? exec.parameters[1] : RPCParameter(typeInfo: .nvarchar(4000), value: .null)
        guard let statement = exec.parameters.first else { throw SQLClientError(.invalidParameter, "no statement to prepare") }
        let call = RPCCall(procedure: .id(.spPrepare), parameters: [
            RPCParameter(status: .byRefValue, typeInfo: .int, value: .null), declaration, statement,
            RPCParameter(typeInfo: .int, value: .int(1)),
        ])
        let result = try await run(.rpc([call]), timeout: timeout)
        guard let handle = result.outputs.first?.value.intValue, let h = Int32(exactly: handle) else {
            throw SQLClientError(.protocolError, "sp_prepare returned no handle")
        }
        return SQLPreparedStatement(handle: h, sql: query.sql,
                                    parameterTypes: Array(exec.parameters.dropFirst(2).map(\.typeInfo)))
    }

    /// Prepares and runs `query` in one round trip (`sp_prepexec`, ProcID 13): the result of this
    /// execution, and the statement (its handle from the OUTPUT parameter) to run again with
    /// ``executePrepared(_:parameters:timeout:)``.
    /// - Throws: as ``execute(_:timeout:)``; `.protocolError` when the server returns no handle.
    public func prepareAndExecute(_ query: SQLQuery, timeout: Duration? = nil) async throws -> (SQLPreparedStatement, SQLResult) {
        let version = session.tdsVersion
        let collation = session.collation ?? .sqlLatin1GeneralCP1CIAS
        let exec = try query.rpcCall(version: version, collation: collation, types: session.serverTypes)
        guard let statement = exec.parameters.first else { throw SQLClientError(.invalidParameter, "no statement to prepare") }
        let declaration = exec.parameters.count > 1 ? exec.parameters[1] : RPCParameter(typeInfo: .nvarchar(4000), value: .null)
        let values = Array(exec.parameters.dropFirst(2))
        let call = RPCCall(procedure: .id(.spPrepExec), parameters: [
            RPCParameter(status: .byRefValue, typeInfo: .int, value: .null), declaration, statement,
        ] + values)
        var result = try await run(.rpc([call]), timeout: timeout)
        guard let first = result.outputs.first, first.ordinal == 0 || first.name.isEmpty,
              let handle = first.value.intValue, let h = Int32(exactly: handle) else {
            throw SQLClientError(.protocolError, "sp_prepexec returned no handle")
        }
        result.outputs.removeFirst()
        return (SQLPreparedStatement(handle: h, sql: query.sql, parameterTypes: values.map(\.typeInfo)), result)
    }

    /// Runs a prepared statement (`sp_execute`, ProcID 12) with `parameters` in declaration order.
    /// - Throws: as ``execute(_:timeout:)``.
    public func executePrepared(_ statement: SQLPreparedStatement, parameters: [SQLParameterConvertible] = [],
                                timeout: Duration? = nil) async throws -> SQLResult {
        var params = [SQLParameter(.int(statement.handle), type: .int)]
        for (i, v) in parameters.enumerated() {
            var p = v.sqlParameter
            if p.type == nil, i < statement.parameterTypes.count { p.type = statement.parameterTypes[i] }
            p.name = "@P\(i + 1)"
            params.append(p)
        }
        return try await callProcedure(.id(.spExecute), parameters: params, timeout: timeout)
    }

    /// Releases a prepared statement (`sp_unprepare`, ProcID 15).
    /// - Throws: as ``execute(_:timeout:)``.
    public func unprepare(_ statement: SQLPreparedStatement, timeout: Duration? = nil) async throws {
        _ = try await callProcedure(.id(.spUnprepare), parameters: [SQLParameter(.int(statement.handle), type: .int)],
                                    timeout: timeout)
    }

    // MARK: - Running a request to its end

    /// The request a ``SQLQuery`` becomes: a SQL batch without parameters, else `sp_executesql`.
    func request(for query: SQLQuery) throws -> OutgoingRequest {
        if query.parameters.isEmpty { return .sqlBatch(query.sql) }
        return .rpc([try query.rpcCall(version: session.tdsVersion,
                                       collation: session.collation ?? .sqlLatin1GeneralCP1CIAS, types: session.serverTypes)])
    }
}

/// A statement prepared with `sp_prepare`: the server's handle and the parameter types it was declared with.
public struct SQLPreparedStatement: Sendable, Hashable {
    /// The handle `sp_prepare` returned (its OUTPUT parameter).
    public var handle: Int32
    /// The SQL text (with `@P1`… placeholders).
    public var sql: String
    /// The declared parameter types, in order.
    public var parameterTypes: [TypeInfo]
}
