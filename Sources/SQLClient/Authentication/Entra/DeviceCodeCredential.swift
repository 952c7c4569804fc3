import Foundation

/// `Authentication=ActiveDirectoryDeviceCodeFlow`: the OAuth 2.0 device authorization grant
/// (RFC 8628) at `<authority>/<tenant>/oauth2/v2.0/devicecode` then `/token`. The message the
/// endpoint returns ("To sign in, use a web browser to open … and enter the code …") goes to
/// `prompt`; the token endpoint is polled every `interval` seconds (5 when not given), 5 s more
/// after each `slow_down`, while it answers `authorization_pending`, until the code expires
/// (`expires_in`) or the login timeout ends.
public struct DeviceCodeCredential: EntraTokenCredential, CustomStringConvertible {
    /// Microsoft.Data.SqlClient's public client application id, the default.
    public static let defaultClientID = "2fd908ad-0664-4344-b9be-cd3e8b574c38"

    /// The public client application id.
    public var clientID: String
    /// The tenant (nil: the STSURL's).
    public var tenantID: String?
    /// The authority host (nil: `AZURE_AUTHORITY_HOST`, else the STSURL's when it is Entra's).
    public var authorityHost: String?
    private let prompt: @Sendable (String) -> Void
    private let environment: EntraEnvironment
    private let http: EntraHTTPClient

    /// A device code credential showing its message through `prompt`.
    public init(clientID: String = DeviceCodeCredential.defaultClientID, tenantID: String? = nil, authorityHost: String? = nil,
                environment: EntraEnvironment = .process, http: EntraHTTPClient = EntraHTTPClient(),
                prompt: @escaping @Sendable (String) -> Void) {
        self.clientID = clientID
        self.tenantID = tenantID
        self.authorityHost = authorityHost
        self.environment = environment
        self.http = http
        self.prompt = prompt
    }

    public var authenticationName: String { "ActiveDirectoryDeviceCodeFlow" }
    public var cacheIdentity: String { "\(clientID)@\(tenantID ?? "")" }
    public var description: String { "DeviceCodeCredential(clientID: \(clientID))" }

    public func token(for request: EntraTokenRequest, timeout: Duration) async throws -> EntraAccessToken {
        let name = authenticationName
        let clock = http.clock
        let start = clock.now()
        func left() -> Duration { timeout - .milliseconds(Int64(clock.now().timeIntervalSince(start) * 1000)) }
        let authority = try EntraAuthority.resolve(request, authorityHost: authorityHost, tenant: tenantID,
                                                   environment: environment, credential: name)
        let codeURL = authority.appendingPathComponent("oauth2/v2.0/devicecode")
        let form = [("client_id", clientID), ("scope", request.scope + " offline_access")]
        let codeResponse = try await http.send(
            EntraHTTPRequest(method: "POST", url: codeURL, headers: ["Content-Type": "application/x-www-form-urlencoded"],
                             body: EntraForm.body(form)), credential: name, timeout: timeout, secrets: [])
        let endpoint = EntraCredentialError.endpointText(codeURL)
        guard let json = (try? JSONSerialization.jsonObject(with: Data(codeResponse.body))) as? [String: Any],
              let deviceCode = json["device_code"] as? String, !deviceCode.isEmpty else {
            throw EntraCredentialError(.malformedResponse, credential: name, endpoint: endpoint, "the answer has no device_code")
        }
        var interval = json["interval"].flatMap(EntraExpiry.seconds(from:)) ?? 5
        let expiresIn = json["expires_in"].flatMap(EntraExpiry.seconds(from:)) ?? 900
        let message = (json["message"] as? String)
            ?? "To sign in, open \(json["verification_uri"] as? String ?? "the verification page") and enter the code \(json["user_code"] as? String ?? "")"
        prompt(String(message.prefix(1000)))
        let expiry = clock.now().addingTimeInterval(expiresIn)
        let tokenURL = authority.appendingPathComponent("oauth2/v2.0/token")
        let pollForm = [("grant_type", "urn:ietf:params:oauth:grant-type:device_code"), ("client_id", clientID), ("device_code", deviceCode)]
        while true {
            guard clock.now() < expiry else {
                throw EntraCredentialError(.declined, credential: name, endpoint: endpoint, "the device code expired before sign-in completed")
            }
            guard left() > .zero else {
                throw EntraCredentialError(.timeout, credential: name, endpoint: endpoint,
                                           "sign-in did not complete within the login timeout (raise Connect Timeout)")
            }
            let response = try await http.send(
                EntraHTTPRequest(method: "POST", url: tokenURL, headers: ["Content-Type": "application/x-www-form-urlencoded"],
                                 body: EntraForm.body(pollForm)), credential: name, timeout: left(), secrets: [deviceCode], acceptErrors: true)
            if (200 ..< 300).contains(response.status) {
                return try EntraHTTPClient.parseToken(response.body, credential: name, endpoint: EntraCredentialError.endpointText(tokenURL),
                                                      request: request, now: clock.now())
            }
            let error = ((try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any])?["error"] as? String
            switch error {
            case "authorization_pending": break
            case "slow_down": interval += 5
            case "expired_token":
                throw EntraCredentialError(.declined, credential: name, endpoint: endpoint, "the device code expired before sign-in completed")
            case "access_denied", "authorization_declined":
                throw EntraCredentialError(.declined, credential: name, endpoint: endpoint, "the user declined the sign-in")
            default:
                throw EntraHTTPClient.errorAnswer(response, credential: name, endpoint: EntraCredentialError.endpointText(tokenURL),
                                                  secrets: [deviceCode])
            }
            let wait = Duration.milliseconds(Int64(max(0, interval) * 1000))
            guard wait < left() else {
                throw EntraCredentialError(.timeout, credential: name, endpoint: endpoint,
                                           "sign-in did not complete within the login timeout (raise Connect Timeout)")
            }
            if wait > .zero { try await clock.sleep(for: wait) }
        }
    }
}
