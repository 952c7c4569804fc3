/// [MS-TDS] 2.2.5.6 TYPE_INFO XML_INFO: whether a schema collection is bound, and its names.
public struct XMLSchemaInfo: Hashable, Sendable {
    /// The database of the schema collection.
    public var databaseName: String
    /// The schema that owns the collection.
    public var owningSchema: String
    /// The schema collection's name.
    public var schemaCollection: String
    /// Names as XML_INFO carries them.
    public init(databaseName: String, owningSchema: String, schemaCollection: String) {
        self.databaseName = databaseName
        self.owningSchema = owningSchema
        self.schemaCollection = schemaCollection
    }
}

/// [MS-TDS] 2.2.5.6 TYPE_INFO UDT_INFO (COLMETADATA form): max byte size, names and the CLR
/// assembly-qualified name.
public struct UDTInfo: Hashable, Sendable {
    /// Max byte size (0xFFFF for large UDTs).
    public var maxByteSize: UInt16
    /// The database the type is defined in.
    public var databaseName: String
    /// The type's schema.
    public var schemaName: String
    /// The type's name (for example `geography`).
    public var typeName: String
    /// The CLR type's assembly-qualified name.
    public var assemblyQualifiedName: String
    /// UDT_INFO from its fields.
    public init(maxByteSize: UInt16, databaseName: String, schemaName: String, typeName: String,
                assemblyQualifiedName: String) {
        self.maxByteSize = maxByteSize
        self.databaseName = databaseName
        self.schemaName = schemaName
        self.typeName = typeName
        self.assemblyQualifiedName = assemblyQualifiedName
    }
}

/// [MS-TDS] 2.2.5.6 TYPE_INFO: a data type byte and what follows it (length, precision/scale,
/// collation, XML schema or UDT info).
///
/// `length` is the declared maximum value length in bytes: the fixed size for FIXEDLEN types,
/// the BYTELEN/USHORTLEN/LONGLEN max length otherwise (0xFFFF marks PLP for
/// BIGVARCHAR/NVARCHAR/BIGVARBINARY), the value size implied by the scale for DATEN/TIMEN/
/// DATETIME2N/DATETIMEOFFSETN (which carry no length), and -1 for xml (always PLP).
/// Value bytes are decoded with ``decodeValue(from:)`` (or ``decodePLPValue(_:)`` when ``isPLP``).
public struct TypeInfo: Hashable, Sendable, CustomStringConvertible {
    /// The data type byte ([MS-TDS] 2.2.5.4).
    public var type: TDSDataType
    /// Declared max length in bytes (see the type's docs).
    public var length: Int
    /// Decimal/numeric precision (1...38); 0 for other types.
    public var precision: UInt8
    /// Decimal/numeric scale, or fractional-second digits of time/datetime2/datetimeoffset (0...7).
    public var scale: UInt8
    /// Collation of char/varchar/text/nchar/nvarchar/ntext (TDS 7.1+).
    public var collation: Collation?
    /// Whether values are sent as PLP chunks ([MS-TDS] 2.2.5.2.3): varchar(max), nvarchar(max),
    /// varbinary(max), xml, UDT.
    public var isPLP: Bool
    /// Bound XML schema collection (xml only).
    public var xmlSchema: XMLSchemaInfo?
    /// UDT names (UDT only).
    public var udt: UDTInfo?

    /// A TYPE_INFO from its fields (prefer the static constructors).
    public init(type: TDSDataType, length: Int = 0, precision: UInt8 = 0, scale: UInt8 = 0,
                collation: Collation? = nil, isPLP: Bool = false, xmlSchema: XMLSchemaInfo? = nil,
                udt: UDTInfo? = nil) {
        self.type = type
        self.length = length
        self.precision = precision
        self.scale = scale
        self.collation = collation
        self.isPLP = isPLP
        self.xmlSchema = xmlSchema
        self.udt = udt
    }

    /// The wire type name then the SQL declaration, for example `INTN int`.
    public var description: String { "\(type.name) \(sqlTypeName)" }

    // MARK: Convenience constructors (the types SQL Server sends in COLMETADATA for TDS 7.2+)

