/// The integer family: tinyint, smallint, int and bigint ([MS-TDS] 2.2.5.4.1 INT1TYPE, INT2TYPE,
/// INT4TYPE, INT8TYPE, FIXEDLEN 1, 2, 4 and 8 bytes; 2.2.5.4.2 INTNTYPE, BYTELEN 0 for NULL, else
/// 1, 2, 4 or 8), little-endian two's complement (tinyint unsigned).
///
/// The one decoder of these values: the row scan's size rule (``byteLengths``; the FIXEDLEN sizes
/// are ``TDSDataType/lengthKind``), the ``SQLValue`` of the bytes in place (a row block, the token
/// decoder through ``read(from:count:)``) and the typed read (``int64(at:count:)``,
/// ``WireRowBlock/integer(row:column:)``).
@usableFromInline
enum IntegerCodec {
    /// INTN's BYTELEN values the row scan accepts: bit n set for n data bytes (bit 0: NULL).
    static let byteLengths: UInt64 = 1 | 1 << 1 | 1 << 2 | 1 << 4 | 1 << 8

    /// Whether `n` data bytes are an integer of this family (1, 2, 4 or 8).
    @inline(__always)
    static func isLength(_ n: Int) -> Bool { n == 4 || n == 8 || n == 2 || n == 1 }

    /// The value of the `n` data bytes at `p` (`n` is 1, 2, 4 or 8; the caller checked it):
    /// `.tinyint`, `.smallint`, `.int` or `.bigint`.
    @inlinable @inline(__always)
    static func value(at p: UnsafeRawPointer, count n: Int) -> SQLValue {
        switch n {
        case 4: return .int(Int32(bitPattern: UInt32(littleEndian: p.loadUnaligned(as: UInt32.self))))
        case 8: return .bigint(Int64(bitPattern: UInt64(littleEndian: p.loadUnaligned(as: UInt64.self))))
        case 2: return .smallint(Int16(bitPattern: UInt16(littleEndian: p.loadUnaligned(as: UInt16.self))))
        default: return .tinyint(p.load(as: UInt8.self))
        }
    }

    /// ``value(at:count:)`` as an `Int64` (the typed read).
    @inlinable @inline(__always)
    static func int64(at p: UnsafeRawPointer, count n: Int) -> Int64 {
        switch n {
        case 4: return Int64(Int32(bitPattern: UInt32(littleEndian: p.loadUnaligned(as: UInt32.self))))
        case 8: return Int64(bitPattern: UInt64(littleEndian: p.loadUnaligned(as: UInt64.self)))
        case 2: return Int64(Int16(bitPattern: UInt16(littleEndian: p.loadUnaligned(as: UInt16.self))))
        default: return Int64(p.load(as: UInt8.self))
        }
    }

    /// The value of the next `n` data bytes of `reader` (its length prefix already read), or nil,
    /// nothing consumed, when `n` is not an integer's length (the caller reports it).
    /// - Throws: `.truncated` when fewer than `n` bytes remain.
    @inline(__always)
    static func read(from reader: inout ByteReader, count n: Int) throws(TDSDecodingError) -> SQLValue? {
        guard isLength(n) else { return nil }
        return try reader.readInPlace(n) { value(at: $0, count: n) }
    }
}

extension IntegerCodec: FixedOrByteLengthCodec {
    static var family: TypeFamily { .integer }

    static func sqlTypeName(_ t: TypeInfo) -> String {
        let size: Int
        if case .fixed(let n)? = t.type.lengthKind { size = n } else { size = t.length }
        return size == 1 ? "tinyint" : size == 2 ? "smallint" : size == 8 ? "bigint" : "int"
    }

    static func encode(_ v: SQLValue, as t: TypeInfo, into writer: inout ByteWriter) throws(TDSDecodingError) {
        let size: Int
        if case .fixed(let n)? = t.type.lengthKind { size = n } else { size = t.length }
        switch size {
        case 1: writer.writeUInt8(UInt8(try integer(v, 0...255, t, writer)))
        case 2: writer.writeInt16LE(Int16(try integer(v, Int64(Int16.min)...Int64(Int16.max), t, writer)))
        case 4: writer.writeInt32LE(Int32(try integer(v, Int64(Int32.min)...Int64(Int32.max), t, writer)))
        default: writer.writeInt64LE(try integer(v, Int64.min...Int64.max, t, writer))
        }
    }
}

extension WireRowBlock {
    /// tinyint, smallint, int and bigint ([MS-TDS] INT1/2/4/8TYPE, INTNTYPE) as `Int64`: the
    /// value of `.tinyint`, `.smallint`, `.int` or `.bigint`; `.other` for any other type.
    @inlinable @inline(__always)
    package func integer(row: Int, column: Int) -> WireTypedValue<Int64> {
        typed(row: row, column: column) { c, p, _ in
            switch c.kind {
            case .fixed:
                if c.family == .integer { return .value(IntegerCodec.int64(at: p, count: c.size)) }
                return c.family == .null ? .null : .other
            case .byteLength where c.family == .integer:   // 0 (NULL), 1, 2, 4 or 8 bytes
                let n = Int(p.load(as: UInt8.self))
                return n == 0 ? .null : .value(IntegerCodec.int64(at: p + 1, count: n))
            default:
                return .other
            }
        }
    }
}
