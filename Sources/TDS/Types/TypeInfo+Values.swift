import Foundation

// [MS-TDS] 2.2.5.2 data type dependent data streams, and 2.2.5.5 data type definitions.
extension TypeInfo {
    // MARK: Decoding

    /// Decodes one non-PLP value per this TYPE_INFO: the length prefix the type uses, then the data.
    ///
    /// - FIXEDLEN types: no prefix, the type's size (NULLTYPE: nothing, `.null`).
    /// - BYTELEN types: 1-byte length, 0 = NULL (DATEN 3, TIMEN 3-5, DATETIME2N +3, DATETIMEOFFSETN +5
    ///   bytes by scale; DECIMALN/NUMERICN: sign byte then magnitude).
    /// - USHORTLEN types: 2-byte length, 0xFFFF = NULL.
    /// - TEXT/NTEXT/IMAGE: TextPtr (1-byte length, 0 = NULL), 8-byte timestamp, 4-byte length, data.
    /// - SSVARIANT: 4-byte length (0 = NULL), base type, property byte count, properties, data.
    ///
    /// Throws `.truncated` if the input ends before the value does (nothing is allocated by a
    /// declared length before the bytes are there), `.invalidLength` when a length disagrees with
    /// the type (a decimal longer than its precision allows, an int of 3 bytes), `.invalidValue`
    /// for out-of-range values (dates, times, offsets outside -840...840, decimal digits beyond the
    /// precision), `.invalidEncoding` for text invalid in its encoding, and `.unsupported` for PLP
    /// types (use ``decodePLPValue(_:)``). The error's context is the type name.
    ///
    /// On any error the reader is left where it was, so an incremental caller can retry the value
    /// when more bytes arrive.
    public func decodeValue(from reader: inout ByteReader) throws(TDSDecodingError) -> SQLValue {
        try ValueLayout(self).decodeValue(from: &reader)
    }

    /// Decodes a PLP value ([MS-TDS] 2.2.5.2.3) from all its chunks concatenated; `nil` is PLP NULL.
    ///
    /// For varchar(max) (column code page), nvarchar(max) and xml (UTF-16LE), varbinary(max) and UDT
    /// (raw bytes). Error offsets count from the start of `bytes`. Throws `.unsupported` if this
    /// TYPE_INFO is not a PLP type.
    public func decodePLPValue(_ bytes: [UInt8]?) throws(TDSDecodingError) -> SQLValue {
        try ValueLayout(self).decodePLPValue(bytes)
    }

    static func readDate(from reader: inout ByteReader) throws(TDSDecodingError) -> SQLDate {
        let at = reader.offset
        let days = Int32(try reader.readUIntLE(count: 3))
        let d = SQLDate(days: days)
        guard d.isValid else { throw reader.error(.invalidValue, at: at, "date \(days) days after 0001-01-01 beyond 9999-12-31") }
        return d
    }

    static func readTime(from reader: inout ByteReader, scale: UInt8) throws(TDSDecodingError) -> SQLTime {
        let at = reader.offset
        guard scale <= 7 else { throw reader.error(.invalidValue, at: at, "time scale \(scale)") }
        let ticks = try reader.readUIntLE(count: SQLTime.wireLength(scale: scale))
        let t = SQLTime(ticks: ticks, scale: scale)
        guard t.isValid else { throw reader.error(.invalidValue, at: at, "time \(ticks) units of 10^-\(scale) s is 24:00 or later") }
        return t
    }
}


// The decoding itself works on ``ValueLayout`` (TYPE_INFO without its reference-counted parts), so
// that a row decoder can copy a column's layout per value for free.
extension ValueLayout {
    /// ``TypeInfo/decodeValue(from:)``.
    func decodeValue(from reader: inout ByteReader) throws(TDSDecodingError) -> SQLValue {
        let start = reader.offset
        do {
            return try decodeValueBody(from: &reader)
        } catch {
            reader.offset = start
            throw error.withContext(type.name)
        }
    }

