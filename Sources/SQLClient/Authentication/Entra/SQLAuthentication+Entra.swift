import Foundation

extension SQLAuthentication {
    /// The Entra ID sign-in a connection string's `Authentication=` names (Microsoft.Data.SqlClient's
    /// names, case and spaces ignored), with its `User ID` and `Password`:
    /// - `ActiveDirectoryServicePrincipal`: User ID = the application (client) id, Password = its secret;
    /// - `ActiveDirectoryManagedIdentity` / `ActiveDirectoryMSI`: User ID = a user-assigned identity's
    ///   client id or resource id (`/subscriptions/…`), empty for the system-assigned one;
    /// - `ActiveDirectoryWorkloadIdentity`: User ID = the client id (else `AZURE_CLIENT_ID`);
    /// - `ActiveDirectoryDeviceCodeFlow`: User ID = a public client application id (else SqlClient's);
    ///   the sign-in message goes to standard error;
    /// - `ActiveDirectoryDefault`: User ID = a user-assigned managed identity's client id.
    ///
    /// `environment` gives the variables the credentials read (default: this process's).
    /// - Throws: ``SQLClientError`` `.invalidConfiguration` for a missing client id or secret,
    ///   `.unsupported` for `ActiveDirectoryPassword` (obsolete: Entra requires MFA) and unknown names.
    public static func entra(method: String, user: String = "", password: String = "",
                             environment: EntraEnvironment = .process,
                             http: EntraHTTPClient = EntraHTTPClient()) throws(SQLClientError) -> SQLAuthentication {
        let user = user.trimmingCharacters(in: .whitespaces)
        switch method.lowercased().replacingOccurrences(of: " ", with: "") {
        case "activedirectoryserviceprincipal":
            guard !user.isEmpty, !password.isEmpty else {
                throw SQLClientError(.invalidConfiguration, "Authentication=ActiveDirectoryServicePrincipal needs User ID"
                                     + " (the application's client id) and Password (its client secret)")
            }
            return .entra(ClientSecretCredential(clientID: user, secret: password, environment: environment, http: http))
        case "activedirectorymanagedidentity", "activedirectorymsi":
            return .entra(ManagedIdentityCredential(identity: .init(userID: user), environment: environment, http: http))
        case "activedirectoryworkloadidentity":
            return .entra(WorkloadIdentityCredential(clientID: user.isEmpty ? nil : user, environment: environment, http: http))
        case "activedirectorydeviceflow", "activedirectorydevicecodeflow":
            return .entra(DeviceCodeCredential(clientID: user.isEmpty ? DeviceCodeCredential.defaultClientID : user,
                                               environment: environment, http: http) { message in
                FileHandle.standardError.write(Data((message + "\n").utf8))
            })
        case "activedirectorydefault":
            return .entra(DefaultAzureCredential(managedIdentityClientID: user.isEmpty ? nil : user, environment: environment, http: http))
        case "activedirectorypassword":
            throw SQLClientError(.unsupported, "Authentication=ActiveDirectoryPassword is obsolete (Entra ID requires"
                                 + " multifactor authentication); use ActiveDirectoryServicePrincipal, ActiveDirectoryManagedIdentity,"
                                 + " ActiveDirectoryWorkloadIdentity, ActiveDirectoryDeviceCodeFlow or ActiveDirectoryDefault")
        default:
            throw SQLClientError(.unsupported, "Authentication=\(method) is not an Entra ID method this client knows")
        }
    }
}
