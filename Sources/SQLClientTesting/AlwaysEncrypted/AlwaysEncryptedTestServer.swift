import Foundation
import SQLClient
import TDS

/// A server that speaks Always Encrypted with keys the test makes, on a ``LoginScenarioServer``:
/// it acknowledges COLUMNENCRYPTION, answers every SQL batch with one result set whose encrypted
/// columns carry the CEK table and CryptoMetaData ([MS-TDS] 2.2.7.4) and ciphertext cells,
/// answers `sp_describe_parameter_encryption` with its two result sets (the CEK, then which
/// parameters are encrypted and how), and answers `sp_executesql` by checking each parameter
/// (an encrypted one must come encrypted, with ParamCipherInfo and the right encryption type;
/// a deterministic one must carry the IV derived from its plaintext) and sending the
/// parameters back as one row, encrypted as they came (OUTPUT ones also in RETURNVALUE): a round
/// trip through the client's encryption and decryption. Any other procedure called by name is
/// answered as sp_executesql is (its parameters checked and sent back).
///
/// A parameter sent in clear where the server describes it as encrypted is answered with error
/// 206 ("Operand type clash"), as SQL Server does.
public final class AlwaysEncryptedTestServer: @unchecked Sendable {
    /// One result column: its plaintext (base) type, and how it is encrypted (nil: plaintext).
    public struct Column: Sendable {
        /// The column name.
        public var name: String
        /// The base TYPE_INFO.
        public var type: TypeInfo
        /// Deterministic or randomized; nil for a plaintext column.
        public var encryption: AEADAes256CbcHmacSha256.EncryptionType?
        /// A column from its fields.
        public init(_ name: String, _ type: TypeInfo, _ encryption: AEADAes256CbcHmacSha256.EncryptionType?) {
            self.name = name; self.type = type; self.encryption = encryption
        }
    }

    /// The column encryption key: its plaintext (the AEAD root key) and the CEK table entry's fields.
    public struct Key: Sendable {
        /// The 32-byte column encryption key the server encrypts with.
        public var rootKey: [UInt8]
        /// EncryptedKey as the CEK table sends it (whatever the test's provider unwraps).
        public var encryptedKey: [UInt8]
        /// KeyStoreName.
        public var keyStoreName: String
        /// KeyPath.
        public var keyPath: String
        /// A key from its fields.
        public init(rootKey: [UInt8], encryptedKey: [UInt8], keyStoreName: String, keyPath: String) {
            self.rootKey = rootKey; self.encryptedKey = encryptedKey; self.keyStoreName = keyStoreName; self.keyPath = keyPath
        }
    }

    /// Ways the server lies in its metadata or cells (hostile tests).
    public struct Lies: Sendable {
        /// CryptoMetaData Ordinal for every encrypted column (the CEK table has one entry).
        public var ordinal: UInt16?
        /// EncryptionAlgo for every encrypted column.
        public var algorithm: UInt8?
        /// Flip a bit of each ciphertext cell (after its MAC was made).
        public var tamperCells = false
        /// Refuse the first sp_executesql with error 33514 (stale encryption metadata), as a
        /// server does after a key rotation.
        public var staleMetadataOnce = false
        /// Leave this parameter (by name, with '@') out of sp_describe_parameter_encryption's
        /// second result set.
        public var undescribedParameter: String?
        /// Spell parameter_name in that result set upper-cased and without its '@'.
        public var parameterNamesUpperCasedWithoutAt = false
        /// Nothing is a lie.
        public init() {}
    }

    /// What the server saw.
    public struct Seen: Sendable {
        /// The statements asked of sp_describe_parameter_encryption, in order.
        public var described: [String] = []
        /// The parameters of each sp_executesql, as decrypted by the server (name → value).
        public var parameters: [[String: SQLValue]] = []
        /// Encrypted parameters that arrived with their ParamCipherInfo, by name (last call).
        public var encryptedNames: Set<String> = []
        /// The TYPE_INFO each encrypted parameter's ciphertext came as, by name (last call):
        /// Microsoft.Data.SqlClient sends varbinary(max).
        public var encryptedTypeInfos: [String: TypeInfo] = [:]
        /// What the server refused (a parameter in clear, a wrong IV), in words.
        public var refusals: [String] = []
    }