    @inline(__always)
    private func decodeValueBody(from reader: inout ByteReader) throws(TDSDecodingError) -> SQLValue {
        switch type {
        // FIXEDLEN: hot path, no allocation.
        case .int4: return try reader.readInPlace(4) { IntegerCodec.value(at: $0, count: 4) }
        case .int8: return try reader.readInPlace(8) { IntegerCodec.value(at: $0, count: 8) }
        case .int2: return try reader.readInPlace(2) { IntegerCodec.value(at: $0, count: 2) }
        case .int1: return try reader.readInPlace(1) { IntegerCodec.value(at: $0, count: 1) }
        case .bit: return try reader.readInPlace(1) { BitCodec.value(at: $0) }
        case .flt4: return try reader.readInPlace(4) { FloatCodec.value(at: $0, count: 4) }
        case .flt8: return try reader.readInPlace(8) { FloatCodec.value(at: $0, count: 8) }
        case .money: return try reader.readInPlace(8) { MoneyCodec.value(at: $0, count: 8) }
        case .datetime:
            if let v = quickValue(from: &reader) { return v }
            return try decodeData(from: &reader, count: 8, baseScale: scale)
        // The common case straight from the bytes, anything else by the generic BYTELEN path below.
        case .decimalN, .numericN, .dateN, .timeN, .datetime2N, .datetimeOffsetN, .datetimN, .moneyN, .guid:
            if let v = quickValue(from: &reader) { return v }
        case .money4: return try reader.readInPlace(4) { MoneyCodec.value(at: $0, count: 4) }
        case .datetim4: return try decodeData(from: &reader, count: 4, baseScale: scale)
        case .null: return .null
        // Common nullable types (COLMETADATA of TDS 7.2+ servers), decoded without the generic path.
        case .intN:
            let n = try reader.readUInt8()
            if Int(n) > length, length > 0 { throw longerThanDeclared(Int(n), at: reader.offset - 1, in: reader) }
            if n == 0 { return .null }
            if let v = try IntegerCodec.read(from: &reader, count: Int(n)) { return v }
            return try decodeData(from: &reader, count: Int(n), baseScale: scale)   // its length error
        case .fltN:
            let n = try reader.readUInt8()
            if Int(n) > length, length > 0 { throw longerThanDeclared(Int(n), at: reader.offset - 1, in: reader) }
            if n == 0 { return .null }
            if let v = try FloatCodec.read(from: &reader, count: Int(n)) { return v }
            return try decodeData(from: &reader, count: Int(n), baseScale: scale)   // its length error
        case .bitN:
            let n = try reader.readUInt8()
            if n == 0 { return .null }
            if let v = try BitCodec.read(from: &reader, count: Int(n)) { return v }
            return try decodeData(from: &reader, count: Int(n), baseScale: scale)   // its length error
        case .nvarchar, .nchar:
            if isPLP { break }
            let n = try reader.readUInt16LE()
            if n == 0xFFFF { return .null }
            // Longer than declared: read (see ushortLength below).
            return .string(try TextCodec.decodeUTF16LE(from: &reader, byteCount: Int(n)))
        default: break
        }
        if isPLP {
            throw reader.error(.unsupported, "PLP value: decode its chunks with decodePLPValue")
        }
        guard let kind = type.lengthKind else {
            throw reader.error(.unknownType, "unknown data type 0x\(String(type.rawValue, radix: 16, uppercase: true))")
        }
        switch kind {
        case .fixed(let size):
            return try decodeData(from: &reader, count: size, baseScale: scale)
        case .byteLength:
            let n = Int(try reader.readUInt8())
            if n == 0 { return .null }
            if n > length, length > 0 { throw longerThanDeclared(n, at: reader.offset - 1, in: reader) }
            return try decodeData(from: &reader, count: n, baseScale: scale)
        case .ushortLength:
            let n = try reader.readUInt16LE()
            if n == 0xFFFF { return .null }
            // A character or binary value longer than its TYPE_INFO declares is read when its bytes
            // are present (Microsoft's ODBC driver refuses it). pysqlbridge declares nvarchar(n) in
            // code points, so "héllo 😀" (7 code points, 8 UTF-16 units) comes as 16 bytes in an
            // nvarchar(7); the USHORTLEN itself bounds the value (at most 65,534 bytes), so reading
            // it costs no unbounded memory. Fixtures/oracle/README.md, "Length rules".
            return try decodeData(from: &reader, count: Int(n), baseScale: scale)
        case .longLength:
            if type == .ssVariant { return try SQLVariantCodec.read(from: &reader) }
            let ptrLength = Int(try reader.readUInt8())
            if ptrLength == 0 { return .null }
            try reader.skip(ptrLength)        // TextPtr
            try reader.skip(8)                // TIMESTAMP
            let at = reader.offset
            let n = try reader.readUInt32LE()
            if n == 0xFFFF_FFFF { return .null }
            guard n <= UInt32(Int32.max) else { throw reader.error(.invalidLength, at: at, "length \(n)") }
            return try decodeData(from: &reader, count: Int(n), baseScale: scale)
        case .plp:
            throw reader.error(.unsupported, "PLP value: decode its chunks with decodePLPValue")
        }
    }

