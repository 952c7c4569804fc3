import XCTest
@testable import TDS
import SQLClientTesting

/// DATACLASSIFICATION ([MS-TDS] 2.2.7.5) decoded as its bytes arrive (``DataClassificationProgress``):
/// the same token and the same errors whole, byte by byte and split at random, in linear work.
final class DataClassificationTests: XCTestCase {
    /// A DATACLASSIFICATION (token byte included) of `labels` labels, `types` information types
    /// and `columns` columns of 0 to 4 properties; ranks when `version` is 2.
    func token(labels: Int, types: Int, columns: Int, version: UInt8) -> (bytes: [UInt8], value: DataClassification) {
        let rank = version >= 2
        let l = (0 ..< labels).map { DataClassification.Label(name: "Label \($0) é", id: "id-\($0)") }
        let t = (0 ..< types).map { DataClassification.Label(name: "Type \($0)", id: "\($0 * 7)") }
        let c = (0 ..< columns).map { i in
            (0 ..< i % 5).map { DataClassification.Property(labelIndex: UInt16(($0 + i) % max(labels, 1)),
                                                             informationTypeIndex: UInt16(i % max(types, 1)),
                                                             rank: rank ? Int32(10 * ($0 % 5)) : nil) }
        }
        var w = ByteWriter()
        w.writeUInt8(0xA3)
        for list in [l, t] {
            w.writeUInt16LE(UInt16(list.count))
            for x in list { w.writeBVarChar(x.name); w.writeBVarChar(x.id) }
        }
        if rank { w.writeInt32LE(20) }
        w.writeUInt16LE(UInt16(c.count))
        for props in c {
            w.writeUInt16LE(UInt16(props.count))
            for p in props {
                w.writeUInt16LE(p.labelIndex); w.writeUInt16LE(p.informationTypeIndex)
                if let r = p.rank { w.writeInt32LE(r) }
            }
        }
        return (w.bytes, DataClassification(labels: l, informationTypes: t, rank: rank ? 20 : nil, columns: c))
    }

    let done: [UInt8] = [0xFD, 0x00, 0x00, 0xC1, 0x00, 0, 0, 0, 0, 0, 0, 0, 0]

    func testALargeTokenIsTheSameWholeByteByByteAndSplitAtRandom() throws {
        for version: UInt8 in [1, 2] {
            let (bytes, value) = token(labels: 250, types: 200, columns: 600, version: version)
            XCTAssertGreaterThan(bytes.count, 15_000)
            let out = try DecoderVerifier.verify(bytes + done, version: .v7_4,
                                                 options: .init(dataClassificationVersion: version), randomSplits: 12, seed: 18)
            XCTAssertEqual(out.first, .dataClassification(value))
            XCTAssertEqual(out.count, 2)
        }
    }

    /// Fed one byte at a time, no attempt re-reads more than one unit (a B_VARCHAR's length byte,
    /// at most 8 bytes of a property): the bytes examined stay within a small multiple of the
    /// token's length. Decoding from the token's first byte on every append (as before) examines
    /// about length²/2 bytes: 100 M for this 20 KB token.
    func testByteByByteWorkIsLinearInTheTokensLength() throws {
        let (bytes, value) = token(labels: 250, types: 200, columns: 600, version: 2)
        XCTAssertGreaterThan(bytes.count, 20_000)
        let (tokens, examined) = try examinedBytes(bytes, options: .init(dataClassificationVersion: 2))
        XCTAssertEqual(tokens, [.dataClassification(value)])
        XCTAssertLessThanOrEqual(examined, 4 * bytes.count)
        XCTAssertGreaterThanOrEqual(examined, bytes.count)
        let (_, whole) = try examinedBytes(bytes, piece: bytes.count, options: .init(dataClassificationVersion: 2))
        XCTAssertEqual(whole, bytes.count, "decoded whole, each byte is read once")
    }

    /// A malformed label (an unpaired surrogate) deep in the token is the same error, at the same
    /// offset, however the bytes arrive; so is a token the message ends inside of.
    func testErrorsAreTheSameHoweverTheBytesArrive() throws {
        var (bytes, _) = token(labels: 60, types: 10, columns: 20, version: 1)
        let at = 4   // the first label's first UTF-16 unit (after the token byte, the count and the length byte)
        bytes[at] = 0x00; bytes[at + 1] = 0xDC   // a lone low surrogate
        let bad = try DecoderVerifier.outcome([0x79, 0, 0, 0, 0] + bytes, version: .v7_4, randomSplits: 12, seed: 5)
        XCTAssertEqual(bad.tokens.count, 1)
        XCTAssertEqual(bad.error?.code, .invalidEncoding)
        XCTAssertEqual(bad.error?.context, "DATACLASSIFICATION")
        XCTAssertEqual(bad.error?.offset, 5 + at)

        let (whole, _) = token(labels: 60, types: 10, columns: 20, version: 1)
        let cut = Array(whole.dropLast(3))
        let truncated = try DecoderVerifier.outcome([0x79, 0, 0, 0, 0] + cut, version: .v7_4, randomSplits: 12, seed: 6)
        XCTAssertEqual(truncated.error?.code, .truncated)
        XCTAssertEqual(truncated.error?.context, "DATACLASSIFICATION")
        XCTAssertEqual(truncated.error?.offset, 5)
        XCTAssertEqual(truncated.error?.detail, "the message ended inside the token: \(cut.count) byte(s) of it received")
    }

    /// The standalone decoder reads the same token, and a truncated one throws `.truncated` at
    /// the read that ran out of bytes.
    func testDecodeWholeAndTruncated() throws {
        let (bytes, value) = token(labels: 5, types: 3, columns: 7, version: 2)
        var r = ByteReader(bytes, start: 1)
        XCTAssertEqual(try DataClassification.decode(from: &r, version: 2), value)
        XCTAssertTrue(r.isAtEnd)
        var short = ByteReader(Array(bytes.dropLast(2)), start: 1)
        XCTAssertThrowsError(try DataClassification.decode(from: &short, version: 2)) { error in
            let e = error as? TDSDecodingError
            XCTAssertEqual(e?.code, .truncated)
            XCTAssertEqual(e?.context, "DATACLASSIFICATION")
            XCTAssertEqual(e?.offset, bytes.count - 4, "the last rank, of which 2 bytes are present")
        }
    }

    /// A token still incomplete past the maximum token size is refused, without waiting for the rest.
    func testTokenSizeCap() throws {
        let (bytes, _) = token(labels: 100, types: 0, columns: 0, version: 1)
        var d = TokenStreamDecoder(version: .v7_4, options: .init(maximumTokenSize: 1000))
        var failure: TDSDecodingError?
        var fed = 0
        while failure == nil, fed < bytes.count {
            d.append([bytes[fed]])
            fed += 1
            do { let t = try d.next(); XCTAssertNil(t) } catch { failure = error }
        }
        XCTAssertEqual(failure?.code, .limitExceeded)
        XCTAssertEqual(failure?.context, "DATACLASSIFICATION")
        XCTAssertEqual(failure?.offset, 0)
        XCTAssertEqual(fed, 1001)
    }
}
