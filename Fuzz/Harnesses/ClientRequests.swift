// libFuzzer harness: the other client requests by ClientRequest.decode (SQL_BATCH, RPC with
// parameter values and TVPs, TRANSACTION_MANAGER, FEDAUTH_TOKEN, ATTENTION). Byte 0 picks the
// TDS version, byte 1 the packet type and the ALL_HEADERS rule.
// Invariants: no trap; errors name an offset inside the body.
import TDS

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzClientRequests(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let input = fuzzBytes(data, size)
    guard input.count >= 2 else { return 0 }
    let version = fuzzVersions[Int(input[0]) % fuzzVersions.count]
    let types: [PacketType] = [.sqlBatch, .rpc, .transactionManager, .federatedAuthToken, .attention, .prelogin]
    let type = types[Int(input[1] & 0x0F) % types.count]
    let allHeaders: Bool? = input[1] & 0x30 == 0 ? nil : (input[1] & 0x10 != 0)
    let body = Array(input.dropFirst(2))
    do {
        let request = try ClientRequest.decode(type: type, payload: body, version: version, allHeaders: allHeaders)
        _ = "\(request)"
    } catch {
        checkOffset(error, inputCount: body.count)
    }
    return 0
}
