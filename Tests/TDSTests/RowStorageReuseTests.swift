import XCTest
import SQLClientTesting
@testable import TDS
import TDS

/// The row block path (``TokenStreamDecoder/appendBufferedRows(to:limit:byteLimit:)``, every row of
/// a result into a ``WireRowBlock``, large values included) gives the same values and the same
/// errors as ``TokenStreamDecoder/next()``, whole, byte by byte and split at random.
final class RowStorageReuseTests: XCTestCase {
    static let columns: [ColumnMetadata] = [
        ColumnMetadata(flags: [], typeInfo: TypeInfo(type: .int4, length: 4), name: "id"),
        ColumnMetadata(typeInfo: .nvarchar(50), name: "name"),
        ColumnMetadata(typeInfo: .decimal(precision: 18, scale: 4), name: "amount"),
        ColumnMetadata(typeInfo: .datetime2(scale: 7), name: "at"),
        ColumnMetadata(typeInfo: .varbinary(16), name: "hash"),
    ]

    static func values(_ i: Int) -> [SQLValue] {
        [.int(Int32(i)),
         i % 4 == 1 ? .null : .string("name \(i) é 東京"),
         .decimal(SQLDecimal(isNegative: i % 2 == 0, precision: 18, scale: 4, magnitude: UInt128(i * 10_007))),
         i % 5 == 2 ? .null : .datetime2(SQLDateTime2(date: SQLDate(days: Int32(730_000 + i)), time: SQLTime(ticks: UInt64(i) * 1_000_003, scale: 7))),
         .binary((0 ..< i % 9).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) })]
    }

    /// COLMETADATA, `n` rows (NBCROW when a value is NULL), DONE; with a PLP column when `plp`.
    static func stream(rows n: Int, plp: Bool = false) throws -> (bytes: [UInt8], rows: [[SQLValue]]) {
        var columns = Self.columns
        if plp { columns.append(ColumnMetadata(typeInfo: .nvarchar(nil), name: "notes")) }
        var out = ServerTokens.colMetadata(columns, version: .v7_4)
        var rows: [[SQLValue]] = []
        for i in 0 ..< n {
            var v = values(i)
            if plp { v.append(i % 3 == 0 ? .null : .string(String(repeating: "long text \(i) ", count: i % 50))) }
            out += v.contains(where: \.isNull) ? try ServerTokens.nbcRow(v, columns: columns) : try ServerTokens.row(v, columns: columns)
            rows.append(v)
        }
        out += ServerTokens.done(status: .count, rowCount: UInt64(n), version: .v7_4)
        return (out, rows)
    }

    enum Mode: CaseIterable { case tokens, runs }

    /// Decodes `bytes` fed in `pieces`, returning the rows (and tokens other than rows as names).
    static func decode(_ bytes: [UInt8], pieces: [Int], mode: Mode) throws -> (rows: [[SQLValue]], others: [String]) {
        var decoder = TokenStreamDecoder(version: .v7_4)
        var rows: [[SQLValue]] = []
        var others: [String] = []
        var flat: [SQLValue] = []
        var flatRows = 0
        var offset = 0
        for n in pieces {
            decoder.append(Array(bytes[offset ..< offset + n]))
            offset += n
            switch mode {
            case .tokens:
                while let token = try decoder.next() {
                    if let v = token.rowValues { rows.append(v) } else { others.append(token.name) }
                }
            case .runs:
                while true {
                    if var block = decoder.makeWireRowBlock() {
                        let (n, end) = decoder.appendBufferedRows(to: &block, limit: 7, byteLimit: 1 << 20)
                        flatRows += n
                        for r in 0 ..< block.rowCount { flat += block.values(row: r) }
                        if end == .limit { continue }
                        if end == .needBytes { break }
                    }
                    guard let token = try decoder.next() else { break }
                    if let v = token.rowValues { flat += v; flatRows += 1 } else { others.append(token.name) }
                }
            }
        }
        try decoder.finish()
        if mode == .runs {
            let width = decoder.columns.count
            XCTAssertEqual(flat.count, flatRows * width)
            rows = (0 ..< flatRows).map { Array(flat[$0 * width ..< ($0 + 1) * width]) }
        }
        return (rows, others)
    }

    func checkAllWays(_ bytes: [UInt8], expected: [[SQLValue]], file: StaticString = #filePath, line: UInt = #line) throws {
        var rng = SeededRandom(seed: 7)
        let splits: [(String, [Int])] = [
            ("whole", [bytes.count]),
            ("byte by byte", Array(repeating: 1, count: bytes.count)),
            ("random", DecoderVerifier.randomPieces(total: bytes.count, using: &rng)),
            ("random 2", DecoderVerifier.randomPieces(total: bytes.count, using: &rng)),
        ]
        for (name, pieces) in splits {
            for mode in Mode.allCases {
                let (rows, others) = try Self.decode(bytes, pieces: pieces, mode: mode)
                XCTAssertEqual(rows, expected, "\(mode) \(name)", file: file, line: line)
                XCTAssertEqual(others, ["COLMETADATA", "DONE"], "\(mode) \(name)", file: file, line: line)
            }
        }
    }

    func testReusedStorageGivesTheSameRowsWholeByteByByteAndSplit() throws {
        let (bytes, expected) = try Self.stream(rows: 300)
        try checkAllWays(bytes, expected: expected)
    }

    func testRowsWithAPLPColumnGoIntoTheBlockWithTheSameRows() throws {
        let (bytes, expected) = try Self.stream(rows: 60, plp: true)
        try checkAllWays(bytes, expected: expected)
    }

    /// A malformed value (INTN with 3 bytes) ends the run, and the decoder reports the token
    /// decoder's error through every API, at the same offset.
    func testMalformedRowGivesTheSameErrorThroughEveryAPI() throws {
        let columns = [ColumnMetadata(typeInfo: .int, name: "a"), ColumnMetadata(typeInfo: .int, name: "b")]
        var bytes = ServerTokens.colMetadata(columns, version: .v7_4)
        bytes += try ServerTokens.row([.int(1), .int(2)], columns: columns)
        let badAt = bytes.count
        bytes += [0xD1, 0x04, 0x01, 0x00, 0x00, 0x00, 0x03, 0x01, 0x02, 0x03]
        var errors: [TDSDecodingError] = []
        for mode in Mode.allCases {
            do {
                _ = try Self.decode(bytes, pieces: [bytes.count], mode: mode)
                XCTFail("\(mode): decoded a 3-byte int")
            } catch let e as TDSDecodingError {
                errors.append(e)
            }
        }
        XCTAssertEqual(errors.count, Mode.allCases.count)
        for e in errors {
            XCTAssertEqual(e.code, .invalidLength)
            XCTAssertEqual(e.offset, badAt + 7)   // the data bytes after the length 3
            XCTAssertEqual(e, errors[0])
        }
    }
}
