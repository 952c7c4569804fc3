import TDS

/// The login response as a sub-machine of ``ConnectionStateMachine``, carried by its login states
/// (`initialized` to `loginSent`; gone once logged in): the tokens after LOGIN7 ([MS-TDS]
/// 2.2.7.14 LOGINACK, 2.2.7.10 ERROR, 2.2.7.11 FEATUREEXTACK, 2.2.7.9 ENVCHANGE type 20 routing, 2.2.7.22 SSPI, 2.2.7.12
/// FEDAUTHINFO), what the login may still receive (the SSPI rounds, the one FEDAUTHINFO), and
/// how its message's end reads: keep reading (a challenge's message), failed, or logged in.
/// Pure: tokens in, outcomes out; the connection machine applies them to its phase and session.
struct LoginStateMachine: Sendable {
    /// What one token of the login response means to the connection.
    enum TokenOutcome: Sendable {
        /// Nothing to do (keep reading).
        case none
        /// A server message to hand to the caller.
        case forwardMessage(SQLServerMessage)
        /// An ENVCHANGE other than routing: the connection applies it to its session.
        case envChange(EnvChange)
        /// The server's SSPI token: answer it ([MS-TDS] 2.2.6.8), then keep reading.
        case sspiChallenge([UInt8])
        /// FEDAUTHINFO: get a token and send it ([MS-TDS] 2.2.6.3), then keep reading.
        case fedAuthInfo(FedAuthInfo)
        /// The login cannot go on (a token the login did not ask for, a version it cannot read).
        case fail(SQLClientError)
    }

    /// How the login response's message ended.
    enum MessageEnd: Sendable {
        /// The message carried an SSPI challenge or FEDAUTHINFO: the response follows the answer.
        case keepReading
        /// The login failed (ERROR tokens, a fatal one, or no LOGINACK).
        case failed(SQLClientError)
        /// LOGINACK came; `routing` when the server hands the client to another one.
        case loggedIn(LoginAck, routing: EnvChange.Routing?)
    }

    /// The TDS version LOGIN7 asks for: LOGINACK may answer it or an older one this client speaks.
    let requestedVersion: TDSVersion
    /// Whether the login may run an SSPI exchange (Windows authentication was asked for).
    let expectsSSPI: Bool
    /// The SSPI tokens the server may send in the login (NTLM one; Kerberos in SPNEGO a few).
    var maximumSSPITokens = 1
    /// Whether LOGIN7 asked for the FEDAUTH MSAL workflow (the server then sends FEDAUTHINFO once).
    var expectsFedAuthInfo = false

    /// The login's FEATUREEXTACK, if one came (the driver checks it against what LOGIN7 asked for).
    private(set) var featureExtAck: FeatureExtAck?
    /// The SSPI challenge was answered: a connection closed after it means the credentials were refused.
    private(set) var sspiAnswered = false
    /// FEDAUTHINFO came (once only).
    private(set) var fedAuthInfoReceived = false

    private var ack: LoginAck?
    private var errors: [SQLServerMessage] = []
    private var fatal: SQLServerMessage?
    private var routing: EnvChange.Routing?
    private var sspiTokens = 0
    /// The message being read carried an SSPI token (its end is not the end of the login response).
    private var sspiInMessage = false
    /// The message being read carried FEDAUTHINFO.
    private var fedAuthInfoInMessage = false

    init(requestedVersion: TDSVersion = .v7_4, expectsSSPI: Bool = false) {
        self.requestedVersion = requestedVersion
        self.expectsSSPI = expectsSSPI
    }

    /// Whether LOGINACK's TDS version ([MS-TDS] 2.2.7.14) is one the tokens that follow can be
    /// decoded for: 7.1 (also SQL Server 2000's 0x07010000) to 7.4, and no newer than
    /// `requested` (a server answers the client's version or an older one). Anything else
    /// (0x00000000, 0xFFFFFFFF, 7.0) would have the decoder read every later token in a layout
    /// the server never meant.
    static func speaks(_ version: TDSVersion, requested: TDSVersion) -> Bool {
        if version.rawValue == 0x0701_0000 { return true }
        return (0x71 ... 0x74).contains(version.generation) && version.generation <= max(requested.generation, 0x71)
    }