    /// int: INTN, 4 bytes.
    public static let int = TypeInfo(type: .intN, length: 4)
    /// bigint: INTN, 8 bytes.
    public static let bigint = TypeInfo(type: .intN, length: 8)
    /// smallint: INTN, 2 bytes.
    public static let smallint = TypeInfo(type: .intN, length: 2)
    /// tinyint: INTN, 1 byte.
    public static let tinyint = TypeInfo(type: .intN, length: 1)
    /// bit: BITN, 1 byte.
    public static let bit = TypeInfo(type: .bitN, length: 1)
    /// real: FLTN, 4 bytes.
    public static let real = TypeInfo(type: .fltN, length: 4)
    /// float: FLTN, 8 bytes.
    public static let float = TypeInfo(type: .fltN, length: 8)
    /// money: MONEYN, 8 bytes.
    public static let money = TypeInfo(type: .moneyN, length: 8)
    /// smallmoney: MONEYN, 4 bytes.
    public static let smallMoney = TypeInfo(type: .moneyN, length: 4)
    /// datetime: DATETIMN, 8 bytes.
    public static let datetime = TypeInfo(type: .datetimN, length: 8)
    /// smalldatetime: DATETIMN, 4 bytes.
    public static let smallDateTime = TypeInfo(type: .datetimN, length: 4)
    /// uniqueidentifier: GUID, 16 bytes.
    public static let uniqueIdentifier = TypeInfo(type: .guid, length: 16)
    /// date: DATEN, 3 bytes.
    public static let date = TypeInfo(type: .dateN, length: 3)
    /// xml: XML, always PLP.
    public static let xml = TypeInfo(type: .xml, length: -1, isPLP: true)
    /// sql_variant: SSVARIANT, at most 8016 bytes.
    public static let sqlVariant = TypeInfo(type: .ssVariant, length: 8016)
    /// json (SQL Server 2025): JSON, always PLP, no length or collation in TYPE_INFO.
    public static let json = TypeInfo(type: .json, length: -1, isPLP: true)

    /// decimal(p,s) (DECIMALNTYPE).
    public static func decimal(precision: UInt8, scale: UInt8) -> TypeInfo {
        TypeInfo(type: .decimalN, length: SQLDecimal.wireLength(precision: precision), precision: precision, scale: scale)
    }
    /// numeric(p,s) (NUMERICNTYPE).
    public static func numeric(precision: UInt8, scale: UInt8) -> TypeInfo {
        TypeInfo(type: .numericN, length: SQLDecimal.wireLength(precision: precision), precision: precision, scale: scale)
    }
    /// time(scale): TIMEN, 3–5 bytes by scale (0…7).
    public static func time(scale: UInt8) -> TypeInfo {
        TypeInfo(type: .timeN, length: SQLTime.wireLength(scale: scale), scale: scale)
    }
    /// datetime2(scale): DATETIME2N, the time's bytes + 3 for the date.
    public static func datetime2(scale: UInt8) -> TypeInfo {
        TypeInfo(type: .datetime2N, length: SQLTime.wireLength(scale: scale) + 3, scale: scale)
    }
    /// datetimeoffset(scale): DATETIMEOFFSETN, the time's bytes + 3 for the date + 2 for the offset.
    public static func datetimeOffset(scale: UInt8) -> TypeInfo {
        TypeInfo(type: .datetimeOffsetN, length: SQLTime.wireLength(scale: scale) + 5, scale: scale)
    }
    /// nvarchar(n) with n in characters (1...4000), or nvarchar(max) when `maxCharacters` is nil.
    public static func nvarchar(_ maxCharacters: Int?, collation: Collation = .sqlLatin1GeneralCP1CIAS) -> TypeInfo {
        guard let n = maxCharacters else { return TypeInfo(type: .nvarchar, length: 0xFFFF, collation: collation, isPLP: true) }
        return TypeInfo(type: .nvarchar, length: n * 2, collation: collation)
    }
    /// nchar(n), n in characters (NCHAR, 2n bytes).
    public static func nchar(_ characters: Int, collation: Collation = .sqlLatin1GeneralCP1CIAS) -> TypeInfo {
        TypeInfo(type: .nchar, length: characters * 2, collation: collation)
    }
    /// varchar(n) in bytes (1...8000), or varchar(max) when nil.
    public static func varchar(_ maxBytes: Int?, collation: Collation = .sqlLatin1GeneralCP1CIAS) -> TypeInfo {
        guard let n = maxBytes else { return TypeInfo(type: .bigVarChar, length: 0xFFFF, collation: collation, isPLP: true) }
        return TypeInfo(type: .bigVarChar, length: n, collation: collation)
    }
    /// char(n), n in bytes (BIGCHAR).
    public static func char(_ bytes: Int, collation: Collation = .sqlLatin1GeneralCP1CIAS) -> TypeInfo {
        TypeInfo(type: .bigChar, length: bytes, collation: collation)
    }
    /// varbinary(n) (1...8000), or varbinary(max) when nil.
    public static func varbinary(_ maxBytes: Int?) -> TypeInfo {
        guard let n = maxBytes else { return TypeInfo(type: .bigVarBinary, length: 0xFFFF, isPLP: true) }
        return TypeInfo(type: .bigVarBinary, length: n)
    }
    /// binary(n), n in bytes (BIGBINARY).
    public static func binary(_ bytes: Int) -> TypeInfo { TypeInfo(type: .bigBinary, length: bytes) }
    /// text (TEXT, LONGLEN, deprecated by SQL Server for varchar(max)).
    public static func text(collation: Collation = .sqlLatin1GeneralCP1CIAS) -> TypeInfo {
        TypeInfo(type: .text, length: 0x7FFF_FFFF, collation: collation)
    }
    /// ntext (NTEXT, LONGLEN, deprecated by SQL Server for nvarchar(max)).
    public static func ntext(collation: Collation = .sqlLatin1GeneralCP1CIAS) -> TypeInfo {
        TypeInfo(type: .ntext, length: 0x7FFF_FFFE, collation: collation)
    }
    /// image (IMAGE, LONGLEN, deprecated by SQL Server for varbinary(max)).
    public static let image = TypeInfo(type: .image, length: 0x7FFF_FFFF)

