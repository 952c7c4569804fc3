// Always Encrypted normalization (CryptoMetaData NormVersion 1, [MS-TDS] 2.2.7.4): the bytes
// that are encrypted are not always a value's TDS data bytes. The widths below are those
// Microsoft.Data.SqlClient writes before encrypting (TdsParser.SerializeUnencryptedValue) and
// reads after decrypting (TdsParser.DeserializeUnencryptedValue), read there, not copied:
//
// - tinyint, smallint, int, bigint: a little-endian 8-byte integer (SerializeLong for every width).
// - bit: a little-endian 8-byte integer, 0 or 1 (SerializeLong of the boolean).
// - decimal/numeric: the sign byte (1 = positive) and the magnitude as four 4-byte little-endian
//   integers, 17 bytes whatever the precision (SerializeDecimal's layout).
// - money: 8 bytes (high 4 bytes, then low 4, as on the wire); smallmoney: 4 bytes.
// - real 4 bytes, float 8; datetime 8, smalldatetime 4; uniqueidentifier 16: as on the wire.
// - date 3 bytes; time, datetime2 and datetimeoffset at the column's scale (time 3 to 5 bytes,
//   then the date's 3, then the offset's 2): as on the wire for that scale.
// - char, varchar, nchar, nvarchar, binary, varbinary (and their max forms): the bytes as they
//   are (the column's code page, UTF-16LE for n-types).
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
        /// Exactly these many bytes, as on the wire.
        case exact(Int)
        /// The bytes as they are (strings, binary).
        case asIs
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
        case .money: return .exact(8)
        case .money4: return .exact(4)
        case .moneyN: return [4, 8].contains(length) ? .exact(length) : .unsupported
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
            // [MS-TDS] 2.2.5.5.1.8: time takes 3 bytes for scale 0-2, 4 for 3-4, 5 for 5-7.
            let time = scale <= 2 ? 3 : scale <= 4 ? 4 : 5
            return .exact(type == .timeN ? time : type == .datetime2N ? time + 3 : time + 5)
        case .bigChar, .bigVarChar, .nchar, .nvarchar, .bigBinary, .bigVarBinary, .char, .varchar, .binary, .varbinary:
            return .asIs
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
            let v = try Self.int64(plaintext, type.name)
            guard v == 0 || v == 1 else {
                throw TDSDecodingError(.invalidValue, offset: 0, context: type.name, "decrypted bit \(v) is neither 0 nor 1")
            }
            return [UInt8(v)]
        case .decimal(let width):
            guard plaintext.count == 17 else {
                throw TDSDecodingError(.invalidLength, offset: 0, context: type.name, "a decrypted decimal is 17 bytes, not \(plaintext.count)")
            }
            guard plaintext[width...].allSatisfy({ $0 == 0 }) else {
                throw TDSDecodingError(.invalidValue, offset: width, context: type.name,
                                       "decrypted decimal magnitude is longer than precision \(precision) allows")
            }
            return Array(plaintext.prefix(width))
        case .exact(let n):
            guard plaintext.count == n else {
                throw TDSDecodingError(.invalidLength, offset: 0, context: type.name,
                                       "a decrypted \(sqlTypeName) is \(n) bytes, not \(plaintext.count)")
            }
            return plaintext
        case .asIs:
            return plaintext
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
        default:
            return data
        }
    }

    private static func int64(_ bytes: [UInt8], _ name: String) throws(TDSDecodingError) -> Int64 {
        guard bytes.count == 8 else {
            throw TDSDecodingError(.invalidLength, offset: 0, context: name, "a decrypted integer is 8 bytes, not \(bytes.count)")
        }
        var v: UInt64 = 0
        for (i, b) in bytes.enumerated() { v |= UInt64(b) << (8 * UInt64(i)) }
        return Int64(bitPattern: v)
    }
}
