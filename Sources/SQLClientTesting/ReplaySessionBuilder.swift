import Foundation
import TDS

/// Turns the plaintext messages of one TDS connection, in the order they crossed the wire,
/// into a ``ReplaySession``: what `sqlclient record` writes for each connection it relays and
/// `sqlclient decode --to-session` for each conversation of a capture.
///
/// - Requests become exchanges: SQL_BATCH by its text, RPC by its first call's procedure and
///   parameters, TRANSACTION_MANAGER by its type and fields, ATTENTION, and LOGIN7 (whose
///   response is the recorded login response). Each server message is added to the response of
///   the request it answers, cut into one commented segment per token.
/// - After an ATTENTION the server's bytes up to its DONE with DONE_ATTN finish the interrupted
///   request's response; that DONE and what follows are the ATTENTION's response.
/// - Secrets never reach the session: LOGIN7 is kept only as a summary comment (no password, no
///   SSPI data, no FEDAUTH feature data); SSPI (0x11) and FEDAUTH_TOKEN (0x08) messages and the
///   server's SSPI tokens are left out (a comment says so); and the login's password, if it
///   shows up anywhere else (SQL text, parameters, response bytes as UTF-8, UTF-16 or in
///   LOGIN7's obfuscated form), is replaced (see ``SecretRedaction``).
/// - A server message with no request before it (a capture that starts mid-connection) is kept
///   under a synthetic SQL batch `-- response N (its request was not captured)`, a login
///   response without its LOGIN7 as the recorded login response.
public struct ReplaySessionBuilder: Sendable {
    /// The session's name.
    public var name: String
    /// The TDS version messages are decoded with: the caller's guess, then LOGIN7's, then LOGINACK's.
    public private(set) var version: TDSVersion
    /// Comment lines at the top of the session.
    public var comment: String?
    /// What the login's password is redacted from.
    public private(set) var redaction = SecretRedaction(secrets: [])

    struct Pending: Sendable {
        var request: ReplaySession.Request
        var comments: [String]
        var bytes: [UInt8] = []
        var rendered: ReplaySession.Exchange?
        /// `rendered` in the text form, made once.
        var renderedText: String?
    }

    private var exchanges: [Pending] = []
    /// The exchange receiving server bytes.
    private var current: Int?
    /// An ATTENTION waiting for its acknowledgement, and the request it interrupted.
    private var attention: (index: Int, interrupted: Int?)?
    private var notes: [String] = []
    private var expectPreloginResponse = false
    private var loginIndex: Int?
    private var ackedVersion: TDSVersion?
    private var loginVersion: TDSVersion
    private var packetSize: Int?
    private var decoderOptions = TokenStreamDecoder.Options()
    private var orphans = 0
    private var skippedResponse = false

    public init(name: String, version: TDSVersion = .v7_4, comment: String? = nil) {
        self.name = name
        self.version = version
        self.loginVersion = version
        self.comment = comment
    }

    /// Exchanges begun so far (the last may still be receiving its response).
    public var exchangeCount: Int { exchanges.count }
    /// The first exchanges that receive no more bytes (every one before the current request).
    public private(set) var closedExchangeCount = 0

    /// A comment for the next exchange.
    public mutating func note(_ text: String) { notes.append(text) }

    /// A whole message from the client: its packet type and payload.
    public mutating func clientMessage(type: PacketType, payload: [UInt8]) {
        switch type {
        case .prelogin:
            let p = try? Prelogin.decode(from: payload)
            notes.append("PRELOGIN: client ENCRYPTION " + (p?.encryption.map { "\($0)" } ?? "absent"))
            expectPreloginResponse = true
        case .login7:
            login(payload)
        case .sqlBatch:
            let sql = RequestDecoding.sqlBatchText(payload, version: version)
            begin(.sqlBatch(sql ?? ""), sql == nil ? ["SQL_BATCH of \(payload.count) bytes that does not decode at TDS \(version)"] : [])
        case .rpc:
            if let request = RequestDecoding.rpcRequest(payload, version: version) {
                let calls = (try? RPCRequest.decode(from: payload, version: version))?.calls.count ?? 1
                begin(request, calls > 1 ? ["RPC batch of \(calls) calls: the first is matched"] : [])
            } else {
                begin(.rpc(procedure: "?", parameters: []), ["RPC of \(payload.count) bytes that does not decode at TDS \(version)"])
            }
        case .transactionManager:
            begin(RequestDecoding.transactionManagerRequest(payload, version: version) ?? .transactionManager(type: "?", parameters: []), [])
        case .attention:
            let interrupted = current
            exchanges.append(Pending(request: .attention, comments: takeNotes()))
            attention = (exchanges.count - 1, interrupted)
        case .sspi:
            addToLogin("SSPI message (\(payload.count) bytes) not recorded")
        case .federatedAuthToken:
            addToLogin("FEDAUTH_TOKEN message (\(payload.count) bytes) not recorded")
        default:
            closeAll()
            notes.append("\(type.name) request (\(payload.count) bytes) and its response not recorded")
            current = nil
            skippedResponse = true
        }
    }

