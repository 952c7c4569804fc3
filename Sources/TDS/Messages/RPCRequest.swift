/// [MS-TDS] 2.2.6.6 RPC Request: one or more remote procedure calls (packet type 0x03).
///
/// Layout: ALL_HEADERS (7.2 and later), then RPCReqBatch, optionally followed by more batches,
/// each preceded by a separator (BatchFlag 0xFF from 7.2 — 0x80 before — or NoExecFlag 0xFE),
/// and optionally a trailing separator. An RPCReqBatch is:
/// - NameLenProcID: a US_VARCHAR procedure name, or ProcIDSwitch 0xFFFF + ProcID (2 bytes LE);
/// - OptionFlags (2 bytes LE): fWithRecomp 0x01, fNoMetaData 0x02, fReuseMetaData 0x04;
/// - parameters, each B_VARCHAR name, StatusFlags (fByRefValue 0x01, fDefaultValue 0x02,
///   fEncrypted 0x08), TYPE_INFO and the value (TYPE_VARBYTE; PLP types in chunks; text, ntext
///   and image with a 4-byte length and no TextPtr).
///
/// Table-valued parameters (TVP_TYPE_INFO, 0xF3) are read into ``TableValuedParameter``;
/// encrypted parameters (fEncrypted, Always Encrypted) with their ``ParamCipherInfo``.
public struct RPCRequest: Hashable, Sendable {
    /// ALL_HEADERS; nil for TDS 7.1 and earlier, or for bodies recorded without it.
    public var allHeaders: AllHeaders?
    /// The calls in order (several in one request are separated by their ``RPCCall/separator``).
    public var calls: [RPCCall]

    /// An RPC request of `calls` with ALL_HEADERS (by default: no transaction).
    public init(calls: [RPCCall], allHeaders: AllHeaders? = .transaction()) {
        self.calls = calls
        self.allHeaders = allHeaders
    }

    /// An RPC request of one call.
    public init(_ call: RPCCall, allHeaders: AllHeaders? = .transaction()) {
        self.init(calls: [call], allHeaders: allHeaders)
    }

    /// The separator byte for batches in `version`: 0xFF from 7.2, 0x80 before.
    public static func batchFlag(for version: TDSVersion) -> UInt8 { version.generation >= 0x72 ? 0xFF : 0x80 }
    /// NoExecFlag (7.2 and later).
    public static let noExecFlag: UInt8 = 0xFE

    /// Decodes a whole RPC request message body. `allHeaders`: whether it starts with ALL_HEADERS (nil: from TDS 7.2 on).
    /// - Throws: ``TDSDecodingError`` with the offset of what is malformed.
    public static func decode(from bytes: [UInt8], version: TDSVersion, allHeaders: Bool? = nil) throws(TDSDecodingError) -> RPCRequest {
        var reader = ByteReader(bytes)
        return try decode(from: &reader, version: version, allHeaders: allHeaders)
    }

    /// Decodes an RPC request from the reader's remaining bytes (all of them).
    ///
    /// - Parameter allHeaders: overrides the version rule (ALL_HEADERS from 7.2) when non-nil;
    ///   pass `false` for bodies that start at NameLenProcID.
    /// - Throws: `.truncated` when the input ends inside a call; TYPE_INFO/value errors;
    ///   `.unsupported` for a table-valued parameter before TDS 7.3.
    public static func decode(from reader: inout ByteReader, version: TDSVersion, allHeaders: Bool? = nil) throws(TDSDecodingError) -> RPCRequest {
        try TDSDecodingError.inContext("RPCRequest") { () throws(TDSDecodingError) in
            let headers = try AllHeaders.decodeIfPresent(from: &reader, version: version, present: allHeaders)
            var calls: [RPCCall] = []
            repeat {
                var call = try RPCCall.decode(from: &reader, version: version)
                if !reader.isAtEnd {
                    let flag = try reader.readUInt8()
                    call.separator = flag == noExecFlag && version.generation >= 0x72 ? .noExec : .batch
                }
                calls.append(call)
            } while !reader.isAtEnd
            return RPCRequest(calls: calls, allHeaders: headers)
        }
    }

