import Foundation

extension TypeInfo {
    /// Encodes `value` as this TYPE_INFO's value: the length prefix, then the data, so that
    /// ``decodeValue(from:)`` (or ``decodePLPValue(_:)`` after PLP reassembly) gives it back.
    ///
    /// - NULL: BYTELEN 0, USHORTLEN 0xFFFF, TEXT/NTEXT/IMAGE a zero TextPtr length, SSVARIANT a
    ///   zero length, PLP 0xFFFFFFFFFFFFFFFF. Fixed-length types cannot be NULL (`.invalidValue`).
    /// - PLP: 8-byte total length, chunks of at most 8,000 bytes (4-byte length each), then a 0 terminator.
    /// - TEXT/NTEXT/IMAGE use the ROW form: a 16-byte TextPtr of zeros, an 8-byte zero timestamp,
    ///   the 4-byte length and the data.
    /// - sql_variant takes `.variant` (or any value with an implied base type, see ``SQLVariant/init(value:)``).
    ///
    /// Integer cases convert between widths when the value fits, `.money`/`.smallMoney` convert
    /// when it fits, and `.decimal` is rescaled to this type's scale when no digit is lost.
    /// Anything else throws `.invalidValue` (offset = the writer's count).
    public func encodeValue(_ value: SQLValue, into writer: inout ByteWriter) throws(TDSDecodingError) {
        try TDSDecodingError.inContext(type.name) { () throws(TDSDecodingError) in
            try encodeValueBody(value, into: &writer)
        }
    }

    private func encodeValueBody(_ value: SQLValue, into writer: inout ByteWriter) throws(TDSDecodingError) {
        guard let kind = type.lengthKind else {
            throw TDSDecodingError(.unknownType, offset: writer.count, "cannot encode type \(type.name)")
        }
        if isPLP {
            if value.isNull { writer.writeUInt64LE(0xFFFF_FFFF_FFFF_FFFF); return }
            var data = ByteWriter()
            try encodeData(value, into: &data)
            writer.writeUInt64LE(UInt64(data.count))
            var i = 0
            while i < data.count {
                let n = min(8000, data.count - i)
                writer.writeUInt32LE(UInt32(n))
                writer.writeBytes(data.bytes[i ..< i + n])
                i += n
            }
            writer.writeUInt32LE(0)
            return
        }
        switch kind {
        case .fixed:
            // NULLTYPE's codec takes NULL alone; no other fixed-length type can be NULL.
            guard !value.isNull || type == .null else {
                throw TDSDecodingError(.invalidValue, offset: writer.count, "NULL for fixed-length \(type.name)")
            }
            try encodeData(value, into: &writer)
        case .byteLength:
            if value.isNull { writer.writeUInt8(0); return }
            let at = writer.count
            writer.writeUInt8(0)
            try encodeData(value, into: &writer)
            let n = writer.count - at - 1
            guard n <= 255, n > 0 || type == .char || type == .varchar || type == .binary || type == .varbinary else {
                writer.bytes.removeLast(writer.count - at)
                throw TDSDecodingError(.invalidValue, offset: at, "\(n) data bytes for a BYTELEN type")
            }
            if n == 0 {   // legacy types cannot send an empty non-NULL value: length 0 is NULL
                writer.bytes.removeLast(writer.count - at)
                throw TDSDecodingError(.invalidValue, offset: at, "empty value for legacy \(type.name) reads back as NULL")
            }
            writer.bytes[at] = UInt8(n)
        case .ushortLength:
            if value.isNull { writer.writeUInt16LE(0xFFFF); return }
            let at = writer.count
            writer.writeUInt16LE(0)
            try encodeData(value, into: &writer)
            let n = writer.count - at - 2
            guard n < 0xFFFF else {
                writer.bytes.removeLast(writer.count - at)
                throw TDSDecodingError(.invalidValue, offset: at, "\(n) bytes exceed a USHORTLEN value")
            }
            writer.setUInt16LE(UInt16(n), at: at)
        case .longLength:
            if type == .ssVariant {
                if value.isNull { writer.writeUInt32LE(0); return }
                let at = writer.count
                writer.writeUInt32LE(0)
                do {
                    try encodeData(value, into: &writer)
                } catch {
                    writer.bytes.removeLast(writer.count - at)
                    throw error
                }
                writer.setUInt32LE(UInt32(writer.count - at - 4), at: at)
                return
            }
            if value.isNull { writer.writeUInt8(0); return }
            writer.writeUInt8(16)
            writer.writeBytes(repeatElement(0, count: 16 + 8))
            let at = writer.count
            writer.writeUInt32LE(0)
            try encodeData(value, into: &writer)
            writer.setUInt32LE(UInt32(writer.count - at - 4), at: at)
        case .plp:
            break   // handled above (isPLP)
        }
    }

    private func mismatch(_ value: SQLValue, _ writer: ByteWriter) -> TDSDecodingError {
        TDSDecodingError(.invalidValue, offset: writer.count, "cannot encode \(value.kindName) as \(sqlTypeName)")
    }

    /// Writes the data bytes of `value` (no length prefix), by this type's family's codec
    /// (``TDSDataType/codec``).
    func encodeData(_ value: SQLValue, into writer: inout ByteWriter) throws(TDSDecodingError) {
        guard let codec = type.codec else { throw mismatch(value, writer) }
        try codec.encode(value, as: self, into: &writer)
    }
}

