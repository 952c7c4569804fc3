import SQLClientTesting
@testable import TDS
import XCTest

/// SQL Server 2025's json (0xF4) and vector (0xF5): TYPE_INFO and value bytes checked by hand
/// against ../shared/SQL2025.md (the layouts Microsoft.Data.SqlClient and mssql-rs agree on),
/// a captured-style stream decoded whole, byte by byte and at random splits, and every malformed
/// case as a typed error with its offset.
final class JSONVectorTests: XCTestCase {
    static let version = TDSVersion.v7_4

    /// vector(3) float32 [1, -2, 0.5]: hand-written bytes.
    static let vector3: [UInt8] = [
        0x14, 0x00,                                       // USHORTLEN 20 = 8 + 3 × 4
        0xA9, 0x01, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00,   // header: format A9, version 1, 3 dims, float32, 3 zero bytes
        0x00, 0x00, 0x80, 0x3F,                           // 1.0
        0x00, 0x00, 0x00, 0xC0,                           // -2.0
        0x00, 0x00, 0x00, 0x3F,                           // 0.5
    ]

    // MARK: TYPE_INFO

    func testTypeInfoBytesOfJSONAndVector() throws {
        var w = ByteWriter()
        TypeInfo.json.encode(into: &w, version: Self.version)
        XCTAssertEqual(w.bytes, [0xF4], "json TYPE_INFO is the type byte alone")
        w = ByteWriter()
        TypeInfo.vector(dimensions: 3).encode(into: &w, version: Self.version)
        XCTAssertEqual(w.bytes, [0xF5, 0x14, 0x00, 0x00])
        w = ByteWriter()
        TypeInfo.vector(dimensions: 1998).encode(into: &w, version: Self.version)
        XCTAssertEqual(w.bytes, [0xF5, 0x40, 0x1F, 0x00], "1,998 float32 = 8,000 bytes")
        w = ByteWriter()
        TypeInfo.vector(dimensions: 5, elementType: .float16).encode(into: &w, version: Self.version)
        XCTAssertEqual(w.bytes, [0xF5, 0x12, 0x00, 0x01])

        var r = ByteReader([0xF4])
        let json = try TypeInfo.decode(from: &r, version: Self.version)
        XCTAssertEqual(json.type, .json); XCTAssertTrue(json.isPLP); XCTAssertEqual(json.sqlTypeName, "json")
        r = ByteReader([0xF5, 0x12, 0x00, 0x01])
        let v = try TypeInfo.decode(from: &r, version: Self.version)
        XCTAssertEqual(v.vectorElementType, .float16); XCTAssertEqual(v.vectorDimensions, 5)
        XCTAssertEqual(v.sqlTypeName, "vector(5, float16)")
        XCTAssertEqual(TypeInfo.vector(dimensions: 3).sqlTypeName, "vector(3)")
        XCTAssertEqual(TDSDataType.json.name, "JSON"); XCTAssertEqual(TDSDataType.vector.name, "VECTOR")
    }

    func testMalformedVectorTypeInfoIsATypedErrorWithItsOffset() {
        func error(_ bytes: [UInt8]) -> TDSDecodingError? {
            var r = ByteReader(bytes)
            do { _ = try TypeInfo.decode(from: &r, version: Self.version); return nil } catch { return error }
        }
        XCTAssertEqual(error([0xF5, 0x14, 0x00, 0x02])?.code, .invalidValue, "element type 2")
        XCTAssertEqual(error([0xF5, 0x14, 0x00, 0x02])?.offset, 3)
        XCTAssertEqual(error([0xF5, 0x13, 0x00, 0x00])?.code, .invalidLength, "8 + 11 bytes: not whole float32 elements")
        XCTAssertEqual(error([0xF5, 0x13, 0x00, 0x00])?.offset, 1)
        XCTAssertEqual(error([0xF5, 0x44, 0x1F, 0x00])?.code, .invalidLength, "8,004 bytes: above 8,000")
        XCTAssertEqual(error([0xF5, 0x08, 0x00, 0x00])?.code, .invalidLength, "no dimension")
        XCTAssertEqual(error([0xF5, 0x14])?.code, .truncated)
    }

    // MARK: Values

