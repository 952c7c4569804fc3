/// The `INSERT BULK` statement that announces a bulk load ([MS-TDS] 2.2.1.5, 2.2.6.1):
/// `INSERT BULK [schema].[table] ([col] type, …) WITH (CHECK_CONSTRAINTS, …)`, sent as a SQL
/// batch before the BULKLOAD message.
///
/// Identifiers (the table's parts, column names, ORDER columns) are bracket-quoted; the only other
/// text is type names from TYPE_INFO and the integers of ROWS_PER_BATCH/KILOBYTES_PER_BATCH.
/// No value ever becomes part of the text.
public struct BulkLoadStatement: Hashable, Sendable {
    /// The WITH options of INSERT BULK.
    public struct Options: Hashable, Sendable {
        /// CHECK_CONSTRAINTS: check CHECK and FOREIGN KEY constraints (off by default in bulk loads).
        public var checkConstraints = false
        /// FIRE_TRIGGERS: run the table's INSERT triggers.
        public var fireTriggers = false
        /// KEEP_NULLS: insert NULL rather than the column default for NULL values.
        public var keepNulls = false
        /// TABLOCK: take a bulk update table lock for the load.
        public var tableLock = false
        /// ORDER(...): the rows are sorted by these columns (name, descending).
        public var order: [(column: String, descending: Bool)] = []
        /// ROWS_PER_BATCH = n: a hint of the number of rows (1...Int32.max).
        public var rowsPerBatch: Int?
        /// KILOBYTES_PER_BATCH = n: a hint of the size (1...Int32.max).
        public var kilobytesPerBatch: Int?
        /// ALLOW_ENCRYPTED_VALUE_MODIFICATIONS: Always Encrypted ciphertext is loaded into encrypted
        /// columns as it is (the server skips its encryption metadata checks; the database user
        /// needs the option of the same name).
        public var allowEncryptedValueModifications = false

        public init(checkConstraints: Bool = false, fireTriggers: Bool = false, keepNulls: Bool = false,
                    tableLock: Bool = false, order: [(column: String, descending: Bool)] = [],
                    rowsPerBatch: Int? = nil, kilobytesPerBatch: Int? = nil, allowEncryptedValueModifications: Bool = false) {
            self.allowEncryptedValueModifications = allowEncryptedValueModifications
            self.checkConstraints = checkConstraints
            self.fireTriggers = fireTriggers
            self.keepNulls = keepNulls
            self.tableLock = tableLock
            self.order = order
            self.rowsPerBatch = rowsPerBatch
            self.kilobytesPerBatch = kilobytesPerBatch
        }

        public static func == (a: Options, b: Options) -> Bool {
            a.checkConstraints == b.checkConstraints && a.fireTriggers == b.fireTriggers && a.keepNulls == b.keepNulls
                && a.tableLock == b.tableLock && a.allowEncryptedValueModifications == b.allowEncryptedValueModifications
                && a.rowsPerBatch == b.rowsPerBatch && a.kilobytesPerBatch == b.kilobytesPerBatch
                && a.order.map(\.column) == b.order.map(\.column) && a.order.map(\.descending) == b.order.map(\.descending)
        }

        public func hash(into h: inout Hasher) {
            h.combine(checkConstraints); h.combine(fireTriggers); h.combine(keepNulls); h.combine(tableLock)
            h.combine(allowEncryptedValueModifications)
            h.combine(rowsPerBatch); h.combine(kilobytesPerBatch)
            for o in order { h.combine(o.column); h.combine(o.descending) }
        }
    }

    /// The destination's parts (server, database, schema, table; 1 to 4), unquoted.
    public var tableParts: [String]
    public var columns: [BulkLoadColumn]
    public var options: Options

    /// - Throws: `.invalidValue` (context "INSERT BULK") for a malformed table name, no columns,
    ///   an empty column name, or a batch hint outside 1...2147483647.
    public init(table: String, columns: [BulkLoadColumn], options: Options = Options()) throws(TDSDecodingError) {
        let parts = try SQLIdentifier.parts(of: table)
        guard !columns.isEmpty else {
            throw TDSDecodingError(.invalidValue, offset: 0, context: "INSERT BULK", "no columns to load")
        }
        for c in columns where c.name.isEmpty {
            throw TDSDecodingError(.invalidValue, offset: 0, context: "INSERT BULK", "a column has an empty name")
        }
        for (name, v) in [("ROWS_PER_BATCH", options.rowsPerBatch), ("KILOBYTES_PER_BATCH", options.kilobytesPerBatch)] {
            if let v, !(1...Int(Int32.max)).contains(v) {
                throw TDSDecodingError(.invalidValue, offset: 0, context: "INSERT BULK", "\(name) \(v) outside 1...2147483647")
            }
        }
        for o in options.order where o.column.isEmpty {
            throw TDSDecodingError(.invalidValue, offset: 0, context: "INSERT BULK", "an ORDER column has an empty name")
        }
        self.tableParts = parts
        self.columns = columns
        self.options = options
    }

