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

    /// CryptoMetaData from its fields.
    public init(ordinal: UInt16?, userType: UInt32, baseType: TypeInfo, algorithm: UInt8, algorithmName: String? = nil,
                encryptionType: UInt8, normalizationVersion: UInt8 = 1) {
        self.ordinal = ordinal; self.userType = userType; self.baseType = baseType; self.algorithm = algorithm
        self.algorithmName = algorithmName; self.encryptionType = encryptionType; self.normalizationVersion = normalizationVersion
    }

    /// Writes the CryptoMetaData: Ordinal (when set), UserType (4 bytes), the base TYPE_INFO,
    /// EncryptionAlgo (with its B_VARCHAR name when 0), EncryptionAlgoType, NormVersion.
    public func encode(into writer: inout ByteWriter, version: TDSVersion) {
        if let ordinal { writer.writeUInt16LE(ordinal) }
        writer.writeUInt32LE(userType)
        baseType.encode(into: &writer, version: version)
        writer.writeUInt8(algorithm)
        if algorithm == 0 { writer.writeBVarChar(algorithmName ?? "") }
        writer.writeUInt8(encryptionType)
        writer.writeUInt8(normalizationVersion)
    }

    static func decode(from reader: inout ByteReader, version: TDSVersion, withOrdinal: Bool) throws(TDSDecodingError) -> CryptoMetadata {
        var progress = CryptoMetadataProgress(withOrdinal: withOrdinal, incremental: false)
        guard let crypto = try progress.advance(&reader, version: version) else {
            throw progress.truncation ?? reader.truncated(1)
        }
        return crypto
    }
}

/// CryptoMetaData being read as its bytes arrive, in four units (Ordinal and UserType, the
/// TYPE_INFO, EncryptionAlgo with its name, EncryptionAlgoType and NormVersion), each kept once
/// read.
struct CryptoMetadataProgress: Sendable {
    private enum Stage: Sendable { case head, baseType, algorithm, tail }
    let withOrdinal: Bool
    /// The CEK table's size: an Ordinal at or beyond it is `.invalidValue` (nil: not checked).
    let cekEntries: Int?
    private var stage = Stage.head
    private var ordinal: UInt16?
    private var userType: UInt32 = 0
    private var baseType = TypeInfo(type: .null)
    private var algorithm: UInt8 = 0
    private var algorithmName: String?
    private var names: TypeInfoNames
    /// Where the last attempt ran out of bytes.
    private(set) var truncation: TDSDecodingError?

    /// `incremental`: more bytes may come (see ``TypeInfoNames``).
    init(withOrdinal: Bool, incremental: Bool, cekEntries: Int? = nil) {
        self.withOrdinal = withOrdinal
        self.cekEntries = cekEntries
        self.names = TypeInfoNames(incremental: incremental)
    }

    /// Reads what `reader` holds; the CryptoMetaData once complete, nil when more bytes are
    /// needed (`reader` is left after the last unit read). Errors are not put in a token context.
    mutating func advance(_ reader: inout ByteReader, version: TDSVersion) throws(TDSDecodingError) -> CryptoMetadata? {
        while true {
            let start = reader.offset
            do throws(TDSDecodingError) {
                switch stage {
                case .head:
                    let index = withOrdinal ? try reader.readUInt16LE() : nil
                    userType = try reader.readUInt32LE()
                    if let index, let cekEntries, Int(index) >= cekEntries {
                        throw reader.error(.invalidValue, at: start, "CryptoMetaData Ordinal \(index) is outside the CEK table"
                                           + " of \(cekEntries) entr\(cekEntries == 1 ? "y" : "ies")")
                    }
                    ordinal = index
                    stage = .baseType
                case .baseType:
                    guard names.ready(reader) else { truncation = nil; return nil }
                    baseType = try TypeInfo.decode(from: &reader, version: version)
                    stage = .algorithm
                case .algorithm:
                    let algo = try reader.readUInt8()
                    algorithmName = algo == 0 ? try reader.readBVarChar() : nil
                    algorithm = algo
                    stage = .tail
                case .tail:
                    let type = try reader.readUInt8()
                    let norm = try reader.readUInt8()
                    return CryptoMetadata(ordinal: ordinal, userType: userType, baseType: baseType, algorithm: algorithm,
                                          algorithmName: algorithmName, encryptionType: type, normalizationVersion: norm)
                }
            } catch {
                guard error.code == .truncated else { throw error }
                reader.offset = start
                truncation = error
                return nil
            }
        }
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
}

/// One column of COLMETADATA (ColumnData) or ALTMETADATA (after Op and Operand) being read as
/// its bytes arrive: UserType, Flags and TYPE_INFO as one unit, then each TableName part (text,
/// ntext, image), the CryptoMetaData (fEncrypted, when column encryption is on) and ColName,
/// each kept once read. A retry re-reads at most one unit: a TYPE_INFO's names (xml, UDT) are
/// the longest, at most three B_VARCHARs before the US_VARCHAR that ends it.
struct ColumnProgress: Sendable {
    private enum Stage: Sendable { case common, tableNameCount, tableName, crypto, name }
    private var stage = Stage.common
    private var userType: UInt32 = 0
    private var flags = ColumnFlags()
    private var typeInfo = TypeInfo(type: .null)
    private var tableName: [String]?
    private var partsLeft = 0
    private var crypto: CryptoMetadataProgress?
    private var cryptoMetadata: CryptoMetadata?
    private var names: TypeInfoNames
    /// Where the last attempt ran out of bytes.
    private(set) var truncation: TDSDecodingError?

