import TDS

/// The authentication part of one login attempt ([MS-TDS] 3.2.5.1–3.2.5.3): what PRELOGIN
/// announces, what LOGIN7 carries, the SSPI legs, and the check of FEATUREEXTACK.
///
/// - SQL password: user and password in LOGIN7.
/// - Access token (FEDAUTH, security-token library): PRELOGIN sends FEDAUTHREQUIRED = 1; LOGIN7 sends
///   no user or password and a FEDAUTH FeatureExt whose fFedAuthEcho copies the server's
///   FEDAUTHREQUIRED answer; the server MUST acknowledge FEDAUTH in FEATUREEXTACK.
/// - NTLM: fIntSecurity and the NEGOTIATE_MESSAGE in LOGIN7's SSPI field; the server's SSPI token
///   is answered with an SSPI message (packet type 0x11) holding the AUTHENTICATE_MESSAGE.
/// - Kerberos: fIntSecurity and GSSAPI's SPNEGO token (a Kerberos AP-REQ) in LOGIN7's SSPI field;
///   each SSPI token of the server goes back to GSSAPI, whose answer (if any) is an SSPI message;
///   LOGINACK is believed only once GSSAPI has verified the server (mutual authentication).
///   When Kerberos cannot start here and ``KerberosCredentials/ntlmFallback`` is set, NTLM instead.
///
/// UTF8_SUPPORT is requested in every 7.4 LOGIN7.
struct LoginAuthentication: Sendable {
    let authentication: SQLAuthentication
    private(set) var ntlm: NTLMAuthenticator?
    private(set) var kerberos: KerberosAuthenticator?
    /// The token for this attempt (fetched from the provider by ``prepare()``).
    private var accessToken: String?
    /// The features LOGIN7 asked for (a FEATUREEXTACK for anything else is a protocol error).
    private(set) var requestedFeatures: Set<FeatureID> = []

    init(_ authentication: SQLAuthentication) {
        self.authentication = authentication
    }

    /// Gets what the attempt needs before anything is sent: the access token (a provider is called
    /// once per attempt, so a retry or a redirect gets a fresh token) and a new NTLM exchange.
    /// Kerberos asks the KDC for a service ticket for the SPN of `address` (the port connected to:
    /// `port`) here, within `timeout`.
    /// - Throws: ``SQLClientError`` `.invalidConfiguration` for an empty token; `.loginFailed` wrapping
    ///   the provider's error; for Kerberos `.unsupported` (no GSSAPI library), `.loginFailed` (no or
    ///   expired ticket, unknown SPN, KDC unreachable: a ``KerberosError`` as `underlying`), `.timeout`.
    mutating func prepare(address: SQLServerAddress = SQLServerAddress(host: "localhost"), port: Int = 1433,
                          timeout: Duration = .seconds(15)) async throws {
        switch authentication {
        case .sqlPassword:
            break
        case .accessToken(let token):
            accessToken = token
        case .accessTokenProvider(let provider):
            do {
                accessToken = try await provider()
            } catch let error as SQLClientError {
                throw error
            } catch {
                throw SQLClientError(.loginFailed, "the access token provider failed: \(error)", underlying: error)
            }
        case .ntlm(let credentials):
            ntlm = NTLMAuthenticator(credentials: credentials)
        case .kerberos(let credentials):
            do {
                kerberos = try await KerberosAuthenticator.offload(timeout: timeout) { () throws(SQLClientError) in
                    let spn = KerberosAuthenticator.servicePrincipalName(for: address, port: port, credentials: credentials)
                    return try KerberosAuthenticator(servicePrincipalName: spn, credentials: credentials)
                }
            } catch let error as SQLClientError {
                // NTLM when Kerberos cannot start on this side (and the caller gave NTLM credentials).
                guard let fallback = credentials.ntlmFallback, Self.allowsNTLMFallback(error) else { throw error }
                ntlm = NTLMAuthenticator(credentials: fallback)
            }
        case .entra, .accessTokenCallback:
            break   // the token is asked once the server's FEDAUTHINFO names the authority and resource
        }
        if authentication.usesFedAuth, !authentication.usesFedAuthWorkflow, accessToken?.isEmpty ?? true {
            throw SQLClientError(.invalidConfiguration, "Authentication=ActiveDirectoryAccessToken needs an access token"
                                 + " (set authentication = .accessToken(…) or use sqlclient --access-token-file)")
        }
    }

    /// Kerberos failures that NTLM may stand in for: no library, no credentials, an SPN the KDC does
    /// not know (the server has no Kerberos), no KDC. Not a timeout, an expired ticket or a bad token.
    static func allowsNTLMFallback(_ error: SQLClientError) -> Bool {
        if error.code == .unsupported { return true }
        guard let kerberos = error.underlying as? KerberosError else { return false }
        switch kerberos.kind {
        case .libraryUnavailable, .noCredentials, .unknownServer, .kdcUnreachable: return true
        default: return false
        }
    }

    /// The most SSPI tokens the server may send in this login: 1 for NTLM, a few for Kerberos (SPNEGO).
    var maximumSSPITokens: Int { kerberos == nil ? 1 : KerberosAuthenticator.maximumLegs }

    /// The PRELOGIN FEDAUTHREQUIRED option to send: 0x01 with an access token, else none.
    var preloginFedAuthRequired: UInt8? { authentication.usesFedAuth ? 0x01 : nil }

