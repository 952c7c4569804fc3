/// The Flags of a COLMETADATA / ALTMETADATA / RETURNVALUE column ([MS-TDS] 2.2.7.4).
public struct ColumnFlags: OptionSet, Hashable, Sendable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// fNullable.
    public static let nullable = ColumnFlags(rawValue: 0x0001)
    /// fCaseSen.
    public static let caseSensitive = ColumnFlags(rawValue: 0x0002)
    /// usUpdateable = 1 (read/write); see ``updateable``.
    public static let updateable = ColumnFlags(rawValue: 0x0004)
    /// usUpdateable = 2 (unknown).
    public static let updateableUnknown = ColumnFlags(rawValue: 0x0008)
    /// fIdentity.
    public static let identity = ColumnFlags(rawValue: 0x0010)
    /// fComputed (TDS 7.2+).
    public static let computed = ColumnFlags(rawValue: 0x0020)
    /// fFixedLenCLRType (TDS 7.2+).
    public static let fixedLengthCLRType = ColumnFlags(rawValue: 0x0100)
    /// fSparseColumnSet (TDS 7.3B+).
    public static let sparseColumnSet = ColumnFlags(rawValue: 0x0400)
    /// fEncrypted (TDS 7.4+): Always Encrypted; CryptoMetaData follows the TYPE_INFO.
    public static let encrypted = ColumnFlags(rawValue: 0x0800)
    /// fHidden (TDS 7.2+).
    public static let hidden = ColumnFlags(rawValue: 0x2000)
    /// fKey (TDS 7.2+).
    public static let key = ColumnFlags(rawValue: 0x4000)
    /// fNullableUnknown (TDS 7.2+).
    public static let nullableUnknown = ColumnFlags(rawValue: 0x8000)
}

/// One entry of the CEK table sent in COLMETADATA when column encryption was negotiated
/// ([MS-TDS] 2.2.7.4 EK_INFO).
public struct CEKEntry: Hashable, Sendable {
    /// One EncryptionKeyValue: the CEK encrypted with a column master key.
    public struct Value: Hashable, Sendable {
        /// The CEK, encrypted with the column master key.
        public var encryptedKey: [UInt8]
        /// The key store provider of the column master key.
        public var keyStoreName: String
        /// The column master key's path in its store.
        public var keyPath: String
        /// The asymmetric algorithm that encrypted the CEK.
        public var algorithm: String
        /// An EncryptionKeyValue from its fields.
        public init(encryptedKey: [UInt8], keyStoreName: String, keyPath: String, algorithm: String) {
            self.encryptedKey = encryptedKey; self.keyStoreName = keyStoreName; self.keyPath = keyPath; self.algorithm = algorithm
        }
    }
    /// DatabaseId.
    public var databaseID: UInt32
    /// CekId.
    public var cekID: UInt32
    /// CekVersion.
    public var cekVersion: UInt32
    /// CekMDVersion (8 bytes).
    public var cekMetadataVersion: UInt64
    /// The CEK encrypted under each column master key.
    public var values: [Value]

    /// An EK_INFO entry from its fields.
    public init(databaseID: UInt32, cekID: UInt32, cekVersion: UInt32, cekMetadataVersion: UInt64, values: [Value]) {
        self.databaseID = databaseID; self.cekID = cekID; self.cekVersion = cekVersion
        self.cekMetadataVersion = cekMetadataVersion; self.values = values
    }

    /// CekTable: EkValueCount USHORT, then EK_INFO × count.
    static func decodeTable(from reader: inout ByteReader) throws(TDSDecodingError) -> [CEKEntry] {
        let count = Int(try reader.readUInt16LE())
        var table: [CEKEntry] = []
        table.reserveCapacity(min(count, reader.remaining / 21))
        for _ in 0..<count {
            let db = try reader.readUInt32LE()
            let id = try reader.readUInt32LE()
            let ver = try reader.readUInt32LE()
            let md = try reader.readUInt64LE()
            let n = Int(try reader.readUInt8())
            var values: [Value] = []
            for _ in 0..<n {
                let key = try reader.readUSVarByte()
                let store = try reader.readBVarChar()
                let path = try reader.readUSVarChar()
                let algo = try reader.readBVarChar()
                values.append(Value(encryptedKey: key, keyStoreName: store, keyPath: path, algorithm: algo))
            }
            table.append(CEKEntry(databaseID: db, cekID: id, cekVersion: ver, cekMetadataVersion: md, values: values))
        }
        return table
    }
}

/// CryptoMetaData of an encrypted column or parameter ([MS-TDS] 2.2.7.4, 2.2.7.19): the
/// plaintext type and how the value was encrypted. The ROW carries the ciphertext, typed by the
/// column's outer TYPE_INFO (varbinary).
public struct CryptoMetadata: Hashable, Sendable {
    /// Index into the COLMETADATA CEK table (absent in RETURNVALUE).
    public var ordinal: UInt16?
    /// UserType of the plaintext column.
    public var userType: UInt32
    /// The plaintext type.
    public var baseType: TypeInfo
    /// EncryptionAlgo: 0 = custom (see `algorithmName`), 2 = AEAD_AES_256_CBC_HMAC_SHA256.
    public var algorithm: UInt8
    /// The custom algorithm's name when `algorithm` is 0.
    public var algorithmName: String?
    /// EncryptionAlgoType: 1 = deterministic, 2 = randomized.
    public var encryptionType: UInt8
    /// NormVersion: the normalization rules of the plaintext.
    public var normalizationVersion: UInt8

