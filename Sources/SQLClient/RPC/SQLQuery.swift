import TDS

/// A SQL statement as a value: the text, and the parameters interpolated into it.
///
/// Written as a Swift string literal, every interpolated `\(value)` becomes a parameter `@P1`,
/// `@P2`, … whose value travels separately, in an RPC to `sp_executesql` ([MS-TDS] 2.2.6.6,
/// ProcID 10); it is never spliced into the SQL text, so a string holding quotes or
/// `'; DROP TABLE x; --` is data, not SQL. A literal without interpolations is sent as a plain
/// SQL batch ([MS-TDS] 2.2.6.7), exactly as written.
///
/// ```swift
/// let name = "O'Brien"
/// let q: SQLQuery = "SELECT id FROM people WHERE name = \(name) AND score > \(80.5)"
/// // sends: sp_executesql N'SELECT id FROM people WHERE name = @P1 AND score > @P2',
/// //                      N'@P1 nvarchar(4000), @P2 float', @P1 = N'O''Brien', @P2 = 80.5
/// let t: SQLQuery = "SELECT * FROM t WHERE code = \(.varchar(code, length: 10))"   // an explicit type
/// let u: SQLQuery = "SELECT \(identifier: column) FROM \(identifier: ["dbo", table])"   // [col] FROM [dbo].[t]
/// ```
///
/// Raw SQL text from a `String` needs a spelling that says so: ``init(unsafeSQL:parameters:)``,
/// or `\(unsafeRaw: text)` inside a literal. There is no conversion from `String`: a `String`
/// variable passed where a query is expected does not compile, nor does
/// `SQLQuery(stringLiteral: text)` (the literal type is `StaticString`).
/// Identifiers (table and column names) interpolate safely with `\(identifier:)`, bracket-quoted.
public struct SQLQuery: Sendable, Hashable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// The SQL text, with `@P1`, `@P2`… where values were interpolated.
    public private(set) var sql: String
    /// The parameters in order; the n-th is named `@Pn`.
    public private(set) var parameters: [SQLParameter]

    /// Raw SQL text, sent as it is: the caller vouches that no untrusted input was spliced into
    /// `unsafeSQL`. With `parameters`, the text refers to them as `@P1`, `@P2`… (unnamed ones are
    /// named so, in order, when sent) and it travels through `sp_executesql`; without, as a SQL batch.
    public init(unsafeSQL: String, parameters: [SQLParameter] = []) {
        self.sql = unsafeSQL
        self.parameters = parameters
    }

    /// A literal without interpolations: a plain SQL batch of exactly this text. A
    /// `StaticString`, so that only a literal can be one: `SQLQuery(stringLiteral: text)` with a
    /// `String` variable does not compile either.
    public init(stringLiteral value: StaticString) {
        self.init(unsafeSQL: value.description)
    }

    /// A literal with interpolations: the text with `@Pn` placeholders, and the parameters.
    public init(stringInterpolation: StringInterpolation) {
        self.init(unsafeSQL: stringInterpolation.sql, parameters: stringInterpolation.parameters)
    }

    /// True when the query has no parameters and is sent as a SQL batch rather than an RPC.
    public var isBatch: Bool { parameters.isEmpty }

    /// Always Encrypted for this query (default ``SQLQueryColumnEncryption/connectionSetting``):
    /// whether its parameters are encrypted and its results decrypted.
    public var columnEncryption: SQLQueryColumnEncryption = .connectionSetting

    /// This query with ``columnEncryption`` set to `setting`.
    public func columnEncryption(_ setting: SQLQueryColumnEncryption) -> SQLQuery {
        var copy = self
        copy.columnEncryption = setting
        return copy
    }

    /// Builds the text and the parameter list of a ``SQLQuery`` literal.
    public struct StringInterpolation: StringInterpolationProtocol, Sendable {
        /// The text so far, with `@Pn` placeholders.
        public private(set) var sql = ""
        /// The parameters so far.
        public private(set) var parameters: [SQLParameter] = []

        /// Called by the compiler with the literal's size.
        public init(literalCapacity: Int, interpolationCount: Int) {
            sql.reserveCapacity(literalCapacity + interpolationCount * 4)
        }

        /// The literal text between interpolations: SQL as written (a `StaticString`: only the
        /// compiler's literal pieces are text; a `String` goes in through `\(unsafeRaw:)`).
        public mutating func appendLiteral(_ literal: StaticString) {
            sql += literal.description
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

        /// Trusted text spliced into the SQL as is. Never pass user input; for a table or column
        /// name use ``appendInterpolation(identifier:)-(String)`` instead.
        public mutating func appendInterpolation(unsafeRaw text: String) {
            sql += text
        }

        /// A table, column or other name as a delimited identifier: `[name]` with every `]`
        /// doubled, so any text (spaces, quotes, `]`, `;`) stays one name and never becomes SQL.
        /// Names longer than 128 characters are rejected by the server (sysname), not here.
        public mutating func appendInterpolation(identifier name: String) {
            sql += SQLQuery.quotedIdentifier(name)
        }

        /// A multi-part name (`["dbo", "people"]` → `[dbo].[people]`), each part bracket-quoted.
        public mutating func appendInterpolation(identifier parts: [String]) {
            sql += parts.map(SQLQuery.quotedIdentifier).joined(separator: ".")
        }
    }

    /// `name` as a delimited identifier: `[` + name with `]` doubled + `]` ([MS-TDS] carries
    /// the text; the quoting is T-SQL's).
    public static func quotedIdentifier(_ name: String) -> String {
        "[" + name.replacingOccurrences(of: "]", with: "]]") + "]"
    }

    /// The SQL text, then ` -- ` and the parameters (with their values) when there are any.
    public var description: String {
        parameters.isEmpty ? sql : sql + " -- " + parameters.map(\.description).joined(separator: ", ")
    }

    /// The `sp_executesql` call for this query in `version`: the statement, the declaration
    /// (`@P1 int, @P2 nvarchar(4000)`, `output` for output parameters) and the parameters.
    /// - Throws: `.invalidParameter` when a typed parameter could not convert its value.
    /// `types`: the SQL Server 2025 types the session carries (json and vector parameters go as
    /// nvarchar(max) text where missing).
    package func rpcCall(version: TDSVersion, collation: Collation = .sqlLatin1GeneralCP1CIAS,
                        types: SQLServerTypes = .all) throws(SQLClientError) -> RPCCall {
        var wire: [RPCParameter] = []
        for (i, p) in parameters.enumerated() {
            var rp = try p.rpcParameter(version: version, collation: collation, types: types)
            if rp.name.isEmpty { rp.name = "@P\(i + 1)" }
            wire.append(rp)
        }
        return RPCCall.executeSQL(sql, parameters: wire, collation: collation)
    }
}