    /// Encodes the body. ALL_HEADERS is written from 7.2 on (auto-commit header when nil).
    /// Calls are separated by their `separator` (BatchFlag when nil and another call follows).
    ///
    /// - Throws: `.invalidValue` when a parameter value does not fit its TYPE_INFO.
    public func encode(version: TDSVersion) throws(TDSDecodingError) -> [UInt8] {
        var w = ByteWriter(capacity: 128)
        if AllHeaders.isPresent(in: version) { (allHeaders ?? .transaction()).encode(into: &w) }
        for (i, call) in calls.enumerated() {
            try call.encode(into: &w, version: version)
            let isLast = i == calls.count - 1
            switch call.separator {
            case .batch?: w.writeUInt8(RPCRequest.batchFlag(for: version))
            case .noExec?: w.writeUInt8(version.generation >= 0x72 ? RPCRequest.noExecFlag : RPCRequest.batchFlag(for: version))
            case nil: if !isLast { w.writeUInt8(RPCRequest.batchFlag(for: version)) }
            }
        }
        return w.bytes
    }
}

/// [MS-TDS] 2.2.6.6 RPCReqBatch: one procedure call of an ``RPCRequest``.
public struct RPCCall: Hashable, Sendable {
    /// A well-known procedure number (ProcID, used after ProcIDSwitch 0xFFFF).
    public struct ProcID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: UInt16
        public init(rawValue: UInt16) { self.rawValue = rawValue }
        /// ProcID 1, sp_cursor.
        public static let spCursor = ProcID(rawValue: 1)
        /// ProcID 2, sp_cursoropen.
        public static let spCursorOpen = ProcID(rawValue: 2)
        /// ProcID 3, sp_cursorprepare.
        public static let spCursorPrepare = ProcID(rawValue: 3)
        /// ProcID 4, sp_cursorexecute.
        public static let spCursorExecute = ProcID(rawValue: 4)
        /// ProcID 5, sp_cursorprepexec.
        public static let spCursorPrepExec = ProcID(rawValue: 5)
        /// ProcID 6, sp_cursorunprepare.
        public static let spCursorUnprepare = ProcID(rawValue: 6)
        /// ProcID 7, sp_cursorfetch.
        public static let spCursorFetch = ProcID(rawValue: 7)
        /// ProcID 8, sp_cursoroption.
        public static let spCursorOption = ProcID(rawValue: 8)
        /// ProcID 9, sp_cursorclose.
        public static let spCursorClose = ProcID(rawValue: 9)
        /// ProcID 10, sp_executesql (statement, parameter declaration, values).
        public static let spExecuteSQL = ProcID(rawValue: 10)
        /// ProcID 11, sp_prepare.
        public static let spPrepare = ProcID(rawValue: 11)
        /// ProcID 12, sp_execute.
        public static let spExecute = ProcID(rawValue: 12)
        /// ProcID 13, sp_prepexec.
        public static let spPrepExec = ProcID(rawValue: 13)
        /// ProcID 14, sp_prepexecrpc.
        public static let spPrepExecRPC = ProcID(rawValue: 14)
        /// ProcID 15, sp_unprepare.
        public static let spUnprepare = ProcID(rawValue: 15)

