import TDS

/// What `sp_describe_parameter_encryption` says of one statement and its parameter declaration:
/// the column encryption keys (its first result set) and, for each parameter, whether and how it
/// is encrypted (its second). Asked once per statement text and declaration, then cached on
/// the connection (``SQLConnection/parameterEncryptionPlans``).
struct ParameterEncryptionPlan: Sendable {
    struct Parameter: Sendable {
        var name: String
        var algorithm: UInt8
        var encryptionType: AEADAes256CbcHmacSha256.EncryptionType
        var keyOrdinal: Int
        var normalizationVersion: UInt8
    }

    /// The CEK table, by the ordinal the server gave (column_encryption_key_ordinal).
    var keys: [Int: CEKEntry] = [:]
    /// The encrypted parameters, by ``key(_:)``; plaintext ones are left out.
    var parameters: [String: Parameter] = [:]
    /// Every parameter the second result set names (plaintext ones too), by ``key(_:)``.
    var described: Set<String> = []

    /// A parameter name as matched against parameter_name: without its leading '@' (SqlClient's
    /// SqlParameter.ParameterNamesEqual drops it on both sides), lowercased (SQL Server's
    /// parameter names are not case-sensitive; SqlClient compares them ordinally).
    static func key(_ name: String) -> String {
        (name.hasPrefix("@") ? String(name.dropFirst()) : name).lowercased()
    }

    /// The most entries a connection keeps (all dropped beyond it).
    static let cacheLimit = 256

    /// SQL Server's error 33514: the encryption metadata of a statement's parameters is out of
    /// date (a key rotated, a column re-encrypted); SqlClient drops its cached description and
    /// retries once (TCE_CONVERSION_ERROR_CLIENT_RETRY).
    static let staleMetadataError: Int32 = 33514

    /// Whether `error` is the server's 33514.
    static func isStale(_ error: SQLClientError) -> Bool {
        (error.serverMessages + [error.serverMessage].compactMap { $0 }).contains { $0.number == staleMetadataError }
    }

