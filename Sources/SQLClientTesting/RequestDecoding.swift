import Foundation
import TDS

/// How the replay server reads client requests (with the TDS module's message decoders),
/// reduced to what it matches on.
enum RequestDecoding {
    struct Login7Summary {
        var version: TDSVersion
        var packetSize: Int
        var utf8Requested: Bool
    }

    /// [MS-TDS] 2.2.6.4 LOGIN7: the requested TDS version, packet size and UTF8_SUPPORT.
    static func login7Summary(_ payload: [UInt8]) -> Login7Summary? {
        guard let login = try? Login7.decode(from: payload) else { return nil }
        return Login7Summary(version: login.tdsVersion, packetSize: Int(login.packetSize),
                             utf8Requested: login.requestsUTF8Support)
    }

    /// [MS-TDS] 2.2.6.5 PRELOGIN: the client's ENCRYPTION option.
    static func preloginEncryption(_ payload: [UInt8]) -> UInt8? {
        (try? Prelogin.decode(from: payload))?.encryption?.rawValue
    }

    /// [MS-TDS] 2.2.6.7 SQLBatch: the SQL text.
    static func sqlBatchText(_ payload: [UInt8], version: TDSVersion) -> String? {
        (try? SQLBatch.decode(from: payload, version: version))?.text
    }

    /// [MS-TDS] 2.2.6.6 RPC Request: the first call's procedure name (well-known ProcIDs by
    /// name) and its parameters' names and canonical values.
    static func rpcRequest(_ payload: [UInt8], version: TDSVersion) -> ReplaySession.Request? {
        guard let request = try? RPCRequest.decode(from: payload, version: version), let call = request.calls.first else {
            return nil
        }
        let name: String
        switch call.procedure {
        case .id(let id): name = id.description
        case .name(let n): name = n
        }
        let params = call.parameters.map { ReplaySession.Parameter(name: $0.name, value: $0.value.canonicalText) }
        return .rpc(procedure: name, parameters: params)
    }

    /// True when a received request is answered by a recorded one: SQL text equal (or equal
    /// after trimming whitespace and normalising line ends); procedure names equal ignoring case
    /// and, when the recording lists parameters, the same values in the same order (names are
    /// compared only when both sides have one).
    static func matches(recorded: ReplaySession.Request, received: ReplaySession.Request) -> Bool {
        switch (recorded, received) {
        case (.sqlBatch(let a), .sqlBatch(let b)):
            return a == b || normalize(a) == normalize(b)
        case (.rpc(let a, let pa), .rpc(let b, let pb)):
            guard a.caseInsensitiveCompare(b) == .orderedSame else { return false }
            if pa.isEmpty { return true }
            guard pa.count == pb.count else { return false }
            for (x, y) in zip(pa, pb) {
                if x.value != y.value { return false }
                if !x.name.isEmpty, !y.name.isEmpty, x.name.caseInsensitiveCompare(y.name) != .orderedSame { return false }
            }
            return true
        case (.login7, .login7): return true
        default: return false
        }
    }

    static func normalize(_ s: String) -> String {
        s.replacingOccurrences(of: "\r\n", with: "\n").trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