    /// Fills LOGIN7's credentials for this authentication, given the server's PRELOGIN answer, and
    /// adds UTF8_SUPPORT (7.4).
    mutating func apply(to login: inout Login7, serverPrelogin: Prelogin?) {
        var features = login.featureExt ?? []
        if login.tdsVersion.generation >= 0x74 {
            if !features.contains(where: { $0.id == Login7Feature.utf8SupportID }) { features.append(.utf8Support) }
        }
        switch authentication {
        case .sqlPassword:
            break
        case .accessToken, .accessTokenProvider:
            login.userName = ""
            login.password = ""
            // fFedAuthEcho MUST equal the server's FEDAUTHREQUIRED answer, or it closes the connection.
            let echo = (serverPrelogin?.fedAuthRequired ?? 0) != 0
            features.append(.fedAuthAccessToken(accessToken ?? "", echo: echo, nonce: serverPrelogin?.nonce))
        case .entra, .accessTokenCallback:
            login.userName = ""
            login.password = ""
            let echo = (serverPrelogin?.fedAuthRequired ?? 0) != 0
            features.append(.fedAuthMSAL(workflow: authentication.entraCredential?.credential.workflow ?? EntraWorkflow.identity, echo: echo))
        case .ntlm, .kerberos:
            login.userName = ""
            login.password = ""
            login.optionFlags2.insert(.integratedSecurity)
            login.sspi = kerberos?.initialToken ?? ntlm?.initialToken ?? []
        }
        login.featureExt = features.isEmpty || login.tdsVersion.generation < 0x74 ? nil : features
        requestedFeatures = Set((login.featureExt ?? []).map { FeatureID(rawValue: $0.id) })
    }

    /// The FEDAUTH token message ([MS-TDS] 2.2.6.3, packet type 0x08) answering the server's
    /// FEDAUTHINFO: the credential's token (through its cache) for the SPN from the STSURL, in
    /// UTF-16LE, with the PRELOGIN nonce when the server sent one; within `timeout`.
    /// - Throws: ``SQLClientError`` `.loginFailed` with the ``EntraCredentialError`` as `underlying`,
    ///   `.timeout` when the credential's time ran out, `.protocolError` without a credential.
    func fedAuthTokenMessage(for info: FedAuthInfo, serverPrelogin: Prelogin?, timeout: Duration) async throws -> [UInt8] {
        guard let (credential, cache) = authentication.entraCredential, let sts = info.stsURL, let spn = info.spn else {
            throw SQLClientError(.protocolError, "the server sent FEDAUTHINFO but this login has no Entra ID credential")
        }
        let request = EntraTokenRequest(authority: sts, resource: spn)
        let token: EntraAccessToken
        do {
            if let cache {
                token = try await cache.token(for: request, from: credential, timeout: timeout)
            } else {
                token = try await credential.token(for: request, timeout: timeout)
            }
        } catch let error as SQLClientError {
            throw error
        } catch let error as EntraCredentialError {
            throw SQLClientError(error.kind == .timeout ? .timeout : .loginFailed,
                                 "Entra ID sign-in (\(credential.authenticationName)) got no token for \(spn): \(error)", underlying: error)
        } catch {
            throw SQLClientError(.loginFailed, "Entra ID sign-in (\(credential.authenticationName)) got no token for \(spn): \(error)",
                                 underlying: error)
        }
        guard !token.token.isEmpty else {
            throw SQLClientError(.loginFailed, "Entra ID sign-in (\(credential.authenticationName)) returned an empty token")
        }
        return FedAuthTokenMessage(accessToken: token.token, nonce: serverPrelogin?.nonce).encode()
    }

    /// The SSPI message answering the server's SSPI token; empty when there is nothing to send
    /// (Kerberos: the server's last token completed the context).
    /// - Throws: ``SQLClientError`` `.protocolError` when no SSPI exchange is running or the
    ///   challenge is malformed; for Kerberos `.loginFailed` when GSSAPI refuses the server's answer.
    mutating func sspiResponse(to token: [UInt8]) throws(SQLClientError) -> [UInt8] {
        if var exchange = kerberos {
            let answer = try exchange.respond(to: token)
            kerberos = exchange
            return answer
        }
        guard var exchange = ntlm else {
            throw SQLClientError(.protocolError, "the server sent an SSPI token but the login did not ask for Windows authentication")
        }
        let answer = try exchange.respond(to: token)
        ntlm = exchange
        return answer
    }

    /// Checks FEATUREEXTACK at the end of a successful login: nothing unrequested acknowledged, and
    /// FEDAUTH acknowledged when it was sent; for Kerberos, the server authenticated (mutual authentication).
    /// - Throws: ``SQLClientError`` `.protocolError`; `.loginFailed` when Kerberos did not complete.
    func check(_ ack: FeatureExtAck?) throws(SQLClientError) {
        try kerberos?.checkMutualAuthentication()
        if let ack {
            do {
                try ack.validate(requested: requestedFeatures)
            } catch {
                throw SQLClientError(.protocolError, "the server's login response is invalid: \(error.detail)", underlying: error)
            }
        }
        if requestedFeatures.contains(.fedAuth), ack?.data(for: .fedAuth) == nil {
            throw SQLClientError(.protocolError, "the server did not acknowledge FEDAUTH (access token) in FEATUREEXTACK:"
                                 + " it does not support Entra ID authentication")
        }
    }
}