    func testVectorValueBytesDecodeAndEncode() throws {
        var r = ByteReader(Self.vector3)
        let value = try TypeInfo.vector(dimensions: 3).decodeValue(from: &r)
        XCTAssertEqual(value, .vector(SQLVector([1, -2, 0.5])))
        XCTAssertEqual(r.offset, Self.vector3.count)
        XCTAssertEqual(value.canonicalText, "[1.0,-2.0,0.5]")
        XCTAssertEqual(value.floatsValue, [1, -2, 0.5])
        XCTAssertEqual(value.bytesValue, Array(Self.vector3.dropFirst(2)), "bytes: the header and elements")
        var w = ByteWriter()
        try TypeInfo.vector(dimensions: 3).encodeValue(value, into: &w)
        XCTAssertEqual(w.bytes, Self.vector3)
        // NULL is USHORTLEN 0xFFFF.
        r = ByteReader([0xFF, 0xFF])
        XCTAssertEqual(try TypeInfo.vector(dimensions: 3).decodeValue(from: &r), .null)
        w = ByteWriter()
        try TypeInfo.vector(dimensions: 3).encodeValue(.null, into: &w)
        XCTAssertEqual(w.bytes, [0xFF, 0xFF])
    }

    func testFloat16VectorBytes() throws {
        // [1, -2, 65504, 2^-24 (smallest subnormal)] as float16: 3C00, C000, 7BFF, 0001.
        let bytes: [UInt8] = [0x10, 0x00, 0xA9, 0x01, 0x04, 0x00, 0x01, 0, 0, 0, 0x00, 0x3C, 0x00, 0xC0, 0xFF, 0x7B, 0x01, 0x00]
        var r = ByteReader(bytes)
        let info = TypeInfo.vector(dimensions: 4, elementType: .float16)
        let v = try info.decodeValue(from: &r)
        XCTAssertEqual(v, .vector(SQLVector([1, -2, 65504, 0x1p-24], elementType: .float16)))
        var w = ByteWriter()
        try info.encodeValue(v, into: &w)
        XCTAssertEqual(w.bytes, bytes)
        XCTAssertEqual(SQLVector.float16Bits(0.1), 0x2E66, "0.1 rounds to the nearest float16")
        XCTAssertEqual(SQLVector.float16Bits(1 + 0x1p-11), 0x3C00, "a tie rounds to even")
        XCTAssertEqual(SQLVector.float16Bits(70000), 0x7C00, "beyond 65,504: infinity (refused when sent)")
        for h in [UInt16(0x0000), 0x8000, 0x0001, 0x03FF, 0x0400, 0x3555, 0x7BFF, 0xFBFF] {
            XCTAssertEqual(SQLVector.float16Bits(SQLVector.float(fromFloat16Bits: h)), h, "0x\(String(h, radix: 16)) round trips")
        }
    }

    func testJSONValueIsPLPUTF8() throws {
        let doc = #"{"a":[1,2],"ü":"😀"}"#
        var w = ByteWriter()
        try TypeInfo.json.encodeValue(.json(doc), into: &w)
        let utf8 = Array(doc.utf8)
        XCTAssertEqual(w.bytes, [UInt8(utf8.count), 0, 0, 0, 0, 0, 0, 0, UInt8(utf8.count), 0, 0, 0] + utf8 + [0, 0, 0, 0])
        XCTAssertEqual(try TypeInfo.json.decodePLPValue(utf8), .json(doc))
        XCTAssertEqual(try TypeInfo.json.decodePLPValue(nil), .null)
        XCTAssertEqual(SQLValue.json(doc).stringValue, doc)
        XCTAssertEqual(SQLValue.json(doc).bytesValue, utf8)
    }

    func testTheNewCasesDoNotGrowSQLValue() {
        // SQLVector (a byte array reference, an offset, a count, an element type byte) fits the
        // payload of the existing cases (32 bytes): a row of values costs what it did.
        XCTAssertLessThanOrEqual(MemoryLayout<SQLVector>.size, 25)
        XCTAssertLessThanOrEqual(MemoryLayout<SQLValue>.size, 33)
        XCTAssertLessThanOrEqual(MemoryLayout<SQLValue>.stride, 48)
    }

