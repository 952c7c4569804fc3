/// A parameterized SQL statement written as a Swift string literal: every interpolated
/// `\(value)` becomes a parameter `@P1`, `@P2`, … and the value travels separately, in an RPC to
/// `sp_executesql` ([MS-TDS] 2.2.6.6, ProcID 10). Values are never spliced into the SQL text, so a
/// string holding quotes or `'; DROP TABLE x; --` is data, not SQL.
///
/// ```swift
/// let name = "O'Brien"
/// let rows = try await connection.execute(literal: "SELECT id FROM people WHERE name = \(name) AND score > \(80.5)")
/// // sends: sp_executesql N'SELECT id FROM people WHERE name = @P1 AND score > @P2',
/// //                      N'@P1 nvarchar(4000), @P2 float', @P1 = N'O''Brien', @P2 = 80.5
/// let t = try await connection.execute(literal: "SELECT * FROM t WHERE code = \(.varchar(code, length: 10))")
/// ```
///
/// The methods that take a ``SQLQuery`` carry the `literal:` label so that a plain `String`
/// argument (which Swift would otherwise prefer for an interpolated literal) cannot silently
/// splice values into SQL: ``SQLConnection/execute(literal:)``, ``SQLConnection/query(literal:)``.
/// Interpolate `\(unsafeRaw: text)` to splice trusted text (an identifier you validated) on purpose.
/// A query without parameters is sent as a plain SQL batch.
public struct SQLQuery: Sendable, Hashable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// The SQL text with `@P1`, `@P2`… where values were interpolated.
    public var sql: String
    /// The parameters in order; the n-th is named `@Pn`.
    public var parameters: [SQLParameter]

    /// A statement and its parameters (unnamed ones are named `@P1`… in order when sent).
    public init(sql: String, parameters: [SQLParameter] = []) {
        self.sql = sql
        self.parameters = parameters
    }

    public init(stringLiteral value: String) {
        self.init(sql: value)
    }

    public init(stringInterpolation: StringInterpolation) {
        self.init(sql: stringInterpolation.sql, parameters: stringInterpolation.parameters)
    }

    /// Builds the text and the parameter list of a ``SQLQuery`` literal.
    public struct StringInterpolation: StringInterpolationProtocol, Sendable {
        public var sql = ""
        public var parameters: [SQLParameter] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql.reserveCapacity(literalCapacity + interpolationCount * 4)
        }

        public mutating func appendLiteral(_ literal: String) {
            sql += literal
        }

        /// A value: appended as the next `@Pn` placeholder.
        public mutating func appendInterpolation(_ value: some SQLParameterConvertible) {
            var p = value.sqlParameter
            p.name = "@P\(parameters.count + 1)"
            p.direction = .input
            parameters.append(p)
            sql += p.name ?? ""
        }

        /// An optional value: NULL of the wrapped type's inferred SQL type when nil.
        public mutating func appendInterpolation<T: SQLParameterConvertible>(_ value: T?) {
            appendInterpolation(value.sqlParameter)
        }

        /// A typed parameter (``SQLParameter/varchar(_:length:collation:)``, ``SQLParameter/decimal(_:precision:scale:)``…).
        public mutating func appendInterpolation(_ parameter: SQLParameter) {
            var p = parameter
            let keepOutput = p.direction != .input && p.name != nil
            if !keepOutput { p.name = "@P\(parameters.count + 1)"; p.direction = .input }
            parameters.append(p)
            sql += p.name ?? ""
        }

        /// Each value as its own parameter, comma-separated, for `IN (…)` lists: `WHERE id IN (\(list: ids))`
        /// becomes `WHERE id IN (@P1, @P2, @P3)`. An empty sequence gives `NULL` (`IN (NULL)` matches nothing).
        public mutating func appendInterpolation<S: Sequence>(list values: S) where S.Element: SQLParameterConvertible {
            var first = true
            for v in values {
                if !first { sql += ", " }
                first = false
                appendInterpolation(v)
            }
            if first { sql += "NULL" }
        }

        /// Trusted text spliced into the SQL as is (an identifier you checked). Never pass user input.
        public mutating func appendInterpolation(unsafeRaw text: String) {
            sql += text
        }
    }

    public var description: String {
        parameters.isEmpty ? sql : sql + " -- " + parameters.map(\.description).joined(separator: ", ")
    }

    /// The `sp_executesql` call for this query in `version`: the statement, the declaration
    /// (`@P1 int, @P2 nvarchar(4000)`, `output` for output parameters) and the parameters.
    /// - Throws: `.invalidParameter` when a typed parameter could not convert its value.
    public func rpcCall(version: TDSVersion, collation: Collation = .sqlLatin1GeneralCP1CIAS) throws(SQLClientError) -> RPCCall {
        var wire: [RPCParameter] = []
        for (i, p) in parameters.enumerated() {
            var rp = try p.rpcParameter(version: version, collation: collation)
            if rp.name.isEmpty { rp.name = "@P\(i + 1)" }
            wire.append(rp)
        }
        return RPCCall.executeSQL(sql, parameters: wire, collation: collation)
    }
}