    /// One token of the login response.
    mutating func token(_ token: Token) -> TokenOutcome {
        switch token {
        case .loginAck(let ack):
            guard Self.speaks(ack.tdsVersion, requested: requestedVersion) else {
                let raw = "0x" + String(ack.tdsVersion.rawValue, radix: 16, uppercase: true)
                return .fail(SQLClientError(.protocolError, "the server answered LOGINACK with TDS version \(raw); this client "
                                            + "speaks TDS 7.1 to 7.4 and asked for \(requestedVersion)"))
            }
            self.ack = ack
            return .none
        case .envChange(let change):
            guard change.type == .routing else { return .envChange(change) }
            guard let routing = change.routing else {
                return .fail(SQLClientError(.protocolError, "the server sent a routing ENVCHANGE (type 20) without a routing value"))
            }
            self.routing = routing
            return .none
        case .error(let e):
            let m = e.message
            errors.append(m)
            if m.severity >= 20 { fatal = fatal ?? m }
            return .forwardMessage(m)
        case .info(let i):
            return .forwardMessage(i.message)
        case .featureExtAck(let ack):
            featureExtAck = ack
            return .none
        case .done, .sessionState, .doneProc, .doneInProc:
            return .none
        case .sspi(let t):
            guard expectsSSPI else {
                return .fail(SQLClientError(.protocolError, "the server sent an SSPI token but the login did not ask for Windows authentication"))
            }
            sspiTokens += 1
            guard sspiTokens <= maximumSSPITokens else {
                return .fail(SQLClientError(.protocolError, maximumSSPITokens == 1
                    ? "the server sent a second SSPI challenge; NTLM has only one"
                    : "the server sent more than \(maximumSSPITokens) SSPI tokens in the login"))
            }
            sspiAnswered = true
            sspiInMessage = true
            return .sspiChallenge(t.buffer)
        case .fedAuthInfo(let info):
            guard expectsFedAuthInfo else {
                return .fail(SQLClientError(.protocolError, "the server sent FEDAUTHINFO but LOGIN7 did not ask for the FEDAUTH MSAL"
                                            + " workflow (an access token was sent in LOGIN7)"))
            }
            guard !fedAuthInfoReceived else {
                return .fail(SQLClientError(.protocolError, "the server sent a second FEDAUTHINFO in the login"))
            }
            guard let sts = info.stsURL, !sts.isEmpty, let spn = info.spn, !spn.isEmpty else {
                return .fail(SQLClientError(.protocolError, "the server's FEDAUTHINFO lacks the STSURL or the SPN"))
            }
            fedAuthInfoReceived = true
            fedAuthInfoInMessage = true
            return .fedAuthInfo(info)
        default:
            return .fail(SQLClientError(.protocolError, "unexpected \(token.name) token in the login response"))
        }
    }

    /// The login response's message ended (the packet with EOM was decoded).
    mutating func messageEnded() -> MessageEnd {
        if sspiInMessage, ack == nil, errors.isEmpty {
            // The SSPI challenge's message: the login response follows the client's answer.
            sspiInMessage = false
            return .keepReading
        }
        if fedAuthInfoInMessage, ack == nil, errors.isEmpty {
            // FEDAUTHINFO's message: the login response follows the client's FEDAUTH token.
            fedAuthInfoInMessage = false
            return .keepReading
        }
        if let fatal, ack == nil {
            return .failed(Self.loginError(from: [fatal] + errors.filter { $0 != fatal }))
        }
        guard let ack else { return .failed(Self.loginError(from: errors)) }
        return .loggedIn(ack, routing: routing)
    }

    private static func loginError(from errors: [SQLServerMessage]) -> SQLClientError {
        guard let first = errors.first else {
            return SQLClientError(.loginFailed, "the server ended the login response without LOGINACK")
        }
        return SQLClientError(.loginFailed, first.message, serverMessage: first, serverMessages: errors)
    }
}
