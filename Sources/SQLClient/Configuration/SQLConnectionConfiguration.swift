import Foundation
import TDS

/// Everything needed to open a ``SQLConnection``: where, who, and how.
///
/// Build it by parts or from an ADO.NET-style connection string with
/// ``init(connectionString:)``. `password` is stored as a `RedactedPassword`: it never appears
/// in `description`, in errors or in logs.
public struct SQLConnectionConfiguration: Sendable, CustomStringConvertible {
    /// The server: host, and port or named instance.
    public var address: SQLServerAddress
    /// The SQL login name.
    public var user: String
    /// The SQL login password (never printed).
    public var password: RedactedPassword
    /// The initial database; empty uses the login's default database.
    public var database: String
    /// How encryption is negotiated (default `.on`: the whole session under TLS, certificate verified).
    public var encryption: SQLEncryption
    /// Certificate checks and TLS versions.
    public var tls: TLSConfiguration
    /// How the client authenticates (default `.sqlPassword`: ``user`` and ``password``); see ``SQLAuthentication``.
    public var authentication: SQLAuthentication = .sqlPassword
    /// Retrying a login that failed with a transient error (`ConnectRetryCount`, `ConnectRetryInterval`).
    public var connectRetry = SQLConnectRetryPolicy()
    /// TCP keep-alive on the socket (default 30 s idle, then a probe every 1 s, as SqlClient); nil: off.
    public var keepAlive: SQLKeepAlive? = .default
    /// LOGIN7 ApplicationIntent: `.readOnly` sets fReadOnlyIntent (availability group read-only routing).
    public var applicationIntent: SQLApplicationIntent = .readWrite
    /// Connect to every address the host resolves to at once and keep the first that answers
    /// (availability group listeners spanning subnets); default false: one address after another.
    public var multiSubnetFailover = false
    /// SQL Server 2025's json and vector types asked for in LOGIN7 (default: both, float32 vectors;
    /// connection string `Json Support`, `Vector Support`). See ``SQLTypeSupport``.
    public var typeSupport = SQLTypeSupport()
    /// Always Encrypted: `.enabled` asks for COLUMNENCRYPTION at login (connection string
    /// `Column Encryption Setting=Enabled`; default `.disabled`). See ``SQLColumnEncryptionSetting``.
    public var columnEncryption: SQLColumnEncryptionSetting = .disabled
    /// This connection's column master key store providers by KeyStoreName; when not empty they
    /// replace those registered with ``SQLColumnEncryption/registerKeyStoreProviders(_:)``.
    public var columnEncryptionKeyStoreProviders: [String: any SQLColumnEncryptionKeyStoreProvider] = [:]
    /// LOGIN7 ServerName when it differs from the host connected to (after a routing redirect: the
    /// name the ENVCHANGE gave, instance included).
    var loginServerName: String?
    /// With `encryption == .off` (TLS for LOGIN7 only), verify the certificate anyway (default false,
    /// as Microsoft's drivers do).
    public var verifyCertificateWhenLoginOnly: Bool
    /// The TLS implementation; nil uses the platform default (OpenSSL on Linux).
    package var tlsProvider: (any TLSProvider)?
    /// Time allowed for everything ``SQLConnection/connect(_:)`` does: the SQL Server Browser,
    /// resolving the host, connecting, PRELOGIN, the TLS handshake and the login (default 15 s).
    /// Longer than ``maximumTimeout`` is clamped to it; negative is `.invalidConfiguration`.
    public var connectTimeout: Duration
    /// The application name sent in LOGIN7 (shown by `APP_NAME()` and in server traces).
    public var applicationName: String
    /// The client host name sent in LOGIN7 (`HOST_NAME()`); nil sends this machine's name.
    public var workstationID: String?
    /// The requested packet size in bytes (512–32767; default 4096). The server may answer another.
    public var packetSize: Int
    /// The TDS version requested in LOGIN7 (default 7.4; 7.1, 7.2, 7.3A, 7.3B on request).
    public var tdsVersion: TDS.TDSVersion
    /// The login language (empty: the login's default).
    public var language: String
    /// When set, `SET TEXTSIZE n` runs right after login: the maximum bytes returned for
    /// text/ntext/varchar(max)/nvarchar(max)/varbinary(max) values; -1 (no limit) to
    /// 2,147,483,647 (SET TEXTSIZE takes an int), else connecting is `.invalidConfiguration`.
    public var textSize: Int?
    /// The values ``textSize`` may take (SET TEXTSIZE's int; -1: no limit, 0: the 4,096-byte default).
    public static let textSizeRange: ClosedRange<Int> = -1 ... Int(Int32.max)
    /// The UDP port of the SQL Server Browser used to resolve named instances (default 1434).
    public var browserPort: Int
    /// Time allowed for the login exchange (PRELOGIN, TLS, LOGIN7) once connected, within the
    /// ``connectTimeout`` budget (whichever ends first); nil: ``connectTimeout`` alone.
    /// Exceeding it fails the connect with `.timeout`.
    public var loginTimeout: Duration? = nil
    /// Default time allowed for each request (batch, RPC, transaction request), counted from when
    /// it is sent (not while it waits for an earlier request); nil waits forever.
    /// When it passes, the client sends ATTENTION and the request fails with `.timeout` once the
    /// server acknowledges it (connection string key `Command Timeout`, seconds, 0 = none).
    public var queryTimeout: Duration? = nil
    /// How long to wait for the server to acknowledge an ATTENTION (DONE with DONE_ATTN) after a
    /// cancellation or a query timeout (default 5 s). When it passes, the connection is closed and
    /// reported unusable (`isOpen == false`) rather than handed back half-read.
    public var cancelTimeout: Duration = .seconds(5)
    /// The largest single value the client accepts from the server, in bytes (default 1 GiB):
    /// a varchar(max)/nvarchar(max)/varbinary(max)/xml value or a text/ntext/image value. A
    /// longer value fails the request with `.protocolError` naming this cap, and the
    /// connection is closed (its memory released). Values SQL Server sends are at most 2^31-1 bytes.
    public var maximumValueSize: Int = TokenStreamDecoder.Options.defaultMaximumValueSize
    /// Receives the connection's events (connect, TLS, login, requests, ATTENTION, errors,
    /// packets at trace level); nil logs nothing. Never given a password, token or parameter
    /// value unless made with `includesSensitiveData`. See ``SQLClientLogger``.
    public var logger: SQLClientLogger? = nil
    /// The adapters the package traits add (swift-log, swift-metrics, distributed tracing), fed by
    /// the same events as ``logger`` (see Observability/SQLEventObservers.swift); empty without traits.
    var observers: [SQLEventObserver] = []
    /// How a ``SQLConnectionPool`` made with this configuration sizes itself and retires
    /// connections (connection string keys `Pooling`, `Min Pool Size`, `Max Pool Size`,
    /// `Connection Lifetime`/`Load Balance Timeout`). A single ``SQLConnection`` ignores it.
    public var pool = SQLConnectionPool.Options()
    /// The most unread server messages each subscriber of ``SQLConnection/messages`` holds before
    /// its oldest are dropped (and counted in ``SQLMessageSubscription/droppedCount``); default
    /// 1,024, values below 1 count as 1.
    public var messageBufferLimit: Int = 1024