    /// Reads the two result sets (columns by position, as the procedure documents them:
    /// column_encryption_key_ordinal, database_id, column_encryption_key_id,
    /// column_encryption_key_version, column_encryption_key_metadata_version,
    /// column_encryption_key_encrypted_value, column_master_key_store_provider_name,
    /// column_master_key_path, column_encryption_key_encryption_algorithm_name; then
    /// parameter_ordinal, parameter_name, column_encryption_algorithm, column_encryption_type,
    /// column_encryption_key_ordinal, column_encryption_normalization_rule_version).
    /// - Throws: ``ColumnEncryptionError`` `.invalidMetadata` for a result of another shape, a
    ///   parameter naming a key the first result set does not hold; the algorithm and type checks
    ///   of ``SQLColumnDecryptor``.
    init(_ result: SQLResult) throws(ColumnEncryptionError) {
        let sets = result.resultSets
        guard sets.count >= 2 else {
            throw ColumnEncryptionError(.invalidMetadata, "sp_describe_parameter_encryption returned \(sets.count) result set(s), not 2")
        }
        func int(_ row: SQLRow, _ i: Int) -> Int? {
            let values = row.values
            guard values.indices.contains(i) else { return nil }
            switch values[i] {
            case .tinyint(let v): return Int(v)
            case .smallint(let v): return Int(v)
            case .int(let v): return Int(v)
            case .bigint(let v): return Int(v)
            default: return nil
            }
        }
        func text(_ row: SQLRow, _ i: Int) -> String? {
            let values = row.values
            guard values.indices.contains(i), case .string(let s) = values[i] else { return nil }
            return s
        }
        func bytes(_ row: SQLRow, _ i: Int) -> [UInt8]? {
            let values = row.values
            guard values.indices.contains(i), case .binary(let b) = values[i] else { return nil }
            return b
        }
        for row in sets[0].rows {
            guard let ordinal = int(row, 0), let db = int(row, 1), let id = int(row, 2), let version = int(row, 3),
                  let md = bytes(row, 4), md.count == 8, let key = bytes(row, 5), let store = text(row, 6), let path = text(row, 7),
                  let algorithm = text(row, 8) else {
                throw ColumnEncryptionError(.invalidMetadata, "a column encryption key row of sp_describe_parameter_encryption is malformed")
            }
            var mdVersion: UInt64 = 0
            for (i, b) in md.enumerated() { mdVersion |= UInt64(b) << (8 * UInt64(i)) }
            let value = CEKEntry.Value(encryptedKey: key, keyStoreName: store, keyPath: path, algorithm: algorithm)
            if keys[ordinal] != nil {
                keys[ordinal]?.values.append(value)   // the same key under another column master key
            } else {
                keys[ordinal] = CEKEntry(databaseID: UInt32(truncatingIfNeeded: db), cekID: UInt32(truncatingIfNeeded: id),
                                         cekVersion: UInt32(truncatingIfNeeded: version), cekMetadataVersion: mdVersion, values: [value])
            }
        }
        for row in sets[1].rows {
            guard let name = text(row, 1), let algorithm = int(row, 2), let type = int(row, 3), let ordinal = int(row, 4),
                  let norm = int(row, 5) else {
                throw ColumnEncryptionError(.invalidMetadata, "a parameter row of sp_describe_parameter_encryption is malformed")
            }
            described.insert(Self.key(name))
            if type == 0 { continue }   // plaintext
            guard let kind = AEADAes256CbcHmacSha256.EncryptionType(rawValue: UInt8(truncatingIfNeeded: type)), (0 ... 255).contains(type) else {
                throw ColumnEncryptionError(.unknownEncryptionType, "parameter \(name): encryption type \(type) is neither"
                                            + " deterministic (1) nor randomized (2)")
            }
            guard algorithm == Int(AEADAes256CbcHmacSha256.algorithmID) else {
                throw ColumnEncryptionError(.unknownAlgorithm, "parameter \(name): encryption algorithm \(algorithm) is not"
                                            + " \(AEADAes256CbcHmacSha256.name)")
            }
            guard norm == 1 else {
                throw ColumnEncryptionError(.unsupportedNormalization, "parameter \(name): normalization version \(norm) is not 1")
            }
            guard keys[ordinal] != nil else {
                throw ColumnEncryptionError(.invalidMetadata, "parameter \(name) names column encryption key \(ordinal), which"
                                            + " sp_describe_parameter_encryption did not return")
            }
            parameters[Self.key(name)] = Parameter(name: name, algorithm: UInt8(algorithm), encryptionType: kind, keyOrdinal: ordinal,
                                                      normalizationVersion: UInt8(norm))
        }
    }
}

extension SQLConnection {
    /// The request for `query`, its parameters for encrypted columns encrypted: on a connection
    /// whose column encryption was negotiated, a parameterized query's statement and declaration
    /// are described by `sp_describe_parameter_encryption` (once, then from the cache), and each
    /// parameter it names is normalized (``TypeInfo/normalized(_:)``), encrypted with its column
    /// encryption key as the server says (deterministic or randomized) and sent as varbinary(max)
    /// with ParamCipherInfo ([MS-TDS] 2.2.6.6). A NULL is sent NULL, still marked encrypted.
    /// - Throws: ``SQLClientError`` with a ``ColumnEncryptionError`` underlying:
    ///   `.unencryptedParameter` when a parameter the server describes as encrypted cannot be
    ///   encrypted (its type cannot be, its value does not fit its type, it is missing, it is
    ///   table-valued): never sent in clear; the key errors of the read path.
    /// Answers the request and the keys of its encrypted OUTPUT parameters by lowercased name.
    func request(encrypting query: SQLQuery) async throws -> (OutgoingRequest, [String: AEADAes256CbcHmacSha256]) {
        let plain = try request(for: query)
        guard session.columnEncryptionVersion > 0, query.columnEncryption == .connectionSetting,
              case .rpc(let calls) = plain, calls.count == 1, calls[0].parameters.count > 2 else { return (plain, [:]) }
        let call = calls[0]
        let (encrypted, keys) = try await encryptParameters(of: call, statement: call.parameters[0].value,
                                                            declaration: call.parameters[1].value, from: 2)
        return (.rpc([encrypted]), keys)
    }

