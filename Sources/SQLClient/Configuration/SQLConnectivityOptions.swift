import Foundation
import TDS

/// How the client proves who it is in LOGIN7 ([MS-TDS] 2.2.6.4).
///
/// `description` never shows a password or a token.
public enum SQLAuthentication: Sendable, CustomStringConvertible {
    /// SQL Server authentication with the configuration's `user` and `password` (the default).
    case sqlPassword
    /// A Microsoft Entra ID (Azure AD) access token the caller obtained (this library acquires none):
    /// PRELOGIN sends FEDAUTHREQUIRED and LOGIN7 carries it in the FEDAUTH FeatureExt with the
    /// security-token library, as UTF-16LE ([MS-TDS] 2.2.6.4, 2.2.7.11). User and password are not sent.
    /// Connection string `Authentication=ActiveDirectoryAccessToken` leaves the token empty: set it
    /// here (or with `sqlclient --access-token-file`); an empty token fails the connect with
    /// `.invalidConfiguration`.
    case accessToken(String)
    /// Like ``accessToken(_:)``, with the token fetched by `provider` at every connect (and every
    /// retry and redirect), so a pool or a reconnect gets a fresh one. An error it throws fails the
    /// connect as `.loginFailed` with the error as `underlying`.
    case accessTokenProvider(@Sendable () async throws -> String)
    /// Microsoft Entra ID sign-in through the FEDAUTH MSAL workflow ([MS-TDS] 2.2.6.4 FEDAUTH with
    /// bFedAuthLibrary 0x02 and the credential's bWorkflow; 2.2.7.12 FEDAUTHINFO; 2.2.6.3 the FEDAUTH
    /// token message, packet type 0x08): LOGIN7 asks for it, the server answers FEDAUTHINFO with the
    /// authority (STSURL) and the resource (SPN), and the credential's token for them — taken from
    /// `cache` (one per authority, resource and identity for the whole process, refreshed before
    /// expiry, one request however many connections log in at once) — is sent. Every login (a
    /// reconnect, a redirect, a session recovery) asks the cache again. Errors fail the connect as
    /// `.loginFailed` with an ``EntraCredentialError`` as `underlying` (`.timeout` when the login
    /// timeout ends first). See ``ClientSecretCredential``, ``ManagedIdentityCredential``,
    /// ``WorkloadIdentityCredential``, ``DeveloperCLICredential``, ``DeviceCodeCredential``,
    /// ``DefaultAzureCredential``; connection string `Authentication=ActiveDirectory…`.
    case entra(any EntraTokenCredential, cache: EntraTokenCache = .shared)
    /// Like ``entra(_:cache:)`` with your own code as the credential: `callback` gets the authority
    /// and resource the server named (FEDAUTHINFO) at every login and returns an access token
    /// (not cached here). Microsoft.Data.SqlClient's `AccessTokenCallback`. (``accessTokenProvider(_:)``
    /// is unchanged: it sends its token in LOGIN7 without the server naming a resource.)
    case accessTokenCallback(@Sendable (EntraTokenRequest) async throws -> String)
    /// NTLM (Windows authentication with a user, a domain and a password): SSPI data in LOGIN7 and an
    /// SSPI message (packet type 0x11) answering the server's challenge ([MS-TDS] 2.2.6.4, 2.2.6.8,
    /// 2.2.7.22). A `User ID` written `DOMAIN\user` in a connection string selects it.
    case ntlm(NTLMCredentials)
    /// Kerberos (Windows integrated security without a password) through GSSAPI: SPNEGO carrying a
    /// Kerberos ticket in LOGIN7's SSPI field, the server's answer checked (mutual authentication)
    /// ([MS-TDS] 2.2.6.4, 2.2.7.22). A connection string with `Integrated Security=true` (or `SSPI`,
    /// or `Trusted_Connection=yes`) and no password selects it; see ``KerberosCredentials``.
    case kerberos(KerberosCredentials)

