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
        var progress = ReturnValueHeaderProgress(incremental: false)
        guard let header = try progress.advance(&reader, version: version, columnEncryption: columnEncryption) else {
            throw progress.truncation ?? reader.truncated(1)
        }
        return header
    }

    /// Decodes the body after the 0xAC byte. Throws `.truncated` if the input ends inside it.
    /// (``TokenStreamDecoder`` reads a long PLP value incrementally instead.)
    public static func decode(from reader: inout ByteReader, version: TDSVersion,
                              columnEncryption: Bool = false) throws(TDSDecodingError) -> ReturnValue {
        let start = reader.offset
        do throws(TDSDecodingError) {
            let header = try decodeHeader(from: &reader, version: version, columnEncryption: columnEncryption)
            guard let values = try WireRowProgress.values(of: .returnValue, tokenStart: reader.baseOffset &+ start &- 1,
                                                          types: [header.typeInfo], from: &reader) else {
                throw TDSDecodingError(.truncated, offset: reader.baseOffset &+ reader.endIndex, "the value continues past the input")
            }
            return header.with(value: values.first ?? .null)
        } catch {
            if error.code == .truncated { reader.offset = start }
            throw error.inToken("RETURNVALUE")
        }
    }
}

/// The part of a RETURNVALUE before its value (``ReturnValue/Header``) being read as its bytes
/// arrive, in three units (ParamOrdinal and ParamName; Status, UserType, Flags and TYPE_INFO;
/// the CryptoMetadata, see ``CryptoMetadataProgress``), each kept once read. The value is then
/// read by ``WireRowProgress``.
struct ReturnValueHeaderProgress: Sendable {
    private enum Stage: Sendable { case name, type, crypto }
    private var stage = Stage.name
    private var ordinal: UInt16 = 0
    private var name = ""
    private var status: UInt8 = 0
    private var userType: UInt32 = 0
    private var flags = ColumnFlags()
    private var typeInfo = TypeInfo(type: .null)
    private var crypto: CryptoMetadataProgress
    private var names: TypeInfoNames
    /// Where the last attempt ran out of bytes.
    private(set) var truncation: TDSDecodingError?

    /// `incremental`: more bytes may come (see ``TypeInfoNames``).
    init(incremental: Bool) {
        crypto = CryptoMetadataProgress(withOrdinal: false, incremental: incremental)
        names = TypeInfoNames(incremental: incremental)
    }

    /// Reads what `reader` holds; the header once complete, nil when more bytes are needed
    /// (`reader` is left after the last unit read). Errors are not put in a token context.
    mutating func advance(_ reader: inout ByteReader, version: TDSVersion,
                          columnEncryption: Bool) throws(TDSDecodingError) -> ReturnValue.Header? {
        while true {
            let start = reader.offset
            do throws(TDSDecodingError) {
                switch stage {
                case .name:
                    let o = try reader.readUInt16LE()
                    name = try reader.readBVarChar()
                    ordinal = o
                    stage = .type
                case .type:
                    let s = try reader.readUInt8()
                    let user: UInt32 = version.hasLongRowCounts ? try reader.readUInt32LE() : UInt32(try reader.readUInt16LE())
                    let f = ColumnFlags(rawValue: try reader.readUInt16LE())
                    guard names.ready(reader) else { reader.offset = start; truncation = nil; return nil }
                    typeInfo = try TypeInfo.decode(from: &reader, version: version)
                    status = s
                    userType = user
                    flags = f
                    stage = .crypto
                case .crypto:
                    var cryptoMetadata: CryptoMetadata?
                    if columnEncryption && flags.contains(.encrypted) {
                        guard let done = try crypto.advance(&reader, version: version) else {
                            truncation = crypto.truncation
                            return nil
                        }
                        cryptoMetadata = done
                    }
                    return ReturnValue.Header(ordinal: ordinal, name: name, status: status, userType: userType,
                                              flags: flags, typeInfo: typeInfo, cryptoMetadata: cryptoMetadata)
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
