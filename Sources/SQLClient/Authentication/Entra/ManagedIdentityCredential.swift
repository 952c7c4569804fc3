import Foundation

/// `Authentication=ActiveDirectoryManagedIdentity` (alias `ActiveDirectoryMSI`): the identity Azure
/// gives the machine or the app, system-assigned or user-assigned.
///
/// Where the token comes from, first match wins:
/// - App Service and Functions: `IDENTITY_ENDPOINT` + `IDENTITY_HEADER` (GET, api-version 2019-08-01,
///   the header `X-IDENTITY-HEADER`);
/// - Azure Arc: `IDENTITY_ENDPOINT` + `IMDS_ENDPOINT` (a 401 challenge naming a key file the
///   answer proves it can read, then the request again with `Authorization: Basic <key>`; only a
///   `.key` file under `/var/opt/azcmagent/tokens/`, or under `SQLCLIENT_ARC_TOKENS_DIR` when set, is read);
/// - Cloud Shell: `MSI_ENDPOINT` (POST, `Metadata: true`);
/// - the instance metadata endpoint (VMs, scale sets, AKS nodes): ``imdsEndpoint``, else
///   `AZURE_POD_IDENTITY_AUTHORITY_HOST`, else `http://169.254.169.254`.
public struct ManagedIdentityCredential: EntraTokenCredential, CustomStringConvertible {
    /// Which identity: the system-assigned one, or a user-assigned one by client id, resource id or object id.
    public enum Identity: Sendable, Hashable, CustomStringConvertible {
        /// The system-assigned identity.
        case system
        /// A user-assigned identity by its client (application) id.
        case clientID(String)
        /// A user-assigned identity by its Azure resource id (`/subscriptions/…`).
        case resourceID(String)
        /// A user-assigned identity by its object (principal) id.
        case objectID(String)

        public var description: String {
            switch self {
            case .system: return "system"
            case .clientID(let id): return "client id \(id)"
            case .resourceID(let id): return "resource id \(id)"
            case .objectID(let id): return "object id \(id)"
            }
        }

        /// A `User ID` of a connection string: empty is the system identity, `/subscriptions/…` a resource id, else a client id.
        public init(userID: String) {
            let id = userID.trimmingCharacters(in: .whitespaces)
            if id.isEmpty { self = .system } else if id.hasPrefix("/") { self = .resourceID(id) } else { self = .clientID(id) }
        }
    }

    /// The identity asked for.
    public var identity: Identity
    /// An explicit instance metadata endpoint (for example `http://127.0.0.1:8080`).
    public var imdsEndpoint: String?
    private let environment: EntraEnvironment
    private let http: EntraHTTPClient

    /// The IMDS address on Azure.
    static let defaultIMDS = "http://169.254.169.254"

    /// A managed identity credential.
    public init(identity: Identity = .system, imdsEndpoint: String? = nil, environment: EntraEnvironment = .process,
                http: EntraHTTPClient = EntraHTTPClient()) {
        self.identity = identity
        self.imdsEndpoint = imdsEndpoint
        self.environment = environment
        self.http = http
    }

    public var authenticationName: String { "ActiveDirectoryManagedIdentity" }
    public var cacheIdentity: String { identity.description }
    public var description: String { "ManagedIdentityCredential(\(identity))" }

    /// Which source the environment selects (and its endpoint).
    enum Source: Equatable {
        case appService(endpoint: String, header: String)
        case arc(endpoint: String)
        case cloudShell(endpoint: String)
        case imds(endpoint: String, explicit: Bool)
    }

    var source: Source {
        if let endpoint = environment["IDENTITY_ENDPOINT"] {
            if let header = environment["IDENTITY_HEADER"] { return .appService(endpoint: endpoint, header: header) }
            if environment["IMDS_ENDPOINT"] != nil { return .arc(endpoint: endpoint) }
        }
        if let endpoint = environment["MSI_ENDPOINT"] { return .cloudShell(endpoint: endpoint) }
        if let endpoint = imdsEndpoint ?? environment["AZURE_POD_IDENTITY_AUTHORITY_HOST"] { return .imds(endpoint: endpoint, explicit: true) }
        return .imds(endpoint: Self.defaultIMDS, explicit: false)
    }

    /// Whether the default chain should ask: an endpoint set in the environment or given, or an Azure VM.
    var isConfigured: Bool {
        if case .imds(_, false) = source { return environment.isAzureVM }
        return true
    }

