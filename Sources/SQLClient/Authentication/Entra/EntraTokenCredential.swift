import Foundation

/// What the server asked a token for, from its FEDAUTHINFO token ([MS-TDS] 2.2.7.12): the
/// authority (STSURL, for example `https://login.microsoftonline.com/<tenant id>`) and the resource
/// (the SPN, for example `https://database.windows.net/`).
public struct EntraTokenRequest: Sendable, Hashable, CustomStringConvertible {
    /// The STSURL the server named (the token authority, with the tenant as its last path segment).
    public var authority: String
    /// The SPN the server named: the resource (audience) of the token.
    public var resource: String

    /// A request for a token for `resource` from `authority`.
    public init(authority: String, resource: String) {
        self.authority = authority
        self.resource = resource
    }

    /// The OAuth 2.0 scope of the resource: the resource followed by `/.default`
    /// (`https://database.windows.net//.default` for the usual SPN that ends in a slash, as Entra expects).
    public var scope: String { resource.hasSuffix("/.default") ? resource : resource + "/.default" }

    /// The tenant named by the authority: its first path segment (nil when there is none).
    public var tenant: String? {
        guard let url = URL(string: authority) else { return nil }
        let parts = url.path.split(separator: "/")
        return parts.first.map(String.init).flatMap { $0.isEmpty ? nil : $0 }
    }

    public var description: String { "authority \(authority), resource \(resource)" }
}

/// An Entra ID access token and when it expires. `description` never shows the token.
public struct EntraAccessToken: Sendable, CustomStringConvertible {
    /// The access token (a JWT); sent in the FEDAUTH token message, never printed.
    public var token: String
    /// When the token stops being valid.
    public var expiresOn: Date

    /// A token and its expiry.
    public init(token: String, expiresOn: Date) {
        self.token = token
        self.expiresOn = expiresOn
    }

    public var description: String { "EntraAccessToken(redacted, expires \(expiresOn))" }
}

/// A source of Entra ID (Azure AD) access tokens: a service principal, a managed identity, a
/// workload identity, the Azure CLI, a device code sign-in, the default chain, or your own.
///
/// The login asks it through ``EntraTokenCache`` (so every connection of a process shares one token
/// per authority, resource and ``cacheIdentity``) when the server sends FEDAUTHINFO in the FEDAUTH
/// MSAL workflow ([MS-TDS] 2.2.6.4 FEDAUTH with bFedAuthLibrary 0x02, 2.2.7.12, 2.2.6.3).
/// Implementations must never put a secret or a token in an error or a `description`.
public protocol EntraTokenCredential: Sendable {
    /// The `Authentication=` name this credential stands for (`ActiveDirectoryServicePrincipal`, …),
    /// used in errors.
    var authenticationName: String { get }
    /// Who the tokens are for, without any secret (a client id, `system` for a system-assigned
    /// managed identity, …): part of the token cache's key.
    var cacheIdentity: String { get }
    /// The FEDAUTH bWorkflow byte LOGIN7 sends ([MS-TDS] 2.2.6.4): 0x01 for a service principal
    /// (the user/password workflow), 0x03 for the others, as Microsoft.Data.SqlClient sends.
    var workflow: UInt8 { get }
    /// A new token for `request`, within `timeout`.
    /// - Throws: ``EntraCredentialError`` (`.notAvailable` when this credential cannot work here, so
    ///   that the default chain tries the next one), or ``SQLClientError`` `.timeout`.
    func token(for request: EntraTokenRequest, timeout: Duration) async throws -> EntraAccessToken
}

extension EntraTokenCredential {
    /// 0x03, the workflow Microsoft.Data.SqlClient sends for identity-based sign-in.
    public var workflow: UInt8 { EntraWorkflow.identity }
}

/// The FEDAUTH bWorkflow values ([MS-TDS] 2.2.6.4) this client sends.
public enum EntraWorkflow {
    /// 0x01: user name and password; also sent for a service principal.
    public static let password: UInt8 = 0x01
    /// 0x03: interactive / identity based (managed identity, device code, default chain, …).
    public static let identity: UInt8 = 0x03
}

/// Why an Entra ID credential gave no token: the credential, the endpoint (scheme, host and path,
/// never a query or a secret) and what went wrong.
public struct EntraCredentialError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure (an extensible set).
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's name.
        public let name: String
        /// A kind named `name`.
        public init(_ name: String) { self.name = name }
        public var description: String { name }
        /// The credential cannot work here (missing settings, no CLI, not on Azure): the default chain goes on.
        public static let notAvailable = Kind("notAvailable")
        /// The endpoint refused the credential (`invalid_client`, an unknown application `AADSTS700016`, …).
        public static let authenticationFailed = Kind("authenticationFailed")
        /// The endpoint answered an HTTP error other than a refusal (5xx, 429), after any retry that fit the time left.
        public static let httpError = Kind("httpError")
        /// The answer is not the JSON expected (or has no token, or no expiry).
        public static let malformedResponse = Kind("malformedResponse")
        /// The answer is bigger than the bound (``EntraHTTPClient/maximumResponseSize``).
        public static let responseTooLarge = Kind("responseTooLarge")
        /// The token is for another resource than the one the server named.
        public static let wrongAudience = Kind("wrongAudience")
        /// The endpoint did not answer within the time left for the login.
        public static let timeout = Kind("timeout")
        /// The endpoint could not be reached (refused, reset, name not found).
        public static let unreachable = Kind("unreachable")
        /// The configuration is invalid (a plain-HTTP endpoint off loopback, an obsolete method, …).
        public static let invalidConfiguration = Kind("invalidConfiguration")
        /// The device code expired or the user declined it.
        public static let declined = Kind("declined")
    }

    /// The kind of failure.
    public var kind: Kind
    /// The credential, by its `Authentication=` name.
    public var credential: String
    /// The endpoint asked (scheme, host, port and path only), or the command run.
    public var endpoint: String?
    /// What went wrong (never a secret or a token).
    public var detail: String
    /// For the default chain: what each step found, in order.
    public var steps: [EntraCredentialError]

    /// An error of `kind` for `credential` at `endpoint`.
    public init(_ kind: Kind, credential: String, endpoint: String? = nil, _ detail: String, steps: [EntraCredentialError] = []) {
        self.kind = kind
        self.credential = credential
        self.endpoint = endpoint
        self.detail = detail
        self.steps = steps
    }

    public var description: String {
        var text = "\(credential) (\(kind))"
        if let endpoint { text += " at \(endpoint)" }
        text += ": \(detail)"
        if !steps.isEmpty { text += " [" + steps.map(\.description).joined(separator: "; ") + "]" }
        return text
    }

    /// `url` without its query, fragment or user info: what errors show.
    static func endpointText(_ url: URL) -> String {
        var c = URLComponents(url: url, resolvingAgainstBaseURL: false)
        c?.query = nil
        c?.fragment = nil
        c?.user = nil
        c?.password = nil
        return c?.string ?? "(endpoint)"
    }
}

/// The time the token cache and the credentials read (injected in tests).
public protocol EntraClock: Sendable {
    /// Now.
    func now() -> Date
    /// Waits `duration` (device code polling, retry-after).
    /// - Throws: `CancellationError`.
    func sleep(for duration: Duration) async throws
}

/// The system clock.
public struct SystemEntraClock: EntraClock {
    /// The system clock.
    public init() {}
    /// `Date()`.
    public func now() -> Date { Date() }
    /// `Task.sleep(for:)`.
    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
}