    /// A configuration by parts; the other options keep their defaults (see each property).
    public init(address: SQLServerAddress, user: String, password: String, database: String = "",
                encryption: SQLEncryption = .on, tls: TLSConfiguration = TLSConfiguration(),
                connectTimeout: Duration = .seconds(15), applicationName: String = "SQLClient",
                packetSize: Int = Packet.defaultSize, tdsVersion: TDS.TDSVersion = .v7_4, textSize: Int? = nil) {
        self.address = address
        self.user = user
        self.password = RedactedPassword(password)
        self.database = database
        self.encryption = encryption
        self.tls = tls
        self.verifyCertificateWhenLoginOnly = false
        self.tlsProvider = nil
        self.connectTimeout = connectTimeout
        self.applicationName = applicationName
        self.workstationID = nil
        self.packetSize = packetSize
        self.tdsVersion = tdsVersion
        self.language = ""
        self.textSize = textSize
        self.browserPort = 1434
    }

    /// By parts, with the server written in any form ``SQLServerAddress`` accepts
    /// (`host`, `host,port`, `host:port`, `host\instance`, `host\instance:port`, `[::1]:port`).
    /// - Throws: ``SQLClientError`` `.invalidConfiguration` for a malformed server.
    public init(server: String, user: String, password: String, database: String = "",
                encryption: SQLEncryption = .on, trustServerCertificate: Bool = false) throws {
        self.init(address: try SQLServerAddress(parsing: server), user: user, password: password,
                  database: database, encryption: encryption,
                  tls: TLSConfiguration(trustServerCertificate: trustServerCertificate))
    }

