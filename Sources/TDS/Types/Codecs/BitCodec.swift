/// The bit family ([MS-TDS] 2.2.5.4.1 BITTYPE, FIXEDLEN 1 byte; 2.2.5.4.2 BITNTYPE, BYTELEN 0 for
/// NULL, else 1): any byte but 0 is true.
///
/// The one decoder of these values: the row scan's size rule (``byteLengths``), the ``SQLValue``
/// of the byte in place (a row block, the token decoder through ``read(from:count:)``) and the
/// typed read (``bool(at:)``, ``WireRowBlock/bit(row:column:)``).
@usableFromInline
enum BitCodec {
    /// BITN's BYTELEN values the row scan accepts: bit n set for n data bytes (bit 0: NULL).
    static let byteLengths: UInt64 = 1 | 1 << 1

    /// The bit at `p`.
    @inlinable @inline(__always)
    static func bool(at p: UnsafeRawPointer) -> Bool { p.load(as: UInt8.self) != 0 }

    /// The value of the data byte at `p`: `.bit`.
    @inlinable @inline(__always)
    static func value(at p: UnsafeRawPointer) -> SQLValue { .bit(bool(at: p)) }

    /// The value of the next `n` data bytes of `reader` (its length prefix already read), or nil,
    /// nothing consumed, when `n` is not 1 (the caller reports it).
    /// - Throws: `.truncated` at the end.
    @inline(__always)
    static func read(from reader: inout ByteReader, count n: Int) throws(TDSDecodingError) -> SQLValue? {
        guard n == 1 else { return nil }
        return try reader.readInPlace(1) { value(at: $0) }
    }
}

extension BitCodec: FixedOrByteLengthCodec {
    static var family: TypeFamily { .bit }

    static func sqlTypeName(_ t: TypeInfo) -> String { "bit" }

    static func scanRule(_ l: WireColumn) -> WireColumn.Rule {
        // BITN has no declared-length rule.
        l.type == .bit ? WireColumn.Rule(kind: .fixed, size: 1) : WireColumn.Rule(kind: .byteLength, allowed: byteLengths)
    }

    static func encode(_ v: SQLValue, as t: TypeInfo, into writer: inout ByteWriter) throws(TDSDecodingError) {
        writer.writeUInt8(UInt8(try integer(v, 0...1, t, writer)))
    }
}

extension WireRowBlock {
    /// bit (BITTYPE, BITNTYPE): the value of `.bit`; `.other` for any other type.
    @inlinable @inline(__always)
    package func bit(row: Int, column: Int) -> WireTypedValue<Bool> {
        typed(row: row, column: column) { c, p, _ in
            switch c.kind {
            case .fixed where c.family == .bit: return .value(BitCodec.bool(at: p))
            case .byteLength where c.family == .bit:
                return p.load(as: UInt8.self) == 0 ? .null : .value(BitCodec.bool(at: p + 1))
            default: return .other
            }
        }
    }
}
