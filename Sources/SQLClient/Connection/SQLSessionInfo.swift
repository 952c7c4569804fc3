import TDS

/// How the client negotiates encryption in PRELOGIN ([MS-TDS] 2.2.6.5 ENCRYPTION, 3.2.5.1).
public enum SQLEncryption: String, Sendable, Hashable, CaseIterable {
    /// Send ENCRYPT_ON: the whole session runs under TLS and the certificate is verified (unless
    /// trusted). A server that answers NOT_SUP or OFF is refused (`.encryptionNotAvailable`). The default.
    case on
    /// Like `.on` (sent as ENCRYPT_ON); named for sqlcmd's and FreeTDS's "require".
    case required
    /// Send ENCRYPT_OFF: only the LOGIN7 packet travels under TLS, then the session is plaintext
    /// (full TLS if the server insists with ON/REQ). As in Microsoft's drivers, the certificate
    /// is not verified in this mode unless `verifyCertificateWhenLoginOnly` asks for it.
    case off
    /// Send ENCRYPT_NOT_SUP: no TLS at all (the password travels obfuscated only). A server that
    /// requires encryption (ENCRYPT_REQ, or ENCRYPT_ON, which is no valid answer to NOT_SUP)
    /// ends the connection before LOGIN7 is sent (`.encryptionNotAvailable`).
    case notSupported
    /// TDS 8.0 (`Encrypt=Strict`, [MS-TDS] 3.2.5.1): TLS 1.2 or 1.3 on the TCP connection before
    /// anything else (ALPN `tds/8.0`, SNI = the host name), then PRELOGIN and LOGIN7 inside it; the
    /// certificate is always verified (chain and name, ``TLSConfiguration/hostNameInCertificate``
    /// honoured): `trustServerCertificate` does not apply. SQL Server 2022+ and Azure SQL.
    case strict

    /// The PRELOGIN ENCRYPTION byte sent for this setting (strict: ENCRYPT_NOT_SUP, as
    /// Microsoft.Data.SqlClient sends it: the session is already encrypted).
    var preloginValue: Prelogin.Encryption {
        switch self {
        case .on, .required: return .on
        case .off: return .off
        case .notSupported, .strict: return .notSupported
        }
    }
}

/// How a session's packets are protected, as negotiated ([MS-TDS] 2.2.6.5 ENCRYPTION, 3.2.5.1):
/// what ``SQLSessionInfo/encryption`` reports after login. The raw values are the words the CLI
/// and logs print.
public enum SQLSessionEncryption: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// TDS 8.0 (`Encrypt=Strict`): TLS on the TCP connection before PRELOGIN, certificate verified.
    case strict
    /// TLS for every packet after PRELOGIN (ENCRYPT_ON or ENCRYPT_REQ agreed).
    case full
    /// TLS for the LOGIN7 packet only, then plaintext (ENCRYPT_OFF on both sides).
    case loginOnly = "login"
    /// No TLS at all (ENCRYPT_NOT_SUP): the password travels obfuscated only.
    case unencrypted = "none"

    /// The raw value ("strict", "full", "login" or "none").
    public var description: String { rawValue }
}

/// What the session looks like after login and as ENVCHANGE tokens update it.
public struct SQLSessionInfo: Sendable, Hashable {
    /// The current database ([MS-TDS] ENVCHANGE type 1).
    public var database: String = ""
    /// The current language (ENVCHANGE type 2).
    public var language: String = ""
    /// The session's default collation (ENVCHANGE type 7), 5 bytes on the wire.
    public var collation: TDS.Collation?
    /// The negotiated packet size in bytes (ENVCHANGE type 4).
    public var packetSize: Int = Packet.defaultSize
    /// The TDS version the server accepted (LOGINACK).
    public var tdsVersion: TDS.TDSVersion = .v7_4
    /// The server's program name from LOGINACK (for example "Microsoft SQL Server"), without the
    /// NUL padding SQL Server sends.
    public var serverProgramName: String = ""
    /// The server's version from LOGINACK.
    public var serverVersion: String = ""
    /// The descriptor of the open transaction, nil when none (ENVCHANGE types 8–10).
    public var transactionDescriptor: [UInt8]?
    /// How the session is encrypted, as negotiated in PRELOGIN (or strict from the first byte).
    public var encryption: SQLSessionEncryption = .unencrypted
    /// Where the session ended up: the host and port logged in to (after a routing redirect, the
    /// server the ENVCHANGE named).
    public var host: String = ""
    /// The TCP port of ``host`` (0 when the connection was made over a stream given by the caller).
    public var port: Int = 0
    /// The server that redirected the login ("host:port"), nil when the client was not redirected.
    public var redirectedFrom: String?
    /// The JSONSUPPORT version the server acknowledged in FEATUREEXTACK (1), 0 when not
    /// (see ``SQLTypeSupport``, ``supportsJSON``).
    public var jsonSupportVersion: UInt8 = 0
    /// The VECTORSUPPORT version the server acknowledged (1 float32, 2 float16 too), 0 when not
    /// (see ``SQLTypeSupport``, ``supportsVector``).
    public var vectorSupportVersion: UInt8 = 0
    /// The COLUMNENCRYPTION version the server acknowledged (1), 0 when column encryption is off
    /// (see ``SQLColumnEncryptionSetting``).
    public var columnEncryptionVersion: UInt8 = 0

    /// An empty session (no database, language or collation yet; 4,096-byte packets; TDS 7.4).
    public init() {}

    /// Applies an ENVCHANGE ([MS-TDS] 2.2.7.9); returns the new packet size when it changed,
    /// and whether anything the session shows changed.
    mutating func apply(_ change: EnvChange) -> (packetSize: Int?, changed: Bool) {
        switch change.type {
        case .database:
            database = change.newText ?? database
        case .language:
            language = change.newText ?? language
        case .sqlCollation:
            if let bytes = change.newValue.bytes, bytes.count == 5 {
                var reader = ByteReader(bytes)
                collation = try? Collation.decode(from: &reader)
            }
        case .packetSize:
            if let size = change.newPacketSize, size >= Packet.minimumSize, size <= Int(UInt16.max) {
                packetSize = size
                return (size, false)
            }
            return (nil, false)
        case .beginTransaction:
            transactionDescriptor = change.transactionDescriptor
        case .commitTransaction, .rollbackTransaction, .transactionEnded:
            transactionDescriptor = nil
        default:
            return (nil, false)
        }
        return (nil, true)
    }
}