    public let key: Key
    /// The result set every SQL batch gets.
    public let columns: [Column]
    /// Its rows, plaintext (NULLs stay NULL, never encrypted).
    public let rows: [[SQLValue]]
    /// How sp_describe_parameter_encryption describes parameters, by name (with '@'): encrypted
    /// this way; the others are plaintext.
    public let encryptedParameters: [String: AEADAes256CbcHmacSha256.EncryptionType]
    public let lies: Lies
    private let cipher: AEADAes256CbcHmacSha256
    private let lock = NSLock()
    private var seen = Seen()
    private var batchAnswers: [String: [UInt8]] = [:]
    private var server: LoginScenarioServer!

    /// Starts the server on a loopback port.
    /// - Throws: ``ColumnEncryptionError`` for a root key that is not 32 bytes; the listener's errors.
    public init(key: Key, columns: [Column] = [], rows: [[SQLValue]] = [],
                encryptedParameters: [String: AEADAes256CbcHmacSha256.EncryptionType] = [:], lies: Lies = Lies()) throws {
        self.key = key
        self.columns = columns
        self.rows = rows
        self.encryptedParameters = encryptedParameters
        self.lies = lies
        cipher = try AEADAes256CbcHmacSha256(rootKey: key.rootKey)
        var behaviour = LoginScenarioServer.Behaviour()
        behaviour.acknowledgesColumnEncryption = true
        behaviour.respond = { [weak self] request, version, login in
            let negotiated = login.featureExt?.contains { $0.id == Login7Feature.columnEncryptionID } ?? false
            return self?.answer(request, version: version, columnEncryption: negotiated)
        }
        server = try LoginScenarioServer(name: "ae", behaviour: behaviour)
    }

    /// The loopback port.
    public var port: UInt16 { server.port }
    /// What the server saw so far.
    public var observed: Seen { lock.withLock { seen } }
    /// Stops the server.
    public func stop() { server.stop() }

    // MARK: - Answers

    static let databaseID: UInt32 = 5, cekID: UInt32 = 1, cekVersion: UInt32 = 1, cekMetadataVersion: UInt64 = 0x0102_0304_0506_0708

    private var cekEntry: CEKEntry {
        CEKEntry(databaseID: Self.databaseID, cekID: Self.cekID, cekVersion: Self.cekVersion, cekMetadataVersion: Self.cekMetadataVersion,
                 values: [.init(encryptedKey: key.encryptedKey, keyStoreName: key.keyStoreName, keyPath: key.keyPath, algorithm: "RSA_OAEP")])
    }

    /// `columnEncryption`: the session negotiated COLUMNENCRYPTION (else encrypted columns go as
    /// plain varbinary ciphertext, with no CEK table or CryptoMetaData).
    private func answer(_ request: LoginScenarioServer.Request, version: TDSVersion, columnEncryption: Bool) -> [UInt8]? {
        switch request.type {
        case .sqlBatch:
            // Encoded (and encrypted) once per form, then sent as it is: a benchmark's client
            // time is not the server's encryption.
            let key = "\(version.rawValue)/\(columnEncryption)"
            if let cached = lock.withLock({ batchAnswers[key] }) { return cached }
            guard let answer = try? resultSet(columns, rows: rows, version: version, columnEncryption: columnEncryption) else {
                return ServerTokens.done(status: .error, version: version)
            }
            lock.withLock { batchAnswers[key] = answer }
            return answer
        case .rpc:
            guard let rpc = try? RPCRequest.decode(from: request.payload, version: version), let call = rpc.calls.first else {
                return error(8009, "malformed RPC", version: version)
            }
            switch call.procedure {
            case .name(let name) where name.lowercased() == "sp_describe_parameter_encryption":
                return describe(call, version: version)
            case .id(.spExecuteSQL):
                return execute(call, from: 2, version: version)
            case .name:
                return execute(call, from: 0, version: version)   // a stored procedure: its parameters back, as sp_executesql's
            default:
                return nil
            }
        default:
            return nil
        }
    }

