import TDS

/// Decodes TDS messages of one conversation into output fields, using the TDS module's
/// message and token decoders. Keeps the state that spans messages: the TDS version (LOGINACK
/// updates it), the current COLMETADATA, and the type of the client's last request.
struct ConversationMessageDecoder {
    var version: TDSVersion
    var columnEncryption: Bool
    private var serverTokens: TokenStreamDecoder
    private var clientTokens: TokenStreamDecoder
    private var lastClientType: PacketType?
    /// Set when a LOGINACK was decoded.
    private(set) var loginAckVersion: TDSVersion?

    init(version: TDSVersion, columnEncryption: Bool = false) {
        self.version = version
        self.columnEncryption = columnEncryption
        let options = TokenStreamDecoder.Options(columnEncryption: columnEncryption)
        serverTokens = TokenStreamDecoder(version: version, options: options)
        clientTokens = TokenStreamDecoder(version: version, options: options)
    }

    /// Decodes a token stream without reporting it (a fragment's context).
    mutating func absorbContext(_ bytes: [UInt8]) -> DecodeFailure? {
        let (_, failure) = tokens(bytes, message: "context", server: true)
        return failure
    }

    /// Decodes a message body of `type` sent by `direction`.
    mutating func decode(type: PacketType, payload: [UInt8], direction: TDSDirection,
                         allHeaders: Bool? = nil) -> (fields: [(String, JSONValue)], failure: DecodeFailure?) {
        defer { if direction == .client { lastClientType = type } }
        let name = type.name
        func fail(_ e: TDSDecodingError) -> DecodeFailure { DecodeFailure(e, message: name) }
        switch type {
        case .prelogin:
            do throws(TDSDecodingError) {
                return ([("prelogin", Self.prelogin(try Prelogin.decode(from: payload, version: version)))], nil)
            } catch { return ([], fail(error)) }
        case .login7:
            do throws(TDSDecodingError) {
                let login = try Login7.decode(from: payload, version: version)
                return (Self.login7(login), nil)
            } catch { return ([], fail(error)) }
        case .sqlBatch:
            do throws(TDSDecodingError) {
                let batch = try SQLBatch.decode(from: payload, version: version, allHeaders: allHeaders)
                return ([("sql", .string(batch.text))], nil)
            } catch { return ([], fail(error)) }
        case .rpc:
            do throws(TDSDecodingError) {
                let request = try RPCRequest.decode(from: payload, version: version, allHeaders: allHeaders)
                return (Self.rpc(request), nil)
            } catch { return ([], fail(error)) }
        case .attention:
            return ([], payload.isEmpty ? nil : DecodeFailure(message: name, token: "ATTENTION", offset: 0, code: "invalidLength",
                                                             detail: "an ATTENTION message has no body, this one has \(payload.count) byte(s)"))
        case .transactionManager:
            do throws(TDSDecodingError) {
                let request = try TransactionManagerRequest.decode(from: payload, version: version, allHeaders: allHeaders)
                return ([("request", .string(String(describing: request.request)))], nil)
            } catch { return ([], fail(error)) }
        case .bulkLoad:
            let (list, failure) = tokens(payload, message: name, server: false)
            return ([("tokens", .array(list))], failure)
        case .sspi, .federatedAuthToken:
            return ([("length", .int(Int64(payload.count)))], nil)
        case .tabularResult:
            // A server's answer to PRELOGIN is PRELOGIN option data in a TABULAR_RESULT packet;
            // 0x00 (the VERSION option) is never a token byte.
            if direction == .server, lastClientType == .prelogin || payload.first == 0x00,
               let p = try? Prelogin.decode(from: payload, version: version) {
                lastClientType = nil
                return ([("prelogin", Self.prelogin(p))], nil)
            }
            let (list, failure) = tokens(payload, message: name, server: direction == .server)
            return ([("tokens", .array(list))], failure)
        case .preTDS7Login:
            return ([], DecodeFailure(message: name, token: "PacketHeader", offset: 0, code: TDSDecodingError.Code.unsupportedProtocol.name,
                                      detail: "a pre-TDS 7 LOGIN (Sybase TDS 5.0 or TDS 4.2): only TDS 7.x is supported"))
        default:
            return ([], DecodeFailure(message: name, token: "PacketHeader", offset: 0, code: TDSDecodingError.Code.invalidPacket.name,
                                      detail: "packet type 0x\(String(type.rawValue, radix: 16, uppercase: true)) is not a TDS 7.x message"))
        }
    }