    /// ``quickValue(at:available:size:)`` at the reader's position: the value, consumed, or nil
    /// (nothing consumed).
    @inline(__always)
    private func quickValue(from reader: inout ByteReader) -> SQLValue? {
        let o = reader.offset, available = reader.endIndex - o
        var size = 0
        guard available > 0,
              let v = reader.bytes.withUnsafeBytes({ quickValue(at: $0.baseAddress! + o, available: available, size: &size) })
        else { return nil }
        reader.offset = o + size
        return v
    }

    /// A fixed-size or BYTELEN value longer than its column's TYPE_INFO allows (an INTN(4) of 8
    /// bytes): Microsoft's ODBC driver refuses it ("Protocol error in TDS stream"), and so do we.
    /// A declared length of 0 (no maximum given) is not checked. USHORTLEN character and binary
    /// values longer than declared are read (see ``decodeValue(from:)``).
    @inline(never)
    private func longerThanDeclared(_ n: Int, at offset: Int, in reader: ByteReader) -> TDSDecodingError {
        reader.error(.invalidLength, at: offset, "\(n) data byte(s) for \(sqlTypeName), longer than the \(length) its TYPE_INFO declares")
    }

    /// ``TypeInfo/decodePLPValue(_:)``.
    func decodePLPValue(_ bytes: [UInt8]?) throws(TDSDecodingError) -> SQLValue {
        guard let bytes else { return .null }
        switch type {
        case .bigVarBinary:
            return .binary(bytes)   // the assembled chunks are the value: no second copy
        case .udt:
            return UDTCodec.plpValue(bytes)
        case .json:
            return .json(try JSONCodec.decode(bytes))
        case .bigVarChar, .nvarchar, .xml:
            var reader = ByteReader(bytes)
            do {
                return try decodeData(from: &reader, count: bytes.count, baseScale: scale)
            } catch {
                throw error.withContext(type.name)
            }
        default:
            throw TDSDecodingError(.unsupported, offset: 0, context: type.name, "\(type.name) is not a PLP type")
        }
    }