    static func decode(from reader: inout ByteReader, version: TDSVersion, withOrdinal: Bool) throws(TDSDecodingError) -> CryptoMetadata {
        let ordinal: UInt16? = withOrdinal ? try reader.readUInt16LE() : nil
        let userType = try reader.readUInt32LE()
        let base = try TypeInfo.decode(from: &reader, version: version)
        let algo = try reader.readUInt8()
        let name: String? = algo == 0 ? try reader.readBVarChar() : nil
        let type = try reader.readUInt8()
        let norm = try reader.readUInt8()
        return CryptoMetadata(ordinal: ordinal, userType: userType, baseType: base, algorithm: algo,
                              algorithmName: name, encryptionType: type, normalizationVersion: norm)
    }
}

/// The description of one result column ([MS-TDS] 2.2.7.4 ColumnData).
public struct ColumnMetadata: Hashable, Sendable {
    /// UserType: the user-defined type id, 0 for base types (USHORT before TDS 7.2, ULONG after).
    public var userType: UInt32
    /// Flags: nullable, case-sensitive, updatable, identity, computed, encrypted…
    public var flags: ColumnFlags
    /// TYPE_INFO: the column's type.
    public var typeInfo: TypeInfo
    /// For text, ntext and image columns: the table name parts.
    public var tableName: [String]?
    /// For encrypted columns (fEncrypted).
    public var cryptoMetadata: CryptoMetadata?
    /// The column name (empty for an unnamed expression).
    public var name: String

    /// A column from its fields (nullable by default).
    public init(userType: UInt32 = 0, flags: ColumnFlags = [.nullable], typeInfo: TypeInfo,
                tableName: [String]? = nil, cryptoMetadata: CryptoMetadata? = nil, name: String) {
        self.userType = userType; self.flags = flags; self.typeInfo = typeInfo
        self.tableName = tableName; self.cryptoMetadata = cryptoMetadata; self.name = name
    }

    /// True when Flags has fNullable.
    public var isNullable: Bool { flags.contains(.nullable) }

    /// UserType, Flags and TYPE_INFO, then TableName for text/ntext/image (NumParts + parts from
    /// TDS 7.2, one US_VARCHAR before).
    static func decodeCommon(from reader: inout ByteReader, version: TDSVersion)
        throws(TDSDecodingError) -> (UInt32, ColumnFlags, TypeInfo, [String]?) {
        let userType: UInt32 = version.hasLongRowCounts ? try reader.readUInt32LE() : UInt32(try reader.readUInt16LE())
        let flags = ColumnFlags(rawValue: try reader.readUInt16LE())
        let info = try TypeInfo.decode(from: &reader, version: version)
        var table: [String]?
        if info.type.isLegacyLOB {
            table = try TabName.readTableName(&reader, multipart: version.hasLongRowCounts)
        }
        return (userType, flags, info, table)
    }
}

extension TDSDataType {
    /// text, ntext or image: values carry a TextPtr and timestamp, COLMETADATA a TableName.
    var isLegacyLOB: Bool { self == .text || self == .ntext || self == .image }
}

/// [MS-TDS] 2.2.7.4 COLMETADATA — the columns of the rows that follow (token 0x81).
///
/// Wire shape after the token byte (no token length): Count USHORT (0xFFFF = NoMetaData); when
/// column encryption was negotiated, a CekTable; then ColumnData × Count: UserType, Flags
/// USHORT, TYPE_INFO, [TableName], [CryptoMetaData], ColName B_VARCHAR.
public struct ColMetadata: Hashable, Sendable {
    /// The columns; empty for NoMetaData.
    public var columns: [ColumnMetadata]
    /// The CEK table, when column encryption was negotiated.
    public var cekTable: [CEKEntry]?
    /// Count was 0xFFFF: the server sent no metadata (the previous metadata still applies).
    public var isNoMetadata: Bool

    /// A COLMETADATA of `columns`.
    public init(columns: [ColumnMetadata], cekTable: [CEKEntry]? = nil, isNoMetadata: Bool = false) {
        self.columns = columns; self.cekTable = cekTable; self.isNoMetadata = isNoMetadata
    }

    /// Decodes the body after the 0x81 byte. `columnEncryption`: a CekTable follows Count.
    /// Throws `.truncated` when the input ends inside the token.
    public static func decode(from reader: inout ByteReader, version: TDSVersion,
                              columnEncryption: Bool = false) throws(TDSDecodingError) -> ColMetadata {
        var progress = ColMetadataProgress(tokenStart: reader.absoluteOffset &- 1)
        guard let metadata = try progress.advance(&reader, version: version, columnEncryption: columnEncryption) else {
            throw (progress.truncation ?? TDSDecodingError(.truncated, offset: reader.absoluteOffset))
                .inToken("COLMETADATA")
        }
        return metadata
    }
}