    /// `incremental`: more bytes may come (see ``TypeInfoNames``).
    init(incremental: Bool) {
        names = TypeInfoNames(incremental: incremental)
    }

    /// Reads what `reader` holds; the column once complete, nil when more bytes are needed
    /// (`reader` is left after the last unit read). `columnEncryption`: an fEncrypted column has
    /// CryptoMetaData (COLMETADATA only). Errors are not put in a token context.
    mutating func advance(_ reader: inout ByteReader, version: TDSVersion,
                          columnEncryption: Bool, cekEntries: Int? = nil) throws(TDSDecodingError) -> ColumnMetadata? {
        while true {
            let start = reader.offset
            do throws(TDSDecodingError) {
                switch stage {
                case .common:
                    let user: UInt32 = version.hasLongRowCounts ? try reader.readUInt32LE() : UInt32(try reader.readUInt16LE())
                    let f = ColumnFlags(rawValue: try reader.readUInt16LE())
                    guard names.ready(reader) else { reader.offset = start; truncation = nil; return nil }
                    typeInfo = try TypeInfo.decode(from: &reader, version: version)
                    userType = user
                    flags = f
                    stage = typeInfo.type.isLegacyLOB ? (version.hasLongRowCounts ? .tableNameCount : .tableName) : .crypto
                    if stage == .tableName { partsLeft = 1; tableName = [] }
                case .tableNameCount:
                    // TableName: NumParts BYTE + US_VARCHAR parts from TDS 7.2, one US_VARCHAR before.
                    partsLeft = Int(try reader.readUInt8())
                    tableName = []
                    tableName?.reserveCapacity(partsLeft)
                    stage = .tableName
                case .tableName:
                    if partsLeft == 0 { stage = .crypto; continue }
                    let part = try reader.readUSVarChar()
                    tableName?.append(part)
                    partsLeft -= 1
                case .crypto:
                    if columnEncryption && flags.contains(.encrypted) {
                        var progress = crypto ?? CryptoMetadataProgress(withOrdinal: true, incremental: names.incremental,
                                                                        cekEntries: cekEntries)
                        crypto = nil
                        guard let done = try progress.advance(&reader, version: version) else {
                            crypto = progress
                            truncation = progress.truncation
                            return nil
                        }
                        cryptoMetadata = done
                    }
                    stage = .name
                case .name:
                    let name = try reader.readBVarChar()
                    return ColumnMetadata(userType: userType, flags: flags, typeInfo: typeInfo,
                                          tableName: tableName, cryptoMetadata: cryptoMetadata, name: name)
                }
            } catch {
                guard error.code == .truncated else { throw error }
                reader.offset = start
                truncation = error
                return nil
            }
        }
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
        var progress = ColMetadataProgress(tokenStart: reader.absoluteOffset &- 1, incremental: false)
        guard let metadata = try progress.advance(&reader, version: version, columnEncryption: columnEncryption) else {
            throw (progress.truncation ?? TDSDecodingError(.truncated, offset: reader.absoluteOffset))
                .inToken("COLMETADATA")
        }
        return metadata
    }
}

/// A COLMETADATA being decoded as its bytes arrive: Count, then the CEK table one entry header
/// and one field of each EncryptionKeyValue at a time, then the columns (see ``ColumnProgress``),
/// each kept once read. A COLMETADATA that spans many packets is decoded once, in linear time
/// (never re-parsed from its start when the next packet comes).
struct ColMetadataProgress: Sendable {
    private enum Stage: Sendable { case count, cekCount, cekEntry, cekKey, cekStore, cekPath, cekAlgorithm, columns }
    /// Absolute offset of the token byte (for errors).
    let tokenStart: Int
    private var stage = Stage.count
    /// Count, once read.
    private var count = 0
    private(set) var cekTable: [CEKEntry]?
    private(set) var columns: [ColumnMetadata] = []
    private var column: ColumnProgress
    private let incremental: Bool
    /// CEK table: entries still to read, values still to read in the current entry, and the
    /// fields of the current value read so far.
    private var entriesLeft = 0
    private var entry = CEKEntry(databaseID: 0, cekID: 0, cekVersion: 0, cekMetadataVersion: 0, values: [])
    private var valuesLeft = 0
    private var key: [UInt8] = []
    private var store = ""
    private var path = ""
    /// Bytes of the token consumed so far (after the token byte).
    private(set) var consumed = 0
    /// Where the last attempt ran out of bytes.
    private(set) var truncation: TDSDecodingError?