    /// A LOGIN7 the capture could not read (sent inside TLS): the login response that follows is recorded.
    public mutating func encryptedLogin() {
        guard loginIndex == nil else { return }
        closeAll()
        exchanges.append(Pending(request: .login7, comments: takeNotes() + ["LOGIN7 sent inside TLS: not readable, not recorded"]))
        loginIndex = exchanges.count - 1
        current = loginIndex
        expectPreloginResponse = false
    }

    /// A whole message from the server (its payload).
    public mutating func serverMessage(_ payload: [UInt8]) {
        if expectPreloginResponse {
            expectPreloginResponse = false
            if let p = try? Prelogin.decode(from: payload), loginIndex == nil {
                notes.append("PRELOGIN: server ENCRYPTION " + (p.encryption.map { "\($0)" } ?? "absent"))
                return
            }
        }
        if let a = attention {
            // Split at the DONE with DONE_ATTN: before it, the interrupted response; from it, the acknowledgement.
            let base = a.interrupted.map { exchanges[$0].bytes } ?? []
            if let cut = Self.attentionDoneOffset(base + payload, from: base.count, version: version, options: decoderOptions) {
                let split = cut - base.count
                if let i = a.interrupted { exchanges[i].bytes += payload[..<split] }
                exchanges[a.index].bytes += payload[split...]
                attention = nil
                current = a.index
            } else if let i = a.interrupted {
                exchanges[i].bytes += payload
            } else {
                exchanges[a.index].bytes += payload
            }
            return
        }
        if let c = current {
            exchanges[c].bytes += payload
            if c == loginIndex, noteLoginVersion(payload) { current = nil }   // logged in: nothing more answers LOGIN7
            return
        }
        if skippedResponse { return }
        // No request before it.
        if loginIndex == nil, Self.containsLoginAck(payload, version: version) {
            exchanges.append(Pending(request: .login7, comments: takeNotes() + ["login response (its LOGIN7 was not captured)"], bytes: payload))
            loginIndex = exchanges.count - 1
            _ = noteLoginVersion(payload)
            current = nil
            return
        }
        orphans += 1
        exchanges.append(Pending(request: .sqlBatch("-- response \(orphans) (its request was not captured)"),
                                 comments: takeNotes(), bytes: payload))
        current = exchanges.count - 1
    }

    /// Each exchange of ``build()`` in the text form (``ReplaySession/exchangeText(_:)``): those
    /// that receive no more bytes are formatted once and kept.
    public mutating func exchangeTexts(from start: Int = 0) -> [String] {
        var out: [String] = []
        out.reserveCapacity(max(0, exchanges.count - start))
        for i in exchanges.indices where i >= start {
            if let t = exchanges[i].renderedText {
                out.append(t)
            } else if let r = exchanges[i].rendered {
                let t = ReplaySession.exchangeText(r)
                exchanges[i].renderedText = t
                out.append(t)
            } else {
                out.append(ReplaySession.exchangeText(render(i)))
            }
        }
        return out
    }

    /// The session's name, comment and settings so far, without its exchanges.
    public var settings: ReplaySession {
        // Without a login (a capture that starts mid-connection) the server acknowledges the version the messages were read at.
        ReplaySession(name: name, comment: comment, version: ackedVersion ?? (loginIndex == nil ? version : nil),
                      packetSize: packetSize)
    }

    /// The session so far (every exchange begun; the last one's response as far as it came).
    public mutating func build() -> ReplaySession {
        var session = settings
        for i in exchanges.indices {
            if let r = exchanges[i].rendered {
                session.exchanges.append(r)
            } else {
                session.exchanges.append(render(i))
            }
        }
        return session
    }

    // MARK: - Internals

    private mutating func takeNotes() -> [String] {
        defer { notes = [] }
        return notes
    }

    private mutating func begin(_ request: ReplaySession.Request, _ comments: [String]) {
        closeAll()
        skippedResponse = false
        exchanges.append(Pending(request: request, comments: takeNotes() + comments))
        current = exchanges.count - 1
    }

    /// Renders (once) every exchange but the current one's successors: they receive no more bytes.
    private mutating func closeAll() {
        attention = nil
        for i in exchanges.indices where exchanges[i].rendered == nil {
            exchanges[i].rendered = render(i)
            exchanges[i].bytes = []   // rendered: the raw copy is no longer needed
        }
        closedExchangeCount = exchanges.count
    }

    private mutating func addToLogin(_ text: String) {
        if let l = loginIndex, exchanges[l].rendered == nil { exchanges[l].comments.append(text) } else { notes.append(text) }
    }

