import Foundation
import Synchronization

/// `Authentication=ActiveDirectoryDefault`: the first of these that can work here, in
/// Azure.Identity's order:
/// 1. environment: `AZURE_TENANT_ID` + `AZURE_CLIENT_ID` + `AZURE_CLIENT_SECRET` (a service principal),
///    or `AZURE_CLIENT_CERTIFICATE_PATH` (a PEM holding the certificate and its key) instead of the secret;
/// 2. workload identity: `AZURE_FEDERATED_TOKEN_FILE` + `AZURE_CLIENT_ID` (+ `AZURE_TENANT_ID`);
/// 3. managed identity: when `IDENTITY_ENDPOINT`, `MSI_ENDPOINT` or an instance metadata endpoint
///    is set, or the machine identifies as an Azure VM (the metadata address is never probed elsewhere);
/// 4. the Azure CLI (`az`), 5. the Azure Developer CLI (`azd`).
///
/// A step that cannot work here (``EntraCredentialError/Kind/notAvailable``) passes to the next; a
/// step that could work but failed (a refused secret, a timeout) ends the chain. When none works
/// the error lists what each step found. The step that worked is kept for later tokens.
public final class DefaultAzureCredential: EntraTokenCredential, CustomStringConvertible, Sendable {
    /// The steps in order.
    public let steps: [any EntraTokenCredential]
    /// The index of the step that gave the last token.
    private let chosen = Mutex<Int?>(nil)
    /// The user-assigned managed identity's client id (`User ID`), or nil.
    public let managedIdentityClientID: String?

    /// The chain for `environment`, with `managedIdentityClientID` for a user-assigned identity
    /// (else `AZURE_CLIENT_ID`) and an explicit `imdsEndpoint`.
    public init(managedIdentityClientID: String? = nil, imdsEndpoint: String? = nil,
                environment: EntraEnvironment = .process, http: EntraHTTPClient = EntraHTTPClient()) {
        self.managedIdentityClientID = managedIdentityClientID
        let miID = managedIdentityClientID ?? environment["AZURE_CLIENT_ID"]
        steps = [
            EnvironmentCredential(environment: environment, http: http),
            WorkloadIdentityCredential(environment: environment, http: http),
            ChainManagedIdentity(ManagedIdentityCredential(identity: miID.map { .clientID($0) } ?? .system,
                                                           imdsEndpoint: imdsEndpoint, environment: environment, http: http)),
            DeveloperCLICredential(.azureCLI, tenantID: environment["AZURE_TENANT_ID"], environment: environment, clock: http.clock),
            DeveloperCLICredential(.azureDeveloperCLI, tenantID: environment["AZURE_TENANT_ID"], environment: environment, clock: http.clock),
        ]
    }

    /// A chain of the given steps.
    public init(steps: [any EntraTokenCredential]) {
        self.steps = steps
        self.managedIdentityClientID = nil
    }

    public var authenticationName: String { "ActiveDirectoryDefault" }
    public var cacheIdentity: String { "default:" + (managedIdentityClientID ?? "") }
    public var description: String { "DefaultAzureCredential" }

    /// The step that gave the last token (its `authenticationName`), nil before one did.
    public var chosenStep: String? { chosen.withLock { $0 }.map { steps[$0].authenticationName } }

    public func token(for request: EntraTokenRequest, timeout: Duration) async throws -> EntraAccessToken {
        if let index = chosen.withLock({ $0 }) {
            return try await steps[index].token(for: request, timeout: timeout)
        }
        var found: [EntraCredentialError] = []
        for (index, step) in steps.enumerated() {
            do {
                let token = try await step.token(for: request, timeout: timeout)
                chosen.withLock { $0 = index }
                return token
            } catch let error as EntraCredentialError where error.kind == .notAvailable {
                found.append(error)
            } catch let error as EntraCredentialError {
                found.append(error)
                throw EntraCredentialError(error.kind, credential: authenticationName, endpoint: error.endpoint,
                                           "\(step.authenticationName) could work here but failed", steps: found)
            }
        }
        throw EntraCredentialError(.notAvailable, credential: authenticationName,
                                   "no credential of the chain can work here", steps: found)
    }
}

/// The environment step of the default chain: a service principal from `AZURE_TENANT_ID`,
/// `AZURE_CLIENT_ID` and `AZURE_CLIENT_SECRET`.
struct EnvironmentCredential: EntraTokenCredential {
    let environment: EntraEnvironment
    let http: EntraHTTPClient
    var authenticationName: String { "EnvironmentCredential" }
    var cacheIdentity: String { environment["AZURE_CLIENT_ID"] ?? "" }

    func token(for request: EntraTokenRequest, timeout: Duration) async throws -> EntraAccessToken {
        if let tenant = environment["AZURE_TENANT_ID"], let client = environment["AZURE_CLIENT_ID"],
           environment["AZURE_CLIENT_SECRET"] == nil, let certificate = environment["AZURE_CLIENT_CERTIFICATE_PATH"] {
            do {
                return try await ClientCertificateCredential(clientID: client, certificatePath: certificate, tenantID: tenant,
                                                             environment: environment, http: http).token(for: request, timeout: timeout)
            } catch var error as EntraCredentialError {
                error.credential = authenticationName
                throw error
            }
        }
        guard let tenant = environment["AZURE_TENANT_ID"], let client = environment["AZURE_CLIENT_ID"],
              let secret = environment["AZURE_CLIENT_SECRET"] else {
            if environment["AZURE_USERNAME"] != nil {
                throw EntraCredentialError(.notAvailable, credential: authenticationName,
                                           "AZURE_USERNAME/AZURE_PASSWORD (user and password) is not supported: Entra requires MFA")
            }
            throw EntraCredentialError(.notAvailable, credential: authenticationName,
                                       "AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET are not all set")
        }
        do {
            return try await ClientSecretCredential(clientID: client, secret: secret, tenantID: tenant, environment: environment, http: http)
                .token(for: request, timeout: timeout)
        } catch var error as EntraCredentialError {
            error.credential = authenticationName
            throw error
        }
    }
}

/// The managed identity step: not available unless an endpoint is configured or this is an Azure
/// VM; an endpoint that cannot be reached is "not available" too (Azure.Identity's probe rule).
struct ChainManagedIdentity: EntraTokenCredential {
    let base: ManagedIdentityCredential
    init(_ base: ManagedIdentityCredential) { self.base = base }
    var authenticationName: String { base.authenticationName }
    var cacheIdentity: String { base.cacheIdentity }

    func token(for request: EntraTokenRequest, timeout: Duration) async throws -> EntraAccessToken {
        guard base.isConfigured else {
            throw EntraCredentialError(.notAvailable, credential: authenticationName,
                                       "no IDENTITY_ENDPOINT, MSI_ENDPOINT or metadata endpoint is set and this machine is not an Azure VM")
        }
        do {
            return try await base.token(for: request, timeout: timeout)
        } catch let error as EntraCredentialError where error.kind == .unreachable {
            throw EntraCredentialError(.notAvailable, credential: error.credential, endpoint: error.endpoint, error.detail)
        }
    }
}