    func testVectorFromJSONText() {
        // What a server that did not acknowledge VECTORSUPPORT sends (varchar(max)).
        XCTAssertEqual(SQLValue.string("[1.0000000e+000,-2.5000000e+000]").floatsValue, [1, -2.5])
        XCTAssertEqual(SQLValue.json(" [ 1 , 2e-1 ] ").floatsValue, [1, 0.2])
        for bad in ["", "[]", "[1,]", "[1 2]", "{\"a\":1}", "[01]", "[1.]", "[nan]", "[1e39]", "[1]x", "[\"1\"]"] {
            XCTAssertNil(SQLVector(jsonArray: bad), bad)
        }
        XCTAssertEqual(SQLVector([0.1, 1e-5, 3]).jsonText, "[0.1,1e-05,3.0]")
    }

    // MARK: Malformed values: a typed error with the offset of the field at fault

    /// The value at offset 10 of a stream: 10 bytes of padding, then USHORTLEN and the value.
    func vectorError(_ value: [UInt8], _ info: TypeInfo = .vector(dimensions: 3)) -> TDSDecodingError? {
        var r = ByteReader([UInt8](repeating: 0, count: 10) + value, start: 10)
        do { _ = try info.decodeValue(from: &r); return nil } catch {
            XCTAssertEqual(r.offset, 10, "the reader is left where it was")
            return error
        }
    }

    func testEveryMalformedVectorIsATypedErrorWithItsOffset() {
        var v = Self.vector3
        // Layout format, then version (offset 10 + 2 + field).
        v[2] = 0xAA
        XCTAssertEqual(vectorError(v)?.code, .invalidValue); XCTAssertEqual(vectorError(v)?.offset, 12)
        v = Self.vector3; v[3] = 2
        XCTAssertEqual(vectorError(v)?.code, .invalidValue); XCTAssertEqual(vectorError(v)?.offset, 13)
        // Header's dimension count disagrees with the length.
        v = Self.vector3; v[4] = 4
        XCTAssertEqual(vectorError(v)?.code, .invalidLength); XCTAssertEqual(vectorError(v)?.offset, 14)
        // Element type float16 in a float32 column (TYPE_INFO mismatch); 3 float16 would also not fill 12 bytes.
        v = Self.vector3; v[6] = 1
        XCTAssertEqual(vectorError(v)?.code, .invalidValue); XCTAssertEqual(vectorError(v)?.offset, 16)
        XCTAssertTrue(vectorError(v)?.detail.contains("float16 in a float32 column") ?? false)
        // Unknown element type.
        v = Self.vector3; v[6] = 7
        XCTAssertEqual(vectorError(v)?.code, .invalidValue); XCTAssertEqual(vectorError(v)?.offset, 16)
        // Reserved bytes.
        v = Self.vector3; v[8] = 1
        XCTAssertEqual(vectorError(v)?.code, .invalidValue); XCTAssertEqual(vectorError(v)?.offset, 17)
        // A partial element: 8 + 11 bytes.
        v = [0x13, 0x00] + Array(Self.vector3[2 ..< 21])
        XCTAssertEqual(vectorError(v)?.code, .invalidLength)
        XCTAssertEqual(vectorError(v)?.offset, 10 + 2 + 8 + 8, "the partial element starts after two whole ones")
        // The value's length disagrees with its metadata (vector(3) = 20 bytes, the value 24 and says 4).
        v = [0x18, 0x00, 0xA9, 0x01, 0x04, 0x00, 0x00, 0, 0, 0] + [UInt8](repeating: 0, count: 16)
        XCTAssertEqual(vectorError(v)?.code, .invalidLength); XCTAssertEqual(vectorError(v)?.offset, 12)
        XCTAssertTrue(vectorError(v)?.detail.contains("in a column of 20") ?? false)
        // Shorter than the header.
        v = [0x04, 0x00, 0xA9, 0x01, 0x00, 0x00]
        XCTAssertEqual(vectorError(v)?.code, .invalidLength); XCTAssertEqual(vectorError(v)?.offset, 12)
        // More than 8,000 bytes (USHORTLEN 8,004).
        v = [0x44, 0x1F] + [UInt8](repeating: 0, count: 8004)
        XCTAssertEqual(vectorError(v, TypeInfo(type: .vector, length: 0, scale: 0))?.code, .invalidLength)
        XCTAssertEqual(vectorError(v, TypeInfo(type: .vector, length: 0, scale: 0))?.offset, 12)
        // A non-finite element (NaN at element 1).
        v = Self.vector3; v[14] = 0x00; v[15] = 0x00; v[16] = 0xC0; v[17] = 0x7F
        XCTAssertEqual(vectorError(v)?.code, .invalidValue); XCTAssertEqual(vectorError(v)?.offset, 10 + 2 + 8 + 4)
        // Incomplete: truncated, so an incremental caller waits for more.
        XCTAssertEqual(vectorError(Array(Self.vector3.prefix(15)))?.code, .truncated)
        // Not a sql_variant base type, and every error names VECTOR.
        XCTAssertEqual(vectorError([0x13, 0x00] + Array(Self.vector3[2 ..< 21]))?.context, "VECTOR")
    }

