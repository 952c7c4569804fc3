import Foundation

/// What the credentials read from their surroundings: environment variables (as a dictionary, so
/// tests give their own) and whether this machine says it is an Azure VM (so the default chain
/// asks the instance metadata endpoint only there, or when an endpoint is configured).
public struct EntraEnvironment: Sendable {
    /// Environment variables (`AZURE_CLIENT_ID`, `IDENTITY_ENDPOINT`, `PATH`, …).
    public var variables: [String: String]
    /// Whether this machine identifies as an Azure virtual machine (on Linux: the DMI chassis asset
    /// tag Azure sets, read from a file, no network).
    public var isAzureVM: Bool

    /// An environment of `variables`; `isAzureVM` false unless said.
    public init(variables: [String: String] = [:], isAzureVM: Bool = false) {
        self.variables = variables
        self.isAzureVM = isAzureVM
    }

    /// This process's environment variables; `isAzureVM` from `/sys/class/dmi/id/chassis_asset_tag`
    /// (`7783-7084-3265-9085` on Azure).
    public static var process: EntraEnvironment {
        let tag = (try? String(contentsOfFile: "/sys/class/dmi/id/chassis_asset_tag", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return EntraEnvironment(variables: ProcessInfo.processInfo.environment, isAzureVM: tag == "7783-7084-3265-9085")
    }

    /// A variable's value, nil when unset or blank.
    public subscript(_ name: String) -> String? {
        guard let v = variables[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !v.isEmpty else { return nil }
        return v
    }
}

/// Where a credential sends its token requests ([MS-TDS] FEDAUTHINFO's STSURL, `AZURE_AUTHORITY_HOST`).
enum EntraAuthority {
    /// Entra's public authority hosts: an STSURL on one of them is followed; any other STSURL
    /// only gives the tenant (a server must not be able to send a client's secret elsewhere).
    static let knownHosts: Set<String> = ["login.microsoftonline.com", "login.windows.net", "login.microsoft.com",
                                          "sts.windows.net", "login.microsoftonline.us", "login.chinacloudapi.cn",
                                          "login.partner.microsoftonline.cn", "login.microsoftonline.de"]
    static let defaultHost = "https://login.microsoftonline.com"

    /// Whether `url` may be asked: HTTPS, or plain HTTP to loopback only (test endpoints).
    static func isAllowed(_ url: URL, alsoAllowing extra: Set<String> = []) -> Bool {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return false }
        if scheme == "https" { return true }
        return scheme == "http" && (isLoopback(host) || extra.contains(host))
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "127.0.0.1" || host == "::1" || host == "[::1]" || host == "localhost" || host.hasPrefix("127.")
    }

    /// The authority URL (host and tenant, no trailing slash) for a token request: the configured
    /// host (`authorityHost`, else `AZURE_AUTHORITY_HOST`), else the STSURL's host when it is one of
    /// Entra's, else login.microsoftonline.com; the tenant given, else the STSURL's, else `organizations`.
    static func resolve(_ request: EntraTokenRequest, authorityHost: String?, tenant: String?, environment: EntraEnvironment,
                        credential: String) throws(EntraCredentialError) -> URL {
        let sts = URL(string: request.authority)
        var host: String
        if let configured = authorityHost ?? environment["AZURE_AUTHORITY_HOST"] {
            host = configured
        } else if let sts, let h = sts.host?.lowercased(), knownHosts.contains(h), sts.scheme?.lowercased() == "https" {
            host = "https://" + h
        } else {
            host = defaultHost
        }
        while host.hasSuffix("/") { host.removeLast() }
        if !host.contains("://") { host = "https://" + host }
        let tenantID = tenant ?? request.tenant ?? "organizations"
        guard tenantID.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == "_" }),
              let url = URL(string: host + "/" + tenantID), isAllowed(url) else {
            throw EntraCredentialError(.invalidConfiguration, credential: credential, endpoint: host,
                                       "the authority must be https (plain http only to loopback) with a tenant of letters, digits, '-', '.'")
        }
        return url
    }
}
