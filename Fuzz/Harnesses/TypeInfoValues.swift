// libFuzzer harness: every TYPE_INFO ([MS-TDS] 2.2.5.6) and value decoder (2.2.5.2, 2.2.5.5).
// Byte 0 picks the TDS version; the rest is a TYPE_INFO followed by values of that type (for
// PLP types, the rest is one PLP value's bytes). Every decoded value is re-encoded when the
// type can encode it; decoding and encoding that again must give the same bytes.
// Invariants: no trap; errors name an offset inside the input; a failed decodeValue leaves the
// reader where it was.
import TDS

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTypeInfoValues(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let input = fuzzBytes(data, size)
    guard !input.isEmpty else { return 0 }
    let version = fuzzVersions[Int(input[0]) % fuzzVersions.count]
    let body = Array(input.dropFirst())
    var reader = ByteReader(body)
    let info: TypeInfo
    do {
        info = try TypeInfo.decode(from: &reader, version: version)
    } catch {
        checkOffset(error, inputCount: body.count)
        return 0
    }
    _ = info.description
    if info.isPLP {
        do {
            _ = try info.decodePLPValue(Array(body[reader.offset...]))
        } catch {
            checkOffset(error, inputCount: body.count - reader.offset)
        }
        return 0
    }
    for _ in 0..<64 where !reader.isAtEnd {
        let before = reader.offset
        do {
            let value = try info.decodeValue(from: &reader)
            invariant(reader.offset > before || info.type == .null, "decodeValue consumed nothing")
            var w = ByteWriter()
            if (try? info.encodeValue(value, into: &w)) != nil {
                var r2 = ByteReader(w.bytes)
                if let again = try? info.decodeValue(from: &r2) {
                    var w2 = ByteWriter()
                    if (try? info.encodeValue(again, into: &w2)) != nil {
                        invariant(w2.bytes == w.bytes, "\(info): \(value) does not re-encode stably")
                    }
                }
            }
        } catch {
            invariant(reader.offset == before, "a failed decodeValue moved the reader")
            checkOffset(error, inputCount: body.count)
            break
        }
    }
    return 0
}
