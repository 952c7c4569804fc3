import Foundation
import SQLClientTesting
import TDS
import XCTest

/// The committed oracle session files are exactly what the generator writes (so they are
/// reviewable diffs of the generator), and they parse back to the generated sessions.
/// `SQLCLIENT_REGENERATE_FIXTURES=1` rewrites them.
final class OracleFixtureFileTests: XCTestCase {
    static let directory = FreeTDSOracle.packageRoot.appendingPathComponent("Fixtures/sessions/oracle")

    func testCommittedFixturesMatchTheGenerator() throws {
        let regenerate = ProcessInfo.processInfo.environment["SQLCLIENT_REGENERATE_FIXTURES"] == "1"
        let fixtures = try OracleFixtures.fixtures()
        XCTAssertEqual(fixtures.count, 6, "ROW at 7.1-7.4, NBCROW at 7.3 and 7.4")
        if regenerate { try OracleFixtures.write(to: Self.directory) }
        for f in fixtures {
            let url = Self.directory.appendingPathComponent(f.fileName)
            guard let committed = try? String(contentsOf: url, encoding: .utf8) else {
                XCTFail("missing \(url.path): run SQLCLIENT_REGENERATE_FIXTURES=1 swift test --filter OracleFixtureFileTests")
                continue
            }
            XCTAssertTrue(committed == f.session.text, "\(f.fileName) differs from the generator: regenerate and review the diff")
            XCTAssertEqual(try ReplaySession(text: committed, defaultName: f.session.name), f.session, f.fileName)
        }
    }

    /// The version rules of [MS-TDS] hold in the generated streams.
    func testVersionRules() throws {
        let fixtures = try OracleFixtures.fixtures()
        for f in fixtures {
            let text = f.session.text
            let g = f.version.generation
            // NBCROW (0xD2) only at 7.3+: the comments name the row token of each row.
            XCTAssertEqual(text.contains("# NBCROW"), f.format == .nbcrow, f.fileName)
            if g < 0x73 { XCTAssertEqual(f.format, .row) }
            for e in f.expectations where e.typeName.hasPrefix("datetime2") || e.typeName.hasPrefix("time(") || e.typeName == "date" {
                XCTAssertEqual(e.sentTypeName.hasPrefix("nvarchar"), g < 0x73, "\(f.fileName) \(e.typeName) sent as \(e.sentTypeName)")
            }
            for e in f.expectations where e.typeName.hasSuffix("(max)") || e.typeName == "xml" {
                let legacy = ["text", "ntext", "image"].contains(e.sentTypeName)
                XCTAssertEqual(legacy, g < 0x72, "\(f.fileName) \(e.typeName) sent as \(e.sentTypeName)")
            }
            for e in f.expectations where e.typeName.hasSuffix("UTF8") {
                XCTAssertEqual(e.sentTypeName.hasPrefix("varchar"), g >= 0x74, "\(f.fileName) \(e.typeName) sent as \(e.sentTypeName)")
            }
            XCTAssertEqual(f.session.utf8Support, g >= 0x74)
            // DONE: 13 bytes from 7.2 (8-byte count), 9 before.
            let done = f.session.exchanges[0].response.last?.bytes ?? []
            XCTAssertEqual(done.count, g >= 0x72 ? 13 : 9, f.fileName)
        }
    }

    /// Every generated response decodes to the same tokens whole, byte by byte and in random
    /// pieces (DecoderVerifier), and its rows hold the generator's values.
    func testEveryResponseDecodesTheSameHoweverItIsSplit() throws {
        for f in try OracleFixtures.fixtures() {
            for e in f.expectations {
                guard let exchange = OracleFixtures.exchange(for: e, in: f.session) else {
                    XCTFail("no exchange for \(e.sql)"); continue
                }
                let tokens: [Token]
                do { tokens = try DecoderVerifier.verify(exchange.responseBytes, version: f.version, randomSplits: 4) }
                catch { XCTFail("\(f.fileName) \(e.typeName): \(error)"); continue }
                if e.kind == .outputParameters {
                    let values = tokens.compactMap { t -> String?? in if case .returnValue(let r) = t { return .some(r.value.canonicalText) } else { return nil } }
                    XCTAssertEqual([values], e.rows, "\(f.fileName) output parameters")
                    continue
                }
                let rows = tokens.compactMap { $0.rowValues?.map(\.canonicalText) }
                XCTAssertEqual(rows, e.rows, "\(f.fileName) \(e.typeName)")
                XCTAssertEqual(tokens.last?.doneStatus?.rowCount, UInt64(e.rowCount), "\(f.fileName) \(e.typeName)")
            }
        }
    }
}