    func testJSONNotUTF8IsATypedErrorWithItsOffset() {
        let bad: [UInt8] = Array("{\"a\":\"".utf8) + [0xC3, 0x28] + Array("\"}".utf8)
        XCTAssertThrowsError(try TypeInfo.json.decodePLPValue(bad)) { e in
            let error = e as? TDSDecodingError
            XCTAssertEqual(error?.code, .invalidEncoding)
            XCTAssertEqual(error?.offset, 6, "the first byte that starts no UTF-8 sequence")
        }
        XCTAssertEqual(JSONCodec.firstInvalidUTF8([0x61, 0xED, 0xA0, 0x80]), 1, "a UTF-16 surrogate in UTF-8")
        XCTAssertEqual(JSONCodec.firstInvalidUTF8([0xF0, 0x9F, 0x98]), 0, "a sequence cut short")
        XCTAssertEqual(JSONCodec.firstInvalidUTF8(Array("ok 😀".utf8)), 7, "all well-formed: the count")
    }

    // MARK: Token streams

    static let columns = [
        ColumnMetadata(flags: [.nullable], typeInfo: .int, name: "id"),
        ColumnMetadata(flags: [.nullable], typeInfo: .json, name: "doc"),
        ColumnMetadata(flags: [.nullable], typeInfo: .vector(dimensions: 3), name: "v"),
    ]

