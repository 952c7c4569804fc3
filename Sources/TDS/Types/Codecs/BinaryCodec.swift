import Foundation

/// The binary family: binary, varbinary, varbinary(max), timestamp/rowversion and image
/// ([MS-TDS] 2.2.5.4.2 BINARYTYPE, VARBINARYTYPE, BYTELEN; BIGBINARYTYPE, BIGVARBINARYTYPE,
/// USHORTLEN with 0xFFFF for NULL, PLP for `max`; 2.2.5.4.3 IMAGETYPE, LONGLEN): the bytes as they
/// came, which cannot be invalid.
///
/// The one decoder of these values: the row scan's size rule (``byteLengths``; USHORTLEN values
/// take any length), the ``SQLValue`` of the bytes in place (``value(at:count:)``), read by the token
/// decoder (``read(from:count:)``) or assembled from PLP chunks (``plpValue(_:)``; in a row block:
/// ``WireColumn/Kind/large``, read by ``value(at:count:)``), and the typed
/// reads (``WireRowBlock/bytes(row:column:)``, ``WireRowBlock/data(row:column:)``).
enum BinaryCodec {
    /// BINARY's and VARBINARY's BYTELEN values the row scan accepts: any length (bit 0: NULL).
    static let byteLengths: UInt64 = ~0

    /// The value of the `n` data bytes at `p`: `.binary` (a copy).
    @inline(__always)
    static func value(at p: UnsafeRawPointer, count n: Int) -> SQLValue {
        .binary([UInt8](UnsafeRawBufferPointer(start: p, count: n)))
    }

    /// The value of the next `n` data bytes of `reader` (its length prefix already read).
    /// - Throws: `.truncated` when fewer than `n` bytes remain.
    static func read(from reader: inout ByteReader, count n: Int) throws(TDSDecodingError) -> SQLValue {
        .binary(try reader.readBytes(n))
    }

    /// The value of a varbinary(max) whose PLP chunks are `bytes` (the assembled chunks are the
    /// value: no second copy).
    static func plpValue(_ bytes: [UInt8]) -> SQLValue { .binary(bytes) }
}

extension WireRowBlock {
    /// The bytes of a binary or varbinary value (legacy BINARY/VARBINARY, BIGBINARY,
    /// BIGVARBINARY; varbinary(max) and image assembled, ``WireColumn/Kind/large``): where they are, or nil for NULL; `body` gets them and its result is
    /// returned as `.value`. `.other` for any other type.
    @inline(__always)
    func withBinary<R>(row: Int, column: Int, _ body: (UnsafeRawBufferPointer) -> R) -> WireTypedValue<R> {
        typed(row: row, column: column) { c, p, _ in
            switch c.kind {
            case .byteLength where c.family == .binary:
                let n = Int(p.load(as: UInt8.self))
                return n == 0 ? .null : .value(body(UnsafeRawBufferPointer(start: p + 1, count: n)))
            case .ushortBytes where c.family == .binary:
                let n = Int(UInt16(littleEndian: p.loadUnaligned(as: UInt16.self)))
                return n == 0xFFFF ? .null : .value(body(UnsafeRawBufferPointer(start: p + 2, count: n)))
            case .large where c.family == .binary:   // varbinary(max), image: assembled
                let n = UInt32(littleEndian: p.loadUnaligned(as: UInt32.self))
                if n == WireColumn.largeNull { return .null }
                if p.load(fromByteOffset: 4, as: UInt8.self) == WireColumn.LargeForm.separate.rawValue {
                    return .value(separate[Int(n)].withUnsafeBytes(body))
                }
                return .value(body(UnsafeRawBufferPointer(start: p + WireColumn.largeHeaderSize, count: Int(n))))
            default:
                return .other
            }
        }
    }

    /// binary, varbinary, varbinary(max) and image: the bytes of `.binary`; `.other` for any other
    /// type. A value kept apart as an array is that array (shared, no copy); any other is copied.
    package func bytes(row: Int, column: Int) -> WireTypedValue<[UInt8]> {
        if scan[column].kind == .large, scan[column].family == .binary, case .array(let a)? = separateValue(row: row, column: column) { return .value(a) }
        return withBinary(row: row, column: column) { [UInt8]($0) }
    }

