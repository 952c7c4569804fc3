// Always Encrypted normalization (CryptoMetaData NormVersion 1, [MS-TDS] 2.2.7.4): the bytes
// that are encrypted are not always a value's TDS data bytes. The rules below are those
// Microsoft.Data.SqlClient follows before encrypting (TdsParser.SerializeUnencryptedValue,
// SerializeUnencryptedSqlValue) and after decrypting (TdsParser.DeserializeUnencryptedValue),
// read there, not copied:
//
// - tinyint, smallint, int, bigint: a little-endian 8-byte integer (SerializeLong for every width).
// - bit: a little-endian 8-byte integer, 0 or 1 (SerializeLong of the boolean); any non-zero
//   integer reads as 1.
// - decimal/numeric: the sign byte (1 = positive) and the magnitude as four 4-byte little-endian
//   integers, 17 bytes whatever the precision (SerializeDecimal); a shorter magnitude (4, 8 or 12
//   bytes) is read too.
// - money and smallmoney: 8 bytes, the high 4 bytes then the low 4 (little-endian each), as
//   money on the wire: smallmoney is widened to money (SerializeCurrency).
// - real 4 bytes, float 8; datetime 8, smalldatetime 4; date 3; uniqueidentifier 16: as on the
//   wire.
// - time, datetime2, datetimeoffset: the time at scale 7 whatever the column's scale (the value
//   at the column's scale, times 10^(7 - scale)) in 5 bytes, then the date's 3, then the offset's
//   2: 5, 8 and 10 bytes (SerializeTime, SerializeDateTime2, SerializeDateTimeOffset).
// - char, varchar, nchar, nvarchar, binary, varbinary (and their max forms): the bytes as they
//   are, not padded (the column's code page, UTF-16LE for n-types); after decrypting, char and
//   nchar are padded with spaces and binary with zeros to the declared length.
//
// Every other type (text, ntext, image, xml, sql_variant, timestamp, UDT, json, vector) cannot be
// encrypted: `.unsupported`.
extension TypeInfo {
    /// Whether Always Encrypted can encrypt values of this type (see the rules above).
    package var isEncryptable: Bool { normalizedWidth != .unsupported }

    private enum NormalizedWidth: Equatable {
        /// Little-endian 8-byte integer, narrowed to `width` data bytes (`unsigned`: tinyint).
        case integer(width: Int, unsigned: Bool)
        /// An 8-byte integer 0 or 1 as one data byte.
        case bit
        /// Sign byte and 16-byte magnitude, narrowed to `width` data bytes by precision.
        case decimal(width: Int)
        /// money (`width` 8) or smallmoney (`width` 4): 8 bytes, high half first.
        case money(width: Int)
        /// time, datetime2, datetimeoffset: the time at scale 7 in 5 bytes, then `rest` bytes
        /// (date, offset) as on the wire.
        case time(rest: Int)
        /// Exactly these many bytes, as on the wire.
        case exact(Int)
        /// The bytes as they are (strings, binary); after decrypting, padded with `pad` (a
        /// repeated unit: a space, a UTF-16LE space, a zero) to the declared length when `pad`
        /// is not empty (char, nchar, binary).
        case asIs(pad: [UInt8])
        case unsupported
    }