    public func token(for request: EntraTokenRequest, timeout: Duration) async throws -> EntraAccessToken {
        let resource = request.resource
        func url(_ base: String, path: String? = nil, _ query: [(String, String)]) throws(EntraCredentialError) -> URL {
            var text = base
            if let path { while text.hasSuffix("/") { text.removeLast() }; text += path }
            guard let u = URL(string: text + (text.contains("?") ? "&" : "?") + EntraForm.encode(query)),
                  EntraAuthority.isAllowed(u, alsoAllowing: ["169.254.169.254"]) else {
                throw EntraCredentialError(.invalidConfiguration, credential: authenticationName, endpoint: base,
                                           "the managed identity endpoint must be http(s) to loopback, the metadata address, or https")
            }
            return u
        }
        let name = authenticationName
        switch source {
        case .appService(let endpoint, let header):
            var query = [("api-version", "2019-08-01"), ("resource", resource)]
            switch identity {
            case .system: break
            case .clientID(let id): query.append(("client_id", id))
            case .resourceID(let id): query.append(("mi_res_id", id))
            case .objectID(let id): query.append(("principal_id", id))
            }
            let u = try url(endpoint, query)
            return try await get(u, headers: ["X-IDENTITY-HEADER": header, "Accept": "application/json"], request: request,
                                 timeout: timeout, secrets: [header])
        case .arc(let endpoint):
            let query = [("api-version", "2020-06-01"), ("resource", resource)]
            if identity != .system {
                throw EntraCredentialError(.invalidConfiguration, credential: name, endpoint: endpoint,
                                           "Azure Arc has only a system-assigned identity (\(identity) was asked)")
            }
            let u = try url(endpoint, query)
            let challenge = try await http.send(EntraHTTPRequest(method: "GET", url: u, headers: ["Metadata": "true"]),
                                                credential: name, timeout: timeout, secrets: [], acceptErrors: true)
            guard challenge.status == 401, let header = challenge.headers["www-authenticate"],
                  let eq = header.firstIndex(of: "=") else {
                if (200 ..< 300).contains(challenge.status) {
                    return try EntraHTTPClient.parseToken(challenge.body, credential: name, endpoint: endpoint, request: request,
                                                          now: http.clock.now())
                }
                throw EntraHTTPClient.errorAnswer(challenge, credential: name, endpoint: endpoint, secrets: [])
            }
            let keyPath = String(header[header.index(after: eq)...]).trimmingCharacters(in: .whitespaces)
            // Only a .key file in the Arc agent's folders is read (the endpoint names it).
            guard keyPath.hasSuffix(".key"), keyPath.hasPrefix("/var/opt/azcmagent/tokens/") || keyPath.hasPrefix(environment["SQLCLIENT_ARC_TOKENS_DIR"] ?? "/var/opt/azcmagent/tokens/"),
                  !keyPath.contains("..") else {
                throw EntraCredentialError(.malformedResponse, credential: name, endpoint: endpoint,
                                           "the Azure Arc challenge names an unexpected key file")
            }
            let key = try WorkloadIdentityCredential.readBounded(keyPath, credential: name)
            return try await get(u, headers: ["Metadata": "true", "Authorization": "Basic \(key)"], request: request,
                                 timeout: timeout, secrets: [key])
        case .cloudShell(let endpoint):
            var form = [("resource", resource)]
            if case .clientID(let id) = identity { form.append(("client_id", id)) }
            guard let u = URL(string: endpoint), EntraAuthority.isAllowed(u) else {
                throw EntraCredentialError(.invalidConfiguration, credential: name, endpoint: endpoint, "MSI_ENDPOINT is not a usable URL")
            }
            return try await http.postForToken(u, form: form, credential: name, request: request, timeout: timeout, secrets: [],
                                               headers: ["Metadata": "true"])
        case .imds(let endpoint, _):
            var query = [("api-version", "2018-02-01"), ("resource", resource)]
            switch identity {
            case .system: break
            case .clientID(let id): query.append(("client_id", id))
            case .resourceID(let id): query.append(("msi_res_id", id))
            case .objectID(let id): query.append(("object_id", id))
            }
            let u = try url(endpoint, path: "/metadata/identity/oauth2/token", query)
            return try await get(u, headers: ["Metadata": "true"], request: request, timeout: timeout, secrets: [])
        }
    }

    private func get(_ url: URL, headers: [String: String], request: EntraTokenRequest, timeout: Duration,
                     secrets: [String]) async throws -> EntraAccessToken {
        let response = try await http.send(EntraHTTPRequest(method: "GET", url: url, headers: headers), credential: authenticationName,
                                           timeout: timeout, secrets: secrets)
        return try EntraHTTPClient.parseToken(response.body, credential: authenticationName, endpoint: EntraCredentialError.endpointText(url),
                                              request: request, now: http.clock.now())
    }
}
