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
            return try CharacterCodec.readUTF16(from: &reader, count: Int(n))
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
            return BinaryCodec.plpValue(bytes)
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
            guard let v = try DateTimeCodec.read(from: &reader, count: n) else { throw wrongLength() }
            return v
        case .guid:
            guard let v = try GUIDCodec.read(from: &reader, count: n) else { throw wrongLength() }
            return v
        case .decimal, .numeric, .decimalN, .numericN:
            guard let v = try DecimalCodec.read(from: &reader, count: n, precision: precision, scale: scale,
                                                inVariant: inVariant) else { throw wrongLength() }
            return v
        case .dateN, .timeN, .datetime2N, .datetimeOffsetN:
            guard let v = try DateTime73Codec.read(type, from: &reader, count: n, scale: baseScale) else { throw wrongLength() }
            return v
        case .char, .varchar, .bigChar, .bigVarChar, .text:
            return try CharacterCodec.readSingleByte(from: &reader, count: n, collation: collation)
        case .nchar, .nvarchar, .ntext:
            return try CharacterCodec.readUTF16(from: &reader, count: n)
        case .xml:
            return try XMLCodec.read(from: &reader, count: n)
        case .binary, .varbinary, .bigBinary, .bigVarBinary, .image:
            return try BinaryCodec.read(from: &reader, count: n)
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

// The common fixed-size BYTELEN types read straight from the bytes and checked, for the token
// decoder (``ValueLayout/decodeValue(from:)``); each family's rule is its codec's. The wire row
// scan checks the same values without building them (``WireColumn/checkedSize(at:available:)``,
// which accepts exactly these), and a row block reads them without a second check
// (``WireRowBlock/decodeScanned(_:at:)``).
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
        if isPLP || available < 1 { return nil }
        let t = type
        // DATETIME and DATETIM4 are FIXEDLEN: no length byte.
        if t == .datetime {
            guard available >= 8, let v = DateTimeCodec.value(at: p, count: 8) else { return nil }
            size = 8; return v
        }
        if t == .datetim4 {
            guard available >= 4, let v = DateTimeCodec.value(at: p, count: 4) else { return nil }
            size = 4; return v
        }
        let n = Int(p.load(as: UInt8.self))
        switch t {
        case .decimalN, .numericN, .decimal, .numeric, .dateN, .timeN, .datetime2N, .datetimeOffsetN, .datetimN, .moneyN, .guid: break
        default: return nil
        }
        if n == 0 { size = 1; return .null }
        guard available > n, length <= 0 || n <= length else { return nil }
        switch t {
        case .decimalN, .numericN, .decimal, .numeric:
            guard let v = DecimalCodec.quickValue(at: p + 1, count: n, precision: precision, scale: scale) else { return nil }
            size = 1 + n; return v
        case .datetime2N:
            guard let v = DateTime73Codec.dateTime2Value(at: p + 1, count: n, scale: scale) else { return nil }
            size = 1 + n; return v
        case .dateN:
            guard let v = DateTime73Codec.dateValue(at: p + 1, count: n) else { return nil }
            size = 1 + n; return v
        case .timeN:
            guard let v = DateTime73Codec.timeValue(at: p + 1, count: n, scale: scale) else { return nil }
            size = 1 + n; return v
        case .datetimeOffsetN:
            guard let v = DateTime73Codec.dateTimeOffsetValue(at: p + 1, count: n, scale: scale) else { return nil }
            size = 1 + n; return v
        case .datetimN:
            guard let v = DateTimeCodec.value(at: p + 1, count: n) else { return nil }
            size = 1 + n; return v
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
