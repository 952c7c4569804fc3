// libFuzzer harness: LOGIN7 ([MS-TDS] 2.2.6.4) decoding. Byte 0 picks the TDS version.
// Invariants: no trap; errors name an offset inside the body; a decoded LOGIN7 re-encodes to
// bytes that decode to the same LOGIN7 (when a field is over its limit, encode cuts it, so
// the invariant is then that encoding is idempotent: the cut LOGIN7 encodes to the same bytes).
import TDS

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLogin7(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let input = fuzzBytes(data, size)
    guard !input.isEmpty else { return 0 }
    let version = fuzzVersions[Int(input[0]) % fuzzVersions.count]
    let body = Array(input.dropFirst())
    do {
        let login = try Login7.decode(from: body, version: version)
        let encoded = login.encode(version: version)
        let again: Login7
        do {
            again = try Login7.decode(from: encoded, version: version)
        } catch {
            invariant(false, "a decoded LOGIN7 encodes to bytes that do not decode: \(error)")
            return 0
        }
        if login.limitViolation == nil {
            invariant(again == login, "LOGIN7 does not survive encode/decode")
        } else {
            invariant(again.encode(version: version) == encoded, "a cut LOGIN7 does not encode to the same bytes")
        }
        _ = "\(login)"
        // SESSIONRECOVERY feature data ([MS-TDS] 2.2.6.4): two records decode, re-encode and decode the same.
        if let data = login.featureExt?.first(where: { $0.id == Login7Feature.sessionRecoveryID })?.data {
            do {
                if let recovery = try SessionRecoveryFeature.decode(data) {
                    let again = try SessionRecoveryFeature.decode(recovery.feature.data)
                    invariant(again == recovery, "SESSIONRECOVERY data does not survive encode/decode")
                }
            } catch {
                checkOffset(error, inputCount: data.count)
            }
        }
    } catch {
        checkOffset(error, inputCount: body.count)
    }
    return 0
}
