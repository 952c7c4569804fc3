/// [MS-TDS] 2.2.7.20 ROW — one row of values for the current COLMETADATA (token 0xD1).
///
/// Wire shape after the token byte: one value per column, each encoded per its TYPE_INFO
/// (length prefix and data; text/ntext/image with TextPtr and timestamp; PLP types in chunks).
public struct Row: Hashable, Sendable {
    /// One value per column, in column order.
    public var values: [SQLValue]
    /// A ROW of `values`.
    public init(values: [SQLValue]) { self.values = values }

    /// Decodes a whole ROW body (after the 0xD1 byte) for `columns`. Throws `.truncated` if the
    /// input ends inside the row. ``TokenStreamDecoder`` decodes rows incrementally instead.
    public static func decode(from reader: inout ByteReader, columns: [ColumnMetadata]) throws(TDSDecodingError) -> Row {
        guard let values = try WireRowProgress.values(of: .row, tokenStart: reader.absoluteOffset &- 1,
                                                      types: columns.map(\.typeInfo), from: &reader) else {
            throw TDSDecodingError(.truncated, offset: reader.baseOffset &+ reader.endIndex, context: "ROW", "the row continues past the input")
        }
        return Row(values: values)
    }
}

extension Row {
    /// Writes the token byte 0xD1 and one value per column (PLP values in chunks).
    /// Throws if a value does not fit its column's type.
    public func encode(into writer: inout ByteWriter, columns: [ColumnMetadata]) throws(TDSDecodingError) {
        guard values.count == columns.count else {
            throw TDSDecodingError(.invalidValue, offset: writer.count, context: "ROW",
                                   "\(values.count) value(s) for \(columns.count) column(s)")
        }
        writer.writeUInt8(TokenType.row.rawValue)
        for (value, column) in zip(values, columns) {
            try column.typeInfo.encodeValue(value, into: &writer)
        }
    }
}