    /// ``request(encrypting:)`` for a stored procedure called by name with named parameters:
    /// described as SqlClient describes one, `EXEC name @a=@a, @b=@b OUTPUT` with the
    /// declaration `@a int, @b nvarchar(10) output`. A call with a positional parameter, or by
    /// ProcID, goes as it is.
    func request(encryptingProcedure call: RPCCall) async throws -> (OutgoingRequest, [String: AEADAes256CbcHmacSha256]) {
        guard session.columnEncryptionVersion > 0, case .name(let name) = call.procedure, !call.parameters.isEmpty,
              call.parameters.allSatisfy({ !$0.name.isEmpty && $0.table == nil }) else { return (.rpc([call]), [:]) }
        let output = { (p: RPCParameter) in p.status.contains(.byRefValue) ? " output" : "" }
        let statement = "EXEC \(name) " + call.parameters.map { "\($0.name)=\($0.name)\(output($0))" }.joined(separator: ", ")
        let declaration = call.parameters.map { "\($0.name) \($0.typeInfo.sqlTypeName)\(output($0))" }.joined(separator: ", ")
        let (encrypted, keys) = try await encryptParameters(of: call, statement: .string(statement), declaration: .string(declaration), from: 0)
        return (.rpc([encrypted]), keys)
    }

    /// The parameters of `call` from index `start` on, encrypted as sp_describe_parameter_encryption
    /// says for `statement` and `declaration` (asked once, then cached).
    private func encryptParameters(of call: RPCCall, statement: SQLValue, declaration: SQLValue,
                                   from start: Int) async throws -> (RPCCall, [String: AEADAes256CbcHmacSha256]) {
        var call = call
        let cacheKey = (statement.canonicalText ?? "") + "\u{0}" + (declaration.canonicalText ?? "")
        let plan: ParameterEncryptionPlan
        if let cached = parameterEncryptionPlans[cacheKey] {
            plan = cached
        } else {
            let describe = RPCCall(procedure: .name("sp_describe_parameter_encryption"), parameters: [
                RPCParameter(name: "@tsql", typeInfo: .nvarchar(nil), value: statement),
                RPCParameter(name: "@params", typeInfo: .nvarchar(nil), value: declaration),
            ])
            let result = try await run(.rpc([describe]), timeout: nil)
            do {
                plan = try ParameterEncryptionPlan(result)
            } catch {
                throw error.sqlClientError
            }
            if parameterEncryptionPlans.count >= ParameterEncryptionPlan.cacheLimit {
                parameterEncryptionPlans = [:]   // a bounded cache: start again rather than grow
            }
            parameterEncryptionPlans[cacheKey] = plan
        }
        // Every parameter must be described, plaintext or not (SqlClient's
        // ParamEncryptionMetadataMissing): one the server did not describe might be one it
        // expects encrypted.
        if let undescribed = call.parameters.dropFirst(start).first(where: { !plan.described.contains(ParameterEncryptionPlan.key($0.name)) }) {
            throw ColumnEncryptionError(.invalidMetadata, "sp_describe_parameter_encryption did not describe parameter \(undescribed.name)",
                                        column: undescribed.name).sqlClientError
        }
        if plan.parameters.isEmpty { return (call, [:]) }
        var seen: Set<String> = []
        var outputKeys: [String: AEADAes256CbcHmacSha256] = [:]
        do {
            let stores = SQLColumnEncryptionKeyStores(connection: configuration.columnEncryptionKeyStoreProviders)
            for index in start ..< call.parameters.count {
                let parameter = call.parameters[index]
                let key = ParameterEncryptionPlan.key(parameter.name)
                guard let described = plan.parameters[key] else { continue }
                seen.insert(key)
                let (encrypted, cipher) = try await encrypt(parameter, as: described, plan: plan, keyStores: stores)
                call.parameters[index] = encrypted
                if parameter.status.contains(.byRefValue) { outputKeys[parameter.name.lowercased()] = cipher }
            }
            if let missing = plan.parameters.keys.first(where: { !seen.contains($0) }) {
                throw ColumnEncryptionError(.unencryptedParameter, "the server describes parameter \(plan.parameters[missing]?.name ?? missing)"
                                            + " as encrypted but the query does not send it")
            }
        } catch let error as ColumnEncryptionError {
            throw error.sqlClientError
        }
        return (call, outputKeys)
    }

