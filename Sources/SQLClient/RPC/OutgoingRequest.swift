import TDS

/// A request the connection sends and reads a response to: a SQL batch ([MS-TDS] 2.2.6.7), an
/// RPC request (2.2.6.6), a Transaction Manager request (2.2.6.9), each carrying ALL_HEADERS
/// with the session's current transaction descriptor (0 outside a transaction) from TDS 7.2
/// on; or a message whose body is produced piece by piece (``RequestBody``).
package enum OutgoingRequest: Sendable {
    case sqlBatch(String)
    case rpc([RPCCall])
    case transactionManager(TransactionManagerRequest.Request)
    /// A message of `type` whose body comes from `body` as it is produced (for example
    /// BULKLOAD, 0x07, row by row): written packet by packet as the chunks arrive.
    case streamed(PacketType, RequestBody)

    /// The packet type and the message body for `version`, with `descriptor` in ALL_HEADERS.
    /// - Throws: `.invalidParameter` when an RPC parameter value does not fit its TYPE_INFO.
    func encode(descriptor: UInt64, version: TDSVersion) throws(SQLClientError) -> (PacketType, RequestBody) {
        let headers = AllHeaders.transaction(descriptor: descriptor)
        switch self {
        case .sqlBatch(let sql):
            return (.sqlBatch, .bytes(SQLBatch(text: sql, allHeaders: headers).encode(version: version)))
        case .rpc(let calls):
            do {
                return (.rpc, .bytes(try RPCRequest(calls: calls, allHeaders: headers).encode(version: version)))
            } catch {
                throw SQLClientError(.invalidParameter, "an RPC parameter cannot be encoded: \(error)", underlying: error)
            }
        case .transactionManager(let request):
            return (.transactionManager, .bytes(TransactionManagerRequest(request, allHeaders: headers).encode(version: version)))
        case .streamed(let type, let body):
            return (type, body)
        }
    }

    /// The 8-byte transaction descriptor from a BEGIN TRANSACTION ENVCHANGE, read little-endian
    /// as ALL_HEADERS carries it; 0 when there is none.
    static func descriptor(from bytes: [UInt8]?) -> UInt64 {
        guard let bytes, bytes.count == 8 else { return 0 }
        var reader = ByteReader(bytes)
        return (try? reader.readUInt64LE()) ?? 0
    }
}

/// The body of an outgoing message: whole, or produced piece by piece.
package enum RequestBody: Sendable {
    /// The whole body at once.
    case bytes([UInt8])
    /// The next piece of the body each time it is called, nil at its end. Pieces may have any
    /// size (they are cut into packets of the negotiated size as they come). Called on the
    /// connection's executor, one call at a time; a throw ends the message with IGNORE.
    case produced(@Sendable () async throws -> [UInt8]?)

    /// The body when it is whole (``bytes(_:)``), else nil.
    var wholeBytes: [UInt8]? {
        if case .bytes(let b) = self { return b }
        return nil
    }
}