    private func error(_ number: Int32, _ text: String, version: TDSVersion) -> [UInt8] {
        ServerTokens.message(token: 0xAA, number: number, state: 1, severity: 16, text: text, server: "ae", version: version)
            + ServerTokens.done(status: .error, version: version)
    }

    /// COLMETADATA (with the CEK table when a column is encrypted), the rows, DONE.
    private func resultSet(_ columns: [Column], rows: [[SQLValue]], version: TDSVersion, columnEncryption: Bool = true,
                           done: UInt8 = 0xFD) throws -> [UInt8] {
        let anyEncrypted = columnEncryption && columns.contains { $0.encryption != nil }
        let meta = columns.map { c -> ColumnMetadata in
            guard let e = c.encryption else { return ColumnMetadata(typeInfo: c.type, name: c.name) }
            guard columnEncryption else { return ColumnMetadata(typeInfo: c.type.isPLP ? .varbinary(nil) : .varbinary(8000), name: c.name) }
            let crypto = CryptoMetadata(ordinal: lies.ordinal ?? 0, userType: 0, baseType: c.type, algorithm: lies.algorithm ?? 2,
                                        encryptionType: e.rawValue, normalizationVersion: 1)
            let outer: TypeInfo = c.type.isPLP ? .varbinary(nil) : .varbinary(8000)
            return ColumnMetadata(flags: [.nullable, .encrypted], typeInfo: outer, cryptoMetadata: crypto, name: c.name)
        }
        var w = ByteWriter()
        // With COLUMNENCRYPTION negotiated every COLMETADATA has a CEK table, empty when no column is encrypted.
        ColMetadata(columns: meta, cekTable: anyEncrypted ? [cekEntry] : columnEncryption ? [] : nil).encode(into: &w, version: version)
        for row in rows {
            var cells: [SQLValue] = []
            for (i, c) in columns.enumerated() {
                let v = i < row.count ? row[i] : .null
                guard let e = c.encryption, !v.isNull else { cells.append(v); continue }
                var ciphertext = try cipher.encrypt(try c.type.normalized(v), type: e)
                if lies.tamperCells { ciphertext[ciphertext.count - 1] ^= 0x01 }
                cells.append(.binary(ciphertext))
            }
            w.writeBytes(try ServerTokens.row(cells, columns: meta))
        }
        return w.bytes + ServerTokens.done(token: done, status: done == 0xFF ? [.more, .count] : .count, rowCount: UInt64(rows.count),
                                           version: version)
    }

    /// RETURNVALUE ([MS-TDS] 2.2.7.19): an encrypted column's value as varbinary ciphertext with
    /// CryptoMetaData (no ordinal), a plaintext one as it is.
    private func returnValue(ordinal: UInt16, name: String, column: Column, value: SQLValue, version: TDSVersion) throws -> [UInt8] {
        var w = ByteWriter()
        w.writeUInt8(0xAC)
        w.writeUInt16LE(ordinal)
        w.writeBVarChar(name)
        w.writeUInt8(0x01)
        w.writeUInt32LE(0)
        guard let e = column.encryption else {
            w.writeUInt16LE(ColumnFlags.nullable.rawValue)
            column.type.encode(into: &w, version: version)
            try column.type.encodeValue(value, into: &w)
            return w.bytes
        }
        w.writeUInt16LE(ColumnFlags([.nullable, .encrypted]).rawValue)
        let outer: TypeInfo = column.type.isPLP ? .varbinary(nil) : .varbinary(8000)
        outer.encode(into: &w, version: version)
        CryptoMetadata(ordinal: nil, userType: 0, baseType: column.type, algorithm: 2, encryptionType: e.rawValue)
            .encode(into: &w, version: version)
        let cell: SQLValue = value.isNull ? .null : .binary(try cipher.encrypt(try column.type.normalized(value), type: e))
        try outer.encodeValue(cell, into: &w)
        return w.bytes
    }