    private var normalizedWidth: NormalizedWidth {
        switch type {
        case .int1: return .integer(width: 1, unsigned: true)
        case .int2: return .integer(width: 2, unsigned: false)
        case .int4: return .integer(width: 4, unsigned: false)
        case .int8: return .integer(width: 8, unsigned: false)
        case .intN:
            guard [1, 2, 4, 8].contains(length) else { return .unsupported }
            return .integer(width: length, unsigned: length == 1)
        case .bit, .bitN: return .bit
        case .decimal, .numeric, .decimalN, .numericN:
            guard (1 ... 38).contains(precision) else { return .unsupported }
            // [MS-TDS] 2.2.5.5.1.3: the magnitude takes 4, 8, 12 or 16 bytes by precision.
            return .decimal(width: precision <= 9 ? 5 : precision <= 19 ? 9 : precision <= 28 ? 13 : 17)
        case .money: return .money(width: 8)
        case .money4: return .money(width: 4)
        case .moneyN: return [4, 8].contains(length) ? .money(width: length) : .unsupported
        case .flt4: return .exact(4)
        case .flt8: return .exact(8)
        case .fltN: return [4, 8].contains(length) ? .exact(length) : .unsupported
        case .datetime: return .exact(8)
        case .datetim4: return .exact(4)
        case .datetimN: return [4, 8].contains(length) ? .exact(length) : .unsupported
        case .guid: return .exact(16)
        case .dateN: return .exact(3)
        case .timeN, .datetime2N, .datetimeOffsetN:
            guard scale <= 7 else { return .unsupported }
            return .time(rest: type == .timeN ? 0 : type == .datetime2N ? 3 : 5)
        case .bigChar, .char: return .asIs(pad: [0x20])
        case .nchar: return .asIs(pad: [0x20, 0x00])
        case .bigBinary, .binary: return .asIs(pad: [0x00])
        case .bigVarChar, .nvarchar, .bigVarBinary, .varchar, .varbinary:
            return .asIs(pad: [])
        default: return .unsupported
        }
    }

    /// The data bytes (no length prefix) of the value whose normalized plaintext is `plaintext`:
    /// what this type's codec reads.
    /// - Throws: `.unsupported` for a type that cannot be encrypted; `.invalidLength` for a
    ///   plaintext of the wrong width; `.invalidValue` for an integer outside this type's range,
    ///   a bit other than 0 or 1, a decimal magnitude beyond its precision's bytes.
    package func denormalized(_ plaintext: [UInt8]) throws(TDSDecodingError) -> [UInt8] {
        switch normalizedWidth {
        case .unsupported:
            throw TDSDecodingError(.unsupported, offset: 0, context: type.name, "\(sqlTypeName) cannot be an encrypted column's type")
        case .integer(let width, let unsigned):
            let v = try Self.int64(plaintext, type.name)
            let fits: Bool
            switch (width, unsigned) {
            case (1, _): fits = (0 ... 255).contains(v)
            case (2, _): fits = (Int64(Int16.min) ... Int64(Int16.max)).contains(v)
            case (4, _): fits = (Int64(Int32.min) ... Int64(Int32.max)).contains(v)
            default: fits = true
            }
            guard fits else {
                throw TDSDecodingError(.invalidValue, offset: 0, context: type.name, "decrypted integer \(v) does not fit \(sqlTypeName)")
            }
            return Array(plaintext.prefix(width))
        case .bit:
            return [try Self.int64(plaintext, type.name) != 0 ? 1 : 0]
        case .decimal(let width):
            guard [5, 9, 13, 17].contains(plaintext.count) else {
                throw TDSDecodingError(.invalidLength, offset: 0, context: type.name,
                                       "a decrypted decimal is 17 bytes (or 5, 9, 13), not \(plaintext.count)")
            }
            guard plaintext.dropFirst(width).allSatisfy({ $0 == 0 }) else {
                throw TDSDecodingError(.invalidValue, offset: width, context: type.name,
                                       "decrypted decimal magnitude is longer than precision \(precision) allows")
            }
            let data = Array(plaintext.prefix(width))
            return data + [UInt8](repeating: 0, count: width - data.count)
        case .money(let width):
            guard plaintext.count == 8 else {
                throw TDSDecodingError(.invalidLength, offset: 0, context: type.name, "a decrypted money is 8 bytes, not \(plaintext.count)")
            }
            if width == 8 { return plaintext }
            // 8-byte money: the high 4 bytes first ([MS-TDS] 2.2.5.5.1.4).
            var reader = ByteReader(plaintext)
            let units = Int64(try reader.readInt32LE()) << 32 | Int64(try reader.readUInt32LE())
            guard let small = Int32(exactly: units) else {
                throw TDSDecodingError(.invalidValue, offset: 0, context: type.name, "decrypted money \(units) does not fit smallmoney")
            }
            return Self.bytesLE(UInt64(UInt32(bitPattern: small)), count: 4)
        case .time(let rest):
            guard plaintext.count == 5 + rest else {
                throw TDSDecodingError(.invalidLength, offset: 0, context: type.name,
                                       "a decrypted \(sqlTypeName) is \(5 + rest) bytes (time at scale 7), not \(plaintext.count)")
            }
            var reader = ByteReader(plaintext)
            let ticks = try reader.readUIntLE(count: 5) / Civil.powersOf10[7 - Int(scale)]
            return Self.bytesLE(ticks, count: SQLTime.wireLength(scale: scale)) + plaintext[5...]
        case .exact(let n):
            guard plaintext.count == n else {
                throw TDSDecodingError(.invalidLength, offset: 0, context: type.name,
                                       "a decrypted \(sqlTypeName) is \(n) bytes, not \(plaintext.count)")
            }
            return plaintext
        case .asIs(let pad):
            guard !pad.isEmpty else { return plaintext }
            guard plaintext.count <= length else {
                throw TDSDecodingError(.invalidLength, offset: 0, context: type.name,
                                       "a decrypted \(sqlTypeName) is \(plaintext.count) bytes, more than its \(length)")
            }
            var padded = plaintext
            padded.reserveCapacity(length)
            while padded.count + pad.count <= length { padded += pad }
            return padded
        }
    }