    /// Decodes a whole token stream; on error, the tokens before it and the failure.
    mutating func tokens(_ payload: [UInt8], message: String, server: Bool) -> ([JSONValue], DecodeFailure?) {
        var decoder = server ? serverTokens : clientTokens
        var list: [JSONValue] = []
        var failure: DecodeFailure?
        decoder.append(payload)
        do throws(TDSDecodingError) {
            while let token = try decoder.next() {
                list.append(TokenRendering.json(token))
                if case .loginAck(let ack) = token {
                    loginAckVersion = ack.tdsVersion
                    version = ack.tdsVersion
                }
            }
            try decoder.finish()
        } catch {
            failure = DecodeFailure(error, message: message)
            failure?.previousToken = list.last?["token"]?.stringValue
            // The decoder is failed now: start a fresh one that keeps the columns.
            let columns = decoder.columns
            decoder = TokenStreamDecoder(version: version, options: TokenStreamDecoder.Options(columnEncryption: columnEncryption))
            decoder.setColumns(columns)
        }
        if server { serverTokens = decoder } else { clientTokens = decoder }
        return (list, failure)
    }

    static func prelogin(_ p: Prelogin) -> JSONValue {
        var o: [(String, JSONValue)] = []
        if let v = p.version { o.append(("version", .string(v.description))) }
        if let e = p.encryption { o.append(("encryption", .string(e.description))) }
        if let i = p.instanceOption {
            let text = String(decoding: i.prefix { $0 != 0 }, as: UTF8.self)
            o.append(("instance", .string(text)))
        }
        if let t = p.threadID { o.append(("threadID", .uint(UInt64(t)))) }
        if let m = p.mars { o.append(("mars", .bool(m != 0))) }
        if p.traceID != nil { o.append(("traceID", .bool(true))) }
        if let f = p.fedAuthRequired { o.append(("fedAuthRequired", .bool(f != 0))) }
        if let n = p.nonce { o.append(("nonce", JSONValue.hex(n))) }
        return .object(o)
    }

    /// LOGIN7 fields. The password and the change-password are never shown.
    static func login7(_ l: Login7) -> [(String, JSONValue)] {
        var o: [(String, JSONValue)] = [
            ("tdsVersion", .string(l.tdsVersion.description)),
            ("packetSize", .uint(UInt64(l.packetSize))),
            ("hostName", .string(l.hostName)),
            ("userName", .string(l.userName)),
            ("appName", .string(l.appName)),
            ("serverName", .string(l.serverName)),
            ("libraryName", .string(l.libraryName)),
            ("language", .string(l.language)),
            ("database", .string(l.database)),
        ]
        if !l.sspi.isEmpty { o.append(("sspiLength", .int(Int64(l.sspi.count)))) }
        if let features = l.featureExt {
            o.append(("features", .array(features.map { .string($0.name) })))
        }
        return o
    }

    static func rpc(_ r: RPCRequest) -> [(String, JSONValue)] {
        func call(_ c: RPCCall) -> [(String, JSONValue)] {
            let procedure: String
            switch c.procedure {
            case .id(let id): procedure = id.description
            case .name(let n): procedure = n
            }
            let parameters: [JSONValue] = c.parameters.map { p in
                if let table = p.table {
                    // A table-valued parameter ([MS-TDS] 2.2.5.5.5): declared as its table type.
                    let typeName = [table.databaseName, table.schemaName, table.typeName].filter { !$0.isEmpty }.joined(separator: ".")
                    var o: [(String, JSONValue)] = [("name", .string(p.name)), ("type", .string(typeName + " READONLY")),
                                                     ("value", .null), ("output", .bool(p.status.contains(.byRefValue)))]
                    if let columns = table.columns {
                        o.append(("columns", .array(columns.map { .object([("name", .string($0.name)), ("type", .string($0.typeInfo.sqlTypeName))]) })))
                    }
                    o.append(("rows", .array(table.rows.map { row in .array(row.map(TokenRendering.value)) })))
                    return .object(o)
                }
                return .object([("name", .string(p.name)), ("type", .string(p.typeInfo.sqlTypeName)),
                                ("value", TokenRendering.value(p.value)), ("output", .bool(p.status.contains(.byRefValue)))])
            }
            return [("procedure", .string(procedure)), ("parameters", .array(parameters))]
        }
        var o = r.calls.first.map(call) ?? []
        if r.calls.count > 1 {
            o.append(("calls", .array(r.calls.map { .object(call($0)) })))
        }
        return o
    }
}