    public var description: String {
        "SQLConnectionConfiguration(server: \(address), user: \(user), password: \(password), database: \(database), "
            + "encryption: \(encryption), trustServerCertificate: \(tls.trustServerCertificate), tds: \(tdsVersion))"
    }
}

// MARK: - Connection strings

extension SQLConnectionConfiguration {
    /// Parses an ADO.NET-style connection string: `key=value` pairs separated by `;`, keys
    /// case-insensitive, values optionally quoted with `"`, `'` (a doubled quote inside is one
    /// quote) or ODBC braces `{…}` (`}}` inside is one brace).
    ///
    /// Keys and synonyms: `Server`/`Data Source`/`Address`/`Addr`/`Network Address`;
    /// `Database`/`Initial Catalog`; `User ID`/`UID`/`User`; `Password`/`PWD`;
    /// `Encrypt` (`true`/`yes`/`mandatory` = on, `false`/`no`/`optional` = off, `required`, `notsupported`,
    /// `strict` = TDS 8.0);
    /// `TrustServerCertificate`/`Trust Server Certificate`; `HostNameInCertificate`;
    /// `ServerCertificate`/`Server Certificate` (the one certificate the server must present, PEM or DER:
    /// ``TLSConfiguration/serverCertificate``); `CA File`/`CAFile` (a PEM file of trusted CAs: ``TLSConfiguration/caFile``);
    /// `Connect Timeout`/`Connection Timeout`/`Timeout` (seconds, 0 = none); `Command Timeout`
    /// (seconds, 0 = none: ``queryTimeout``) — seconds beyond ``maximumTimeout`` (up to
    /// 9223372036854775807) are clamped to it; `Application Name`/`App`;
    /// `Workstation ID`/`WSID`; `Packet Size`; `Current Language`/`Language`;
    /// `TDS Version`/`TDSVersion`; `Text Size`/`TextSize`; and the connectivity keys: `Authentication` (`SqlPassword`, `ActiveDirectoryAccessToken`, and the Entra ID sign-ins `ActiveDirectoryServicePrincipal`,
    /// `ActiveDirectoryManagedIdentity`/`ActiveDirectoryMSI`, `ActiveDirectoryWorkloadIdentity`, `ActiveDirectoryDeviceCodeFlow`,
    /// `ActiveDirectoryDefault` with `User ID`/`Password` as ``SQLAuthentication/entra(method:user:password:environment:http:)`` says: ``authentication``),
    /// `Integrated Security`/`Trusted_Connection` (NTLM with a `DOMAIN\user`; a `User ID` written so
    /// selects NTLM by itself; without a password: Kerberos, ``SQLAuthentication/kerberos(_:)``),
    /// `ServerSPN`/`Server SPN` (the Kerberos SPN), `ConnectRetryCount`, `ConnectRetryInterval` (``connectRetry``),
    /// `KeepAlive`, `KeepAliveInterval` (``keepAlive``), `ApplicationIntent`, `MultiSubnetFailover`; `Json Support`, `Vector Support` (``typeSupport``); `Column Encryption Setting` (`Enabled`/`Disabled`: ``columnEncryption``); the pool keys for ``pool`` (used by
    /// ``SQLConnectionPool``): `Pooling` (true/false), `Min Pool Size` and `Max Pool Size`
    /// (connections; the minimum at most the maximum), `Connection Lifetime`/`Load Balance Timeout`
    /// (seconds, 0 = no limit).
    ///
    /// - Throws: ``SQLClientError`` `.unsupported` for a known key this client does not support
    ///   (`MultipleActiveResultSets=true`, `Authentication=ActiveDirectoryPassword`, …),
    ///   `.invalidConfiguration` for an unknown key (named in the message), a bad value or a missing server.
    public init(connectionString: String) throws {
        var mayHoldSecrets: Set<String> = []
        let pairs = try ConnectionStringParser.parse(connectionString, keysAfterPasswords: &mayHoldSecrets)
        var address: SQLServerAddress?
        var user = ""
        var password = ""
        var database = ""
        var encryption = SQLEncryption.on
        var tls = TLSConfiguration()
        var timeout: Duration = .seconds(15)
        var commandTimeout: Duration?
        var appName = "SQLClient"
        var workstation: String?
        var packetSize = Packet.defaultSize
        var version = TDSVersion.v7_4
        var language = ""
        var textSize: Int?
        var columnEncryption = SQLColumnEncryptionSetting.disabled

        var connectivity = ConnectivityKeys()
        var poolKeys = PoolKeys()
        var typeKeys = TypeSupportKeys()
        for (rawKey, value) in pairs {
            let key = rawKey.lowercased().split(whereSeparator: { $0 == " " || $0 == "_" }).joined(separator: " ")
            if try connectivity.take(key, value: value, rawKey: rawKey) { continue }
            if try typeKeys.take(key, value: value, rawKey: rawKey) { continue }
            if try poolKeys.take(key, value: value, rawKey: rawKey) { continue }
            switch key {
            case "server", "data source", "address", "addr", "network address":
                do {
                    address = try SQLServerAddress(parsing: value)
                } catch let error as SQLClientError {
                    // Named by key only: a value is never echoed (it may be the rest of a password).
                    throw SQLClientError(error.code, "invalid value for \(rawKey) (host, host,port, host\\instance[,port], [IPv6]:port)")
                }
            case "database", "initial catalog":
                database = value
            case "user id", "uid", "user", "userid":
                user = value
            case "password", "pwd":
                password = value
            case "encrypt":
                switch value.lowercased() {
                case "true", "yes", "mandatory", "on": encryption = .on
                case "false", "no", "optional", "off": encryption = .off
                case "required", "require": encryption = .required
                case "notsupported", "not supported", "none": encryption = .notSupported
                case "strict": encryption = .strict
                default:
                    throw SQLClientError(.invalidConfiguration, "invalid value for Encrypt")
                }
            case "trustservercertificate", "trust server certificate":
                tls.trustServerCertificate = try ConnectionStringParser.bool(value, key: rawKey)
            case "hostnameincertificate", "host name in certificate":
                tls.hostNameInCertificate = value.isEmpty ? nil : value
            case "servercertificate", "server certificate":
                tls.serverCertificate = value.isEmpty ? nil : value
            case "ca file", "cafile":
                tls.caFile = value.isEmpty ? nil : value
            case "connect timeout", "connection timeout", "timeout":
                let seconds = try ConnectionStringParser.integer(value, key: rawKey, 0 ... .max, "whole seconds, 0 or more")
                timeout = seconds == 0 ? Self.maximumTimeout : min(.seconds(seconds), Self.maximumTimeout)
            case "command timeout":
                let seconds = try ConnectionStringParser.integer(value, key: rawKey, 0 ... .max, "whole seconds, 0 or more")
                commandTimeout = seconds == 0 ? nil : min(.seconds(seconds), Self.maximumTimeout)
            case "application name", "app":
                appName = value
            case "workstation id", "wsid":
                workstation = value
            case "packet size":
                packetSize = try ConnectionStringParser.integer(value, key: rawKey, Packet.minimumSize ... Packet.maximumNegotiatedSize,
                                                                "512–32767")
            case "current language", "language":
                language = value
            case "tds version", "tdsversion":
                guard let v = TDSVersion(string: value), v >= .v7_1 else {
                    throw SQLClientError(.invalidConfiguration, "invalid value for \(rawKey) (7.1, 7.2, 7.3A, 7.3B or 7.4)")
                }
                version = v
            case "column encryption setting":
                guard let setting = SQLColumnEncryptionSetting(text: value) else {
                    throw SQLClientError(.invalidConfiguration, "invalid value for \(rawKey) (Enabled or Disabled)")
                }
                columnEncryption = setting
            case "text size", "textsize":
                textSize = try ConnectionStringParser.integer(value, key: rawKey, Self.textSizeRange, "-1 to 2147483647 bytes")
            case "multipleactiveresultsets",
                 "multiple active result sets", "mars connection", "user instance", "replication",
                 "context connection", "asynchronous processing", "async",
                 "transparent network ip resolution", "transparentnetworkipresolution",
                 "enlist":
                // Booleans whose "off" value is what this client does anyway.
                let off: Bool
                switch key {
                case "enlist":
                    // Harmless only when false; the ADO.NET default (true) implies features we lack.
                    off = (try? ConnectionStringParser.bool(value, key: rawKey)) == false
                case "transparent network ip resolution", "transparentnetworkipresolution":
                    off = (try? ConnectionStringParser.bool(value, key: rawKey)) != nil
                default:
                    off = ["false", "no", "0"].contains(value.lowercased())
                }
                if !off { throw SQLClientError(.unsupported, "\(rawKey): this value is not supported") }
            case "attachdbfilename", "extended properties", "initial file name",
                 "failover partner", "enclave attestation url",
                 "attestation protocol", "transaction binding", "type system version",
                 "persist security info", "persistsecurityinfo", "ip address preference", "pool blocking period",
                 "network library", "net", "failover partner spn",
                 "encrypt strict", "load balance", "connection reset":
                throw SQLClientError(.unsupported, "the connection string key \"\(rawKey)\" is not supported")
            default:
                if mayHoldSecrets.contains(rawKey.lowercased()) {
                    // Likely the rest of a password with an unquoted ';': never echo it.
                    throw SQLClientError(.invalidConfiguration, "an unknown connection string key follows the password; "
                                         + "a password holding ';' must be quoted, e.g. Password={a;b}")
                }
                throw SQLClientError(.invalidConfiguration, "unknown connection string key \"\(rawKey)\"")
            }
        }
        guard let address else {
            throw SQLClientError(.invalidConfiguration, "the connection string has no Server (or Data Source)")
        }
        self.init(address: address, user: user, password: password, database: database, encryption: encryption,
                  tls: tls, connectTimeout: timeout, applicationName: appName, packetSize: packetSize,
                  tdsVersion: version, textSize: textSize)
        self.workstationID = workstation
        self.language = language
        self.queryTimeout = commandTimeout
        self.authentication = try connectivity.resolvedAuthentication(user: user, password: password)
        self.connectRetry = connectivity.retry
        self.keepAlive = connectivity.keepAlive
        self.applicationIntent = connectivity.applicationIntent
        self.multiSubnetFailover = connectivity.multiSubnetFailover
        self.pool = try poolKeys.resolved()
        self.typeSupport = typeKeys.support
        self.columnEncryption = columnEncryption
    }
}