    /// A captured-style response: COLMETADATA, a ROW, an NBCROW with NULLs, a ROW whose json
    /// comes in 3-byte chunks of unknown total length, a RETURNVALUE of each type, DONE.
    static func stream() throws -> [UInt8] {
        var s = ServerTokens.colMetadata(columns, version: version)
        s += try ServerTokens.row([.int(1), .json(#"{"k":"ü"}"#), .vector(SQLVector([1, -2, 0.5]))], columns: columns)
        s += try ServerTokens.nbcRow([.int(2), .null, .null], columns: columns)
        s += try ServerTokens.row([.int(3), .json("[1,2,3]"), .vector(SQLVector([0, 0, 1e-7]))], columns: columns,
                                  chunking: [nil, .init(sizes: [3], unknownLength: true), nil])
        s += try ServerTokens.returnValue(ordinal: 1, name: "@j", type: .json, value: .json("{}"), version: version)
        s += try ServerTokens.returnValue(ordinal: 2, name: "@v", type: .vector(dimensions: 2, elementType: .float16),
                                          value: .vector(SQLVector([0.5, 2], elementType: .float16)), version: version)
        s += try ServerTokens.returnValue(ordinal: 3, name: "@n", type: .vector(dimensions: 2), value: .null, version: version)
        s += ServerTokens.done(status: .count, currentCommand: 0xC1, rowCount: 3, version: version)
        return s
    }

    func testCapturedStyleStreamWholeByteByByteAndSplit() throws {
        let bytes = try Self.stream()
        // The column bytes by hand: COLMETADATA's json column is UserType, Flags, then F4 alone,
        // then the name (B_VARCHAR, UTF-16LE).
        let doc: [UInt8] = [0, 0, 0, 0, 0x01, 0x00, 0xF4, 3, 0x64, 0, 0x6F, 0, 0x63, 0]
        XCTAssertNotNil(bytes.firstRange(of: doc))
        XCTAssertNotNil(bytes.firstRange(of: Self.vector3), "the ROW's vector value is the hand-written bytes")
        let tokens = try DecoderVerifier.verify(bytes, version: Self.version, randomSplits: 24, seed: 30)
        var rows: [[SQLValue]] = []
        var returns: [String: SQLValue] = [:]
        for t in tokens {
            switch t {
            case .row(let r): rows.append(r.values)
            case .nbcRow(let r): rows.append(r.values)
            case .returnValue(let rv): returns[rv.name] = rv.value
            default: break
            }
        }
        XCTAssertEqual(rows, [
            [.int(1), .json(#"{"k":"ü"}"#), .vector(SQLVector([1, -2, 0.5]))],
            [.int(2), .null, .null],
            [.int(3), .json("[1,2,3]"), .vector(SQLVector([0, 0, 1e-7]))],
        ])
        XCTAssertEqual(returns["@j"], .json("{}"))
        XCTAssertEqual(returns["@v"], .vector(SQLVector([0.5, 2], elementType: .float16)))
        XCTAssertEqual(returns["@n"], .null)
        XCTAssertEqual(rows[2][1].floatsValue, [1, 2, 3], "a json array of numbers reads as [Float] too")
    }

    func testTheRowPathsGiveTheSameValues() throws {
        // The row block (vector kept as its wire bytes, decoded when read) over a result with only a
        // vector column, against the token decoder.
        let cols = [ColumnMetadata(flags: [.nullable], typeInfo: .vector(dimensions: 3), name: "v")]
        var s = ServerTokens.colMetadata(cols, version: Self.version)
        for i in 0 ..< 50 { s += try ServerTokens.row([i % 7 == 0 ? .null : .vector(SQLVector([Float(i), 1, 2]))], columns: cols) }
        s += ServerTokens.done(version: Self.version)
        var decoder = TokenStreamDecoder(version: Self.version)
        decoder.append(s)
        var got: [SQLValue] = []
        var tokens = TokenStreamDecoder(version: Self.version)
        tokens.append(s)
        var expected: [SQLValue] = []
        while let t = try tokens.next() { expected += t.rowValues ?? [] }
        while true {
            if var block = decoder.makeWireRowBlock() {
                let (n, end) = decoder.appendBufferedRows(to: &block, limit: 1000, byteLimit: 1 << 20)
                got += block.values(rows: 0 ..< n)
                if end == .limit { continue }
                if end == .needBytes { break }
            }
            guard let t = try decoder.next() else { break }
            got += t.rowValues ?? []
        }
        XCTAssertEqual(got, expected)
        XCTAssertEqual(got.count, 50)
        XCTAssertEqual(got[0], .null)
        XCTAssertEqual(got[1], .vector(SQLVector([1, 1, 2])))
    }

    func testMalformedVectorInAStreamNamesTheRowAndOffset() throws {
        let cols = [ColumnMetadata(flags: [.nullable], typeInfo: .vector(dimensions: 3), name: "v")]
        let meta = ServerTokens.colMetadata(cols, version: Self.version)
        var bad = Self.vector3
        bad[6] = 1   // float16 in a float32 column
        let bytes = meta + [0xD1] + bad + ServerTokens.done(version: Self.version)
        let outcome = try DecoderVerifier.outcome(bytes, version: Self.version, randomSplits: 8, seed: 3)
        let error = try XCTUnwrap(outcome.error)
        XCTAssertEqual(error.code, .invalidValue)
        XCTAssertEqual(error.offset, meta.count + 1 + 6, "absolute offset of the header's element type byte")
        XCTAssertEqual(error.context, "ROW")
    }

    func testMalformedJSONInAStreamIsInvalidEncoding() throws {
        let cols = [ColumnMetadata(flags: [.nullable], typeInfo: .json, name: "j")]
        let meta = ServerTokens.colMetadata(cols, version: Self.version)
        let value: [UInt8] = [3, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0x61, 0xFF, 0x62, 0, 0, 0, 0]
        let outcome = try DecoderVerifier.outcome(meta + [0xD1] + value + ServerTokens.done(version: Self.version),
                                                  version: Self.version, randomSplits: 8, seed: 4)
        let error = try XCTUnwrap(outcome.error)
        XCTAssertEqual(error.code, .invalidEncoding)
        XCTAssertEqual(error.offset, meta.count + 1, "the PLP value's start")
        XCTAssertTrue(error.detail.contains("byte 1 of its 3"), error.detail)
    }

    // MARK: Large values at memory speed (issue 43)

    /// The value bytes (header and elements, no length prefix) of `values` as `element`, each
    /// element's bits as given (so a NaN or an infinity can be written).
    static func vectorBytes(float32 bits: [UInt32]) -> [UInt8] {
        var b: [UInt8] = [0xA9, 0x01, UInt8(bits.count & 0xFF), UInt8(bits.count >> 8), 0x00, 0, 0, 0]
        for x in bits { b += [UInt8(x & 0xFF), UInt8(x >> 8 & 0xFF), UInt8(x >> 16 & 0xFF), UInt8(x >> 24)] }
        return b
    }

    static func vectorBytes(float16 bits: [UInt16]) -> [UInt8] {
        var b: [UInt8] = [0xA9, 0x01, UInt8(bits.count & 0xFF), UInt8(bits.count >> 8), 0x01, 0, 0, 0]
        for x in bits { b += [UInt8(x & 0xFF), UInt8(x >> 8)] }
        return b
    }

    func testNonFiniteElementFoundAtEveryPositionOfTheVectorisedCheck() throws {
        // Lengths around the 8- and 16-element steps and the largest; positions at the start, in a
        // step, at a step's end, in the tail and last; NaN and both infinities, with either sign.
        let bad32: [UInt32] = [0x7F80_0000, 0xFF80_0000, 0x7FC0_0000, 0xFFFF_FFFF, 0x7F80_0001]
        for n in [1, 7, 8, 9, 15, 16, 17, 33, 1998] {
            for at in Set([0, n / 2, min(7, n - 1), min(8, n - 1), n - 1]) {
                for b in bad32 {
                    var bits = (0 ..< n).map { UInt32(truncatingIfNeeded: $0 &* 0x0101_0101) & 0x7F7F_FFFF }   // finite
                    bits[at] = b
                    let bytes = Self.vectorBytes(float32: bits)
                    var r = ByteReader(bytes)
                    XCTAssertThrowsError(try SQLVector.decode(from: &r, count: bytes.count, declaredLength: 0, declaredElement: nil)) { e in
                        let error = e as? TDSDecodingError
                        XCTAssertEqual(error?.code, .invalidValue, "n \(n) at \(at)")
                        XCTAssertEqual(error?.offset, 8 + 4 * at, "n \(n) at \(at) bits \(b)")
                    }
                }
            }
        }
        let bad16: [UInt16] = [0x7C00, 0xFC00, 0x7E00, 0xFFFF]
        for n in [1, 15, 16, 17, 31, 32, 33, 3996] {
            for at in Set([0, n / 2, min(15, n - 1), min(16, n - 1), n - 1]) {
                for b in bad16 {
                    var bits = (0 ..< n).map { UInt16(truncatingIfNeeded: $0 &* 0x0101) & 0x7BFF }
                    bits[at] = b
                    let bytes = Self.vectorBytes(float16: bits)
                    var r = ByteReader(bytes)
                    XCTAssertThrowsError(try SQLVector.decode(from: &r, count: bytes.count, declaredLength: 0, declaredElement: nil)) { e in
                        XCTAssertEqual((e as? TDSDecodingError)?.offset, 8 + 2 * at, "n \(n) at \(at) bits \(b)")
                    }
                }
            }
        }
        // The largest finite values, zeros and subnormals of either sign pass.
        let finite32: [UInt32] = [0x7F7F_FFFF, 0xFF7F_FFFF, 0, 0x8000_0000, 1, 0x8000_0001, 0x007F_FFFF, 0x3F80_0000, 0xBF80_0000]
        let bytes = Self.vectorBytes(float32: finite32 + finite32)
        var r = ByteReader(bytes)
        let v = try SQLVector.decode(from: &r, count: bytes.count, declaredLength: 0, declaredElement: .float32)
        XCTAssertEqual(v.values.map(\.bitPattern), finite32 + finite32, "copied as a block: every bit as sent")
        let finite16: [UInt16] = [0x7BFF, 0xFBFF, 0, 0x8000, 1, 0x83FF, 0x3C00]
        let bytes16 = Self.vectorBytes(float16: Array(repeating: finite16, count: 3).flatMap { $0 })
        r = ByteReader(bytes16)
        let h = try SQLVector.decode(from: &r, count: bytes16.count, declaredLength: 0, declaredElement: .float16)
        XCTAssertEqual(h.values.count, 21)
        XCTAssertEqual(Array(h.values.prefix(7)), [65504, -65504, 0, -0.0, 0x1p-24, -(0x3FF * 0x1p-24), 1])
        XCTAssertEqual(h.values[3].sign, .minus)
    }

    func testTypedVectorReadsFromTheBlockEqualTheValue() throws {
        let cols = [ColumnMetadata(flags: [], typeInfo: .int, name: "id"),
                    ColumnMetadata(flags: [.nullable], typeInfo: .vector(dimensions: 1998), name: "v"),
                    ColumnMetadata(flags: [.nullable], typeInfo: .vector(dimensions: 21, elementType: .float16), name: "h")]
        var s = ServerTokens.colMetadata(cols, version: Self.version)
        for i in 0 ..< 6 {
            let v = SQLVector((0 ..< 1998).map { Float(($0 &* 7 &+ i) % 2001 - 1000) / 1024 })
            let h = SQLVector((0 ..< 21).map { Float($0 - 10) * 0.5 + Float(i) }, elementType: .float16)
            let row: [SQLValue] = [.int(Int32(i)), i % 3 == 2 ? .null : .vector(v), i == 4 ? .null : .vector(h)]
            s += try row.contains(where: \.isNull) ? ServerTokens.nbcRow(row, columns: cols) : ServerTokens.row(row, columns: cols)
        }
        s += ServerTokens.done(version: Self.version)
        var decoder = TokenStreamDecoder(version: Self.version)
        decoder.append(s)
        guard case .colMetadata? = try decoder.next() else { return XCTFail("COLMETADATA first") }
        var block = try XCTUnwrap(decoder.makeWireRowBlock())
        let (n, _) = decoder.appendBufferedRows(to: &block, limit: 100, byteLimit: 1 << 30)
        XCTAssertEqual(n, 6)
        for row in 0 ..< n {
            for column in 1 ... 2 {
                let value = block.value(row: row, column: column)
                switch block.floats(row: row, column: column) {
                case .value(let f):
                    XCTAssertEqual(f.map(\.bitPattern), value.vectorValue?.values.map(\.bitPattern), "row \(row) column \(column)")
                    XCTAssertEqual(f.count, column == 1 ? 1998 : 21)
                case .null: XCTAssertEqual(value, .null, "row \(row) column \(column)")
                case .other: XCTFail("a vector column is read by floats(row:column:)")
                }
                switch block.vector(row: row, column: column) {
                case .value(let v): XCTAssertEqual(.vector(v), value)
                case .null: XCTAssertEqual(value, .null)
                case .other: XCTFail("a vector column is read by vector(row:column:)")
                }
                // The view: the value's wire bytes (header and elements).
                switch block.withValueBytes(row: row, column: column, { Array($0) }) {
                case .value(let b): XCTAssertEqual(b, value.bytesValue)
                case .null: XCTAssertEqual(value, .null)
                case .other: XCTFail("a vector's bytes are lent")
                }
            }
            if case .other = block.floats(row: row, column: 0) {} else { XCTFail("an int column is not a vector") }
            if case .other = block.withValueBytes(row: row, column: 0, { $0.count }) {} else { XCTFail("an int has no bytes lent") }
        }
    }

    /// A block's vector is a view of the block's bytes: no array of its own, every element and
    /// every derived value (array, JSON text, wire bytes, hash) equal to a vector built from the
    /// array; it outlives the block; a changed element type is what it is sent as.
    func testABlocksVectorIsAViewOfTheBlocksBytes() throws {
        let cols = [ColumnMetadata(flags: [.nullable], typeInfo: .vector(dimensions: 1998), name: "v"),
                    ColumnMetadata(flags: [.nullable], typeInfo: .vector(dimensions: 21, elementType: .float16), name: "h")]
        let floats = (0 ..< 1998).map { Float(($0 &* 7) % 2001 - 1000) / 1024 }
        let halves = (0 ..< 21).map { Float($0 - 10) * 0.5 + 0.25 }
        let built = [SQLVector(floats), SQLVector(halves, elementType: .float16)]
        var s = ServerTokens.colMetadata(cols, version: Self.version)
        s += try ServerTokens.row(built.map { .vector($0) }, columns: cols)
        s += ServerTokens.done(version: Self.version)
        var decoder = TokenStreamDecoder(version: Self.version)
        decoder.append(s)
        guard case .colMetadata? = try decoder.next() else { return XCTFail("COLMETADATA first") }
        var block: WireRowBlock? = try XCTUnwrap(decoder.makeWireRowBlock())
        XCTAssertEqual(decoder.appendBufferedRows(to: &block!, limit: 10, byteLimit: 1 << 30).0, 1)
        var views: [SQLVector] = []
        for column in 0 ..< 2 {
            guard case .vector(let v) = block!.value(row: 0, column: column),
                  case .value(let typed) = block!.vector(row: 0, column: column) else { return XCTFail("column \(column) is a vector") }
            // A view: the block's own bytes, shared (no copy).
            let blockBytes = block!.bytes.withUnsafeBufferPointer { $0.baseAddress }
            XCTAssertEqual(v.bytes.withUnsafeBufferPointer { $0.baseAddress }, blockBytes, "column \(column)")
            XCTAssertEqual(typed.bytes.withUnsafeBufferPointer { $0.baseAddress }, blockBytes)
            views.append(v)
        }
        block = nil   // the views keep the bytes
        for (v, b) in zip(views, built) {
            XCTAssertEqual(v.count, b.dimensions)
            XCTAssertEqual(v.elementType, b.elementType)
            XCTAssertEqual(v.map(\.bitPattern), b.values.map(\.bitPattern))
            XCTAssertEqual(v.values.map(\.bitPattern), b.values.map(\.bitPattern))
            XCTAssertEqual(v[v.count - 1].bitPattern, b.values[b.dimensions - 1].bitPattern)
            XCTAssertEqual(v, b)
            XCTAssertEqual(v.hashValue, b.hashValue)
            XCTAssertEqual(v.jsonText, b.jsonText)
            XCTAssertEqual(try v.wireBytes(), try b.wireBytes())
        }
        XCTAssertNotEqual(views[0], SQLVector(Array(floats.dropLast()) + [1]))
        // Read into one buffer: its storage reused while the length is the same.
        var buffer: [Float] = []
        views[0].copyElements(into: &buffer)
        XCTAssertEqual(buffer.map(\.bitPattern), floats.map(\.bitPattern))
        let storage = buffer.withUnsafeBufferPointer { $0.baseAddress }
        views[0].copyElements(into: &buffer)
        XCTAssertEqual(buffer.withUnsafeBufferPointer { $0.baseAddress }, storage, "reused, not reallocated")
        views[1].copyElements(into: &buffer)
        XCTAssertEqual(buffer.map(\.bitPattern), halves.map(\.bitPattern), "float16 widened")
        built[1].copyElements(into: &buffer)
        XCTAssertEqual(buffer, halves)
        // Sent as float16 (each float32 element rounded), as an array-built vector would be.
        var narrowed = views[0]
        narrowed.elementType = .float16
        var expected = built[0]
        expected.elementType = .float16
        XCTAssertEqual(try narrowed.wireBytes(), try expected.wireBytes())
        XCTAssertEqual(narrowed[1], floats[1], "the elements stay what the wire holds")
        // Setting the elements replaces the view.
        var replaced = views[1]
        replaced.values = [1, 2]
        XCTAssertEqual(Array(replaced), [1, 2])
        XCTAssertEqual(replaced.elementType, .float16)
        XCTAssertEqual(replaced.byteCount, 12)
    }
}
