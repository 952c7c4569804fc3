import Foundation
import TDS
import TDSCapture

extension ReplayRecording {
    /// The sessions of a plaintext capture (`sqlclient decode CAPTURE --to-session FILE`): one
    /// section per TDS conversation of a pcap/pcapng capture, each decoded at the TDS version
    /// `sqlclient decode` infers for it, or one for a `.hex`/raw file of TDS packets or a bare
    /// token stream (server messages without a request become synthetic batches, see
    /// ``ReplaySessionBuilder``).
    ///
    /// What cannot be read is said in comments, never guessed: a LOGIN7 inside TLS (its login
    /// response, sent in plaintext, is still recorded), a session under TLS, messages the
    /// capture cut short. Sybase TDS 5.0 conversations and conversations with no exchange are
    /// left out.
    /// - Throws: ``CaptureError`` for a malformed capture container.
    public init(capture bytes: [UInt8], fileName: String? = nil, options: DecodeOptions = DecodeOptions()) throws(CaptureError) {
        let file = try CaptureFile(bytes: bytes, fileName: fileName)
        let source = fileName.map { URL(fileURLWithPath: $0).lastPathComponent } ?? "capture"
        var sections: [ReplaySession] = []
        var notes: [String] = []
        if file.isPacketCapture {
            let report = CaptureDecoder.decode(bytes: bytes, fileName: fileName, options: options)
            var versions: [String: TDSVersion] = [:]
            for s in report.sessions { versions[s.name] = s.version.version }
            for session in try file.tdsSessions(port: options.port, forcedVersion: options.forcedVersion) {
                let name = session.conversation.name
                if let reason = session.legacyProtocolReason {
                    notes.append("\(name) left out: not TDS 7.x (\(reason))")
                    continue
                }
                let version = versions[name] ?? session.version.version
                var builder = ReplaySessionBuilder(name: name, version: version,
                                                   comment: "conversation \(name), TDS \(ReplaySession.versionText(version)) (\(session.version.evidence))")
                Self.add(session.messages, to: &builder)
                let built = builder.build()
                if built.exchanges.isEmpty {
                    notes.append("\(name) left out: no exchange")
                } else {
                    sections.append(built)
                }
            }
        } else {
            var builder = ReplaySessionBuilder(name: source, version: options.forcedVersion ?? .v7_4)
            let messages = Self.wholeMessages(file.bytes)
            if !options.tokensOnly, let messages {
                for m in messages {
                    if m.type == .tabularResult { builder.serverMessage(m.payload) } else { builder.clientMessage(type: m.type, payload: m.payload) }
                }
            } else {
                builder.serverMessage(file.bytes)
            }
            let built = builder.build()
            if !built.exchanges.isEmpty { sections.append(built) }
        }
        var comment = ["made by sqlclient decode --to-session from \(source): \(sections.count) session\(sections.count == 1 ? "" : "s")"]
        comment += notes
        self.init(comment: comment.joined(separator: "\n"), sections: sections)
    }

    /// The whole TDS messages of a byte run, or nil when it is not a run of whole packets.
    static func wholeMessages(_ bytes: [UInt8]) -> [TDSMessage]? {
        var assembler = PacketAssembler(maximumPacketSize: Int(UInt16.max))
        assembler.append(bytes)
        guard let messages = try? assembler.nextMessages(), !messages.isEmpty, assembler.bufferedByteCount == 0,
              !assembler.isInsideMessage else { return nil }
        return messages
    }

    static func add(_ messages: [CapturedMessage], to builder: inout ReplaySessionBuilder) {
        var loginSeen = false
        var handshake = false
        var encryptedSession = false
        for m in messages {
            switch m.content {
            case .tds(let message):
                if encryptedSession { continue }
                if m.direction == .client {
                    if message.type == .login7 { loginSeen = true }
                    builder.clientMessage(type: message.type, payload: message.payload)
                } else {
                    builder.serverMessage(message.payload)
                }
            case .tls(_, _, let inPrelogin):
                if inPrelogin {
                    if !handshake { builder.note("TLS handshake inside PRELOGIN") }
                    handshake = true
                } else if m.direction == .client, !loginSeen {
                    loginSeen = true
                    builder.encryptedLogin()
                } else if loginSeen, m.direction == .client || encryptedSession {
                    if !encryptedSession { builder.note("the rest of the conversation is under TLS: not readable") }
                    encryptedSession = true
                }
            case .incomplete(let message, let reason):
                builder.note("\(m.direction) \(message.type.name) of \(message.payload.count) bytes not recorded: \(reason)")
            case .skipped(let count, let reason):
                if !handshake { builder.note("\(count) bytes of the \(m.direction) stream skipped: \(reason)") }
            case .malformed(let error):
                builder.note("\(m.direction) bytes that are not TDS packets: \(error)")
            }
        }
    }
}
