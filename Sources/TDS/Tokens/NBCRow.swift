/// [MS-TDS] 2.2.7.15 NBCROW — a row with a null bitmap (token 0xD2, TDS 7.3+).
///
/// Wire shape after the token byte: NullBitmap (ceil(column count / 8) bytes; bit `i % 8` of
/// byte `i / 8` set = column `i` is NULL and has no bytes), then the values of the non-NULL
/// columns as in ROW. `values` holds every column, `.null` where the bitmap says so.
public struct NBCRow: Hashable, Sendable {
    /// The values in column order (NULLs from the bitmap included).
    public var values: [SQLValue]
    /// An NBCROW of `values`.
    public init(values: [SQLValue]) { self.values = values }

    /// Decodes a whole NBCROW body (after the 0xD2 byte) for `columns`. Throws `.truncated` if
    /// the input ends inside the row.
    public static func decode(from reader: inout ByteReader, columns: [ColumnMetadata]) throws(TDSDecodingError) -> NBCRow {
        let start = reader.offset
        do throws(TDSDecodingError) {
            let bitmap = try reader.readBytes((columns.count + 7) / 8)
            guard let values = try WireRowProgress.values(of: .nbcRow, tokenStart: reader.baseOffset &+ start &- 1, bitmap: bitmap,
                                                          types: columns.map(\.typeInfo), from: &reader) else {
                throw TDSDecodingError(.truncated, offset: reader.baseOffset &+ reader.endIndex, "the row continues past the input")
            }
            return NBCRow(values: values)
        } catch {
            if error.code == .truncated { reader.offset = start }
            throw error.inToken("NBCROW")
        }
    }
}

extension NBCRow {
    /// Writes the token byte 0xD2, the null bitmap and the non-NULL values.
    public func encode(into writer: inout ByteWriter, columns: [ColumnMetadata]) throws(TDSDecodingError) {
        guard values.count == columns.count else {
            throw TDSDecodingError(.invalidValue, offset: writer.count, context: "NBCROW",
                                   "\(values.count) value(s) for \(columns.count) column(s)")
        }
        writer.writeUInt8(TokenType.nbcRow.rawValue)
        var bitmap = [UInt8](repeating: 0, count: (columns.count + 7) / 8)
        for (i, v) in values.enumerated() where v.isNull { bitmap[i >> 3] |= 1 << UInt8(i & 7) }
        writer.writeBytes(bitmap)
        for (value, column) in zip(values, columns) where !value.isNull {
            try column.typeInfo.encodeValue(value, into: &writer)
        }
    }
}
