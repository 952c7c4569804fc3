import TDS

/// How the server's certificate is checked and which TLS versions are allowed.
public struct TLSConfiguration: Sendable, Hashable {
    /// A TLS protocol version.
    public enum ProtocolVersion: Int, Sendable, Hashable, Comparable {
        /// TLS 1.0, 1.1, 1.2, 1.3 (raw values 10…13).
        case tls1_0 = 10, tls1_1 = 11, tls1_2 = 12, tls1_3 = 13
        /// Older versions first.
        public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
    }

    /// Accept any certificate (no chain and no host name check). Use only on trusted networks.
    public var trustServerCertificate: Bool
    /// A PEM file of trusted CA certificates used instead of the system's trust store
    /// (connection string `CA File`/`CAFile`). The chain and the host name are still checked.
    public var caFile: String?
    /// A file holding the one certificate the server must present (PEM, DER or CER; connection
    /// string `ServerCertificate`/`Server Certificate`), as Microsoft.Data.SqlClient's
    /// `ServerCertificate` does: the presented certificate is compared with it byte for byte, and an
    /// exact match is the whole verification (no chain or host name check); a mismatch, or a file
    /// that cannot be read or parsed, fails the connection. Not consulted when
    /// ``trustServerCertificate`` is set. See `pinnedCertificateDER()`.
    public var serverCertificate: String?
    /// The name the certificate must carry; nil or empty uses the host being connected to (an
    /// empty name never switches the check off: that is ``verifyHostName`` or
    /// ``trustServerCertificate``).
    public var hostNameInCertificate: String?
    /// Whether to check that the certificate names the host (default true, ignored when trusting).
    public var verifyHostName: Bool
    /// The oldest TLS version accepted (default TLS 1.2).
    public var minimumVersion: ProtocolVersion
    /// The newest TLS version offered (default TLS 1.2: SQL Server speaks TLS 1.3 only with TDS 8).
    public var maximumVersion: ProtocolVersion

    /// Verification on (system trust store, host name checked), TLS 1.2 only, unless told otherwise.
    public init(trustServerCertificate: Bool = false, caFile: String? = nil, hostNameInCertificate: String? = nil,
                verifyHostName: Bool = true, minimumVersion: ProtocolVersion = .tls1_2,
                maximumVersion: ProtocolVersion = .tls1_2, serverCertificate: String? = nil) {
        self.trustServerCertificate = trustServerCertificate
        self.caFile = caFile
        self.serverCertificate = serverCertificate
        self.hostNameInCertificate = hostNameInCertificate
        self.verifyHostName = verifyHostName
        self.minimumVersion = minimumVersion
        self.maximumVersion = maximumVersion
    }
}

extension TLSConfiguration {
    /// The name the server's certificate is checked against when connecting to `host`:
    /// ``hostNameInCertificate`` unless it is nil or empty, else `host`.
    public func expectedHostName(connectingTo host: String) -> String {
        if let name = hostNameInCertificate, !name.isEmpty { return name }
        return host
    }
}

/// Makes TLS client sessions. The connection uses one session per login; the session never
/// touches a socket: it turns bytes into bytes, so the TDS layer can carry the handshake inside
/// PRELOGIN packets ([MS-TDS] 2.2.6.5, 3.2.5.2) and the records bare afterwards.
///
/// On Linux, ``OpenSSLTLSProvider`` is the default (``DefaultTLSProvider``); on Apple platforms,
/// `NetworkFrameworkTLSProvider` (Network.framework, `Sources/SQLClient/TLS/Apple`). Elsewhere
/// set ``SQLConnectionConfiguration/tlsProvider``, or connect with `encryption: .notSupported`
/// on a trusted network.
///
/// ## Writing a provider (for example over Apple's Network.framework or Security.framework)
///
/// A provider is one file: a type conforming to `TLSProvider` whose `makeClientSession` returns a
/// class conforming to ``TLSSession``. The session must:
/// - work on buffers only: `startHandshake()` returns the ClientHello bytes,
///   `continueHandshake(_:)` consumes whatever the server sent (possibly a partial record) and
///   returns the bytes to send back and whether the handshake is complete; `encrypt(_:)` and
///   `decrypt(_:)` turn application bytes into records and back (`decrypt` may return nothing
///   until a record is whole). It must never read or write a socket itself.
/// - offer ``TLSConfiguration/minimumVersion`` … ``TLSConfiguration/maximumVersion`` and SNI with
///   the expected name (``TLSConfiguration/hostNameInCertificate`` ?? `serverName`, unless it is an
///   IP address literal).
/// - verify unless ``TLSConfiguration/trustServerCertificate``: when
///   `TLSConfiguration/pinnedCertificateDER()` returns bytes, compare them with the presented
///   certificate through ``TLSConfiguration/verifyPinnedCertificate(_:presented:serverName:)``
///   once the handshake completes, and skip the chain and name checks; otherwise check the chain
///   against ``TLSConfiguration/caFile`` (when set) or the system trust store, and the name
///   (DNS name or IP SAN) when ``TLSConfiguration/verifyHostName``.
/// - report a refused certificate with `SQLClientError/certificateRefused(_:serverName:detail:)`
///   (mapping its library's reason to a ``CertificateRefusal``) and other failures as `.tlsFailed`;
///   `decrypt` throws `.connectionClosed` after the server's close_notify.
/// - expose ``TLSSession/negotiatedProtocol`` and ``TLSSession/peerCertificateDER`` once complete.
///
/// `Tests/SQLClientTests/TLSContract` is the contract every provider must pass (handshakes inside
/// PRELOGIN and strict, each certificate refusal, TLS 1.3, hostile servers): run it with the new
/// provider injected to show that it fits.
package protocol TLSProvider: Sendable {
    /// Creates a client session for `serverName` (the host connected to; used for SNI and the
    /// certificate's name check unless `configuration.hostNameInCertificate` overrides it).
    /// - Throws: ``SQLClientError`` `.tlsFailed` when the session cannot be created (for example an unreadable CA file).
    func makeClientSession(serverName: String, configuration: TLSConfiguration) throws -> any TLSSession
    /// Creates a client session for TDS 8.0 (strict): the handshake runs straight on the socket before
    /// PRELOGIN, offers ALPN `tds/8.0`, TLS 1.2–1.3, and always verifies the certificate
    /// (`trustServerCertificate` does not apply). The default implementation throws `.unsupported`.
    func makeStrictClientSession(serverName: String, configuration: TLSConfiguration) throws -> any TLSSession
}