        /// The procedure's name ("sp_executesql"), or "ProcID n".
        public var description: String {
            let names = ["sp_cursor", "sp_cursoropen", "sp_cursorprepare", "sp_cursorexecute", "sp_cursorprepexec",
                         "sp_cursorunprepare", "sp_cursorfetch", "sp_cursoroption", "sp_cursorclose", "sp_executesql",
                         "sp_prepare", "sp_execute", "sp_prepexec", "sp_prepexecrpc", "sp_unprepare"]
            let i = Int(rawValue) - 1
            return names.indices.contains(i) ? names[i] : "ProcID \(rawValue)"
        }
    }

    /// Which procedure a call runs: a well-known ProcID (ProcIDSwitch 0xFFFF) or a name (US_VARCHAR).
    public enum Procedure: Hashable, Sendable {
        /// A well-known procedure by number.
        case id(ProcID)
        /// A procedure by name, for example `dbo.transfer`.
        case name(String)
    }

    /// OptionFlags: fWithRecomp 0x01, fNoMetaData 0x02, fReuseMetaData 0x04.
    public struct Options: OptionSet, Hashable, Sendable {
        public let rawValue: UInt16
        public init(rawValue: UInt16) { self.rawValue = rawValue }
        /// fWithRecomp: recompile the procedure.
        public static let withRecompile = Options(rawValue: 0x01)
        /// fNoMetaData: send no COLMETADATA (the client keeps the earlier one).
        public static let noMetadata = Options(rawValue: 0x02)
        /// fReuseMetaData: reuse the metadata of the previous call.
        public static let reuseMetadata = Options(rawValue: 0x04)
    }

    /// The flag that follows a call in a multi-call request.
    public enum Separator: Hashable, Sendable {
        /// BatchFlag (0xFF from 7.2, 0x80 before).
        case batch
        /// NoExecFlag 0xFE (7.2+).
        case noExec
    }

    /// The procedure to run.
    public var procedure: Procedure
    /// OptionFlags.
    public var options: Options
    /// ParameterData, in order.
    public var parameters: [RPCParameter]
    /// The separator written after this call; nil when none (the last call usually has none).
    public var separator: Separator?

    /// A call of `procedure` with `parameters`.
    public init(procedure: Procedure, options: Options = [], parameters: [RPCParameter] = [], separator: Separator? = nil) {
        self.procedure = procedure
        self.options = options
        self.parameters = parameters
        self.separator = separator
    }

    /// Whether `byte`, read where a parameter could start, is a batch separator in `version`.
    static func isSeparator(_ byte: UInt8, version: TDSVersion) -> Bool {
        version.generation >= 0x72 ? (byte == 0xFF || byte == 0xFE) : byte == 0x80
    }

    /// Decodes one RPCReqBatch; stops before a separator or at the end of the input.
    public static func decode(from reader: inout ByteReader, version: TDSVersion) throws(TDSDecodingError) -> RPCCall {
        let nameLength = try reader.readUInt16LE()
        let procedure: Procedure
        if nameLength == 0xFFFF {
            procedure = .id(ProcID(rawValue: try reader.readUInt16LE()))
        } else {
            procedure = .name(try reader.readUTF16LE(byteCount: Int(nameLength) * 2))
        }
        let options = Options(rawValue: try reader.readUInt16LE())
        var parameters: [RPCParameter] = []
        while !reader.isAtEnd {
            if isSeparator(try reader.peekUInt8(), version: version) { break }
            parameters.append(try RPCParameter.decode(from: &reader, version: version))
        }
        return RPCCall(procedure: procedure, options: options, parameters: parameters)
    }

    /// Appends the call: the name or ProcID, OptionFlags, each parameter, then the separator when set.
    /// - Throws: ``TDSDecodingError`` when a value does not fit its TYPE_INFO.
    public func encode(into w: inout ByteWriter, version: TDSVersion) throws(TDSDecodingError) {
        switch procedure {
        case .id(let id):
            w.writeUInt16LE(0xFFFF)
            w.writeUInt16LE(id.rawValue)
        case .name(let name):
            w.writeUSVarChar(name)
        }
        w.writeUInt16LE(options.rawValue)
        for p in parameters { try p.encode(into: &w, version: version) }
    }
}

