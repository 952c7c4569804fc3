import Foundation
import TDS

/// How the replay server reads client requests (with the TDS module's message decoders),
/// reduced to what it matches on.
enum RequestDecoding {
    struct Login7Summary {
        var version: TDSVersion
        var packetSize: Int
        var utf8Requested: Bool
        /// The FeatureExt ids LOGIN7 asked for.
        var features: Set<UInt8> = []
    }

    /// [MS-TDS] 2.2.6.4 LOGIN7: the requested TDS version, packet size and UTF8_SUPPORT.
    static func login7Summary(_ payload: [UInt8]) -> Login7Summary? {
        guard let login = try? Login7.decode(from: payload) else { return nil }
        return Login7Summary(version: login.tdsVersion, packetSize: Int(login.packetSize),
                             utf8Requested: login.requestsUTF8Support, features: Set((login.featureExt ?? []).map(\.id)))
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

    /// [MS-TDS] 2.2.6.9 Transaction Manager Request: the request type by its name (`TM_BEGIN_XACT`, …)
    /// and its fields as parameters (`isolation`, `name`, `begin`, `new-isolation`, `new-name`, `cookie`).
    static func transactionManagerRequest(_ payload: [UInt8], version: TDSVersion) -> ReplaySession.Request? {
        guard let tm = try? TransactionManagerRequest.decode(from: payload, version: version) else { return nil }
        typealias P = ReplaySession.Parameter
        func then(_ next: TransactionManagerRequest.NewTransaction?) -> [P] {
            guard let next else { return [P(name: "begin", value: "0")] }
            return [P(name: "begin", value: "1"), P(name: "new-isolation", value: String(next.isolationLevel.rawValue)),
                    P(name: "new-name", value: next.name)]
        }
        switch tm.request {
        case .getDTCAddress: return .transactionManager(type: "TM_GET_DTC_ADDRESS", parameters: [])
        case .propagate(let cookie):
            return .transactionManager(type: "TM_PROPAGATE_XACT", parameters: [P(name: "cookie", value: SQLValue.hexText(cookie))])
        case .begin(let isolation, let name):
            return .transactionManager(type: "TM_BEGIN_XACT", parameters: [P(name: "isolation", value: String(isolation.rawValue)),
                                                                          P(name: "name", value: name)])
        case .promote: return .transactionManager(type: "TM_PROMOTE_XACT", parameters: [])
        case .commit(let name, let next):
            return .transactionManager(type: "TM_COMMIT_XACT", parameters: [P(name: "name", value: name)] + then(next))
        case .rollback(let name, let next):
            return .transactionManager(type: "TM_ROLLBACK_XACT", parameters: [P(name: "name", value: name)] + then(next))
        case .save(let name): return .transactionManager(type: "TM_SAVE_XACT", parameters: [P(name: "name", value: name)])
        case .unknown(let type, let rest):
            return .transactionManager(type: "TM_0x" + String(type, radix: 16, uppercase: true),
                                       parameters: [P(name: "payload", value: SQLValue.hexText(rest))])
        }
    }
}