    /// `parameter` encrypted as `described` says.
    private func encrypt(_ parameter: RPCParameter, as described: ParameterEncryptionPlan.Parameter, plan: ParameterEncryptionPlan,
                         keyStores: SQLColumnEncryptionKeyStores) async throws(ColumnEncryptionError) -> (RPCParameter, AEADAes256CbcHmacSha256) {
        let name = parameter.name
        guard parameter.table == nil else {
            throw ColumnEncryptionError(.unencryptedParameter, "table-valued parameter \(name) cannot be encrypted", column: name)
        }
        let base = parameter.typeInfo
        guard base.isEncryptable else {
            throw ColumnEncryptionError(.unencryptedParameter, "parameter \(name) is \(base.sqlTypeName), which cannot be encrypted"
                                        + " (it would go in clear to an encrypted column)", column: name)
        }
        guard let entry = plan.keys[described.keyOrdinal] else {
            throw ColumnEncryptionError(.invalidMetadata, "no column encryption key \(described.keyOrdinal)", column: name)
        }
        let (cipher, _) = try await SQLColumnDecryptor.unwrap(entry, column: name, keyStores: keyStores, cache: SQLColumnEncryption.keyCache)
        var value = SQLValue.null
        // varbinary(max) whatever the ciphertext's size, NULL included, as SqlClient sends it
        // (TdsParser.TdsExecuteRPC: the encrypted column's size on the server is not known).
        let outer = TypeInfo.varbinary(nil)
        if !parameter.value.isNull {
            let plaintext: [UInt8]
            do {
                plaintext = try base.normalized(parameter.value)
            } catch {
                throw ColumnEncryptionError(.unencryptedParameter, "parameter \(name) cannot be encrypted as \(base.sqlTypeName):"
                                            + " \(error.code)", column: name)
            }
            let ciphertext = try cipher.encrypt(plaintext, type: described.encryptionType)
            value = .binary(ciphertext)
        }
        var encrypted = RPCParameter(name: name, status: parameter.status.union(.encrypted), typeInfo: outer, value: value)
        encrypted.cipherInfo = ParamCipherInfo(baseType: base.paramCipherTypeInfo, algorithm: described.algorithm,
                                               encryptionType: described.encryptionType.rawValue, databaseID: entry.databaseID,
                                               cekID: entry.cekID, cekVersion: entry.cekVersion,
                                               cekMetadataVersion: entry.cekMetadataVersion,
                                               normalizationVersion: described.normalizationVersion)
        return (encrypted, cipher)
    }
}

/// Encrypted OUTPUT parameters ([MS-TDS] 2.2.7.19 RETURNVALUE with CryptoMetaData, which has no
/// CEK ordinal): decrypted with the key their input was encrypted with.
enum OutputParameterDecryption {
    /// `value` decrypted, typed by `crypto`'s base TYPE_INFO.
    /// - Throws: ``ColumnEncryptionError`` naming the parameter: `.invalidMetadata` when no key
    ///   is known for it (an encrypted output the client did not encrypt), the decryption's errors,
    ///   `.invalidPlaintext`.
    static func decrypt(_ value: ReturnValue, crypto: CryptoMetadata,
                        cipher: AEADAes256CbcHmacSha256?) throws(ColumnEncryptionError) -> ReturnValue {
        var out = value
        out.typeInfo = crypto.baseType
        out.userType = crypto.userType
        switch value.value {
        case .null:
            out.value = .null
            return out
        case .binary(let ciphertext):
            guard let cipher else {
                throw ColumnEncryptionError(.invalidMetadata, "the encrypted output parameter has no column encryption key"
                                            + " (it was not sent encrypted)", column: value.name)
            }
            let plaintext: [UInt8]
            do {
                plaintext = try cipher.decrypt(ciphertext)
            } catch {
                throw error.naming(column: value.name)
            }
            do {
                out.value = try crypto.baseType.decodeNormalized(plaintext)
            } catch {
                throw ColumnEncryptionError(.invalidPlaintext, "the decrypted value is not a \(crypto.baseType.sqlTypeName): \(error.code)",
                                            column: value.name)
            }
            return out
        default:
            throw ColumnEncryptionError(.invalidCiphertext, "an encrypted output parameter arrived as \(value.value.kindName)", column: value.name)
        }
    }
}