    // MARK: Decoding

    /// Reads a TYPE_INFO: the type byte and its length/precision/scale/collation/schema/UDT fields.
    ///
    /// Collations are read for TDS 7.1 and later. Throws `.unknownType` for a type byte [MS-TDS]
    /// does not define, `.invalidLength` for a length the type cannot have, `.invalidValue` for a
    /// precision/scale out of range, `.truncated` if the input ends early. Does not read the
    /// TableName that follows text/ntext/image in COLMETADATA.
    public static func decode(from reader: inout ByteReader, version: TDSVersion) throws(TDSDecodingError) -> TypeInfo {
        let start = reader.offset
        let typeByte = try reader.readUInt8()
        let type = TDSDataType(typeByte)
        return try TDSDecodingError.inContext("TYPE_INFO " + type.name) { () throws(TDSDecodingError) in
            return try decodeBody(type: type, from: &reader, version: version, start: start)
        }
    }

    private static func decodeBody(type: TDSDataType, from reader: inout ByteReader, version: TDSVersion,
                                   start: Int) throws(TDSDecodingError) -> TypeInfo {
        guard let kind = type.lengthKind else {
            throw reader.error(.unknownType, at: start, "unknown data type 0x\(String(type.rawValue, radix: 16, uppercase: true))")
        }
        var info = TypeInfo(type: type)
        let hasCollations = version.generation >= 0x71
        if type == .json {
            info.length = -1
            info.isPLP = true
            return info
        }
        if type == .vector { return try decodeVectorTypeInfo(from: &reader) }
        switch kind {
        case .fixed(let size):
            info.length = size
        case .byteLength:
            switch type {
            case .dateN:
                info.length = 3
            case .timeN, .datetime2N, .datetimeOffsetN:
                let at = reader.offset
                let scale = try reader.readUInt8()
                guard scale <= 7 else { throw reader.error(.invalidValue, at: at, "scale \(scale) above 7") }
                info.scale = scale
                info.length = SQLTime.wireLength(scale: scale) + (type == .timeN ? 0 : type == .datetime2N ? 3 : 5)
            case .decimalN, .numericN, .decimal, .numeric:
                let at = reader.offset
                info.length = Int(try reader.readUInt8())
                info.precision = try reader.readUInt8()
                info.scale = try reader.readUInt8()
                guard (1...38).contains(info.precision), info.scale <= info.precision else {
                    throw reader.error(.invalidValue, at: at + 1, "precision \(info.precision), scale \(info.scale)")
                }
                guard (2...17).contains(info.length) else {
                    throw reader.error(.invalidLength, at: at, "decimal length \(info.length)")
                }
            default:
                let at = reader.offset
                info.length = Int(try reader.readUInt8())
                let allowed: Set<Int>?
                switch type {
                case .intN: allowed = [1, 2, 4, 8]
                case .bitN: allowed = [1]
                case .fltN, .moneyN, .datetimN: allowed = [4, 8]
                case .guid: allowed = [16]
                default: allowed = nil
                }
                if let allowed, !allowed.contains(info.length) {
                    throw reader.error(.invalidLength, at: at, "length \(info.length) for \(type.name)")
                }
            }
        case .ushortLength:
            let at = reader.offset
            info.length = Int(try reader.readUInt16LE())
            if type.hasCollation && hasCollations { info.collation = try Collation.decode(from: &reader) }
            if info.length == 0xFFFF {
                // PLP needs TDS 7.2, but is decoded whatever the version says.
                guard type == .bigVarChar || type == .nvarchar || type == .bigVarBinary else {
                    throw reader.error(.invalidLength, at: at, "length 0xFFFF for \(type.name)")
                }
                info.isPLP = true
            }
        case .longLength:
            let at = reader.offset
            let n = try reader.readUInt32LE()
            guard n <= UInt32(Int32.max) else { throw reader.error(.invalidLength, at: at, "length \(n)") }
            info.length = Int(n)
            if type.hasCollation && hasCollations { info.collation = try Collation.decode(from: &reader) }
        case .plp:
            info.isPLP = true
            if type == .xml {
                info.length = -1
                let at = reader.offset
                let present = try reader.readUInt8()
                switch present {
                case 0: break
                case 1:
                    let db = try reader.readBVarChar()
                    let owner = try reader.readBVarChar()
                    let coll = try reader.readUSVarChar()
                    info.xmlSchema = XMLSchemaInfo(databaseName: db, owningSchema: owner, schemaCollection: coll)
                default:
                    throw reader.error(.invalidValue, at: at, "SCHEMA_PRESENT \(present)")
                }
            } else {
                let maxSize = try reader.readUInt16LE()
                info.length = Int(maxSize)
                let db = try reader.readBVarChar()
                let schema = try reader.readBVarChar()
                let name = try reader.readBVarChar()
                let aqn = try reader.readUSVarChar()
                info.udt = UDTInfo(maxByteSize: maxSize, databaseName: db, schemaName: schema, typeName: name,
                                   assemblyQualifiedName: aqn)
            }
        }
        return info
    }

