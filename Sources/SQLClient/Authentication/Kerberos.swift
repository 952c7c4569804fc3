#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation

/// Kerberos (Windows integrated security) through GSSAPI: what Microsoft's drivers send as
/// "Negotiate", SPNEGO ([RFC 4178]) carrying a Kerberos AP-REQ ([RFC 4121]) in LOGIN7's SSPI field,
/// the server's SPNEGO answer (the AP-REP that proves the server: mutual authentication) in an SSPI
/// token, and any further client leg in an SSPI message (packet type 0x11) ([MS-TDS] 2.2.6.4, 2.2.7.22).
///
/// The ticket comes from the default credential cache (`kinit`, `KRB5CCNAME`), or from
/// ``credentialCache``, or from ``keytab`` and ``principal``. On Linux the system's MIT Kerberos
/// (`libgssapi_krb5.so.2`, Debian/Ubuntu package `libgssapi-krb5-2`) is loaded at run time; on Apple
/// platforms GSS.framework. `description` shows the SPN and principal, never key material.
public struct KerberosCredentials: Sendable, Hashable, CustomStringConvertible {
    /// The server's service principal name (`ServerSPN`), e.g. `MSSQLSvc/sql1.corp.example.com:1433`
    /// or with a realm `MSSQLSvc/sql1.corp.example.com:1433@CORP.EXAMPLE.COM`; nil derives
    /// `MSSQLSvc/<fqdn>:<port>` (or `:<instance>`) from the server address, as Microsoft's drivers do.
    public var serverSPN: String?
    /// The client principal (`alice@CORP.EXAMPLE.COM`): with ``keytab``, whose key is used; with a
    /// cache, the cache's principal must match. nil: the cache's default principal.
    public var principal: String?
    /// A client keytab file (MIT: `client_keytab` of gss_acquire_cred_from) to get the ticket from;
    /// nil: none (the default cache, or MIT's default client keytab when the cache is empty).
    public var keytab: String?
    /// A credential cache name (`FILE:/tmp/krb5cc_app`, `KEYRING:…`); nil: the default cache.
    public var credentialCache: String?
    /// NTLM credentials used instead when Kerberos cannot start on this side: no GSSAPI library, no
    /// ticket, an SPN the KDC does not know (the server has no Kerberos), the KDC unreachable. nil:
    /// such a failure fails the connect.
    public var ntlmFallback: NTLMCredentials?

    /// Kerberos with the given SPN, client principal, keytab, cache and NTLM fallback (all optional).
    public init(serverSPN: String? = nil, principal: String? = nil, keytab: String? = nil,
                credentialCache: String? = nil, ntlmFallback: NTLMCredentials? = nil) {
        self.serverSPN = serverSPN
        self.principal = principal
        self.keytab = keytab
        self.credentialCache = credentialCache
        self.ntlmFallback = ntlmFallback
    }

    public var description: String {
        var parts: [String] = []
        if let serverSPN { parts.append("spn: \(serverSPN)") }
        if let principal { parts.append("principal: \(principal)") }
        if keytab != nil { parts.append("keytab") }
        if credentialCache != nil { parts.append("cache") }
        if let ntlmFallback { parts.append("ntlm fallback: \(ntlmFallback)") }
        return parts.isEmpty ? "default credentials" : parts.joined(separator: ", ")
    }
}

