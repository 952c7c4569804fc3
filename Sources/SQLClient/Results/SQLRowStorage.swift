import TDS

/// The rows of one block of a result set, shared by every ``SQLRow`` and ``SQLRowBlock`` that
/// views them: a row is (this storage, its index), so handing out a row allocates nothing.
///
/// Two shapes, the same values:
/// - `.wire`: the rows' wire bytes ([MS-TDS] 2.2.7.20 ROW, 2.2.7.15 NBCROW) with the offset of
///   every value (``WireRowBlock``; nchar/nvarchar already transcoded to UTF-8 by the scan),
///   checked when they were received and decoded only when read, in the reader's own thread: a
///   String is made from its UTF-8 (or code page 1252, or the column's collation), a binary value
///   copied, a sql_variant decoded, when it is asked for. Every result's rows arrive this way,
///   large values (`max`, xml, UDT, json, text/ntext/image) assembled in the block.
/// - `.values`: decoded values, row after row: rows built by code with
///   ``SQLRow/init(columns:values:)``, and a row that came as a token (the connection's
///   `.forwardRow`: one the token path read, e.g. after the row scan stopped at a row the token
///   decoder had begun).
@usableFromInline
final class SQLRowStorage: Sendable {
    @usableFromInline
    enum Content: Sendable {
        case values([SQLValue])
        case wire(WireRowBlock)
    }

    let columns: SQLColumns
    @usableFromInline let content: Content
    /// Values per row.
    @usableFromInline let width: Int
    /// Rows.
    let count: Int

    /// Rows of `width` values each, flat.
    init(columns: SQLColumns, values: [SQLValue], width: Int) {
        self.columns = columns
        self.content = .values(values)
        self.recycler = nil
        self.width = width
        self.count = width > 0 ? values.count / width : 0
    }

    /// Where the block's bytes go when the rows are released, if they are a buffer the
    /// connection's decoder lent its rows from (``TokenStreamDecoder/settle(_:)``).
    private let recycler: RowBytesRecycler?

    /// Rows as wire bytes (one value per column); `recycler`: the connection's, for its buffers.
    init(columns: SQLColumns, wire: WireRowBlock, recycler: RowBytesRecycler? = nil) {
        self.columns = columns
        self.content = .wire(wire)
        self.width = columns.count
        self.count = wire.rowCount
        self.recycler = recycler
    }

    deinit {
        // A block that took the connection's read buffer gives it back for a later batch.
        if let recycler, case .wire(let w) = content { w.giveBytes(to: recycler) }
    }

    /// The value of `column` in `row` (in range: the views check). Inlined into the caller's
    /// loop (`row[i]`): one call per value, into the block's decoder.
    @inlinable @inline(__always)
    func value(row: Int, column: Int) -> SQLValue {
        switch content {
        case .values(let v): return v[row &* width &+ column]
        case .wire(let w): return w.value(row: row, column: column)
        }
    }

    /// A typed read of a value straight from the rows' wire bytes (``WireRowBlock``'s typed
    /// reads, `read(block, row)`); `.other` for decoded values (then read the ``SQLValue``).
    @inline(__always)
    func typed<R>(row: Int, _ read: (borrowing WireRowBlock, Int) -> WireTypedValue<R>) -> WireTypedValue<R> {
        switch content {
        case .values: return .other
        case .wire(let w): return read(w, row)
        }
    }

    /// Whether the value of `column` in `row` is NULL, without decoding it.
    @inline(__always)
    func isNull(row: Int, column: Int) -> Bool {
        switch content {
        case .values(let v): return v[row &* width &+ column].isNull
        case .wire(let w): return w.isNull(row: row, column: column)
        }
    }

    /// The values of `row`, in column order.
    func values(row: Int) -> [SQLValue] {
        switch content {
        case .values(let v): return Array(v[row * width ..< (row + 1) * width])
        case .wire(let w): return w.values(row: row)
        }
    }

    /// The values of rows `rows`, row after row (one allocation, each value decoded in place).
    func values(rows: Range<Int>) -> [SQLValue] {
        switch content {
        case .values(let v):
            if rows.lowerBound == 0 && rows.upperBound == count && v.count == count * width { return v }
            return Array(v[rows.lowerBound * width ..< rows.upperBound * width])
        case .wire(let w):
            return w.values(rows: rows)
        }
    }
}
