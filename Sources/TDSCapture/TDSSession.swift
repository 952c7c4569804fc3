import TDS

/// One TDS conversation of a capture, cut into messages, both directions merged in capture
/// order, with its TDS version.
public struct TDSSession: Sendable {
    public var conversation: TCPConversation
    /// Client and server messages in the order their first byte was captured.
    public var messages: [CapturedMessage]
    /// The version used to decode this conversation.
    public var version: InferredTDSVersion
    /// Set when the conversation is Sybase TDS 5.0 (or TDS 4.x): why. Such a session must be
    /// refused, not decoded.
    public var legacyProtocolReason: String?

    public init(conversation: TCPConversation, messages: [CapturedMessage], version: InferredTDSVersion,
                legacyProtocolReason: String?) {
        self.conversation = conversation
        self.messages = messages
        self.version = version
        self.legacyProtocolReason = legacyProtocolReason
    }

    /// Cuts `conversation` into messages and infers its version (unless `forcedVersion`).
    public init(conversation: TCPConversation, forcedVersion: TDSVersion? = nil) {
        let client = TDSMessageSplitter.split(conversation.clientStream, direction: .client)
        let server = TDSMessageSplitter.split(conversation.serverStream, direction: .server)
        let merged = TDSSession.merge(client, server)
        let version = forcedVersion.map { InferredTDSVersion(version: $0, evidence: "--tds-version") }
            ?? TDSVersionInference.infer(merged)
        self.init(conversation: conversation, messages: merged, version: version,
                  legacyProtocolReason: TDSDetection.legacyTDSReason(clientStream: conversation.clientStream.bytes))
    }

    /// Merges two directions by frame index (then stream offset), keeping each direction's order.
    static func merge(_ a: [CapturedMessage], _ b: [CapturedMessage]) -> [CapturedMessage] {
        var out: [CapturedMessage] = []
        out.reserveCapacity(a.count + b.count)
        var i = 0, j = 0
        while i < a.count || j < b.count {
            if j >= b.count { out.append(a[i]); i += 1; continue }
            if i >= a.count { out.append(b[j]); j += 1; continue }
            let fa = a[i].frameIndex ?? Int.max, fb = b[j].frameIndex ?? Int.max
            if fa <= fb { out.append(a[i]); i += 1 } else { out.append(b[j]); j += 1 }
        }
        return out
    }
}

extension CaptureFile {
    /// The TDS sessions of a pcap/pcapng capture (see ``tdsConversations(port:)``), each cut
    /// into messages with its own TDS version.
    /// - Throws: ``CaptureError`` for malformed frames.
    public func tdsSessions(port: UInt16? = nil, forcedVersion: TDSVersion? = nil) throws(CaptureError) -> [TDSSession] {
        try tdsConversations(port: port).map { TDSSession(conversation: $0, forcedVersion: forcedVersion) }
    }
}