    /// binary, varbinary, varbinary(max) and image as `Data` (equal to `Data(bytes)` of
    /// `.binary(bytes)`); `.other` for any other type. A value kept apart as `Data` (assembled so
    /// for a typed read, ``TokenStreamDecoder/assemblesLargeBinaryAsData``) is that `Data`,
    /// shared (copy-on-write: the block's stays as it is); any other is copied.
    package func data(row: Int, column: Int) -> WireTypedValue<Data> {
        if scan[column].kind == .large, scan[column].family == .binary, case .data(let d)? = separateValue(row: row, column: column) { return .value(d) }
        return withBinary(row: row, column: column) { Data($0) }
    }

    /// The value of `column` in `row` when it is a large binary value kept apart
    /// (``WireColumn/LargeForm/separate``), else nil.
    func separateValue(row: Int, column: Int) -> SeparateValue? {
        let o = offsets[row &* columnCount &+ column]
        guard o != WireRowBlock.nullOffset, Int(o) &+ WireColumn.largeHeaderSize <= bytes.count,
              bytes[Int(o) &+ 4] == WireColumn.LargeForm.separate.rawValue else { return nil }
        let i = Int(bytes[Int(o)]) | Int(bytes[Int(o) &+ 1]) << 8 | Int(bytes[Int(o) &+ 2]) << 16 | Int(bytes[Int(o) &+ 3]) << 24
        return i < separate.count ? separate[i] : nil
    }

    /// A large binary value (varbinary(max), image, UDT) of at least 64 KiB, kept apart from the
    /// block's bytes (``WireColumn/LargeForm/separate``): the array the scan assembled (read as
    /// ``SQLValue/binary(_:)`` with no copy), or, when the request's rows are read by a typed read
    /// (``TokenStreamDecoder/assemblesLargeBinaryAsData``), the `Data` it assembled (read as `Data`
    /// with no copy). Never changed once in the block.
    enum SeparateValue: Sendable {
        case array([UInt8])
        case data(Data)

        /// Bytes.
        var count: Int {
            switch self {
            case .array(let a): return a.count
            case .data(let d): return d.count
            }
        }

        /// The bytes as an array (the array itself; a `Data`'s bytes copied).
        var array: [UInt8] {
            switch self {
            case .array(let a): return a
            case .data(let d): return [UInt8](d)
            }
        }

        /// `body` given the bytes.
        func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
            switch self {
            case .array(let a): return a.withUnsafeBytes(body)
            case .data(let d): return d.withUnsafeBytes(body)
            }
        }
    }
}

extension BinaryCodec: ColumnCodec {
    static var family: TypeFamily { .binary }

    /// BIGBINARY(8) is "binary(8)" (timestamp cannot be told apart on the wire).
    static func sqlTypeName(_ t: TypeInfo) -> String {
        t.type == .image ? "image" : sizedName(t, t.type == .binary || t.type == .bigBinary ? "binary" : "varbinary", t.length)
    }

    static func scanRule(_ l: WireColumn) -> WireColumn.Rule {
        switch l.type.lengthKind {
        case .byteLength?: return WireColumn.Rule(kind: .byteLength, allowed: byteLengths, declared: l.length)   // legacy
        case .ushortLength?: return WireColumn.Rule(kind: .ushortBytes, declared: l.length)
        default: return WireColumn.Rule(kind: .large, declared: l.length)   // image
        }
    }

    static func read(_ l: WireColumn, from reader: inout ByteReader, count n: Int, inVariant: Bool) throws(TDSDecodingError) -> SQLValue? {
        try read(from: &reader, count: n)
    }

    static func plpValue(_ l: WireColumn, _ bytes: [UInt8]) throws(TDSDecodingError) -> SQLValue { plpValue(bytes) }

    static func encode(_ v: SQLValue, as t: TypeInfo, into writer: inout ByteWriter) throws(TDSDecodingError) {
        switch v {
        case .binary(let b), .udt(let b): writer.writeBytes(b)
        default: throw mismatch(v, t, writer)
        }
    }
}