extension SQLDecimal {
    /// The same value with `scale` digits after the point, or nil if digits would be lost or it overflows.
    public func rescaled(to newScale: UInt8) -> SQLDecimal? {
        guard newScale <= 38 else { return nil }
        var m = magnitude
        if newScale > scale {
            let (r, o) = m.multipliedReportingOverflow(by: Civil.pow10(Int(newScale - scale)))
            guard !o else { return nil }
            m = r
        } else if newScale < scale {
            let p = Civil.pow10(Int(scale - newScale))
            guard m % p == 0 else { return nil }
            m /= p
        }
        guard m <= SQLDecimal.maxMagnitude else { return nil }
        return SQLDecimal(isNegative: isNegative, precision: max(precision, newScale), scale: newScale, magnitude: m)
    }
}

extension SQLTime {
    /// The same time at another scale, or nil if digits would be lost.
    public func rescaled(to newScale: UInt8) -> SQLTime? {
        guard newScale <= 7, scale <= 7 else { return nil }
        if newScale >= scale {
            let (t, o) = ticks.multipliedReportingOverflow(by: Civil.powersOf10[Int(newScale - scale)])
            return o ? nil : SQLTime(ticks: t, scale: newScale)
        }
        let p = Civil.powersOf10[Int(scale - newScale)]
        guard ticks % p == 0 else { return nil }
        return SQLTime(ticks: ticks / p, scale: newScale)
    }
}

extension SQLVariant {
    /// A variant whose base type is implied by the value (int -> INT4, string -> NVARCHAR, ...);
    /// nil for NULL, xml, UDT and nested variants, which sql_variant cannot hold.
    public init?(value: SQLValue, collation: Collation = .sqlLatin1GeneralCP1CIAS) {
        let t: TypeInfo
        switch value {
        case .bit: t = TypeInfo(type: .bit, length: 1)
        case .tinyint: t = TypeInfo(type: .int1, length: 1)
        case .smallint: t = TypeInfo(type: .int2, length: 2)
        case .int: t = TypeInfo(type: .int4, length: 4)
        case .bigint: t = TypeInfo(type: .int8, length: 8)
        case .real: t = TypeInfo(type: .flt4, length: 4)
        case .float: t = TypeInfo(type: .flt8, length: 8)
        case .decimal(let d): t = .decimal(precision: d.precision, scale: d.scale)
        case .money: t = TypeInfo(type: .money, length: 8)
        case .smallMoney: t = TypeInfo(type: .money4, length: 4)
        case .date: t = .date
        case .time(let x): t = .time(scale: x.scale)
        case .datetime2(let x): t = .datetime2(scale: x.scale)
        case .datetimeOffset(let x): t = .datetimeOffset(scale: x.utc.time.scale)
        case .datetime: t = TypeInfo(type: .datetime, length: 8)
        case .smallDateTime: t = TypeInfo(type: .datetim4, length: 4)
        case .uniqueIdentifier: t = .uniqueIdentifier
        case .string(let s): t = .nvarchar(max(1, min(4000, s.utf16.count)), collation: collation)
        case .binary(let b): t = .varbinary(max(1, min(8000, b.count)))
        case .null, .xml, .udt, .variant, .json, .vector: return nil
        }
        self.init(baseType: t, value: value)
    }

    /// Writes BaseType, PropBytes, the properties and the data ([MS-TDS] 2.2.5.5.4).
    func encodeBody(into writer: inout ByteWriter) throws(TDSDecodingError) {
        let t = baseType
        writer.writeUInt8(t.type.rawValue)
        switch t.type {
        case .int1, .bit, .int2, .int4, .int8, .flt4, .flt8, .money, .money4, .datetime, .datetim4, .guid, .dateN:
            writer.writeUInt8(0)
        case .decimalN, .numericN:
            writer.writeUInt8(2); writer.writeUInt8(t.precision); writer.writeUInt8(t.scale)
        case .timeN, .datetime2N, .datetimeOffsetN:
            writer.writeUInt8(1); writer.writeUInt8(t.scale)
        case .bigVarBinary, .bigBinary:
            writer.writeUInt8(2); writer.writeUInt16LE(UInt16(clamping: t.length))
        case .bigVarChar, .bigChar, .nvarchar, .nchar:
            writer.writeUInt8(7)
            (t.collation ?? .sqlLatin1GeneralCP1CIAS).encode(into: &writer)
            writer.writeUInt16LE(UInt16(clamping: t.length))
        default:
            throw TDSDecodingError(.invalidValue, offset: writer.count, "\(t.type.name) is not a sql_variant base type")
        }
        guard !value.isNull, !t.isPLP else {
            throw TDSDecodingError(.invalidValue, offset: writer.count, "sql_variant base value must be non-NULL and not PLP")
        }
        try t.encodeData(value, into: &writer)
    }
}

extension SQLValue {
    /// The case name, for error messages ("int", "string", ...). Never contains the value.
    public var kindName: String {
        switch self {
        case .null: return "null"
        case .bit: return "bit"
        case .tinyint: return "tinyint"
        case .smallint: return "smallint"
        case .int: return "int"
        case .bigint: return "bigint"
        case .real: return "real"
        case .float: return "float"
        case .decimal: return "decimal"
        case .money: return "money"
        case .smallMoney: return "smallmoney"
        case .date: return "date"
        case .time: return "time"
        case .datetime2: return "datetime2"
        case .datetimeOffset: return "datetimeoffset"
        case .datetime: return "datetime"
        case .smallDateTime: return "smalldatetime"
        case .uniqueIdentifier: return "uniqueidentifier"
        case .string: return "string"
        case .xml: return "xml"
        case .binary: return "binary"
        case .variant: return "sql_variant"
        case .udt: return "udt"
        case .json: return "json"
        case .vector: return "vector"
        }
    }
}