    /// The value whose normalized plaintext is `plaintext`, decoded by this type's codec (the
    /// same one as an unencrypted value's).
    /// - Throws: as ``denormalized(_:)``, then the codec's errors.
    package func decodeNormalized(_ plaintext: [UInt8]) throws(TDSDecodingError) -> SQLValue {
        try decodeValue(data: try denormalized(plaintext))
    }

    /// The normalized plaintext of `value` as this type (NULL is never encrypted: `.invalidValue`):
    /// its data bytes by this type's codec, widened by the rules above.
    /// - Throws: `.unsupported` for a type that cannot be encrypted; the codec's `.invalidValue`
    ///   for a value it cannot encode as this type.
    package func normalized(_ value: SQLValue) throws(TDSDecodingError) -> [UInt8] {
        guard !value.isNull else {
            throw TDSDecodingError(.invalidValue, offset: 0, context: type.name, "NULL is sent unencrypted")
        }
        let width = normalizedWidth
        if width == .unsupported {
            throw TDSDecodingError(.unsupported, offset: 0, context: type.name, "\(sqlTypeName) cannot be an encrypted column's type")
        }
        var writer = ByteWriter()
        do throws(TDSDecodingError) {
            try encodeData(value, into: &writer)
        } catch {
            throw error.withContext(type.name)
        }
        let data = writer.bytes
        switch width {
        case .integer(let n, let unsigned):
            guard data.count == n else {
                throw TDSDecodingError(.invalidLength, offset: 0, context: type.name, "\(data.count) data bytes for \(sqlTypeName)")
            }
            // Sign-extend (zero-extend for tinyint) to 8 bytes.
            let negative = !unsigned && (data[n - 1] & 0x80) != 0
            return data + [UInt8](repeating: negative ? 0xFF : 0, count: 8 - n)
        case .bit:
            return [data.first ?? 0 != 0 ? 1 : 0, 0, 0, 0, 0, 0, 0, 0]
        case .decimal:
            guard !data.isEmpty, data.count <= 17 else {
                throw TDSDecodingError(.invalidLength, offset: 0, context: type.name, "\(data.count) data bytes for \(sqlTypeName)")
            }
            return data + [UInt8](repeating: 0, count: 17 - data.count)
        case .money(let width):
            guard data.count == width else {
                throw TDSDecodingError(.invalidLength, offset: 0, context: type.name, "\(data.count) data bytes for \(sqlTypeName)")
            }
            if width == 8 { return data }
            // smallmoney's 4 bytes are the whole value: as money, the sign-extended high half first.
            var reader = ByteReader(data)
            let units = Int64(try reader.readInt32LE())
            return Self.bytesLE(UInt64(UInt32(truncatingIfNeeded: units >> 32)), count: 4)
                + Self.bytesLE(UInt64(UInt32(truncatingIfNeeded: units)), count: 4)
        case .time(let rest):
            let n = SQLTime.wireLength(scale: scale)
            guard data.count == n + rest else {
                throw TDSDecodingError(.invalidLength, offset: 0, context: type.name, "\(data.count) data bytes for \(sqlTypeName)")
            }
            var reader = ByteReader(data)
            let ticks = try reader.readUIntLE(count: n)
            // At most 10^7 * 86,400 - 1 ticks at scale 7: 40 bits, 5 bytes.
            let (scaled, overflow) = ticks.multipliedReportingOverflow(by: Civil.powersOf10[7 - Int(scale)])
            guard !overflow, scaled < 1 << 40 else {
                throw TDSDecodingError(.invalidValue, offset: 0, context: type.name, "time out of range for \(sqlTypeName)")
            }
            return Self.bytesLE(scaled, count: 5) + data[n...]
        default:
            return data
        }
    }