    /// `incremental`: more bytes may come (see ``TypeInfoNames``).
    init(tokenStart: Int, incremental: Bool) {
        self.tokenStart = tokenStart
        self.incremental = incremental
        self.column = ColumnProgress(incremental: incremental)
    }

    /// Reads what `reader` holds; returns the token once all is read, nil when more bytes are
    /// needed (`reader` is left after the last unit read).
    mutating func advance(_ reader: inout ByteReader, version: TDSVersion,
                          columnEncryption: Bool) throws(TDSDecodingError) -> ColMetadata? {
        let begin = reader.offset
        defer { consumed += reader.offset - begin }
        while true {
            let start = reader.offset
            do throws(TDSDecodingError) {
                switch stage {
                case .count:
                    let n = Int(try reader.readUInt16LE())
                    if n == 0xFFFF { return ColMetadata(columns: [], isNoMetadata: true) }
                    count = n
                    stage = columnEncryption ? .cekCount : .columns
                    if !columnEncryption { columns.reserveCapacity(min(n, reader.remaining / 7 + 16)) }
                case .cekCount:
                    // CekTable: EkValueCount USHORT, then EK_INFO × count.
                    entriesLeft = Int(try reader.readUInt16LE())
                    cekTable = []
                    cekTable?.reserveCapacity(min(entriesLeft, reader.remaining / 21))
                    stage = .cekEntry
                case .cekEntry:
                    if entriesLeft == 0 {
                        stage = .columns
                        columns.reserveCapacity(min(count, reader.remaining / 7 + 16))
                        continue
                    }
                    let db = try reader.readUInt32LE()
                    let id = try reader.readUInt32LE()
                    let ver = try reader.readUInt32LE()
                    let md = try reader.readUInt64LE()
                    valuesLeft = Int(try reader.readUInt8())
                    entry = CEKEntry(databaseID: db, cekID: id, cekVersion: ver, cekMetadataVersion: md, values: [])
                    stage = .cekKey
                case .cekKey:
                    if valuesLeft == 0 {
                        cekTable?.append(entry)
                        entriesLeft -= 1
                        stage = .cekEntry
                        continue
                    }
                    key = try reader.readUSVarByte()
                    stage = .cekStore
                case .cekStore:
                    store = try reader.readBVarChar()
                    stage = .cekPath
                case .cekPath:
                    path = try reader.readUSVarChar()
                    stage = .cekAlgorithm
                case .cekAlgorithm:
                    let algorithm = try reader.readBVarChar()
                    let value = CEKEntry.Value(encryptedKey: key, keyStoreName: store, keyPath: path, algorithm: algorithm)
                    entry.values.append(value)
                    key = []
                    valuesLeft -= 1
                    stage = .cekKey
                case .columns:
                    guard columns.count < count else { return ColMetadata(columns: columns, cekTable: cekTable) }
                    guard let done = try column.advance(&reader, version: version, columnEncryption: columnEncryption,
                                                        cekEntries: cekTable?.count ?? 0) else {
                        truncation = column.truncation
                        return nil
                    }
                    columns.append(done)
                    column = ColumnProgress(incremental: incremental)
                }
            } catch {
                guard error.code == .truncated else { throw error.inToken("COLMETADATA") }
                reader.offset = start
                truncation = error
                return nil
            }
        }
    }
}

extension ColMetadata {
    /// Writes the token byte 0x81 and the body: the CEK table when `cekTable` is set, and then
    /// the CryptoMetaData of each column with fEncrypted and ``ColumnMetadata/cryptoMetadata``
    /// (as a server with column encryption negotiated sends them). UserType is 4 bytes from TDS 7.2.
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
            if cekTable != nil, c.flags.contains(.encrypted), let crypto = c.cryptoMetadata {
                crypto.encode(into: &writer, version: version)
            }
            writer.writeBVarChar(c.name)
        }
    }
}
