import TDS

extension SQLRow {
    /// Lends `body` the bytes of the value at `position` (0-based, in column order) where the row
    /// holds them, without copying them: the view is valid only inside `body` (do not keep it or
    /// let it escape), and reading a 100 MB varbinary(max) this way allocates nothing.
    ///
    /// The bytes are those of `SQLValue.bytesValue`:
    /// - binary, varbinary, varbinary(max), image, timestamp/rowversion and UDT values: their bytes
    ///   ([MS-TDS] 2.2.5.4.2 BINARYTYPE, BIGVARBINARYTYPE; PLP chunks of 2.2.5.2.3 assembled);
    /// - json (SQL Server 2025): its text as UTF-8;
    /// - vector (SQL Server 2025): its wire bytes, an 8-byte header (layout format 0xA9, version 1,
    ///   UInt16 little-endian dimension count, element type byte, three zero bytes) then the
    ///   elements little-endian (4 bytes each for float32, 2 for float16), as
    ///   `CAST(v AS varbinary(8000))` gives them (see `SQLVector`).
    ///
    /// A row built by code (``init(columns:values:)``) lends the bytes of its ``SQLValue`` (a
    /// vector's encoded first), so both kinds of row give the same bytes.
    ///
    /// - Parameters:
    ///   - position: the column's 0-based index, `0 ..< count`.
    ///   - body: reads the bytes; its result is returned.
    /// - Returns: `body`'s result, or nil when the value is NULL (`body` is not called).
    /// - Throws: ``SQLClientError`` `.decodingFailed` (its ``SQLClientError/decodingFailure``
    ///   naming the column) when `position` is out of range (reason `.noColumn`; never a trap, a
    ///   negative index included) or the value is of another type (reason `.notConvertible`);
    ///   whatever `body` throws.
    public func withUnsafeBytes<R>(at position: Int, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        guard position >= 0, position < storage.width else {
            throw SQLCell.missing(UnsafeRawBufferPointer.self, storage, position)
        }
        let cell = SQLCell(storage: storage, row: index, column: position)
        switch cell.typed({ block, row, column in block.withValueBytes(row: row, column: column) { raw in Result { try body(raw) } } }) {
        case .value(let result): return try result.get()
        case .null: return nil
        case .other: break
        }
        let v = cell.value
        if v.isNull { return nil }
        guard let bytes = v.bytesValue else { throw cell.failure(UnsafeRawBufferPointer.self) }
        return try bytes.withUnsafeBytes(body)
    }
}
