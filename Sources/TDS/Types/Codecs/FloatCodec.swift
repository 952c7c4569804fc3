/// The floating-point family: real and float ([MS-TDS] 2.2.5.4.1 FLT4TYPE, FLT8TYPE, FIXEDLEN 4
/// and 8 bytes; 2.2.5.4.2 FLTNTYPE, BYTELEN 0 for NULL, else 4 or 8), IEEE 754 little-endian.
///
/// The one decoder of these values: the row scan's size rule (``byteLengths``; the FIXEDLEN sizes
/// are ``TDSDataType/lengthKind``), the ``SQLValue`` of the bytes in place (a row block, the token
/// decoder through ``read(from:count:)``) and the typed reads (``double(at:count:)``,
/// ``real(at:)``; ``WireRowBlock/double(row:column:)``, ``WireRowBlock/real(row:column:)``).
@usableFromInline
enum FloatCodec {
    /// FLTN's BYTELEN values the row scan accepts: bit n set for n data bytes (bit 0: NULL).
    static let byteLengths: UInt64 = 1 | 1 << 4 | 1 << 8

    /// The value of the `n` data bytes at `p` (`n` is 4 or 8; the caller checked it): `.real`
    /// or `.float`.
    @inlinable @inline(__always)
    static func value(at p: UnsafeRawPointer, count n: Int) -> SQLValue {
        n == 8 ? .float(double(at: p, count: 8)) : .real(real(at: p))
    }

    /// ``value(at:count:)`` as a `Double` (a real widened, exactly).
    @inlinable @inline(__always)
    static func double(at p: UnsafeRawPointer, count n: Int) -> Double {
        n == 8 ? Double(bitPattern: UInt64(littleEndian: p.loadUnaligned(as: UInt64.self))) : Double(real(at: p))
    }

    /// The real (4 bytes) at `p`.
    @inlinable @inline(__always)
    static func real(at p: UnsafeRawPointer) -> Float {
        Float(bitPattern: UInt32(littleEndian: p.loadUnaligned(as: UInt32.self)))
    }

    /// The value of the next `n` data bytes of `reader` (its length prefix already read), or nil,
    /// nothing consumed, when `n` is not 4 or 8 (the caller reports it).
    /// - Throws: `.truncated` when fewer than `n` bytes remain.
    @inline(__always)
    static func read(from reader: inout ByteReader, count n: Int) throws(TDSDecodingError) -> SQLValue? {
        guard n == 8 || n == 4 else { return nil }
        return try reader.readInPlace(n) { value(at: $0, count: n) }
    }
}

extension FloatCodec: FixedOrByteLengthCodec {
    static var family: TypeFamily { .float }

    static func sqlTypeName(_ t: TypeInfo) -> String {
        t.type == .flt4 || (t.type == .fltN && t.length == 4) ? "real" : "float"
    }

    static func encode(_ v: SQLValue, as t: TypeInfo, into writer: inout ByteWriter) throws(TDSDecodingError) {
        let d: Double
        switch v {
        case .real(let f): d = Double(f)
        case .float(let f): d = f
        default: d = Double(try integer(v, Int64.min...Int64.max, t, writer))
        }
        if t.type == .flt4 || (t.type == .fltN && t.length == 4) {
            if case .real(let f) = v { writer.writeFloat32LE(f) } else { writer.writeFloat32LE(Float(d)) }
        } else {
            writer.writeFloat64LE(d)
        }
    }
}

extension WireRowBlock {
    /// float and real (FLT8TYPE, FLT4TYPE, FLTNTYPE) as `Double`: the value of `.float`, or of
    /// `.real` widened (`Double(v)`, exact); `.other` for any other type.
    @inlinable @inline(__always)
    package func double(row: Int, column: Int) -> WireTypedValue<Double> {
        typed(row: row, column: column) { c, p, _ in
            switch c.kind {
            case .fixed where c.family == .float: return .value(FloatCodec.double(at: p, count: c.size))
            case .byteLength where c.family == .float:
                let n = Int(p.load(as: UInt8.self))
                return n == 0 ? .null : .value(FloatCodec.double(at: p + 1, count: n))
            default: return .other
            }
        }
    }

    /// real (FLT4TYPE, FLTNTYPE of 4 bytes): the value of `.real`, to the bit; `.other` for any
    /// other type (a float included).
    @inlinable @inline(__always)
    package func real(row: Int, column: Int) -> WireTypedValue<Float> {
        typed(row: row, column: column) { c, p, _ in
            switch c.kind {
            case .fixed where c.family == .float && c.size == 4: return .value(FloatCodec.real(at: p))
            case .byteLength where c.family == .float:
                switch p.load(as: UInt8.self) {
                case 0: return .null
                case 4: return .value(FloatCodec.real(at: p + 1))
                default: return .other
                }
            default: return .other
            }
        }
    }
}