    public var description: String {
        switch self {
        case .sqlPassword: return "sqlPassword"
        case .accessToken(let t): return t.isEmpty ? "accessToken(missing)" : "accessToken(redacted)"
        case .accessTokenProvider: return "accessTokenProvider"
        case .entra(let credential, _): return "entra(\(credential.authenticationName))"
        case .accessTokenCallback: return "accessTokenCallback"
        case .ntlm(let c): return "ntlm(\(c))"
        case .kerberos(let c): return "kerberos(\(c))"
        }
    }

    /// True for NTLM and Kerberos (an SSPI exchange).
    var usesSSPI: Bool {
        switch self {
        case .ntlm, .kerberos: return true
        default: return false
        }
    }

    /// True for the FEDAUTH cases.
    var usesFedAuth: Bool {
        switch self {
        case .accessToken, .accessTokenProvider, .entra, .accessTokenCallback: return true
        default: return false
        }
    }

    /// True for the FEDAUTH MSAL workflow (the token is asked after the server's FEDAUTHINFO).
    var usesFedAuthWorkflow: Bool {
        switch self {
        case .entra, .accessTokenCallback: return true
        default: return false
        }
    }

    /// The credential the MSAL workflow asks, and the cache it goes through (nil: none, the callback's).
    var entraCredential: (credential: any EntraTokenCredential, cache: EntraTokenCache?)? {
        switch self {
        case .entra(let credential, let cache): return (credential, cache)
        case .accessTokenCallback(let callback): return (CallbackCredential(callback: callback), nil)
        default: return nil
        }
    }
}

/// Retrying a login that failed with a transient error, as Microsoft.Data.SqlClient does on open
/// (its names, ranges and defaults): `ConnectRetryCount` 0–255 (default 1; 2 for Azure SQL endpoints
/// such as `*.database.windows.net`; 5 for serverless/on-demand endpoints), `ConnectRetryInterval`
/// 1–60 s (default 10 s). Only the error numbers in ``errorNumbers`` are retried (by default
/// ``transientErrorNumbers``; ``optInErrorNumbers`` only when added), and every attempt runs inside the
/// one ``SQLConnectionConfiguration/connectTimeout``: no retry starts when less than the interval remains.
///
/// The same two settings drive idle connection resiliency: with a count above 0, LOGIN7 asks for
/// SESSIONRECOVERY and a connection found dropped while idle is logged in again before the next
/// request (at most `count` attempts, the first at once, then `interval` apart), or the request
/// fails with ``SQLClientError/Code/connectionLost`` (see ``SQLSessionRecoveryError``).
public struct SQLConnectRetryPolicy: Sendable, Hashable {
    /// Errors SQL Server and Azure SQL report while a database is starting, moving or busy.
    public static let transientErrorNumbers: Set<Int32> = [4060, 10928, 10929, 40197, 40501, 40613, 42108, 42109]
    /// Transient in some deployments only (elastic pools, serverless resume, read-only replicas):
    /// retried only when added to ``errorNumbers``.
    public static let optInErrorNumbers: Set<Int32> = [49918, 49919, 49920, 4221]

    /// Retries after the first attempt (0–255); nil: SqlClient's default for the host.
    public var count: Int?
    /// The wait before each retry (1–60 s).
    public var interval: Duration
    /// The ERROR numbers of a failed login that are retried.
    public var errorNumbers: Set<Int32>

    /// A retry policy: `count` more attempts (nil: the default), `interval` apart, for logins failing with one of `errorNumbers`.
    public init(count: Int? = nil, interval: Duration = .seconds(10),
                errorNumbers: Set<Int32> = SQLConnectRetryPolicy.transientErrorNumbers) {
        self.count = count
        self.interval = interval
        self.errorNumbers = errorNumbers
    }

    /// The retry count used for `host`: ``count``, else 5 for an on-demand (serverless) endpoint,
    /// 2 for another Azure SQL endpoint, 1 otherwise.
    public func effectiveCount(host: String) -> Int {
        if let count { return count }
        let h = host.lowercased()
        let azure = [".database.windows.net", ".database.chinacloudapi.cn", ".database.usgovcloudapi.net",
                     ".database.cloudapi.de", ".sql.azuresynapse.net", ".database.fabric.microsoft.com"]
        guard azure.contains(where: { h.hasSuffix($0) }) else { return 1 }
        return h.contains("ondemand") ? 5 : 2
    }

