import Foundation
import Synchronization
import TDS

/// The connection's events for ``SQLConnectionConfiguration/logger`` (see ``SQLClientLogger``):
/// what each call site reports, kept here so that the driver's files carry one line per event.
extension SQLConnection {
    var logger: SQLClientLogger? { configuration.eventLogger }

    private static let numbers = Atomic<Int>(0)
    /// The next connection number (1, 2, …) in this process, for ``SQLLogEvent/Key/connection``.
    static func nextLogNumber() -> Int { numbers.wrappingAdd(1, ordering: .relaxed).newValue }

    /// What a request is, for its `requestStarted` event: kind, text and (for an RPC) its
    /// parameters as `@name type = value` (values shown only with `includesSensitiveData`).
    static func logDescription(_ request: OutgoingRequest) -> (kind: String, text: String, parameters: [String]) {
        switch request {
        case .sqlBatch(let text):
            return ("batch", text, [])
        case .rpc(let calls):
            guard let call = calls.first else { return ("rpc", "", []) }
            func shown(_ p: RPCParameter) -> String { "\(p.name.isEmpty ? "?" : p.name) \(p.typeInfo.sqlTypeName) = \(p.value)" }
            if case .id(.spExecuteSQL) = call.procedure, let statement = call.parameters.first?.value.stringValue {
                return ("rpc", statement, call.parameters.dropFirst(2).map(shown))
            }
            let name: String
            switch call.procedure {
            case .id(let id): name = id.description
            case .name(let n): name = n
            }
            return ("rpc", name + (calls.count > 1 ? " (+\(calls.count - 1) calls)" : ""), call.parameters.map(shown))
        case .transactionManager(let r):
            return ("transaction", "\(r)", [])
        case .streamed(let type, _):
            return ("message", type.name, [])
        }
    }

    /// Logs request `id`'s start (debug) and remembers when it started.
    func logRequestStarted(_ id: RequestID, _ request: OutgoingRequest) {
        guard let logger, logger.isEnabled(.debug) || logger.isEnabled(.warning) else { return }
        requestStarts[id] = clock.now()
        let d = Self.logDescription(request)
        var procedure: String? = nil
        if case .rpc(let calls) = request, let call = calls.first, case .name(let name) = call.procedure { procedure = name }
        logger.requestStarted(Int(truncatingIfNeeded: id.value), kind: d.kind, text: d.text, parameters: d.parameters,
                              procedure: procedure, connection: logNumber)
    }

    /// Logs request `id`'s end: `rows` received, the error it ended with.
    func logRequestFinished(_ id: RequestID, rows: Int, error: (any Error)?) {
        guard let logger, let start = requestStarts.removeValue(forKey: id) else { return }
        let failure = error.map { $0 as? SQLClientError ?? SQLClientError(.ioError, "\($0)") }
        logger.requestFinished(Int(truncatingIfNeeded: id.value), duration: clock.now() - start, rows: rows,
                               error: failure, connection: logNumber)
    }

    /// Logs the packets in `bytes` (whole packets, as written) at trace level.
    func logPacketsSent(_ bytes: [UInt8]) {
        guard let logger, logger.isEnabled(.trace) else { return }
        var offset = 0
        while offset + PacketHeader.size <= bytes.count {
            let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            guard length >= PacketHeader.size, offset + length <= bytes.count else { break }
            logger.packet(bytes[offset ..< offset + length], sent: true, connection: logNumber)
            offset += length
        }
    }
}

extension SQLClientLogger {
    /// A received packet's header at trace level (its payload goes to the decoder unlogged).
    func packetReceived(_ header: PacketHeader, connection: Int) {
        guard isEnabled(.trace) else { return }
        var w = ByteWriter()
        header.encode(into: &w)
        packet(w.bytes[...], sent: false, connection: connection)
    }
}