    private mutating func login(_ payload: [UInt8]) {
        closeAll()
        skippedResponse = false
        expectPreloginResponse = false
        var summary = "LOGIN7 of \(payload.count) bytes that does not decode (not recorded)"
        if let login = try? Login7.decode(from: payload) {
            version = login.tdsVersion
            loginVersion = login.tdsVersion
            redaction = SecretRedaction(secrets: [login.password.reveal(), login.changePassword.reveal()])
            var parts = ["LOGIN7 TDS \(ReplaySession.versionText(login.tdsVersion))", "user \(JSONText.quote(login.userName))"]
            if !login.database.isEmpty { parts.append("database \(JSONText.quote(login.database))") }
            if !login.appName.isEmpty { parts.append("app \(JSONText.quote(login.appName))") }
            parts.append("packet size \(login.packetSize)")
            summary = parts.joined(separator: ", ") + "; password not recorded"
            if !login.sspi.isEmpty { summary += "; SSPI data (\(login.sspi.count) bytes) not recorded" }
            if let features = login.featureExt, features.contains(where: { $0.id == Login7Feature.fedAuthID }) {
                summary += "; FEDAUTH feature not recorded"
            }
        }
        exchanges.append(Pending(request: .login7, comments: takeNotes() + [summary]))
        loginIndex = exchanges.count - 1
        current = loginIndex
    }

    /// Reads the login response's LOGINACK version and packet size; true when it holds LOGINACK.
    private mutating func noteLoginVersion(_ payload: [UInt8]) -> Bool {
        var decoder = TokenStreamDecoder(version: version)
        decoder.append(payload)
        var acknowledged = false
        while let token = try? decoder.next() {
            switch token {
            case .loginAck(let ack):
                ackedVersion = ack.tdsVersion
                acknowledged = true
            case .envChange(let e):
                if let size = e.newPacketSize, (512...32767).contains(size) { packetSize = size }
            default: break
            }
        }
        decoderOptions = decoder.options
        if let acked = ackedVersion { version = acked }
        return acknowledged
    }

    /// Cuts an exchange's response into one commented segment per token, leaves SSPI tokens
    /// out, and applies the redaction.
    private func render(_ index: Int) -> ReplaySession.Exchange {
        let pending = exchanges[index]
        let isLogin = index == loginIndex
        // The login response at the version LOGIN7 asked for (LOGINACK's takes over inside it).
        var decoder = TokenStreamDecoder(version: isLogin ? loginVersion : version,
                                         options: isLogin ? TokenStreamDecoder.Options() : decoderOptions)
        decoder.append(pending.bytes)
        var segments: [ReplaySession.Segment] = []
        var start = 0
        while start < pending.bytes.count {
            let token: Token?
            do {
                token = try decoder.next()
            } catch {
                segments.append(.init(comment: "not decoded at TDS \(ReplaySession.versionText(decoder.version)): \(error)",
                                      bytes: Array(pending.bytes[start...])))
                break
            }
            guard let token else {
                segments.append(.init(comment: "incomplete token", bytes: Array(pending.bytes[start...])))
                break
            }
            let end = decoder.offset
            if case .sspi(let s) = token {
                segments.append(.init(comment: "SSPI token (\(s.buffer.count) bytes) not recorded", bytes: []))
            } else {
                segments.append(.init(comment: TokenComment.describe(token), bytes: Array(pending.bytes[start ..< end])))
            }
            start = end
        }
        var exchange = ReplaySession.Exchange(request: pending.request, response: segments,
                                              comment: pending.comments.isEmpty ? nil : pending.comments.joined(separator: "\n"))
        redaction.apply(to: &exchange)
        return exchange
    }

    static func containsLoginAck(_ payload: [UInt8], version: TDSVersion) -> Bool {
        var decoder = TokenStreamDecoder(version: version)
        decoder.append(payload)
        while let t = try? decoder.next() { if case .loginAck = t { return true } }
        return false
    }

    /// The offset of the first DONE with DONE_ATTN that starts at or after `from`.
    static func attentionDoneOffset(_ bytes: [UInt8], from: Int, version: TDSVersion, options: TokenStreamDecoder.Options) -> Int? {
        var decoder = TokenStreamDecoder(version: version, options: options)
        decoder.append(bytes)
        while true {
            let start = decoder.offset
            guard let token = try? decoder.next() else { return nil }
            if start >= from, case .done(let d) = token, d.status.contains(.attention) { return start }
        }
    }
}

/// One-line comments for response tokens.
enum TokenComment {
    static func describe(_ token: Token) -> String {
        var text: String
        switch token {
        case .row(let r): text = "ROW " + values(r.values)
        case .nbcRow(let r): text = "NBCROW " + values(r.values)
        case .colMetadata(let m):
            text = m.isNoMetadata ? "COLMETADATA (none)"
                : "COLMETADATA \(m.columns.count) column\(m.columns.count == 1 ? "" : "s"): "
                + m.columns.map { ($0.name.isEmpty ? "(unnamed)" : $0.name) + " " + $0.typeInfo.sqlTypeName }.joined(separator: ", ")
        case .error(let e): text = "ERROR \(e.message.number), level \(e.message.severity), state \(e.message.state): \(e.message.message)"
        case .info(let i): text = "INFO \(i.message.number): \(i.message.message)"
        default: text = token.description
        }
        text = text.replacingOccurrences(of: "\r", with: "\\r").replacingOccurrences(of: "\n", with: "\\n")
        return text.count > 160 ? String(text.prefix(157)) + "..." : text
    }

    static func values(_ values: [SQLValue]) -> String {
        values.map { $0.canonicalText.map(JSONText.quote) ?? "NULL" }.joined(separator: ", ")
    }
}
