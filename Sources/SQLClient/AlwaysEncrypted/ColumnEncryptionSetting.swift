import TDS

/// Always Encrypted for a connection (SqlClient's `SqlConnectionColumnEncryptionSetting`; the
/// connection string's `Column Encryption Setting=Enabled|Disabled`).
///
/// `.enabled` asks for COLUMNENCRYPTION (FeatureId 0x04, version 1: no secure enclaves) in
/// LOGIN7 FeatureExt ([MS-TDS] 2.2.6.4); once the server acknowledges it (FEATUREEXTACK,
/// [MS-TDS] 2.2.7.11), COLMETADATA carries the CEK table and each encrypted column's
/// CryptoMetaData ([MS-TDS] 2.2.7.4).
public enum SQLColumnEncryptionSetting: String, Sendable, Hashable, CaseIterable {
    /// Column encryption is not asked for (the default): encrypted columns read as varbinary ciphertext.
    case disabled
    /// Column encryption is asked for at login.
    case enabled

    /// The COLUMNENCRYPTION version asked for: 1 (no enclave computations).
    public static let requestedVersion: UInt8 = 1

    /// `Enabled`/`Disabled` (any case; also true/false, yes/no); nil otherwise.
    public init?(text: String) {
        switch text.lowercased().trimmingCharacters(in: .whitespaces) {
        case "enabled", "true", "yes": self = .enabled
        case "disabled", "false", "no": self = .disabled
        default: return nil
        }
    }

    /// The FeatureExt entries for LOGIN7: COLUMNENCRYPTION with the 1-byte version 1 when enabled.
    public var login7Features: [Login7Feature] {
        self == .enabled ? [Login7Feature(id: Login7Feature.columnEncryptionID, data: [Self.requestedVersion])] : []
    }

    /// Adds ``login7Features`` to `login` (TDS 7.4 and later; earlier versions send no FeatureExt).
    func request(in login: inout Login7) {
        guard login.tdsVersion.generation >= 0x74, self == .enabled else { return }
        var list = login.featureExt ?? []
        if !list.contains(where: { $0.id == Login7Feature.columnEncryptionID }) { list += login7Features }
        login.featureExt = list
    }

    /// The COLUMNENCRYPTION version the server acknowledged (0: not acknowledged, so no column
    /// encryption on this connection).
    /// - Throws: ``ColumnEncryptionError`` `.enclaveNotSupported` when the acknowledgement asks
    ///   for secure enclave computations (version 2 or 3, or an EnclaveType), which this client
    ///   does not support; `.invalidMetadata` for an acknowledgement without its version byte, or
    ///   one for a connection that did not ask.
    public func negotiated(by ack: FeatureExtAck?) throws(ColumnEncryptionError) -> UInt8 {
        guard let data = ack?.data(for: .columnEncryption) else { return 0 }
        guard self == .enabled else {
            throw ColumnEncryptionError(.invalidMetadata, "the server acknowledged COLUMNENCRYPTION, which the client did not ask for")
        }
        guard let version = data.first else {
            throw ColumnEncryptionError(.invalidMetadata, "the server acknowledged COLUMNENCRYPTION without a version")
        }
        guard version <= Self.requestedVersion, data.count == 1 else {
            var enclave = ""
            if data.count >= 2 {
                var r = ByteReader(Array(data.dropFirst()))
                if let type = try? r.readBVarChar() { enclave = " (enclave type '\(type.prefix(64))')" }
            }
            throw ColumnEncryptionError(.enclaveNotSupported, "the server acknowledged column encryption version \(version)\(enclave):"
                                        + " secure enclaves (Always Encrypted with secure enclaves, attestation) are not supported by this client")
        }
        return version
    }
}

/// Always Encrypted for one query (SqlClient's `SqlCommandColumnEncryptionSetting`), on a
/// connection whose column encryption was negotiated (``SQLColumnEncryptionSetting/enabled``);
/// on any other connection it changes nothing.
public enum SQLQueryColumnEncryption: String, Sendable, Hashable, CaseIterable {
    /// The connection's setting (the default): parameters for encrypted columns are encrypted
    /// (`sp_describe_parameter_encryption`, cached per statement) and results decrypted.
    case connectionSetting
    /// Results are decrypted; parameters are sent as they are, without asking the server which
    /// are encrypted (a query whose parameters meet no encrypted column saves the round trip).
    case resultSetOnly
    /// Neither: parameters go as they are and encrypted columns read as varbinary ciphertext.
    case disabled
}