/// Why Kerberos failed: the `underlying` error of the ``SQLClientError`` a Kerberos login throws,
/// with GSSAPI's status codes and text.
public struct KerberosError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, as far as the status codes tell.
    public enum Kind: String, Sendable, Hashable {
        /// No GSSAPI library on this machine (`.unsupported`).
        case libraryUnavailable
        /// No ticket-granting ticket: no cache, an empty cache, no usable keytab (run `kinit`).
        case noCredentials
        /// The ticket (or the cache's ticket-granting ticket) has expired (run `kinit` again).
        case credentialsExpired
        /// The KDC does not know the server's SPN (wrong `ServerSPN`, or the server has no SPN registered).
        case unknownServer
        /// No KDC of the realm answered.
        case kdcUnreachable
        /// A malformed or unexpected token from the server.
        case defectiveToken
        /// The server did not prove its identity (no AP-REP, or no mutual authentication).
        case mutualAuthenticationFailed
        /// Anything else (see ``message``).
        case other
    }
    /// The kind of failure.
    public var kind: Kind
    /// GSSAPI major status (0 when the failure is not GSSAPI's).
    public var majorStatus: UInt32
    /// The mechanism's minor status (for MIT Kerberos a krb5 error code; 0 when none).
    public var minorStatus: UInt32
    /// gss_display_status's text (or this client's), never holding key material.
    public var message: String

    /// An error of `kind` with a message and no status codes.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.majorStatus = 0
        self.minorStatus = 0
        self.message = message
    }

    /// An error from GSSAPI status codes and gss_display_status's text, its kind read from them. MIT's
    /// mechanism glue hands out process-local minor codes, so the krb5 error is recognised by its
    /// (English) message first, then by a raw krb5 code (Heimdal, GSS.framework), then by the major routine.
    init(major: UInt32, minor: UInt32, text: String) {
        self.majorStatus = major
        self.minorStatus = minor
        self.message = text
        let routine = (major >> 16) & 0xFF
        let lower = text.lowercased()
        if lower.contains("cannot contact any kdc") || lower.contains("cannot find kdc") || lower.contains("cannot resolve network address for kdc") {
            kind = .kdcUnreachable
            return
        }
        if lower.contains("not found in kerberos database") || lower.contains("server not found") {
            kind = .unknownServer
            return
        }
        if lower.contains("ticket expired") || lower.contains("credentials have expired") || lower.contains("credential has expired") {
            kind = .credentialsExpired
            return
        }
        if lower.contains("no kerberos credentials") || lower.contains("no credentials cache") || lower.contains("no credentials were supplied")
            || lower.contains("matching credential not found") || lower.contains("credentials cache file") && lower.contains("not found") {
            kind = .noCredentials
            return
        }
        switch Int32(bitPattern: minor) {
        case -1_765_328_228: kind = .kdcUnreachable                 // KRB5_KDC_UNREACH
        case -1_765_328_377: kind = .unknownServer                  // KRB5KDC_ERR_S_PRINCIPAL_UNKNOWN
        case -1_765_328_352, -1_765_328_372: kind = .credentialsExpired // KRB5KRB_AP_ERR_TKT_EXPIRED, KDC_ERR_TGT_REVOKED
        case -1_765_328_189, -1_765_328_243, -1_765_328_254, 39_756_044:
            kind = .noCredentials // KRB5_FCC_NOFILE, KRB5_CC_NOTFOUND, KRB5_CC_END... KG_EMPTY_CCACHE
        default:
            switch routine {
            case 7: kind = .noCredentials            // GSS_S_NO_CRED
            case 11, 12: kind = .credentialsExpired  // GSS_S_CREDENTIALS_EXPIRED, GSS_S_CONTEXT_EXPIRED
            case 9, 10, 4: kind = .defectiveToken    // DEFECTIVE_TOKEN, DEFECTIVE_CREDENTIAL, BAD_MIC
            default: kind = .other
            }
        }
    }

    public var description: String {
        majorStatus == 0 && minorStatus == 0 ? "Kerberos \(kind.rawValue): \(message)"
            : "Kerberos \(kind.rawValue): \(message) (major 0x\(String(majorStatus, radix: 16)), minor \(Int32(bitPattern: minorStatus)))"
    }
}