    // MARK: Encoding

    /// Writes this TYPE_INFO (the COLMETADATA / RPC parameter form). Collations are written for
    /// TDS 7.1 and later (the `.sqlLatin1GeneralCP1CIAS` default when none is set).
    public func encode(into writer: inout ByteWriter, version: TDSVersion) {
        writer.writeUInt8(type.rawValue)
        guard let kind = type.lengthKind else { return }
        let hasCollations = version.generation >= 0x71
        if type == .json { return }
        if type == .vector {
            writer.writeUInt16LE(UInt16(clamping: length))
            writer.writeUInt8(scale)
            return
        }
        switch kind {
        case .fixed:
            break
        case .byteLength:
            switch type {
            case .dateN: break
            case .timeN, .datetime2N, .datetimeOffsetN: writer.writeUInt8(scale)
            case .decimalN, .numericN, .decimal, .numeric:
                writer.writeUInt8(UInt8(clamping: length > 0 ? length : SQLDecimal.wireLength(precision: precision)))
                writer.writeUInt8(precision)
                writer.writeUInt8(scale)
            default:
                writer.writeUInt8(UInt8(clamping: length))
            }
        case .ushortLength:
            writer.writeUInt16LE(isPLP ? 0xFFFF : UInt16(clamping: length))
            if type.hasCollation && hasCollations { (collation ?? .sqlLatin1GeneralCP1CIAS).encode(into: &writer) }
        case .longLength:
            writer.writeUInt32LE(UInt32(clamping: length))
            if type.hasCollation && hasCollations { (collation ?? .sqlLatin1GeneralCP1CIAS).encode(into: &writer) }
        case .plp:
            if type == .xml {
                if let s = xmlSchema {
                    writer.writeUInt8(1)
                    writer.writeBVarChar(s.databaseName)
                    writer.writeBVarChar(s.owningSchema)
                    writer.writeUSVarChar(s.schemaCollection)
                } else {
                    writer.writeUInt8(0)
                }
            } else {
                let u = udt ?? UDTInfo(maxByteSize: UInt16(clamping: length), databaseName: "", schemaName: "",
                                       typeName: "", assemblyQualifiedName: "")
                writer.writeUInt16LE(u.maxByteSize)
                writer.writeBVarChar(u.databaseName)
                writer.writeBVarChar(u.schemaName)
                writer.writeBVarChar(u.typeName)
                writer.writeUSVarChar(u.assemblyQualifiedName)
            }
        }
    }

    // MARK: SQL type name

    /// The type as SQL Server would declare it: "int", "nvarchar(20)", "nvarchar(max)",
    /// "decimal(10,3)", "datetime2(7)", "varbinary(max)". BIGBINARY(8) is "binary(8)" (timestamp
    /// cannot be told apart on the wire). UDTs give their type name.
    public var sqlTypeName: String { type.codec?.sqlTypeName(self) ?? type.name }
}