/// A COLMETADATA being decoded column by column as its bytes arrive: the columns read so far
/// are kept, so a COLMETADATA that spans many packets is decoded once, in linear time (never
/// re-parsed from its start when the next packet comes).
struct ColMetadataProgress: Sendable {
    /// Absolute offset of the token byte (for errors).
    let tokenStart: Int
    /// Count, once read (with the CEK table, when column encryption is on).
    var count: Int?
    var cekTable: [CEKEntry]?
    var columns: [ColumnMetadata] = []
    /// Bytes of the token consumed so far (after the token byte).
    var consumed = 0
    /// Where the last attempt ran out of bytes.
    var truncation: TDSDecodingError?

    init(tokenStart: Int) {
        self.tokenStart = tokenStart
    }

    /// Reads as many whole columns as `reader` holds; returns the token once all are read, nil
    /// when more bytes are needed (`reader` is left after the last whole column read).
    mutating func advance(_ reader: inout ByteReader, version: TDSVersion,
                          columnEncryption: Bool) throws(TDSDecodingError) -> ColMetadata? {
        do throws(TDSDecodingError) {
            if count == nil {
                let start = reader.offset
                do throws(TDSDecodingError) {
                    let n = Int(try reader.readUInt16LE())
                    if n == 0xFFFF {
                        consumed += reader.offset - start
                        return ColMetadata(columns: [], isNoMetadata: true)
                    }
                    cekTable = columnEncryption ? try CEKEntry.decodeTable(from: &reader) : nil
                    count = n
                    columns.reserveCapacity(min(n, reader.remaining / 7 + 16))
                } catch where error.code == .truncated {
                    truncation = error
                    reader.offset = start
                    return nil
                }
                consumed += reader.offset - start
            }
            guard let count else { return nil }
            while columns.count < count {
                let start = reader.offset
                do throws(TDSDecodingError) {
                    let (userType, flags, info, table) = try ColumnMetadata.decodeCommon(from: &reader, version: version)
                    var crypto: CryptoMetadata?
                    if columnEncryption && flags.contains(.encrypted) {
                        crypto = try CryptoMetadata.decode(from: &reader, version: version, withOrdinal: true)
                    }
                    let name = try reader.readBVarChar()
                    columns.append(ColumnMetadata(userType: userType, flags: flags, typeInfo: info,
                                                  tableName: table, cryptoMetadata: crypto, name: name))
                } catch where error.code == .truncated {
                    truncation = error
                    reader.offset = start
                    return nil
                }
                consumed += reader.offset - start
            }
            return ColMetadata(columns: columns, cekTable: cekTable)
        } catch { throw error.inToken("COLMETADATA") }
    }
}

extension ColMetadata {
    /// Writes the token byte 0x81 and the body (the CEK table when `cekTable` is set; the
    /// CryptoMetaData of encrypted columns is not written). UserType is 4 bytes from TDS 7.2.
    public func encode(into writer: inout ByteWriter, version: TDSVersion) {
        writer.writeUInt8(TokenType.colMetadata.rawValue)
        if isNoMetadata { writer.writeUInt16LE(0xFFFF); return }
        writer.writeUInt16LE(UInt16(truncatingIfNeeded: columns.count))
        if let cekTable {
            writer.writeUInt16LE(UInt16(truncatingIfNeeded: cekTable.count))
            for e in cekTable {
                writer.writeUInt32LE(e.databaseID); writer.writeUInt32LE(e.cekID)
                writer.writeUInt32LE(e.cekVersion); writer.writeUInt64LE(e.cekMetadataVersion)
                writer.writeUInt8(UInt8(truncatingIfNeeded: e.values.count))
                for v in e.values {
                    writer.writeUInt16LE(UInt16(truncatingIfNeeded: v.encryptedKey.count)); writer.writeBytes(v.encryptedKey)
                    writer.writeBVarChar(v.keyStoreName); writer.writeUSVarChar(v.keyPath); writer.writeBVarChar(v.algorithm)
                }
            }
        }
        for c in columns {
            if version.hasLongRowCounts { writer.writeUInt32LE(c.userType) } else { writer.writeUInt16LE(UInt16(truncatingIfNeeded: c.userType)) }
            writer.writeUInt16LE(c.flags.rawValue)
            c.typeInfo.encode(into: &writer, version: version)
            if c.typeInfo.type.isLegacyLOB {
                let parts = c.tableName ?? []
                if version.hasLongRowCounts {
                    writer.writeUInt8(UInt8(truncatingIfNeeded: parts.count))
                    for p in parts { writer.writeUSVarChar(p) }
                } else {
                    writer.writeUSVarChar(parts.joined(separator: "."))
                }
            }
            writer.writeBVarChar(c.name)
        }
    }
}
