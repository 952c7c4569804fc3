// libFuzzer harness: the SQL Server Browser reply parser ([MC-SQLR] 2.2.5 SVR_RESP).
// Invariants: no trap; errors are SQLClientError.
import SQLClient

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSSRP(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let input = fuzzBytes(data, size)
    do {
        let instances = try SQLServerBrowser.parseResponse(input)
        for entry in instances { _ = entry["tcp"].flatMap { Int($0) } }
    } catch is SQLClientError {
    } catch {
        invariant(false, "not a SQLClientError: \(error)")
    }
    return 0
}
