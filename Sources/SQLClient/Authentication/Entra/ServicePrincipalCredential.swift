import Foundation

/// `Authentication=ActiveDirectoryServicePrincipal` with a client secret: the OAuth 2.0 client
/// credentials grant at `<authority>/<tenant>/oauth2/v2.0/token` for the resource the server names.
///
/// The authority is `authorityHost` (else `AZURE_AUTHORITY_HOST`, else the STSURL's host when it is
/// one of Entra's, else login.microsoftonline.com); the tenant is `tenantID`, else the STSURL's.
/// The secret is never printed.
public struct ClientSecretCredential: EntraTokenCredential, CustomStringConvertible {
    /// The application (client) id.
    public var clientID: String
    /// The tenant (nil: the one in the server's STSURL).
    public var tenantID: String?
    /// The authority host, for example `https://login.microsoftonline.us` (nil: see the type's note).
    public var authorityHost: String?
    private let secret: String
    private let http: EntraHTTPClient
    private let environment: EntraEnvironment

    /// A service principal with a client secret.
    public init(clientID: String, secret: String, tenantID: String? = nil, authorityHost: String? = nil,
                environment: EntraEnvironment = .process, http: EntraHTTPClient = EntraHTTPClient()) {
        self.clientID = clientID
        self.secret = secret
        self.tenantID = tenantID
        self.authorityHost = authorityHost
        self.environment = environment
        self.http = http
    }

    public var authenticationName: String { "ActiveDirectoryServicePrincipal" }
    public var cacheIdentity: String { "\(clientID)@\(tenantID ?? "")" }
    public var workflow: UInt8 { EntraWorkflow.password }
    public var description: String { "ClientSecretCredential(clientID: \(clientID), secret: redacted)" }

    public func token(for request: EntraTokenRequest, timeout: Duration) async throws -> EntraAccessToken {
        guard !clientID.isEmpty, !secret.isEmpty else {
            throw EntraCredentialError(.invalidConfiguration, credential: authenticationName,
                                       "needs a client id (User ID) and a client secret (Password)")
        }
        let authority = try EntraAuthority.resolve(request, authorityHost: authorityHost, tenant: tenantID,
                                                   environment: environment, credential: authenticationName)
        return try await http.postForToken(authority.appendingPathComponent("oauth2/v2.0/token"), form: [
            ("grant_type", "client_credentials"), ("client_id", clientID), ("client_secret", secret), ("scope", request.scope),
        ], credential: authenticationName, request: request, timeout: timeout, secrets: [secret])
    }
}

/// `Authentication=ActiveDirectoryWorkloadIdentity` (AKS workload identity): the federated token in
/// `AZURE_FEDERATED_TOKEN_FILE` (read again for every request: the kubelet rotates it) exchanged as a
/// client assertion for application `AZURE_CLIENT_ID` in tenant `AZURE_TENANT_ID`.
public struct WorkloadIdentityCredential: EntraTokenCredential, CustomStringConvertible {
    /// The application id (nil: `AZURE_CLIENT_ID`).
    public var clientID: String?
    /// The tenant (nil: `AZURE_TENANT_ID`, else the STSURL's).
    public var tenantID: String?
    /// The federated token file (nil: `AZURE_FEDERATED_TOKEN_FILE`).
    public var tokenFilePath: String?
    private let environment: EntraEnvironment
    private let http: EntraHTTPClient

    /// A workload identity from the environment, each part overridable.
    public init(clientID: String? = nil, tenantID: String? = nil, tokenFilePath: String? = nil,
                environment: EntraEnvironment = .process, http: EntraHTTPClient = EntraHTTPClient()) {
        self.clientID = clientID
        self.tenantID = tenantID
        self.tokenFilePath = tokenFilePath
        self.environment = environment
        self.http = http
    }

    public var authenticationName: String { "ActiveDirectoryWorkloadIdentity" }
    public var cacheIdentity: String { "\(clientID ?? environment["AZURE_CLIENT_ID"] ?? "")@\(tenantID ?? environment["AZURE_TENANT_ID"] ?? "")" }
    public var description: String { "WorkloadIdentityCredential(clientID: \(clientID ?? environment["AZURE_CLIENT_ID"] ?? "unset"))" }

    /// The largest federated token file read.
    static let maximumAssertionSize = 64 << 10

    public func token(for request: EntraTokenRequest, timeout: Duration) async throws -> EntraAccessToken {
        guard let client = clientID ?? environment["AZURE_CLIENT_ID"], let file = tokenFilePath ?? environment["AZURE_FEDERATED_TOKEN_FILE"] else {
            throw EntraCredentialError(.notAvailable, credential: authenticationName,
                                       "AZURE_CLIENT_ID and AZURE_FEDERATED_TOKEN_FILE are not both set")
        }
        let assertion = try Self.readBounded(file, credential: authenticationName)
        let authority = try EntraAuthority.resolve(request, authorityHost: nil, tenant: tenantID ?? environment["AZURE_TENANT_ID"],
                                                   environment: environment, credential: authenticationName)
        return try await http.postForToken(authority.appendingPathComponent("oauth2/v2.0/token"), form: [
            ("grant_type", "client_credentials"), ("client_id", client), ("scope", request.scope),
            ("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"), ("client_assertion", assertion),
        ], credential: authenticationName, request: request, timeout: timeout, secrets: [assertion])
    }

    static func readBounded(_ path: String, credential: String) throws(EntraCredentialError) -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw EntraCredentialError(.notAvailable, credential: credential, "cannot read the federated token file \(path)")
        }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: maximumAssertionSize + 1)) ?? Data()
        guard data.count <= maximumAssertionSize else {
            throw EntraCredentialError(.invalidConfiguration, credential: credential, "the federated token file \(path) is larger than \(maximumAssertionSize) bytes")
        }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else {
            throw EntraCredentialError(.notAvailable, credential: credential, "the federated token file \(path) is empty")
        }
        return text
    }
}

/// A token from your own code, given the authority and resource the server named
/// (``SQLAuthentication/accessTokenCallback(_:)``). Tokens it returns are not cached by this client.
struct CallbackCredential: EntraTokenCredential {
    let callback: @Sendable (EntraTokenRequest) async throws -> String
    var authenticationName: String { "accessTokenCallback" }
    var cacheIdentity: String { "callback" }

    func token(for request: EntraTokenRequest, timeout: Duration) async throws -> EntraAccessToken {
        let token = try await callback(request)
        return EntraAccessToken(token: token, expiresOn: Date())
    }
}
