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
        try WireColumn(decoding: self).decodeValue(from: &reader)
    }

    /// Decodes a PLP value ([MS-TDS] 2.2.5.2.3) from all its chunks concatenated; `nil` is PLP NULL.
    ///
    /// For varchar(max) (column code page), nvarchar(max) and xml (UTF-16LE), varbinary(max) and UDT
    /// (raw bytes). Error offsets count from the start of `bytes`. Throws `.unsupported` if this
    /// TYPE_INFO is not a PLP type.
    public func decodePLPValue(_ bytes: [UInt8]?) throws(TDSDecodingError) -> SQLValue {
        try WireColumn(decoding: self).decodePLPValue(bytes)
    }
}


// The decoding itself works on ``WireColumn`` (TYPE_INFO without its reference-counted parts), so
// that a row decoder can copy a column's layout per value for free. The length prefix is the type
// byte's rule ([MS-TDS] 2.2.5.2, ``TDSDataType/lengthKind``); the data is its family's codec's
// (``TDSDataType/codec``, the one dispatch).
extension WireColumn {
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
        if isPLP {
            throw reader.error(.unsupported, "PLP value: decode its chunks with decodePLPValue")
        }
        guard let kind = type.lengthKind, let codec = type.codec else {
            throw reader.error(.unknownType, "unknown data type 0x\(String(type.rawValue, radix: 16, uppercase: true))")
        }
        // The common case straight from the bytes (no reader, no allocation), anything else below.
        if let v = quickValue(from: &reader) { return v }
        let n: Int
        switch kind {
        case .fixed(let size):
            n = size
        case .byteLength:
            n = Int(try reader.readUInt8())
            if n == 0 { return .null }
            // BITN has no declared-length rule.
            if n > length, length > 0, type != .bitN { throw longerThanDeclared(n, at: reader.offset - 1, in: reader) }
        case .ushortLength:
            let u = try reader.readUInt16LE()
            if u == 0xFFFF { return .null }
            // A character or binary value longer than its TYPE_INFO declares is read when its bytes
            // are present (Microsoft's ODBC driver refuses it). pysqlbridge declares nvarchar(n) in
            // code points, so "héllo 😀" (7 code points, 8 UTF-16 units) comes as 16 bytes in an
            // nvarchar(7); the USHORTLEN itself bounds the value (at most 65,534 bytes), so reading
            // it costs no unbounded memory. Fixtures/oracle/README.md, "Length rules".
            n = Int(u)
        case .longLength:
            if type == .ssVariant { return try SQLVariantCodec.read(from: &reader) }
            let ptrLength = Int(try reader.readUInt8())
            if ptrLength == 0 { return .null }
            try reader.skip(ptrLength)        // TextPtr
            try reader.skip(8)                // TIMESTAMP
            let at = reader.offset
            let u = try reader.readUInt32LE()
            if u == 0xFFFF_FFFF { return .null }
            guard u <= UInt32(Int32.max) else { throw reader.error(.invalidLength, at: at, "length \(u)") }
            n = Int(u)
        case .plp:
            throw reader.error(.unsupported, "PLP value: decode its chunks with decodePLPValue")
        }
        return try decodeData(codec, from: &reader, count: n, inVariant: false)
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
        guard type.lengthKind == .plp || type == .bigVarBinary || type == .bigVarChar || type == .nvarchar, let codec = type.codec else {
            throw TDSDecodingError(.unsupported, offset: 0, context: type.name, "\(type.name) is not a PLP type")
        }
        return try codec.plpValue(self, bytes)
    }

    /// Decodes `count` data bytes (the length prefix already read) as this type; `inVariant`
    /// for the value of a sql_variant (whose decimal magnitude may be longer than its precision needs).
    func decodeData(from reader: inout ByteReader, count n: Int, inVariant: Bool = false) throws(TDSDecodingError) -> SQLValue {
        guard let codec = type.codec else {
            throw reader.error(.unknownType, "cannot decode a value of type \(type.name)")
        }
        return try decodeData(codec, from: &reader, count: n, inVariant: inVariant)
    }

    @inline(__always)
    private func decodeData(_ codec: any ColumnCodec.Type, from reader: inout ByteReader, count n: Int,
                            inVariant: Bool) throws(TDSDecodingError) -> SQLValue {
        let start = reader.offset
        guard let v = try codec.read(self, from: &reader, count: n, inVariant: inVariant) else {
            throw reader.error(.invalidLength, at: start, "\(n) data byte(s) for \(type.name) \(sqlTypeName)")
        }
        return v
    }

    /// ``quickValue(at:available:size:)`` as a value and its byte count (for tests).
    func quickValue(at p: UnsafeRawPointer, available: Int) -> (value: SQLValue, size: Int)? {
        var size = 0
        guard let v = quickValue(at: p, available: available, size: &size) else { return nil }
        return (v, size)
    }

    /// The common case of the value at `p` ([MS-TDS] 2.2.5.2: its length byte for BYTELEN types;
    /// 2.2.5.5.1 for the data), `available` bytes readable, read as a row block reads it: a
    /// `.fixed`, `.byteLength` or `.decode` column's value that the row scan accepts
    /// (``scannedSize(_:_:at:end:)``; ``checkedSize(at:available:)`` for `.decode`), built by
    /// ``WireRowBlock/decode(_:at:)`` or ``WireRowBlock/decodeScanned(_:at:)`` (the wire bytes
    /// are the block's for these kinds), with no reader and no allocation for fixed-size values;
    /// nil when the value is anything but the common case (incomplete, malformed, a decimal
    /// magnitude beyond its precision, another kind, a column with no scan rule:
    /// ``init(decoding:)``). The full decoder gives the same value for everything this accepts.
    func quickValue(at p: UnsafeRawPointer, available: Int, size: inout Int) -> SQLValue? {
        guard available > 0, kind == .fixed || kind == .byteLength || kind == .decode else { return nil }
        let n = withUnsafePointer(to: self) { WireColumn.scannedSize($0, p.assumingMemoryBound(to: UInt8.self), at: 0, end: available) }
        guard n > 0, let v = kind == .decode ? WireRowBlock.decodeScanned(self, at: p) : WireRowBlock.decode(self, at: p) else { return nil }
        size = n
        return v
    }
}

extension TypeInfo {
    /// Decodes the data bytes of one value of this TYPE_INFO, given whole with no length prefix
    /// (a fixed-size type's bytes, a PLP type's assembled chunks): the seam Always Encrypted
    /// decodes a decrypted value through, by the same codec as any other value. An empty
    /// non-PLP value of a type that cannot be empty is an error, never NULL.
    /// - Throws: the family's ``TDSDecodingError`` (offsets from the start of `bytes`).
    package func decodeValue(data bytes: [UInt8]) throws(TDSDecodingError) -> SQLValue {
        let layout = WireColumn(decoding: self)
        if type.lengthKind == .plp || isPLP { return try layout.decodePLPValue(bytes) }
        var reader = ByteReader(bytes)
        return try TDSDecodingError.inContext(type.name) { () throws(TDSDecodingError) in
            try layout.decodeData(from: &reader, count: bytes.count)
        }
    }
}