    /// Decodes `count` data bytes (the length prefix already read) as this type; `inVariant`
    /// for the value of a sql_variant (whose decimal magnitude may be longer than its precision needs).
    func decodeData(from reader: inout ByteReader, count n: Int, baseScale: UInt8,
                    inVariant: Bool = false) throws(TDSDecodingError) -> SQLValue {
        let start = reader.offset
        func wrongLength() -> TDSDecodingError {
            reader.error(.invalidLength, at: start, "\(n) data byte(s) for \(type.name) \(sqlTypeName)")
        }
        switch type {
        case .int1, .int2, .int4, .int8, .intN:
            // A FIXEDLEN type's own size; INTN 1, 2, 4 or 8.
            guard type == .intN || type.lengthKind == .fixed(size: n),
                  let v = try IntegerCodec.read(from: &reader, count: n) else { throw wrongLength() }
            return v
        case .bit, .bitN:
            guard let v = try BitCodec.read(from: &reader, count: n) else { throw wrongLength() }
            return v
        case .flt4, .flt8, .fltN:
            guard type == .fltN || type.lengthKind == .fixed(size: n),
                  let v = try FloatCodec.read(from: &reader, count: n) else { throw wrongLength() }
            return v
        case .money, .money4, .moneyN:
            guard let v = try MoneyCodec.read(from: &reader, count: n) else { throw wrongLength() }
            return v
        case .datetime, .datetim4, .datetimN:
            switch n {
            case 4:
                let days = try reader.readUInt16LE()
                let minutes = try reader.readUInt16LE()
                let v = SQLSmallDateTime(days: days, minutes: minutes)
                guard v.isValid else { throw reader.error(.invalidValue, at: start + 2, "smalldatetime minutes \(minutes)") }
                return .smallDateTime(v)
            case 8:
                let days = try reader.readInt32LE()
                let ticks = try reader.readUInt32LE()
                let v = SQLDateTime(days: days, ticks: ticks)
                guard v.isValid else { throw reader.error(.invalidValue, at: start, "datetime days \(days) ticks \(ticks)") }
                return .datetime(v)
            default: throw wrongLength()
            }
        case .guid:
            guard let v = try GUIDCodec.read(from: &reader, count: n) else { throw wrongLength() }
            return v
        case .decimal, .numeric, .decimalN, .numericN:
            // A sign byte and a magnitude of 0-16 bytes whose length comes from the value, as
            // Microsoft's ODBC driver reads it: in a column at most the precision's length
            // (a longer one is refused), inside sql_variant up to 16 bytes whatever the precision.
            // No magnitude bytes is zero. A magnitude beyond the precision (but within 38
            // digits) is the value sent, with its precision widened to its digits.
            let limit = inVariant ? 17 : SQLDecimal.wireLength(precision: precision)
            guard (1...17).contains(n) else { throw wrongLength() }
            guard n <= limit else {
                throw reader.error(.invalidLength, at: start, "decimal of \(n) bytes for precision \(precision)")
            }
            try reader.require(n)
            let sign = try reader.readUInt8()
            guard sign <= 1 else { throw reader.error(.invalidValue, at: start, "decimal sign byte \(sign)") }
            var mag: UInt128 = 0
            for i in 0 ..< n - 1 { mag |= UInt128(reader.bytes[reader.offset + i]) << (8 * i) }
            reader.offset += n - 1
            guard mag <= SQLDecimal.maxMagnitude else {
                throw reader.error(.invalidValue, at: start, "decimal magnitude beyond 38 digits")
            }
            var p = precision
            while p < 38 && mag >= Civil.powersOf10Wide[Int(p)] { p += 1 }
            return .decimal(SQLDecimal(isNegative: sign == 0, precision: p, scale: scale, magnitude: mag))
        case .dateN:
            guard n == 3 else { throw wrongLength() }
            return .date(try TypeInfo.readDate(from: &reader))
        case .timeN:
            guard n == SQLTime.wireLength(scale: baseScale) else { throw wrongLength() }
            return .time(try TypeInfo.readTime(from: &reader, scale: baseScale))
        case .datetime2N:
            guard n == SQLTime.wireLength(scale: baseScale) + 3 else { throw wrongLength() }
            let time = try TypeInfo.readTime(from: &reader, scale: baseScale)
            return .datetime2(SQLDateTime2(date: try TypeInfo.readDate(from: &reader), time: time))
        case .datetimeOffsetN:
            guard n == SQLTime.wireLength(scale: baseScale) + 5 else { throw wrongLength() }
            let time = try TypeInfo.readTime(from: &reader, scale: baseScale)
            let date = try TypeInfo.readDate(from: &reader)
            let at = reader.offset
            let offset = try reader.readInt16LE()
            guard (-840...840).contains(offset) else {
                throw reader.error(.invalidValue, at: at, "datetimeoffset offset \(offset) minutes outside -840...840")
            }
            return .datetimeOffset(SQLDateTimeOffset(utc: SQLDateTime2(date: date, time: time), offsetMinutes: offset))
        case .char, .varchar, .bigChar, .bigVarChar, .text:
            return .string(try TextCodec.decode(from: &reader, count: n, collation: collation))
        case .nchar, .nvarchar, .ntext:
            return .string(try TextCodec.decodeUTF16LE(from: &reader, byteCount: n))
        case .xml:
            return try XMLCodec.read(from: &reader, count: n)
        case .binary, .varbinary, .bigBinary, .bigVarBinary, .image:
            return .binary(try reader.readBytes(n))
        case .udt:
            return try UDTCodec.read(from: &reader, count: n)
        case .vector:
            guard !inVariant else { throw reader.error(.invalidValue, at: start, "vector is not a sql_variant base type") }
            return .vector(try SQLVector.decode(from: &reader, count: n, declaredLength: length,
                                                declaredElement: SQLVector.ElementType(rawValue: scale)))
        case .json:
            // Only when the bytes come as one run (a PLP value's assembled chunks, a bulk-load row).
            try reader.require(n)
            let bytes = try reader.readBytes(n)
            do { return .json(try JSONCodec.decode(bytes)) } catch { throw error.shifted(by: reader.baseOffset + start) }
        case .null:
            guard n == 0 else { throw wrongLength() }
            return .null
        default:
            throw reader.error(.unknownType, at: start, "cannot decode a value of type \(type.name)")
        }
    }

}

