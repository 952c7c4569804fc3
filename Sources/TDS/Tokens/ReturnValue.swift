/// [MS-TDS] 2.2.7.19 RETURNVALUE — an output parameter or UDF return value (token 0xAC).
///
/// Wire shape after the token byte (no token length): ParamOrdinal USHORT, ParamName
/// B_VARCHAR, Status BYTE (0x01 output parameter, 0x02 user-defined function), UserType
/// (USHORT before TDS 7.2, ULONG after), Flags USHORT, TYPE_INFO, [CryptoMetadata when
/// encrypted and column encryption was negotiated], then the value as in ROW.
public struct ReturnValue: Hashable, Sendable {
    /// ParamOrdinal: the parameter's position in the call.
    public var ordinal: UInt16
    /// The parameter name including `@`, empty for a UDF return value.
    public var name: String
    /// 0x01 = output parameter of an RPC, 0x02 = return value of a user-defined function.
    public var status: UInt8
    /// UserType.
    public var userType: UInt32
    /// Flags.
    public var flags: ColumnFlags
    /// The value's TYPE_INFO.
    public var typeInfo: TypeInfo
    /// Always Encrypted metadata, when the value is encrypted.
    public var cryptoMetadata: CryptoMetadata?
    /// The value.
    public var value: SQLValue

    /// A RETURNVALUE from its fields.
    public init(ordinal: UInt16, name: String, status: UInt8 = 1, userType: UInt32 = 0, flags: ColumnFlags = [.nullable],
                typeInfo: TypeInfo, cryptoMetadata: CryptoMetadata? = nil, value: SQLValue) {
        self.ordinal = ordinal; self.name = name; self.status = status; self.userType = userType
        self.flags = flags; self.typeInfo = typeInfo; self.cryptoMetadata = cryptoMetadata; self.value = value
    }

    /// ParamOrdinal through CryptoMetadata: everything before the value.
    struct Header: Hashable, Sendable {
        var ordinal: UInt16
        var name: String
        var status: UInt8
        var userType: UInt32
        var flags: ColumnFlags
        var typeInfo: TypeInfo
        var cryptoMetadata: CryptoMetadata?

        func with(value: SQLValue) -> ReturnValue {
            ReturnValue(ordinal: ordinal, name: name, status: status, userType: userType, flags: flags,
                        typeInfo: typeInfo, cryptoMetadata: cryptoMetadata, value: value)
        }
    }

    static func decodeHeader(from reader: inout ByteReader, version: TDSVersion,
                             columnEncryption: Bool) throws(TDSDecodingError) -> Header {
        let ordinal = try reader.readUInt16LE()
        let name = try reader.readBVarChar()
        let status = try reader.readUInt8()
        let userType: UInt32 = version.hasLongRowCounts ? try reader.readUInt32LE() : UInt32(try reader.readUInt16LE())
        let flags = ColumnFlags(rawValue: try reader.readUInt16LE())
        let info = try TypeInfo.decode(from: &reader, version: version)
        var crypto: CryptoMetadata?
        if columnEncryption && flags.contains(.encrypted) {
            crypto = try CryptoMetadata.decode(from: &reader, version: version, withOrdinal: false)
        }
        return Header(ordinal: ordinal, name: name, status: status, userType: userType, flags: flags,
                      typeInfo: info, cryptoMetadata: crypto)
    }

    /// Decodes the body after the 0xAC byte. Throws `.truncated` if the input ends inside it.
    /// (``TokenStreamDecoder`` reads a long PLP value incrementally instead.)
    public static func decode(from reader: inout ByteReader, version: TDSVersion,
                              columnEncryption: Bool = false) throws(TDSDecodingError) -> ReturnValue {
        let start = reader.offset
        do throws(TDSDecodingError) {
            let header = try decodeHeader(from: &reader, version: version, columnEncryption: columnEncryption)
            var progress = RowProgress(name: "RETURNVALUE", tokenStart: reader.baseOffset &+ start &- 1)
            if try !progress.advance(&reader, types: [header.typeInfo]) {
                throw TDSDecodingError(.truncated, offset: reader.absoluteOffset, "the value continues past the input")
            }
            return header.with(value: progress.values.first ?? .null)
        } catch {
            if error.code == .truncated { reader.offset = start }
            throw error.inToken("RETURNVALUE")
        }
    }
}