    /// COLMETADATA of plaintext columns on a session with COLUMNENCRYPTION (an empty CEK table).
    static func colMetadata(_ columns: [ColumnMetadata], version: TDSVersion) -> [UInt8] {
        var w = ByteWriter()
        ColMetadata(columns: columns, cekTable: []).encode(into: &w, version: version)
        return w.bytes
    }

    /// The names in an sp_executesql declaration (`@P1 int, @P2 decimal(10, 2)`), in order.
    static func declaredNames(_ declaration: String) -> [String] {
        var names: [String] = []
        var depth = 0
        var current = ""
        for ch in declaration + "," {
            switch ch {
            case "(": depth += 1; current.append(ch)
            case ")": depth -= 1; current.append(ch)
            case "," where depth == 0:
                if let name = current.split(separator: " ").first { names.append(String(name)) }
                current = ""
            default: current.append(ch)
            }
        }
        return names
    }

    /// sp_describe_parameter_encryption (@tsql, @params): the CEK result set, then the parameters'.
    private func describe(_ call: RPCCall, version: TDSVersion) -> [UInt8] {
        guard call.parameters.count >= 2, case .string(let tsql) = call.parameters[0].value else {
            return error(8144, "sp_describe_parameter_encryption expects @tsql and @params", version: version)
        }
        let declaration: String
        if case .string(let d) = call.parameters[1].value { declaration = d } else { declaration = "" }
        lock.withLock { seen.described.append(tsql) }
        let names = Self.declaredNames(declaration)
        let keyColumns: [ColumnMetadata] = [
            .init(typeInfo: .int, name: "column_encryption_key_ordinal"), .init(typeInfo: .int, name: "database_id"),
            .init(typeInfo: .int, name: "column_encryption_key_id"), .init(typeInfo: .int, name: "column_encryption_key_version"),
            .init(typeInfo: .binary(8), name: "column_encryption_key_metadata_version"),
            .init(typeInfo: .varbinary(4000), name: "column_encryption_key_encrypted_value"),
            .init(typeInfo: .nvarchar(128), name: "column_master_key_store_provider_name"),
            .init(typeInfo: .nvarchar(4000), name: "column_master_key_path"),
            .init(typeInfo: .nvarchar(128), name: "column_encryption_key_encryption_algorithm_name"),
        ]
        let parameterColumns: [ColumnMetadata] = [
            .init(typeInfo: .int, name: "parameter_ordinal"), .init(typeInfo: .nvarchar(128), name: "parameter_name"),
            .init(typeInfo: .tinyint, name: "column_encryption_algorithm"), .init(typeInfo: .tinyint, name: "column_encryption_type"),
            .init(typeInfo: .int, name: "column_encryption_key_ordinal"),
            .init(typeInfo: .tinyint, name: "column_encryption_normalization_rule_version"),
        ]
        var md: [UInt8] = []
        var v = Self.cekMetadataVersion
        for _ in 0 ..< 8 { md.append(UInt8(v & 0xFF)); v >>= 8 }
        let described = names.enumerated().filter { encryptedParameters[$0.element] != nil }
        var t: [UInt8] = []
        do {
            t += Self.colMetadata(keyColumns, version: version)
            if !described.isEmpty {
                t += try ServerTokens.row([.int(1), .int(Int32(Self.databaseID)), .int(Int32(Self.cekID)), .int(Int32(Self.cekVersion)),
                                           .binary(md), .binary(key.encryptedKey), .string(key.keyStoreName), .string(key.keyPath),
                                           .string("RSA_OAEP")], columns: keyColumns)
            }
            t += ServerTokens.done(token: 0xFF, status: [.more, .count], rowCount: described.isEmpty ? 0 : 1, version: version)
            t += Self.colMetadata(parameterColumns, version: version)
            for (i, name) in names.enumerated() where name != lies.undescribedParameter {
                let e = encryptedParameters[name]
                let spelled = lies.parameterNamesUpperCasedWithoutAt ? String(name.dropFirst()).uppercased() : name
                t += try ServerTokens.row([.int(Int32(i + 1)), .string(spelled), .tinyint(e == nil ? 0 : 2), .tinyint(e?.rawValue ?? 0),
                                           .int(e == nil ? 0 : 1), .tinyint(1)], columns: parameterColumns)
            }
            t += ServerTokens.done(token: 0xFF, status: [.count], rowCount: UInt64(names.filter { $0 != lies.undescribedParameter }.count),
                                   version: version)
        } catch {
            return self.error(50000, "the test server could not encode its answer", version: version)
        }
        return t + ServerTokens.done(token: 0xFE, version: version)
    }