// The common fixed-size BYTELEN types read straight from the bytes, for the row paths
// (``ValueLayout/decodeValue(from:)``, the wire row scan and ``WireRowBlock/value(row:column:)``).
extension ValueLayout {
    /// ``quickValue(at:available:size:)`` as a value and its byte count (for tests).
    func quickValue(at p: UnsafeRawPointer, available: Int) -> (value: SQLValue, size: Int)? {
        var size = 0
        guard let v = quickValue(at: p, available: available, size: &size) else { return nil }
        return (v, size)
    }

    /// Decodes the value at `p` ([MS-TDS] 2.2.5.2: its length byte for BYTELEN types; 2.2.5.5.1
    /// for the data), `available` bytes readable,
    /// for decimal/numeric, date, time, datetime2, datetimeoffset, datetime, smalldatetime,
    /// money/smallmoney (MONEYN) and uniqueidentifier, with no reader and no allocation; returns the
    /// value, its byte count (prefix included) in `size`, or nil when the value is anything but the
    /// common case (incomplete, malformed, a decimal magnitude beyond its precision, another type):
    /// the caller then decodes it with ``decodeValue(from:)``, which gives the same value for
    /// everything this accepts, and reports the error of everything it declines that is wrong.
    @inline(__always)
    func quickValue(at p: UnsafeRawPointer, available: Int, size: inout Int) -> SQLValue? {
        @inline(__always) func u8(_ i: Int) -> UInt8 { p.load(fromByteOffset: i, as: UInt8.self) }
        @inline(__always) func u16(_ i: Int) -> UInt16 { UInt16(littleEndian: p.loadUnaligned(fromByteOffset: i, as: UInt16.self)) }
        @inline(__always) func u32(_ i: Int) -> UInt32 { UInt32(littleEndian: p.loadUnaligned(fromByteOffset: i, as: UInt32.self)) }
        @inline(__always) func u64(_ i: Int) -> UInt64 { UInt64(littleEndian: p.loadUnaligned(fromByteOffset: i, as: UInt64.self)) }
        /// `count` (3...5) bytes little-endian at `i`.
        @inline(__always) func uint(_ i: Int, _ count: Int) -> UInt64 {
            switch count {
            case 3: return UInt64(u16(i)) | UInt64(u8(i + 2)) << 16
            case 4: return UInt64(u32(i))
            default: return UInt64(u32(i)) | UInt64(u8(i + 4)) << 32
            }
        }
        /// A time of `scale` at `i` (`SQLTime.wireLength(scale:)` bytes), nil at 24:00 or later.
        @inline(__always) func time(_ i: Int, _ count: Int) -> SQLTime? {
            let ticks = uint(i, count)
            guard ticks < 86_400 &* Civil.powersOf10[Int(scale)] else { return nil }
            return SQLTime(ticks: ticks, scale: scale)
        }
        /// A date at `i` (3 bytes), nil beyond 9999-12-31.
        @inline(__always) func date(_ i: Int) -> SQLDate? {
            let days = uint(i, 3)
            guard days <= UInt64(Civil.maxDay) else { return nil }
            return SQLDate(days: Int32(truncatingIfNeeded: days))
        }
        if isPLP || available < 1 { return nil }
        let t = type
        // DATETIME and DATETIM4 are FIXEDLEN: no length byte.
        if t == .datetime {
            guard available >= 8 else { return nil }
            let v = SQLDateTime(days: Int32(bitPattern: u32(0)), ticks: u32(4))
            guard v.isValid else { return nil }; size = 8; return .datetime(v)
        }
        if t == .datetim4 {
            guard available >= 4 else { return nil }
            let v = SQLSmallDateTime(days: u16(0), minutes: u16(2))
            guard v.isValid else { return nil }; size = 4; return .smallDateTime(v)
        }
        let n = Int(u8(0))
        switch t {
        case .decimalN, .numericN, .decimal, .numeric, .dateN, .timeN, .datetime2N, .datetimeOffsetN, .datetimN, .moneyN, .guid: break
        default: return nil
        }
        if n == 0 { size = 1; return .null }
        guard available > n, length <= 0 || n <= length else { return nil }
        switch t {
        case .decimalN, .numericN, .decimal, .numeric:
            guard precision <= 38, n <= SQLDecimal.wireLength(precision: precision) else { return nil }
            let sign = u8(1)
            guard sign <= 1 else { return nil }
            let m = n - 1
            var lo: UInt64 = 0, hi: UInt64 = 0
            switch m {
            case 4: lo = UInt64(u32(2))
            case 8: lo = u64(2)
            case 12: lo = u64(2); hi = UInt64(u32(10))
            case 16: lo = u64(2); hi = u64(10)
            default:
                for k in 0 ..< m {
                    if k < 8 { lo |= UInt64(u8(2 + k)) << UInt64(8 * k) } else { hi |= UInt64(u8(2 + k)) << UInt64(8 * (k - 8)) }
                }
            }
            let mag = UInt128(hi) << 64 | UInt128(lo)
            // A magnitude beyond the precision (widened by the full decoder) is not the common case.
            guard mag < Civil.powersOf10Wide[Int(precision)] else { return nil }
            size = 1 + n; return .decimal(SQLDecimal(isNegative: sign == 0, precision: precision, scale: scale, magnitude: mag))
        case .datetime2N:
            guard scale <= 7 else { return nil }
            let tl = SQLTime.wireLength(scale: scale)
            guard n == tl + 3, let tm = time(1, tl), let d = date(1 + tl) else { return nil }
            size = 1 + n; return .datetime2(SQLDateTime2(date: d, time: tm))
        case .dateN:
            guard n == 3, let d = date(1) else { return nil }
            size = 4; return .date(d)
        case .timeN:
            guard scale <= 7 else { return nil }
            let tl = SQLTime.wireLength(scale: scale)
            guard n == tl, let tm = time(1, tl) else { return nil }
            size = 1 + n; return .time(tm)
        case .datetimeOffsetN:
            guard scale <= 7 else { return nil }
            let tl = SQLTime.wireLength(scale: scale)
            guard n == tl + 5, let tm = time(1, tl), let d = date(1 + tl) else { return nil }
            let offset = Int16(bitPattern: u16(4 + tl))
            guard (-840...840).contains(offset) else { return nil }
            size = 1 + n; return .datetimeOffset(SQLDateTimeOffset(utc: SQLDateTime2(date: d, time: tm), offsetMinutes: offset))
        case .datetimN:
            if n == 8 {
                let v = SQLDateTime(days: Int32(bitPattern: u32(1)), ticks: u32(5))
                guard v.isValid else { return nil }; size = 9; return .datetime(v)
            }
            if n == 4 {
                let v = SQLSmallDateTime(days: u16(1), minutes: u16(3))
                guard v.isValid else { return nil }; size = 5; return .smallDateTime(v)
            }
            return nil
        case .moneyN:
            guard n == 8 || n == 4 else { return nil }
            size = 1 + n; return MoneyCodec.value(at: p + 1, count: n)
        case .guid:
            guard n == 16 else { return nil }
            size = 17; return GUIDCodec.value(at: p + 1)
        default:
            return nil
        }
    }
}
