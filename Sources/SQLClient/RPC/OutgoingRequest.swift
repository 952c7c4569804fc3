/// A request the connection sends and reads a response to: a SQL batch ([MS-TDS] 2.2.6.7), an
/// RPC request (2.2.6.6) or a Transaction Manager request (2.2.6.9). Each carries ALL_HEADERS
/// with the session's current transaction descriptor (0 outside a transaction) from TDS 7.2 on.
enum OutgoingRequest: Sendable {
    case sqlBatch(String)
    case rpc([RPCCall])
    case transactionManager(TransactionManagerRequest.Request)
    /// A BULKLOAD message body ([MS-TDS] 2.2.6.1), sent as it is (no ALL_HEADERS). Temporary
    /// (BulkCopy): replaced by the connection's streamed-body entry point when it lands.
    case bulkLoad([UInt8])

    /// The packet type and the message body for `version`, with `descriptor` in ALL_HEADERS.
    /// - Throws: `.invalidParameter` when an RPC parameter value does not fit its TYPE_INFO.
    func encode(descriptor: UInt64, version: TDSVersion) throws(SQLClientError) -> (PacketType, [UInt8]) {
        let headers = AllHeaders.transaction(descriptor: descriptor)
        switch self {
        case .sqlBatch(let sql):
            return (.sqlBatch, SQLBatch(text: sql, allHeaders: headers).encode(version: version))
        case .rpc(let calls):
            do {
                return (.rpc, try RPCRequest(calls: calls, allHeaders: headers).encode(version: version))
            } catch {
                throw SQLClientError(.invalidParameter, "an RPC parameter cannot be encoded: \(error)", underlying: error)
            }
        case .transactionManager(let request):
            return (.transactionManager, TransactionManagerRequest(request, allHeaders: headers).encode(version: version))
        case .bulkLoad(let body):
            return (.bulkLoad, body)
        }
    }

    /// The 8-byte transaction descriptor from a BEGIN TRANSACTION ENVCHANGE, read little-endian
    /// as ALL_HEADERS carries it; 0 when there is none.
    static func descriptor(from bytes: [UInt8]?) -> UInt64 {
        guard let bytes, bytes.count == 8 else { return 0 }
        var d: UInt64 = 0
        for (i, b) in bytes.enumerated() { d |= UInt64(b) << (8 * UInt64(i)) }
        return d
    }
}