/// Splits a connection string into (key, value) pairs. Values are never echoed in errors
/// (they may be passwords).
enum ConnectionStringParser {
    /// A boolean value: true, yes, 1, on or false, no, 0, off (any case).
    /// - Throws: ``SQLClientError`` `.invalidConfiguration` naming `key` (never the value).
    static func bool(_ value: String, key: String) throws(SQLClientError) -> Bool {
        switch value.lowercased() {
        case "true", "yes", "1", "on": return true
        case "false", "no", "0", "off": return false
        default: throw SQLClientError(.invalidConfiguration, "invalid value for \(key) (true or false)")
        }
    }

    /// A whole number in `range`.
    /// - Throws: ``SQLClientError`` `.invalidConfiguration` naming `key` and `what` is expected
    ///   (never the value).
    static func integer(_ value: String, key: String, _ range: ClosedRange<Int>, _ what: String) throws(SQLClientError) -> Int {
        guard let n = Int(value), range.contains(n) else {
            throw SQLClientError(.invalidConfiguration, "invalid value for \(key) (\(what))")
        }
        return n
    }

    /// The (key, value) pairs of `text`. `keysAfterPasswords` receives (lowercased) the keys of
    /// entries right after an unquoted Password/PWD value: they may be the rest of a password
    /// holding ';', and are not echoed in errors. Malformed entries are named by position.
    static func parse(_ text: String, keysAfterPasswords: inout Set<String>) throws -> [(String, String)] {
        var pairs: [(String, String)] = []
        var entry = 0
        var afterUnquotedPassword = false
        func noEquals() -> SQLClientError {
            // The entry text is never echoed: it may be part of a password holding an unquoted ';'.
            SQLClientError(.invalidConfiguration,
                           "connection string entry \(entry) has no '='" + (afterUnquotedPassword
                               ? " (it follows the password: a password holding ';' must be quoted, e.g. Password={a;b})"
                               : ""))
        }
        let chars = Array(text)
        var i = 0
        func skipSpaces() { while i < chars.count, chars[i].isWhitespace { i += 1 } }
        while i < chars.count {
            skipSpaces()
            if i < chars.count, chars[i] == ";" { i += 1; continue }
            if i >= chars.count { break }
            entry += 1
            // Key up to '=' ("==" is a literal '=' in a key).
            var key = ""
            while i < chars.count {
                if chars[i] == "=" {
                    if i + 1 < chars.count, chars[i + 1] == "=" { key.append("="); i += 2; continue }
                    break
                }
                if chars[i] == ";" { throw noEquals() }
                key.append(chars[i])
                i += 1
            }
            guard i < chars.count else { throw noEquals() }
            i += 1 // '='
            key = key.trimmingCharacters(in: .whitespaces)
            guard !key.isEmpty else {
                throw SQLClientError(.invalidConfiguration, "connection string entry \(entry) has an empty key")
            }
            if afterUnquotedPassword { keysAfterPasswords.insert(key.lowercased()) }
            let isPassword = ["password", "pwd"].contains(key.lowercased())
            skipSpaces()
            var value = ""
            if i < chars.count, chars[i] == "\"" || chars[i] == "'" || chars[i] == "{" {
                let open = chars[i]
                let close: Character = open == "{" ? "}" : open
                i += 1
                var closed = false
                while i < chars.count {
                    if chars[i] == close {
                        if i + 1 < chars.count, chars[i + 1] == close { value.append(close); i += 2; continue }
                        i += 1
                        closed = true
                        break
                    }
                    value.append(chars[i])
                    i += 1
                }
                guard closed else {
                    throw SQLClientError(.invalidConfiguration, "unclosed quote in the value of \"\(key)\"")
                }
                skipSpaces()
                guard i >= chars.count || chars[i] == ";" else {
                    throw SQLClientError(.invalidConfiguration, "unexpected text after the quoted value of \"\(key)\"")
                }
                afterUnquotedPassword = false
            } else {
                while i < chars.count, chars[i] != ";" { value.append(chars[i]); i += 1 }
                value = value.trimmingCharacters(in: .whitespaces)
                afterUnquotedPassword = isPassword
            }
            if pairs.contains(where: { $0.0.lowercased() == key.lowercased() }) {
                pairs.removeAll { $0.0.lowercased() == key.lowercased() }
            }
            pairs.append((key, value))
        }
        return pairs
    }
}