    /// - Throws: ``SQLClientError`` `.invalidConfiguration` outside the ranges.
    func validate() throws(SQLClientError) {
        if let count, !(0 ... 255).contains(count) {
            throw SQLClientError(.invalidConfiguration, "ConnectRetryCount must be 0–255")
        }
        guard interval >= .seconds(1), interval <= .seconds(60) else {
            throw SQLClientError(.invalidConfiguration, "ConnectRetryInterval must be 1–60 seconds")
        }
    }
}

/// TCP keep-alive on the connection's socket (`SO_KEEPALIVE`): NAT devices and Azure load
/// balancers drop connections idle for a few minutes. The default is Microsoft.Data.SqlClient's:
/// the first probe after 30 s idle, then every 1 s.
public struct SQLKeepAlive: Sendable, Hashable {
    /// Idle time before the first probe (`TCP_KEEPIDLE`; `TCP_KEEPALIVE` on Apple platforms), whole seconds ≥ 1.
    public var idle: Duration
    /// Time between probes (`TCP_KEEPINTVL`), whole seconds ≥ 1.
    public var interval: Duration

    /// TCP keepalive after `idle` without traffic, probing every `interval`.
    public init(idle: Duration = .seconds(30), interval: Duration = .seconds(1)) {
        self.idle = idle
        self.interval = interval
    }

    /// 30 s idle, 1 s between probes.
    public static let `default` = SQLKeepAlive()

    /// The idle time and interval in whole seconds, clamped to 1…32767 (what Linux accepts).
    var seconds: (idle: Int32, interval: Int32) {
        func clamp(_ d: Duration) -> Int32 { Int32(min(max(d.components.seconds, 1), 32_767)) }
        return (clamp(idle), clamp(interval))
    }
}

/// LOGIN7 TypeFlags fReadOnlyIntent ([MS-TDS] 2.2.6.4): what the application will do, so that an
/// availability group listener can route read-only work to a readable secondary.
public enum SQLApplicationIntent: String, Sendable, Hashable {
    /// ReadWrite (the default): fReadOnlyIntent clear.
    case readWrite = "ReadWrite"
    /// ReadOnly: fReadOnlyIntent set.
    case readOnly = "ReadOnly"
}

/// The connection-string keys of this file's options, parsed apart from the rest.
struct ConnectivityKeys {
    var authentication: SQLAuthentication?
    /// `Authentication=ActiveDirectory…` (lower case): the Entra ID credential, made once user and password are known.
    var entraMethod: String?
    var integratedSecurity = false
    /// `ServerSPN`: the Kerberos service principal name (nil: derived from the server address).
    var serverSPN: String?
    var retry = SQLConnectRetryPolicy()
    var keepAlive: SQLKeepAlive? = .default
    var applicationIntent = SQLApplicationIntent.readWrite
    var multiSubnetFailover = false