    /// sp_executesql: each parameter checked (and decrypted), then sent back as one row.
    private var refusedStale = false

    private func execute(_ call: RPCCall, from start: Int, version: TDSVersion) -> [UInt8] {
        if lies.staleMetadataOnce, lock.withLock({ () -> Bool in
            defer { refusedStale = true }
            return !refusedStale
        }) {
            return error(33514, "Operand type clash: the encryption metadata of the parameters is out of date", version: version)
        }
        let values = call.parameters.dropFirst(start)
        var row: [SQLValue] = []
        var echo: [Column] = []
        var decrypted: [String: SQLValue] = [:]
        var encryptedNames: Set<String> = []
        var encryptedTypeInfos: [String: TypeInfo] = [:]
        for p in values {
            let name = String(p.name.dropFirst())
            if let expected = encryptedParameters[p.name] {
                guard p.status.contains(.encrypted), let info = p.cipherInfo else {
                    let text = "Operand type clash: \(p.typeInfo.sqlTypeName) is incompatible with \(p.typeInfo.sqlTypeName) encrypted with"
                        + " (encryption_type = '\(expected)', encryption_algorithm_name = 'AEAD_AES_256_CBC_HMAC_SHA256')"
                    lock.withLock { seen.refusals.append("\(p.name) in clear") }
                    return error(206, text, version: version)
                }
                encryptedNames.insert(p.name)
                encryptedTypeInfos[p.name] = p.typeInfo
                guard info.encryptionType == expected.rawValue, info.algorithm == 2, info.databaseID == Self.databaseID,
                      info.cekID == Self.cekID, info.cekVersion == Self.cekVersion, info.cekMetadataVersion == Self.cekMetadataVersion,
                      info.normalizationVersion == 1 else {
                    lock.withLock { seen.refusals.append("\(p.name) cipher info") }
                    return error(33299, "Encryption metadata mismatch for parameter \(p.name)", version: version)
                }
                var value = SQLValue.null
                if case .binary(let ciphertext) = p.value {
                    do {
                        let plaintext = try cipher.decrypt(ciphertext)
                        if expected == .deterministic, try cipher.encrypt(plaintext, type: .deterministic) != ciphertext {
                            lock.withLock { seen.refusals.append("\(p.name) IV") }
                            return error(33299, "deterministic IV mismatch for parameter \(p.name)", version: version)
                        }
                        value = try info.baseType.decodeNormalized(plaintext)
                    } catch {
                        lock.withLock { seen.refusals.append("\(p.name) undecryptable") }
                        return self.error(33299, "parameter \(p.name) does not decrypt", version: version)
                    }
                }
                decrypted[p.name] = value
                row.append(value)
                echo.append(Column(name, info.baseType, expected))
            } else {
                decrypted[p.name] = p.value
                row.append(p.value)
                echo.append(Column(name, p.typeInfo, nil))
            }
        }
        lock.withLock {
            seen.parameters.append(decrypted)
            seen.encryptedNames = encryptedNames
            seen.encryptedTypeInfos = encryptedTypeInfos
        }
        do {
            // The row, then each OUTPUT parameter's value back (encrypted as it came) in RETURNVALUE.
            var t = try resultSet(echo, rows: [row], version: version, done: 0xFF)
            for (i, p) in values.enumerated() where p.status.contains(.byRefValue) {
                t += try returnValue(ordinal: UInt16(i + start), name: p.name, column: echo[i], value: row[i], version: version)
            }
            return t + ServerTokens.done(token: 0xFE, version: version)
        } catch {
            return self.error(50000, "the test server could not encode its answer", version: version)
        }
    }
}
