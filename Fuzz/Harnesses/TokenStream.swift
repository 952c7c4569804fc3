// libFuzzer harness: TokenStreamDecoder ([MS-TDS] 2.2.7) with no result-set context.
// Byte 0 picks the TDS version and column encryption, byte 1 the chunk size; the rest is a
// token stream (a TABULAR_RESULT message body).
// Invariants: no trap; the same tokens and error whole, byte by byte and in chunks; errors name
// an offset inside the stream.
import TDS

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTokenStream(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let input = fuzzBytes(data, size)
    guard input.count >= 2 else { return 0 }
    let version = fuzzVersions[Int(input[0] & 0x7F) % fuzzVersions.count]
    let chunk = Int(input[1]) % 64 + 1
    let start = TokenStreamDecoder(version: version, options: .init(columnEncryption: input[0] & 0x80 != 0))
    checkStream(Array(input.dropFirst(2)), from: start, chunk: chunk)
    return 0
}