    private static func bytesLE(_ v: UInt64, count: Int) -> [UInt8] {
        var writer = ByteWriter(capacity: count)
        writer.writeUIntLE(v, count: count)
        return writer.bytes
    }

    private static func int64(_ bytes: [UInt8], _ name: String) throws(TDSDecodingError) -> Int64 {
        guard bytes.count == 8 else {
            throw TDSDecodingError(.invalidLength, offset: 0, context: name, "a decrypted integer is 8 bytes, not \(bytes.count)")
        }
        var reader = ByteReader(bytes)
        return try reader.readInt64LE()
    }
}

extension TypeInfo {
    /// This type as the plaintext TYPE_INFO of a ParamCipherInfo ([MS-TDS] 2.2.6.6), in the
    /// shapes Microsoft.Data.SqlClient writes (TdsParser.WriteSmiTypeInfo): the nullable form of
    /// a fixed-length type (INTN, BITN, FLTN, MONEYN, DATETIMN), the BIG form of char, varchar,
    /// binary, varbinary, and decimal/numeric as NUMERICN with length 17 whatever the precision
    /// (precision and scale kept). Any other type as it is.
    package var paramCipherTypeInfo: TypeInfo {
        switch type {
        case .int1: return TypeInfo(type: .intN, length: 1)
        case .int2: return TypeInfo(type: .intN, length: 2)
        case .int4: return TypeInfo(type: .intN, length: 4)
        case .int8: return TypeInfo(type: .intN, length: 8)
        case .bit: return TypeInfo(type: .bitN, length: 1)
        case .flt4: return TypeInfo(type: .fltN, length: 4)
        case .flt8: return TypeInfo(type: .fltN, length: 8)
        case .money4: return TypeInfo(type: .moneyN, length: 4)
        case .money: return TypeInfo(type: .moneyN, length: 8)
        case .datetim4: return TypeInfo(type: .datetimN, length: 4)
        case .datetime: return TypeInfo(type: .datetimN, length: 8)
        case .decimal, .numeric, .decimalN, .numericN:
            return TypeInfo(type: .numericN, length: 17, precision: precision, scale: scale)
        case .char, .varchar, .binary, .varbinary:
            var t = self
            t.type = type == .char ? .bigChar : type == .varchar ? .bigVarChar : type == .binary ? .bigBinary : .bigVarBinary
            return t
        default: return self
        }
    }
}
