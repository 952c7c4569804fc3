import XCTest
import TDS
import SQLClientTesting

/// Hostile input: seeded mutations and truncations of token streams must never trap, must fail
/// only with TDSDecodingError, and must give the same outcome (tokens and error, with offset and
/// context) whole, byte by byte and in random splits.
final class TokenFuzzTests: XCTestCase {
    private func syntheticStreams() throws -> [[UInt8]] {
        let cols = [ColumnMetadata(typeInfo: .int, name: "id"), ColumnMetadata(typeInfo: .nvarchar(nil), name: "s"),
                    ColumnMetadata(typeInfo: .ntext(), tableName: ["t"], name: "n"), ColumnMetadata(typeInfo: .decimal(precision: 12, scale: 2), name: "d"),
                    ColumnMetadata(typeInfo: .varchar(20), name: "v")]
        var w = ByteWriter()
        EnvChange(type: .database, newValue: .text("db"), oldValue: .text("master")).encode(into: &w)
        InfoToken(ServerMessage(number: 5701, state: 2, severity: 0, message: "changed")).encode(into: &w, version: .v7_4)
        ColMetadata(columns: cols).encode(into: &w, version: .v7_4)
        for i in 0..<4 {
            let values: [SQLValue] = [.int(Int32(i)), .string(String(repeating: "ü", count: i * 5)), i == 2 ? .null : .string("n\(i)"),
                                      .null, .string("v\(i)")]
            if i % 2 == 0 { try Row(values: values).encode(into: &w, columns: cols) } else { try NBCRow(values: values).encode(into: &w, columns: cols) }
        }
        Done(status: [.count, .more], currentCommand: 0xC1, rowCount: 4).encode(into: &w, version: .v7_4)
        ReturnStatus(value: 3).encode(into: &w)
        Done(status: [], currentCommand: 0, rowCount: 0).encode(into: &w, version: .v7_4)
        return [w.bytes]
    }

    private func realStreams() -> [[UInt8]] {
        var out: [[UInt8]] = []
        for f in ["pysqlbridge/result.hex", "pysqlbridge/login_response.hex"] {
            if let b = try? TokenCaptures.hex(f) { out.append(b) }
        }
        for f in ["packetbeat/packetbeat_test_16x_typesResponse_1.hex", "packetbeat/packetbeat_test_16x_nullColsResponse_1.hex",
                  "packetbeat/packetbeat_test_16x_datetimeResponse_1.hex"] {
            if let b = try? TokenCaptures.packetPayloads(f) { out.append(b) }
        }
        return out
    }

    func testMutatedStreamsAreDecodedConsistently() throws {
        let streams = try syntheticStreams() + realStreams()
        var rng = SeededRandom(seed: 0xF0CC)
        var errors = 0
        var clean = 0
        for iteration in 0..<800 {
            var bytes = streams[iteration % streams.count]
            let mutations = Int(rng.next() % 3) + 1
            for _ in 0..<mutations {
                let at = Int(rng.next() % UInt64(bytes.count))
                switch rng.next() % 4 {
                case 0: bytes[at] = UInt8(truncatingIfNeeded: rng.next())
                case 1: bytes[at] = 0xFF
                case 2: bytes[at] = 0x00
                default: bytes = Array(bytes[..<max(1, at)])
                }
            }
            let outcome: DecoderVerifier.Outcome
            do {
                outcome = try DecoderVerifier.outcome(bytes, version: .v7_4, randomSplits: 3, seed: UInt64(iteration))
            } catch {
                return XCTFail("iteration \(iteration): \(error)")
            }
            if let e = outcome.error {
                errors += 1
                XCTAssertFalse(e.context.isEmpty, "iteration \(iteration): error without context: \(e)")
                XCTAssertGreaterThanOrEqual(e.offset, 0)
                XCTAssertLessThanOrEqual(e.offset, bytes.count, "iteration \(iteration): \(e)")
            } else {
                clean += 1
            }
        }
        // The mutations do hit: most runs end in an error, and the loop really ran.
        XCTAssertGreaterThan(errors, 300)
        XCTAssertEqual(errors + clean, 800)
    }
}