/// The result of feeding server bytes to a handshake.
package struct TLSHandshakeStep: Sendable, Equatable {
    /// Bytes to send to the server (possibly empty).
    package var output: [UInt8]
    /// True once the handshake has completed on the client side.
    package var isComplete: Bool
    /// A step's bytes to send and whether the handshake is complete.
    package init(output: [UInt8], isComplete: Bool) {
        self.output = output
        self.isComplete = isComplete
    }
}

/// One TLS client session driven by buffers: handshake, then encrypt and decrypt records.
///
/// Every step is `async`: an engine whose TLS library answers through callbacks (Apple's
/// Network.framework, `NetworkFrameworkTLSProvider`) suspends until the answer arrives instead of
/// blocking a thread of the cooperative pool; an engine that answers at once (OpenSSL) simply
/// does not suspend.
///
/// Calls: `startHandshake()` once, then `continueHandshake(_:)` one at a time until a step is
/// complete; after that one `encrypt(_:)` and one `decrypt(_:)` may run at the same time (a
/// connection's writer and reader), so a session serializes whatever its library cannot do at once.
package protocol TLSSession: AnyObject, Sendable {
    /// Starts the handshake; returns the client's first flight (the ClientHello record bytes).
    /// - Throws: ``SQLClientError`` `.tlsFailed`.
    func startHandshake() async throws -> [UInt8]
    /// Feeds bytes the server sent during the handshake (exactly one server message's payload in
    /// TDS 7.x, whatever arrived on the socket in TDS 8.0); returns the client's next flight, whole,
    /// and whether the handshake is done.
    /// - Throws: ``SQLClientError`` `.tlsFailed`, or `.certificateVerificationFailed` when the certificate is refused.
    func continueHandshake(_ received: [UInt8]) async throws -> TLSHandshakeStep
    /// Encrypts application data into TLS records.
    /// - Throws: ``SQLClientError`` `.tlsFailed`.
    func encrypt(_ plaintext: [UInt8]) async throws -> [UInt8]
    /// Feeds TLS records; returns every plaintext byte they complete (possibly none yet).
    /// - Throws: ``SQLClientError`` `.tlsFailed`, or `.connectionClosed` after the server's close_notify.
    func decrypt(_ ciphertext: [UInt8]) async throws -> [UInt8]
    /// The negotiated protocol (for example "TLSv1.2"), once the handshake is complete.
    var negotiatedProtocol: String? { get }
    /// The server's certificate as DER bytes, once the handshake is complete.
    var peerCertificateDER: [UInt8]? { get }
    /// The ALPN protocol the server chose (for example "tds/8.0"), nil when none; default nil.
    var applicationProtocol: String? { get }
}

/// The TLS provider this platform offers by default, or nil when there is none.
package enum DefaultTLSProvider {
    /// ``OpenSSLTLSProvider`` where OpenSSL is linked (Linux); `NetworkFrameworkTLSProvider`
    /// on Apple platforms (Network.framework and Security.framework); nil elsewhere (set
    /// ``SQLConnectionConfiguration/tlsProvider``).
    package static var provider: (any TLSProvider)? {
        #if canImport(CSQLClientOpenSSL)
        return OpenSSLTLSProvider()
        #elseif canImport(Network) && canImport(Security)
        return NetworkFrameworkTLSProvider()
        #else
        return nil
        #endif
    }
}
