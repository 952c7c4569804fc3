// libFuzzer harness: SQL Server 2025's json (0xF4) and vector (0xF5) codecs.
// Byte 0 picks the codec (mod 4):
//   0  vector: bytes 1-4 are a VECTOR TYPE_INFO after its type byte (USHORT max length, element
//      type); the rest are values (USHORTLEN, header, elements), decoded until an error or the end.
//      A decoded vector re-encodes to the same bytes, and its JSON text reads back as itself.
//   1  json: the rest is one PLP value's assembled bytes (UTF-8). A decoded document re-encodes
//      to the same bytes.
//   2  a vector's JSON array text (what a server that did not acknowledge VECTORSUPPORT sends):
//      whatever parses prints as a JSON array that parses to the same elements.
//   3  float16: every pair of bytes is binary16 bits; a finite one converts to Float and back to
//      the same bits.
// Invariants: no trap; errors name an offset inside the input; a failed decodeValue leaves the
// reader where it was.
import TDS

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJsonVector(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let input = fuzzBytes(data, size)
    guard let selector = input.first else { return 0 }
    let body = Array(input.dropFirst())
    switch selector % 4 {
    case 0: fuzzVectorValues(body)
    case 1: fuzzJSONValue(body)
    case 2: fuzzVectorText(body)
    default: fuzzFloat16(body)
    }
    return 0
}

private func fuzzVectorValues(_ body: [UInt8]) {
    var reader = ByteReader([0xF5] + body)
    let info: TypeInfo
    do {
        info = try TypeInfo.decode(from: &reader, version: .v7_4)
    } catch {
        checkOffset(error, inputCount: body.count + 1)
        return
    }
    invariant(info.type == .vector, "a VECTOR TYPE_INFO decoded as \(info.type)")
    invariant(info.length > 8 && info.length <= 8000, "vector length \(info.length) accepted")
    _ = info.sqlTypeName
    for _ in 0 ..< 32 where !reader.isAtEnd {
        let before = reader.offset
        do {
            let value = try info.decodeValue(from: &reader)
            invariant(reader.offset > before, "decodeValue consumed nothing")
            var w = ByteWriter()
            do {
                try info.encodeValue(value, into: &w)
            } catch {
                invariant(false, "\(info): a decoded value does not encode: \(error)")
            }
            invariant(w.bytes == Array(reader.bytes[before ..< reader.offset]), "\(info): re-encoding changed the bytes")
            if case .vector(let v) = value {
                invariant(v.byteCount == info.length, "a vector of \(v.byteCount) bytes in \(info.sqlTypeName)")
                let back = SQLVector(jsonArray: v.jsonText, elementType: v.elementType)
                invariant(back?.values == v.values, "\(v.jsonText) does not read back")
            }
        } catch {
            invariant(reader.offset == before, "a failed decodeValue moved the reader")
            checkOffset(error, inputCount: body.count + 1)
            break
        }
    }
}

private func fuzzJSONValue(_ body: [UInt8]) {
    do {
        let value = try TypeInfo.json.decodePLPValue(body)
        guard case .json(let text) = value else {
            invariant(false, "json decoded as \(value.kindName)")
            return
        }
        invariant(Array(text.utf8) == body, "json text is not its bytes")
        var w = ByteWriter()
        try TypeInfo.json.encodeValue(value, into: &w)
        let chunks = (body.count + 7999) / 8000   // total length, chunks of at most 8,000 bytes, terminator
        invariant(w.count == 8 + body.count + 4 * chunks + 4, "json PLP encoding of \(body.count) bytes is \(w.count) bytes")
        _ = value.floatsValue
    } catch {
        invariant(error.code == .invalidEncoding, "json failed with \(error.code)")
        checkOffset(error, inputCount: body.count)
    }
}

private func fuzzVectorText(_ body: [UInt8]) {
    let text = String(decoding: body, as: UTF8.self)
    for element in SQLVector.ElementType.allCases {
        guard let v = SQLVector(jsonArray: text, elementType: element) else { continue }
        invariant(!v.values.isEmpty && v.values.allSatisfy(\.isFinite), "a vector with no or non-finite elements")
        let again = SQLVector(jsonArray: v.jsonText, elementType: element)
        invariant(again == v, "\(v.jsonText) does not read back as itself")
        if element == .float32 { _ = try? v.wireBytes() }
    }
}

private func fuzzFloat16(_ body: [UInt8]) {
    var i = 0
    while i + 1 < body.count {
        let h = UInt16(body[i]) | UInt16(body[i + 1]) << 8
        let f = SQLVector.float(fromFloat16Bits: h)
        if h & 0x7C00 != 0x7C00 {
            invariant(SQLVector.float16Bits(f) == h, "float16 0x\(String(h, radix: 16)) does not round trip")
        } else {
            invariant(!f.isFinite, "an infinity or NaN bit pattern became finite")
        }
        i += 2
    }
}