    /// Takes `key` (normalised: lower case, single spaces) when it is one of these options; false otherwise.
    /// - Throws: ``SQLClientError`` `.invalidConfiguration` (bad value, named by key only) or `.unsupported`.
    mutating func take(_ key: String, value: String, rawKey: String) throws(SQLClientError) -> Bool {
        func bad() -> SQLClientError { SQLClientError(.invalidConfiguration, "invalid value for \(rawKey)") }
        func bool() throws(SQLClientError) -> Bool { try ConnectionStringParser.bool(value, key: rawKey) }
        func seconds() throws(SQLClientError) -> Int {
            guard let n = Int(value.trimmingCharacters(in: .whitespaces)) else { throw bad() }
            return n
        }
        switch key {
        case "authentication":
            switch value.lowercased().replacingOccurrences(of: " ", with: "") {
            case "sqlpassword": authentication = .sqlPassword; entraMethod = nil
            case "activedirectoryaccesstoken", "accesstoken": authentication = .accessToken(""); entraMethod = nil
            case "activedirectorypassword":
                throw SQLClientError(.unsupported, "Authentication=ActiveDirectoryPassword is obsolete (Entra ID requires"
                                     + " multifactor authentication); use ActiveDirectoryServicePrincipal, ActiveDirectoryManagedIdentity,"
                                     + " ActiveDirectoryWorkloadIdentity, ActiveDirectoryDeviceCodeFlow or ActiveDirectoryDefault")
            case "activedirectoryintegrated", "activedirectoryinteractive":
                throw SQLClientError(.unsupported, "Authentication=\(value) is not supported here; use ActiveDirectoryDefault"
                                     + " (Azure CLI sign-in) or ActiveDirectoryDeviceCodeFlow")
            case "activedirectoryserviceprincipal", "activedirectorydeviceflow", "activedirectorydevicecodeflow",
                 "activedirectorymanagedidentity", "activedirectorymsi", "activedirectorydefault", "activedirectoryworkloadidentity":
                entraMethod = value.lowercased().replacingOccurrences(of: " ", with: "")
                authentication = nil
            default: throw bad()
            }
        case "integrated security", "trusted connection":
            integratedSecurity = value.lowercased() == "sspi" ? true : try bool()
        case "server spn", "serverspn":
            serverSPN = value.trimmingCharacters(in: .whitespaces).isEmpty ? nil : value.trimmingCharacters(in: .whitespaces)
        case "connect retry count", "connectretrycount":
            let n = try seconds()
            guard (0 ... 255).contains(n) else {
                throw SQLClientError(.invalidConfiguration, "\(rawKey) must be 0–255")
            }
            retry.count = n
        case "connect retry interval", "connectretryinterval":
            let n = try seconds()
            guard (1 ... 60).contains(n) else {
                throw SQLClientError(.invalidConfiguration, "\(rawKey) must be 1–60 seconds")
            }
            retry.interval = .seconds(n)
        case "keepalive", "keep alive":
            let n = try seconds()
            guard n == -1 || n == 0 || (1 ... 32_767).contains(n) else { throw bad() }
            if n <= 0 { keepAlive = nil } else { keepAlive = SQLKeepAlive(idle: .seconds(n), interval: keepAlive?.interval ?? .seconds(1)) }
        case "keepaliveinterval", "keep alive interval":
            let n = try seconds()
            guard (1 ... 32_767).contains(n) else { throw bad() }
            keepAlive?.interval = .seconds(n)
        case "application intent", "applicationintent":
            switch value.lowercased() {
            case "readwrite": applicationIntent = .readWrite
            case "readonly": applicationIntent = .readOnly
            default: throw bad()
            }
        case "multisubnetfailover", "multi subnet failover":
            multiSubnetFailover = try bool()
        default:
            return false
        }
        return true
    }

    /// The authentication these keys and the user name select. `Integrated Security=true` with a
    /// `DOMAIN\user` and a password is NTLM; without a password it is Kerberos (the default credential
    /// cache; a `User ID` written `user@REALM` names the client principal; `ServerSPN` the server's).
    func resolvedAuthentication(user: String, password: String) throws(SQLClientError) -> SQLAuthentication {
        if let entraMethod {
            guard !integratedSecurity else {
                throw SQLClientError(.invalidConfiguration, "Authentication and Integrated Security cannot be combined")
            }
            return try SQLAuthentication.entra(method: entraMethod, user: user, password: password)
        }
        if let authentication, case .sqlPassword = authentication, !integratedSecurity {
            return .sqlPassword
        }
        if let authentication, authentication.usesFedAuth {
            guard !integratedSecurity else {
                throw SQLClientError(.invalidConfiguration, "Authentication and Integrated Security cannot be combined")
            }
            return authentication
        }
        if integratedSecurity || user.contains("\\") {
            if password.isEmpty, integratedSecurity {
                return .kerberos(KerberosCredentials(serverSPN: serverSPN, principal: user.contains("@") ? user : nil))
            }
            guard !user.isEmpty, !password.isEmpty else {
                throw SQLClientError(.invalidConfiguration, "User ID=DOMAIN\\user (NTLM) needs a Password;"
                                     + " for Kerberos set Integrated Security=true without a password")
            }
            return .ntlm(try NTLMCredentials(qualifiedUser: user, password: password))
        }
        return .sqlPassword
    }
}
