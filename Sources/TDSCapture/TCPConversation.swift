/// Both directions of one TCP connection, with the client and server told apart.
public struct TCPConversation: Sendable, Hashable {
    /// How the client/server roles were decided.
    public enum RoleEvidence: String, Sendable, Hashable {
        /// The server side uses a port given as a server port (1433 or `--port`).
        case port
        /// The client sent the SYN.
        case syn
        /// The streams' first bytes look like a TDS request (client) or response (server).
        case content
        /// No evidence: the lower port was taken as the server.
        case guess
    }

    public var client: IPEndpoint
    public var server: IPEndpoint
    public var clientStream: TCPStream
    public var serverStream: TCPStream
    /// Index of the first captured frame of the conversation.
    public var firstFrameIndex: Int
    public var roleEvidence: RoleEvidence

    public init(client: IPEndpoint, server: IPEndpoint, clientStream: TCPStream, serverStream: TCPStream,
                firstFrameIndex: Int, roleEvidence: RoleEvidence) {
        self.client = client
        self.server = server
        self.clientStream = clientStream
        self.serverStream = serverStream
        self.firstFrameIndex = firstFrameIndex
        self.roleEvidence = roleEvidence
    }

    /// `client -> server`.
    public var name: String { "\(client) -> \(server)" }
}

/// Groups TCP segments into connections and reassembles each direction.
public enum TCPReassembler {
    /// The conversations of `segments`, in order of their first frame.
    ///
    /// A SYN (without ACK) on a 4-tuple that already carried data starts a new conversation.
    /// Roles: a side whose port is in `serverPorts` is the server; otherwise the side that sent
    /// the SYN is the client; otherwise TDS content decides (see ``TDSDetection``); otherwise
    /// the lower port is taken as the server.
    public static func conversations(from segments: [FrameDissector.Result], serverPorts: Set<UInt16>) -> [TCPConversation] {
        struct Key: Hashable { var a: IPEndpoint; var b: IPEndpoint }
        struct Pending {
            var a: IPEndpoint
            var b: IPEndpoint
            var firstFrame: Int
            var items: [(segment: TCPSegment, missing: Int)] = []
            var hasData = false
        }
        var pending: [Pending] = []
        var current: [Key: Int] = [:]
        for r in segments {
            let s = r.segment
            let key = s.source < s.destination ? Key(a: s.source, b: s.destination) : Key(a: s.destination, b: s.source)
            var index = current[key]
            if let i = index, s.syn, !s.ack, pending[i].hasData { index = nil }
            if index == nil {
                pending.append(Pending(a: s.source, b: s.destination, firstFrame: s.frameIndex))
                index = pending.count - 1
                current[key] = index
            }
            guard let i = index else { continue }
            pending[i].items.append((s, r.missingBytes))
            if !s.payload.isEmpty { pending[i].hasData = true }
        }
        return pending.map { p in
            let ab = TCPStream.reassemble(source: p.a, destination: p.b, segments: p.items.filter { $0.segment.source == p.a })
            let ba = TCPStream.reassemble(source: p.b, destination: p.a, segments: p.items.filter { $0.segment.source == p.b })
            let aIsServer: Bool
            let evidence: TCPConversation.RoleEvidence
            let aPort = serverPorts.contains(p.a.port), bPort = serverPorts.contains(p.b.port)
            let synFromA = p.items.contains { $0.segment.syn && !$0.segment.ack && $0.segment.source == p.a }
            let synFromB = p.items.contains { $0.segment.syn && !$0.segment.ack && $0.segment.source == p.b }
            if aPort != bPort {
                aIsServer = aPort; evidence = .port
            } else if synFromA != synFromB {
                aIsServer = synFromB; evidence = .syn
            } else if let role = TDSDetection.role(ab.bytes) ?? TDSDetection.role(ba.bytes).map({ $0 == .client ? .server : .client }) {
                aIsServer = role == .server; evidence = .content
            } else {
                aIsServer = p.a.port < p.b.port; evidence = .guess
            }
            return aIsServer
                ? TCPConversation(client: p.b, server: p.a, clientStream: ba, serverStream: ab, firstFrameIndex: p.firstFrame, roleEvidence: evidence)
                : TCPConversation(client: p.a, server: p.b, clientStream: ab, serverStream: ba, firstFrameIndex: p.firstFrame, roleEvidence: evidence)
        }
    }
}