/// [MS-TDS] 2.2.6.6 ParameterData: one RPC parameter.
public struct RPCParameter: Hashable, Sendable {
    /// StatusFlags: fByRefValue 0x01 (output parameter), fDefaultValue 0x02, fEncrypted 0x08.
    public struct Status: OptionSet, Hashable, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// fByRefValue: an OUTPUT parameter (its value comes back in RETURNVALUE).
        public static let byRefValue = Status(rawValue: 0x01)
        /// fDefaultValue: use the parameter's declared default (the value is sent NULL).
        public static let defaultValue = Status(rawValue: 0x02)
        /// fEncrypted: the value is encrypted (Always Encrypted): ``RPCParameter/cipherInfo`` follows it.
        public static let encrypted = Status(rawValue: 0x08)
    }

    /// The parameter name with its '@', or "" for a positional parameter.
    public var name: String
    /// StatusFlags.
    public var status: Status
    /// The TYPE_INFO the value is sent as.
    public var typeInfo: TypeInfo
    /// The value (NULL for a pure output parameter).
    public var value: SQLValue

    /// A table-valued parameter (TVP_TYPE_INFO, TDS 7.3+); nil for scalar parameters. When set,
    /// `typeInfo` is the TVP type byte 0xF3 and `value` is `.null`.
    public var table: TableValuedParameter?

    /// ParamCipherInfo of an encrypted parameter (fEncrypted, TDS 7.4): `typeInfo` is then
    /// varbinary and `value` the ciphertext (or NULL).
    public var cipherInfo: ParamCipherInfo?

    /// A scalar parameter.
    public init(name: String = "", status: Status = [], typeInfo: TypeInfo, value: SQLValue) {
        self.name = name
        self.status = status
        self.typeInfo = typeInfo
        self.value = value
        self.table = nil
    }

    /// A table-valued parameter.
    public init(name: String = "", status: Status = [], table: TableValuedParameter) {
        self.name = name
        self.status = status
        self.typeInfo = TypeInfo(type: TDSDataType(rawValue: TableValuedParameter.typeByte))
        self.value = .null
        self.table = table
    }

    /// Reads a TYPE_VARBYTE value of `info` as RPC parameters and TVP rows carry it: PLP types
    /// in chunks; text, ntext and image with a 4-byte length and no TextPtr; others as in rows.
    static func decodeValue(_ info: TypeInfo, from reader: inout ByteReader) throws(TDSDecodingError) -> SQLValue {
        if info.isPLP {
            return try info.decodePLPValue(try readPLP(from: &reader))
        }
        guard isTextPointerType(info.type) else {
            return try info.decodeValue(from: &reader)
        }
        let at = reader.absoluteOffset
        let length = try reader.readUInt32LE()
        if length == 0xFFFF_FFFF { return .null }
        guard Int(length) <= reader.remaining else { throw reader.truncated(Int(length), "TYPE_VARBYTE") }
        // Re-frame as the ROW form (TextPtr, timestamp, length) that TypeInfo decodes.
        var framed = ByteWriter(capacity: Int(length) + 29)
        framed.writeUInt8(16)
        framed.writeBytes([UInt8](repeating: 0, count: 24))
        framed.writeUInt32LE(length)
        framed.writeBytes(try reader.readBytes(Int(length)))
        var sub = ByteReader(framed.bytes, baseOffset: at &- 25)
        return try info.decodeValue(from: &sub)
    }

    /// Writes `value` in the form `decodeValue(_:from:)` reads.
    static func encodeValue(_ value: SQLValue, _ info: TypeInfo, into w: inout ByteWriter) throws(TDSDecodingError) {
        guard isTextPointerType(info.type) && !info.isPLP else {
            try info.encodeValue(value, into: &w)
            return
        }
        if value.isNull {
            w.writeUInt32LE(0xFFFF_FFFF)
            return
        }
        var row = ByteWriter()
        try info.encodeValue(value, into: &row)
        // ROW form: TextPtr length (1), TextPtr, timestamp (8), length (4), data.
        let skip = 1 + Int(row.bytes.first ?? 0) + 8
        if row.bytes.count >= skip + 4 {
            w.writeBytes(row.bytes[skip...])
        } else {
            w.writeUInt32LE(0xFFFF_FFFF)
        }
    }

    static let plpNull: UInt64 = 0xFFFF_FFFF_FFFF_FFFF
    static let plpUnknownLength: UInt64 = 0xFFFF_FFFF_FFFF_FFFE

    /// Whether values of this type carry a TextPtr in rows but a bare 4-byte length in RPC.
    private static func isTextPointerType(_ t: TDSDataType) -> Bool {
        t == .text || t == .ntext || t == .image
    }

    /// Reads one ParameterData: name, StatusFlags, TYPE_INFO (or TVP_TYPE_INFO) and the value.
    /// - Throws: ``TDSDecodingError``.
    public static func decode(from reader: inout ByteReader, version: TDSVersion) throws(TDSDecodingError) -> RPCParameter {
        let start = reader.offset
        let name = try reader.readBVarChar()
        let status = Status(rawValue: try reader.readUInt8())
        if try reader.peekUInt8() == TableValuedParameter.typeByte {
            guard !status.contains(.encrypted) else {
                throw reader.error(.unsupported, at: start, "encrypted table-valued parameter \(name)")
            }
            let table = try TableValuedParameter.decode(from: &reader, version: version)
            return RPCParameter(name: name, status: status, table: table)
        }
        let info = try TypeInfo.decode(from: &reader, version: version)
        let value = try decodeValue(info, from: &reader)
        var parameter = RPCParameter(name: name, status: status, typeInfo: info, value: value)
        if status.contains(.encrypted) {
            parameter.cipherInfo = try ParamCipherInfo.decode(from: &reader, version: version)
        }
        return parameter
    }

    /// Reads a PLP body (8-byte total length, chunks, 0 terminator). Nil for PLP NULL.
    static func readPLP(from reader: inout ByteReader) throws(TDSDecodingError) -> [UInt8]? {
        let totalAt = reader.offset
        let total = try reader.readUInt64LE()
        if total == plpNull { return nil }
        var data: [UInt8] = []
        if total != plpUnknownLength, total <= UInt64(reader.remaining) { data.reserveCapacity(Int(total)) }
        while true {
            let chunk = Int(try reader.readUInt32LE())
            if chunk == 0 { break }
            data.append(contentsOf: try reader.readBytes(chunk))
        }
        if total != plpUnknownLength && UInt64(data.count) != total {
            throw reader.error(.invalidLength, at: totalAt, "PLP total length \(total) but chunks hold \(data.count) bytes")
        }
        return data
    }

    /// Appends the ParameterData.
    /// - Throws: ``TDSDecodingError`` when the value does not fit its TYPE_INFO.
    public func encode(into w: inout ByteWriter, version: TDSVersion) throws(TDSDecodingError) {
        w.writeBVarChar(name)
        w.writeUInt8(status.rawValue)
        if let table {
            try table.encode(into: &w, version: version)
            return
        }
        typeInfo.encode(into: &w, version: version)
        try RPCParameter.encodeValue(value, typeInfo, into: &w)
        if status.contains(.encrypted), let cipherInfo { cipherInfo.encode(into: &w, version: version) }
    }
}