/// One GSSAPI initiator context running SPNEGO with Kerberos (MIT GSSAPI or GSS.framework).
protocol GSSInitiator: AnyObject, Sendable {
    /// The next token to send, from the server's last token (nil for the first).
    /// - Throws: ``SQLClientError`` with a ``KerberosError`` as `underlying`.
    func step(_ input: [UInt8]?) throws(SQLClientError) -> [UInt8]
    /// GSS_S_COMPLETE was returned: the server is authenticated.
    var isComplete: Bool { get }
    /// The context's flags (GSS_C_MUTUAL_FLAG is 2).
    var grantedFlags: UInt32 { get }
}

/// The Kerberos side of one login attempt: the SPN, the GSSAPI context, its legs, and the check that
/// the server proved itself before LOGINACK is believed.
struct KerberosAuthenticator: Sendable {
    /// 1.2.840.113554.1.2.2 (Kerberos 5), DER contents.
    static let kerberosOID: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x12, 0x01, 0x02, 0x02]
    /// GSS_C_MUTUAL_FLAG | GSS_C_REPLAY_FLAG | GSS_C_SEQUENCE_FLAG | GSS_C_INTEG_FLAG.
    static let requestedFlags: UInt32 = 2 | 4 | 8 | 32
    /// The most SSPI tokens a server may send in one Kerberos login (SPNEGO needs one, two with a MIC
    /// exchange); more is a hostile or broken server.
    static let maximumLegs = 4

    let servicePrincipalName: String
    private let context: any GSSInitiator
    /// The first token (the SPNEGO NegTokenInit with the AP-REQ), sent in LOGIN7.
    let initialToken: [UInt8]
    private(set) var legs = 0

    /// Starts the context (the KDC is asked for a service ticket here).
    init(servicePrincipalName: String, credentials: KerberosCredentials) throws(SQLClientError) {
        self.servicePrincipalName = servicePrincipalName
        context = try GSSBackend.makeInitiator(servicePrincipalName: servicePrincipalName, credentials: credentials)
        initialToken = try context.step(nil)
        guard !initialToken.isEmpty else {
            throw SQLClientError(.loginFailed, "GSSAPI produced no Kerberos token for \(servicePrincipalName)",
                                 underlying: KerberosError(.other, "an empty initial token"))
        }
    }

    /// The answer to the server's SSPI token: empty when there is nothing to send (the context completed).
    /// - Throws: ``SQLClientError`` `.protocolError` for an oversized, malformed or surplus token;
    ///   `.loginFailed` when GSSAPI refuses the server's answer.
    mutating func respond(to token: [UInt8]) throws(SQLClientError) -> [UInt8] {
        legs += 1
        guard legs <= Self.maximumLegs else {
            throw SQLClientError(.protocolError, "the server sent more than \(Self.maximumLegs) SSPI tokens in a Kerberos login",
                                 underlying: KerberosError(.defectiveToken, "too many legs"))
        }
        guard !token.isEmpty, token.count <= SPNEGO.maximumTokenLength else {
            throw SQLClientError(.protocolError, "the server's SSPI token is \(token.count) bytes (1 to \(SPNEGO.maximumTokenLength))",
                                 underlying: KerberosError(.defectiveToken, "token length \(token.count)"))
        }
        return try context.step(token)
    }

    /// Checks, when LOGINACK arrives, that the server proved its identity (mutual authentication).
    /// - Throws: ``SQLClientError`` `.loginFailed` with ``KerberosError/Kind/mutualAuthenticationFailed``.
    func checkMutualAuthentication() throws(SQLClientError) {
        guard context.isComplete else {
            throw SQLClientError(.loginFailed, "the server accepted the login without completing Kerberos authentication"
                                 + " (no AP-REP): it did not prove it is \(servicePrincipalName)",
                                 underlying: KerberosError(.mutualAuthenticationFailed, "context incomplete at LOGINACK"))
        }
        guard context.grantedFlags & 2 != 0 else {
            throw SQLClientError(.loginFailed, "Kerberos completed without mutual authentication of \(servicePrincipalName)",
                                 underlying: KerberosError(.mutualAuthenticationFailed, "GSS_C_MUTUAL_FLAG not granted"))
        }
    }

    /// The ``SQLClientError`` for a GSSAPI failure while `doing` something.
    static func error(_ kerberos: KerberosError, doing: String) -> SQLClientError {
        let hint: String
        switch kerberos.kind {
        case .noCredentials: hint = "no Kerberos ticket: run kinit, or give a keytab and principal"
        case .credentialsExpired: hint = "the Kerberos ticket has expired: run kinit again"
        case .unknownServer: hint = "the KDC does not know the server's SPN (check ServerSPN, or register the SPN)"
        case .kdcUnreachable: hint = "no KDC of the realm could be reached"
        case .defectiveToken: hint = "the server's Kerberos token is malformed"
        case .mutualAuthenticationFailed: hint = "the server did not prove its identity"
        case .libraryUnavailable: hint = "no GSSAPI library"
        case .other: hint = "Kerberos failed"
        }
        let code: SQLClientError.Code = kerberos.kind == .defectiveToken ? .protocolError : .loginFailed
        return SQLClientError(code, "\(hint) (\(doing): \(kerberos.message))", underlying: kerberos)
    }

    // MARK: The SPN

    /// `ServerSPN` when given, else `MSSQLSvc/<fqdn>:<port>` with the host canonicalised by DNS (as
    /// Microsoft's drivers do: an address is looked up in reverse, a name by its canonical name; the
    /// name as given when the lookup fails), and the port written in the address, else the instance
    /// name, else the port connected to.
    static func servicePrincipalName(for address: SQLServerAddress, port: Int, credentials: KerberosCredentials,
                                     canonicalize: (String) -> String = canonicalHostName) -> String {
        if let spn = credentials.serverSPN?.trimmingCharacters(in: .whitespaces), !spn.isEmpty { return spn }
        let host = canonicalize(address.host)
        let suffix: String
        if let explicit = address.port {
            suffix = String(explicit)
        } else if let instance = address.instance, !instance.isEmpty {
            suffix = instance
        } else {
            suffix = String(port)
        }
        return "MSSQLSvc/\(host):\(suffix)"
    }

    /// The fully qualified name of `host`: getnameinfo for an IPv4/IPv6 address, getaddrinfo's
    /// AI_CANONNAME for a name; `host` itself when the lookup fails. A trailing dot is dropped.
    static func canonicalHostName(_ host: String) -> String {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        guard !bare.isEmpty else { return host }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        var result: UnsafeMutablePointer<addrinfo>?
        let isAddress = Self.isNumericAddress(bare)
        hints.ai_flags = isAddress ? AI_NUMERICHOST : AI_CANONNAME
        guard getaddrinfo(bare, nil, &hints, &result) == 0, let first = result else { return host }
        defer { freeaddrinfo(result) }
        var name: String?
        if isAddress {
            var buffer = [CChar](repeating: 0, count: 1025)
            if getnameinfo(first.pointee.ai_addr, first.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0, NI_NAMEREQD) == 0 {
                name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
        } else if let canon = first.pointee.ai_canonname {
            name = String(cString: canon)
        }
        guard var found = name, !found.isEmpty else { return host }
        if found.hasSuffix(".") { found.removeLast() }
        return found
    }

    private static func isNumericAddress(_ text: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }

    // MARK: Off the caller's thread, within a deadline

    /// Runs `work` (blocking GSSAPI and DNS calls: the KDC is asked over the network) on a Dispatch
    /// thread, failing with `.timeout` when `timeout` passes first (the work finishes in the
    /// background and its result is dropped).
    static func offload<T: Sendable>(timeout: Duration, _ work: @escaping @Sendable () throws(SQLClientError) -> T) async throws -> T {
        try await BlockingWork.run(deadline: BlockingWork.deadline(after: timeout), timeoutError: {
            SQLClientError(.timeout, "Kerberos did not finish within the login timeout (the KDC or DNS did not answer in time)")
        }) { try work() }
    }
}

