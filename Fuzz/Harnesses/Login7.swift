// libFuzzer harness: LOGIN7 ([MS-TDS] 2.2.6.4) decoding. Byte 0 picks the TDS version.
// Invariants: no trap; errors name an offset inside the body; a decoded LOGIN7 re-encodes to
// bytes that decode to the same LOGIN7.
import TDS

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLogin7(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let input = fuzzBytes(data, size)
    guard !input.isEmpty else { return 0 }
    let version = fuzzVersions[Int(input[0]) % fuzzVersions.count]
    let body = Array(input.dropFirst())
    do {
        let login = try Login7.decode(from: body, version: version)
        let again = try Login7.decode(from: login.encode(version: version), version: version)
        invariant(again == login, "LOGIN7 does not survive encode/decode")
        _ = "\(login)"
    } catch {
        checkOffset(error, inputCount: body.count)
    }
    return 0
}
