import Foundation

/// The uniqueidentifier family ([MS-TDS] 2.2.5.4.2 GUIDTYPE, BYTELEN 0 for NULL, else 16): the
/// first three fields little-endian (4, 2 and 2 bytes), the last 8 bytes as they are (SQL Server's
/// mixed-endian order; Microsoft.Data.SqlClient's `Guid(byte[])`).
///
/// The one decoder of these values: the row scan's size rule (``byteLengths``), the ``SQLValue``
/// of the bytes in place (a row block, the token decoder through ``read(from:count:)``) and the
/// typed read (``uuid(at:)``, ``WireRowBlock/uuid(row:column:)``).
@usableFromInline
enum GUIDCodec {
    /// GUID's BYTELEN values the row scan accepts: bit n set for n data bytes (bit 0: NULL).
    static let byteLengths: UInt64 = 1 | 1 << 16

    /// The UUID of the 16 data bytes at `p`.
    @inlinable @inline(__always)
    static func uuid(at p: UnsafeRawPointer) -> UUID {
        @inline(__always) func u8(_ i: Int) -> UInt8 { p.load(fromByteOffset: i, as: UInt8.self) }
        return UUID(uuid: (u8(3), u8(2), u8(1), u8(0), u8(5), u8(4), u8(7), u8(6),
                           u8(8), u8(9), u8(10), u8(11), u8(12), u8(13), u8(14), u8(15)))
    }

    /// The value of the 16 data bytes at `p`: `.uniqueIdentifier`.
    @inlinable @inline(__always)
    static func value(at p: UnsafeRawPointer) -> SQLValue { .uniqueIdentifier(uuid(at: p)) }

    /// The value of the next `n` data bytes of `reader` (its length prefix already read), or nil,
    /// nothing consumed, when `n` is not 16 (the caller reports it).
    /// - Throws: `.truncated` when fewer than 16 bytes remain.
    @inline(__always)
    static func read(from reader: inout ByteReader, count n: Int) throws(TDSDecodingError) -> SQLValue? {
        guard n == 16 else { return nil }
        return try reader.readInPlace(16) { value(at: $0) }
    }
}

extension GUIDCodec: FixedOrByteLengthCodec {
    static var family: TypeFamily { .guid }

    static func sqlTypeName(_ t: TypeInfo) -> String { "uniqueidentifier" }

    static func encode(_ v: SQLValue, as t: TypeInfo, into writer: inout ByteWriter) throws(TDSDecodingError) {
        guard case .uniqueIdentifier(let u) = v else { throw mismatch(v, t, writer) }
        let b = u.uuid
        writer.writeBytes([b.3, b.2, b.1, b.0, b.5, b.4, b.7, b.6, b.8, b.9, b.10, b.11, b.12, b.13, b.14, b.15])
    }
}

extension WireRowBlock {
    /// uniqueidentifier (GUIDTYPE): the value of `.uniqueIdentifier` (SQL Server's mixed-endian
    /// bytes decoded as ``value(row:column:)`` decodes them); `.other` for any other type.
    package func uuid(row: Int, column: Int) -> WireTypedValue<UUID> {
        // A local function, not a closure: always inlined (a closure this size was left out of line).
        @inline(__always) func read(_ c: WireColumn, _ p: UnsafeRawPointer, _ available: Int) -> WireTypedValue<UUID> {
            if p.load(as: UInt8.self) == 0 { return .null }   // the scan accepts 0 (NULL) or 16
            return .value(GUIDCodec.uuid(at: p + 1))
        }
        return typed(row: row, column: column, accepts: { $0.kind == .byteLength && $0.family == .guid }, read)
    }
}
