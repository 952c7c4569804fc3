// libFuzzer harness: PRELOGIN ([MS-TDS] 2.2.6.5) decoding. Byte 0 picks the TDS version.
// Invariants: no trap; errors name an offset inside the body; a decoded message's encoding decodes
// and re-encodes to the same bytes.
import TDS

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPrelogin(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let input = fuzzBytes(data, size)
    guard !input.isEmpty else { return 0 }
    let version = fuzzVersions[Int(input[0]) % fuzzVersions.count]
    let body = Array(input.dropFirst())
    do {
        let message = try Prelogin.decode(from: body, version: version)
        // Encoding sorts options by token, so compare encodings, not option order.
        let encoded = message.encode()
        let again = try Prelogin.decode(from: encoded, version: version)
        invariant(again.encode() == encoded, "PRELOGIN does not survive encode/decode: \(message) became \(again)")
    } catch {
        checkOffset(error, inputCount: body.count)
    }
    return 0
}