/// [MS-TDS] 2.2.6.6 ParamCipherInfo: how an encrypted RPC parameter was encrypted, after its
/// (varbinary ciphertext) value: the plaintext TYPE_INFO, EncryptionAlgo (with AlgoName when 0),
/// EncryptionType, the column encryption key's DatabaseId, CekId, CekVersion and CekMDVersion,
/// and NormVersion.
///
/// Unlike COLMETADATA's CryptoMetaData (2.2.7.4), there is no UserType before the TYPE_INFO:
/// Microsoft.Data.SqlClient writes the TYPE_INFO first (TdsParser.WriteEncryptionMetadata), then
/// the 1 + 1 + 4 + 4 + 4 + 8 + 1 bytes of the other fields.
public struct ParamCipherInfo: Hashable, Sendable {
    /// The plaintext TYPE_INFO (as the parameter is declared).
    public var baseType: TypeInfo
    /// EncryptionAlgo: 2 = AEAD_AES_256_CBC_HMAC_SHA256; 0 = custom (see ``algorithmName``).
    public var algorithm: UInt8
    /// AlgoName when ``algorithm`` is 0.
    public var algorithmName: String?
    /// EncryptionType: 1 deterministic, 2 randomized.
    public var encryptionType: UInt8
    /// DatabaseId of the column encryption key.
    public var databaseID: UInt32
    /// CekId.
    public var cekID: UInt32
    /// CekVersion.
    public var cekVersion: UInt32
    /// CekMDVersion (8 bytes, little-endian as the server sent it).
    public var cekMetadataVersion: UInt64
    /// NormVersion: 1.
    public var normalizationVersion: UInt8

    /// ParamCipherInfo from its fields.
    public init(baseType: TypeInfo, algorithm: UInt8 = 2, algorithmName: String? = nil, encryptionType: UInt8,
                databaseID: UInt32, cekID: UInt32, cekVersion: UInt32, cekMetadataVersion: UInt64, normalizationVersion: UInt8 = 1) {
        self.baseType = baseType; self.algorithm = algorithm; self.algorithmName = algorithmName
        self.encryptionType = encryptionType; self.databaseID = databaseID; self.cekID = cekID; self.cekVersion = cekVersion
        self.cekMetadataVersion = cekMetadataVersion; self.normalizationVersion = normalizationVersion
    }

    /// Writes ParamCipherInfo (see the type's description).
    public func encode(into w: inout ByteWriter, version: TDSVersion) {
        baseType.encode(into: &w, version: version)
        w.writeUInt8(algorithm)
        if algorithm == 0 { w.writeBVarChar(algorithmName ?? "") }
        w.writeUInt8(encryptionType)
        w.writeUInt32LE(databaseID)
        w.writeUInt32LE(cekID)
        w.writeUInt32LE(cekVersion)
        w.writeUInt64LE(cekMetadataVersion)
        w.writeUInt8(normalizationVersion)
    }

    /// Reads ParamCipherInfo.
    /// - Throws: ``TDSDecodingError`` (`.truncated`, TYPE_INFO errors).
    public static func decode(from r: inout ByteReader, version: TDSVersion) throws(TDSDecodingError) -> ParamCipherInfo {
        let base = try TypeInfo.decode(from: &r, version: version)
        let algorithm = try r.readUInt8()
        let name = algorithm == 0 ? try r.readBVarChar() : nil
        let type = try r.readUInt8()
        let db = try r.readUInt32LE(), cek = try r.readUInt32LE(), cekVersion = try r.readUInt32LE()
        let md = try r.readUInt64LE()
        let norm = try r.readUInt8()
        return ParamCipherInfo(baseType: base, algorithm: algorithm, algorithmName: name, encryptionType: type,
                               databaseID: db, cekID: cek, cekVersion: cekVersion, cekMetadataVersion: md, normalizationVersion: norm)
    }
}
