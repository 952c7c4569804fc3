import Foundation
import XCTest
@testable import TDS

/// Hostile input: random and mutated bytes must give a value or a typed error, never a trap.
final class TypesHostileTests: XCTestCase {
    typealias S = TypesTestSupport

    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    func testFixedTypesDecodeWithoutDeclaredLength() throws {
        // A hand-built TypeInfo for MONEY/DATETIME carries no length; the type byte decides.
        XCTAssertEqual(try S.decode(TypeInfo(type: .money), [0, 0, 0, 0, 0x10, 0x27, 0, 0]), .money(SQLMoney(units: 10_000)))
        XCTAssertEqual(try S.decode(TypeInfo(type: .datetime), [0, 0, 0, 0, 0, 0, 0, 0]).canonicalText, "1900-01-01 00:00:00.000")
        XCTAssertEqual(try S.decode(TypeInfo(type: .money4), [1, 0, 0, 0]).canonicalText, "0.0001")
        XCTAssertEqual(try S.decode(TypeInfo(type: .datetim4), [0, 0, 1, 0]).canonicalText, "1900-01-01 00:01:00")
    }

    func testRandomValueBytesGiveValueOrTypedError() {
        var rng = SplitMix(state: 0x5EED)
        var infos = TypesValueTests.roundTripCases.map(\.0)
        infos += [.nvarchar(nil), .xml, TypeInfo(type: .udt, length: 10, isPLP: true)]
        var decoded = 0, failed = 0
        for info in infos {
            for _ in 0 ..< 300 {
                let count = Int.random(in: 0 ... 40, using: &rng)
                let bytes = (0 ..< count).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
                var r = ByteReader(bytes)
                do {
                    _ = try info.decodeValue(from: &r)
                    decoded += 1
                    XCTAssertLessThanOrEqual(r.offset, bytes.count)
                } catch {
                    failed += 1
                    XCTAssertFalse(error.context.isEmpty)
                }
                _ = try? info.decodePLPValue(bytes)
            }
        }
        XCTAssertGreaterThan(decoded, 0)
        XCTAssertGreaterThan(failed, 0)
    }

    func testRandomTypeInfoBytesGiveTypeInfoOrTypedError() {
        var rng = SplitMix(state: 42)
        for _ in 0 ..< 5000 {
            let count = Int.random(in: 1 ... 24, using: &rng)
            var bytes = (0 ..< count).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
            if Bool.random(using: &rng) { bytes[0] = TDSDataType.allKnown.randomElement(using: &rng)!.rawValue }
            var r = ByteReader(bytes)
            if let info = try? TypeInfo.decode(from: &r, version: .v7_4) {
                // A decoded TYPE_INFO encodes back to the bytes it came from.
                var w = ByteWriter()
                info.encode(into: &w, version: .v7_4)
                XCTAssertEqual(w.bytes, Array(bytes[..<r.offset]), "\(bytes)")
            }
        }
    }

    func testHugeDeclaredLengthsDoNotAllocate() {
        // USHORTLEN 8000 or 0xFFFE (beyond the declared maximum, read when present), LONGLEN 0x7FFFFFFF
        // and sql_variant 0x7FFFFFFF with 2 bytes present: .truncated, nothing allocated by the length.
        XCTAssertEqual(S.decodeError(.varbinary(8000), [0x40, 0x1F, 1, 2])?.code, .truncated)
        XCTAssertEqual(S.decodeError(.varbinary(8000), [0xFE, 0xFF, 1, 2])?.code, .truncated)
        XCTAssertEqual(S.decodeError(.image, [16] + [UInt8](repeating: 0, count: 24) + [0xFF, 0xFF, 0xFF, 0x7F, 1])?.code, .truncated)
        XCTAssertEqual(S.decodeError(.image, [16] + [UInt8](repeating: 0, count: 24) + [0x00, 0x00, 0x00, 0x80])?.code, .invalidLength)
        XCTAssertEqual(S.decodeError(.sqlVariant, [0xFF, 0xFF, 0xFF, 0x7F, 0x38, 0])?.code, .truncated)
        XCTAssertEqual(S.decodeError(.sqlVariant, [0xFF, 0xFF, 0xFF, 0xFF, 0x38, 0])?.code, .invalidLength)
        XCTAssertEqual(S.decodeError(.nvarchar(4000), [0x40, 0x1F, 0x61])?.code, .truncated)
        XCTAssertEqual(S.decodeError(.nvarchar(4000), [0xFE, 0xFF, 0x61])?.code, .truncated)
    }
}