    /// The table name, each part bracket-quoted: `[dbo].[people]`.
    public var quotedTable: String { tableParts.map(SQLIdentifier.quoted).joined(separator: ".") }

    /// The statement text.
    public var text: String {
        var s = "INSERT BULK " + quotedTable + " ("
        s += columns.map { SQLIdentifier.quoted($0.name) + " " + $0.declaration }.joined(separator: ", ")
        s += ")"
        var with: [String] = []
        if options.checkConstraints { with.append("CHECK_CONSTRAINTS") }
        if options.fireTriggers { with.append("FIRE_TRIGGERS") }
        if options.keepNulls { with.append("KEEP_NULLS") }
        if options.allowEncryptedValueModifications { with.append("ALLOW_ENCRYPTED_VALUE_MODIFICATIONS") }
        if let n = options.kilobytesPerBatch { with.append("KILOBYTES_PER_BATCH = \(n)") }
        if let n = options.rowsPerBatch { with.append("ROWS_PER_BATCH = \(n)") }
        if !options.order.isEmpty {
            with.append("ORDER(" + options.order.map { SQLIdentifier.quoted($0.column) + ($0.descending ? " DESC" : " ASC") }
                .joined(separator: ", ") + ")")
        }
        if options.tableLock { with.append("TABLOCK") }
        if !with.isEmpty { s += " WITH (" + with.joined(separator: ", ") + ")" }
        return s
    }
}

/// T-SQL identifiers: bracket quoting and multi-part names.
public enum SQLIdentifier {
    /// `name` in brackets, `]` doubled: `a]b` → `[a]]b]`.
    public static func quoted(_ name: String) -> String {
        "[" + name.replacingOccurrences(of: "]", with: "]]") + "]"
    }

    /// The parts of a multi-part name (`table`, `schema.table`, `db.schema.table`,
    /// `server.db.schema.table`), each unquoted: parts may be bare, `[bracketed]` (with `]]`) or
    /// `"double-quoted"` (with `""`). Leading and trailing blanks around a part are dropped.
    ///
    /// - Throws: `.invalidValue` (context "identifier") for an empty name, an empty last part, more
    ///   than 4 parts, an unclosed quote, or text after a closing quote.
    public static func parts(of name: String) throws(TDSDecodingError) -> [String] {
        func bad(_ why: String, _ at: Int) -> TDSDecodingError {
            TDSDecodingError(.invalidValue, offset: at, context: "identifier", why)
        }
        let chars = Array(name)
        var parts: [String] = []
        var i = 0
        while true {
            while i < chars.count, chars[i] == " " { i += 1 }
            var part = ""
            if i < chars.count, chars[i] == "[" || chars[i] == "\"" {
                let close: Character = chars[i] == "[" ? "]" : "\""
                i += 1
                var closed = false
                while i < chars.count {
                    if chars[i] == close {
                        if i + 1 < chars.count, chars[i + 1] == close { part.append(close); i += 2; continue }
                        i += 1; closed = true; break
                    }
                    part.append(chars[i]); i += 1
                }
                guard closed else { throw bad("unclosed \(close == "]" ? "[" : "\"") in the name", i) }
                while i < chars.count, chars[i] == " " { i += 1 }
                guard i == chars.count || chars[i] == "." else { throw bad("text after a quoted part", i) }
            } else {
                while i < chars.count, chars[i] != "." {
                    guard chars[i] != "[", chars[i] != "]", chars[i] != "\"" else { throw bad("a quote inside a bare part", i) }
                    part.append(chars[i]); i += 1
                }
                while part.hasSuffix(" ") { part.removeLast() }
            }
            parts.append(part)
            guard i < chars.count else { break }
            i += 1   // the dot
        }
        guard let last = parts.last, !last.isEmpty else { throw bad("no table name", 0) }
        guard parts.count <= 4 else { throw bad("\(parts.count) parts (at most 4)", 0) }
        return parts
    }
}
