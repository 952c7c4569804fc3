import Foundation
import SQLClientTesting
import TDS
import XCTest
@testable import SQLClient

/// ``SQLRowDecoder`` and the decoder context ``SQLRow/decode(_:)`` reuses per result set
/// (``SQLRowDecoding``): every row decodes its own values whatever was decoded before, at the
/// same time, or kept from an earlier row; rows of decoded values and rows of wire bytes (read
/// through ``WireRowBlock``'s typed reads) decode to the same values and fail with the same errors.
final class SQLRowDecoderTests: XCTestCase {
    static let columns = SQLColumns([
        SQLColumn(name: "id", typeInfo: .int, isNullable: false),
        SQLColumn(name: "name", typeInfo: .nvarchar(20), isNullable: true),
        SQLColumn(name: "amount", typeInfo: .bigint, isNullable: true),
    ])

    struct Item: Decodable, Equatable {
        var id: Int32
        var name: String?
        var amount: Int64?
        enum CodingKeys: String, CodingKey { case id, name, amount }
    }

    static func values(_ i: Int) -> [SQLValue] {
        [.int(Int32(i)), i % 3 == 0 ? .null : .string("n\(i)"), i % 5 == 0 ? .null : .bigint(Int64(i) * 1_000_003)]
    }

    static func item(_ i: Int) -> Item {
        Item(id: Int32(i), name: i % 3 == 0 ? nil : "n\(i)", amount: i % 5 == 0 ? nil : Int64(i) * 1_000_003)
    }

    /// Rows of one block (one storage, one `SQLColumns`), as a result's rows are: decoded values,
    /// or (`wire`) the rows' wire bytes as a result of these types arrives.
    static func block(_ count: Int, columns: SQLColumns = columns, wire: Bool = false) throws -> SQLRowBlock {
        let rows = (0 ..< count).map { values($0) }
        guard wire else { return SQLRowBlock(columns: columns, values: rows.flatMap { $0 }) }
        let blocks = try wireBlocks(columns, rows, split: .whole)
        XCTAssertEqual(blocks.count, 1)
        return try XCTUnwrap(blocks.first)
    }

    typealias Split = DecoderVerifier.Split

    /// `rows` of `columns` as a server sends them (ROW tokens, NBCROW every third row and where a
    /// fixed-length value is NULL), fed to the token decoder whole, a byte at a time or in random
    /// pieces, and kept as wire bytes the way a connection keeps them (``WireRowBlock``, at most
    /// `limit` rows a block); empty when the types are not kept as wire bytes.
    static func wireBlocks(_ columns: SQLColumns, _ rows: [[SQLValue]], split: Split, limit: Int = 4096) throws -> [SQLRowBlock] {
        let metadata = columns.map { ColumnMetadata(flags: $0.isNullable ? [.nullable] : [], typeInfo: $0.typeInfo, name: $0.name) }
        var stream = ServerTokens.colMetadata(metadata, version: .v7_4)
        for (i, row) in rows.enumerated() {
            let fixedNull = zip(row, metadata).contains { v, c in
                if case .fixed? = c.typeInfo.type.lengthKind { return v.isNull }
                return false
            }
            stream += try i % 3 == 0 || fixedNull ? ServerTokens.nbcRow(row, columns: metadata) : ServerTokens.row(row, columns: metadata)
        }
        stream += ServerTokens.done(status: .count, rowCount: UInt64(rows.count), version: .v7_4)
        var decoder = TokenStreamDecoder(version: .v7_4)
        var blocks: [SQLRowBlock] = []
        var block: WireRowBlock?
        var rowsOutside = 0
        func drain() throws {
            while true {
                if block == nil { block = decoder.makeWireRowBlock() }
                if var b = block {
                    let (n, end) = decoder.appendBufferedRows(to: &b, limit: limit - b.rowCount, byteLimit: 1 << 20)
                    block = b
                    if end == .limit || (end != .needBytes && b.rowCount > 0) {
                        blocks.append(SQLRowBlock(storage: SQLRowStorage(columns: columns, wire: b)))
                        block = nil
                        continue
                    }
                    if n > 0 { continue }
                    if end == .needBytes { return }
                }
                guard let token = try decoder.next() else { return }
                if case .row = token { rowsOutside += 1 }
                if case .nbcRow = token { rowsOutside += 1 }
            }
        }
        var rng = SystemRandomNumberGenerator()
        for piece in DecoderVerifier.pieces(of: stream, split, using: &rng) {
            decoder.append(piece)
            try drain()
        }
        try decoder.finish()
        if blocks.isEmpty { return [] }
        XCTAssertEqual(rowsOutside, 0, "every row kept as wire bytes")
        XCTAssertEqual(blocks.reduce(0) { $0 + $1.count }, rows.count)
        return blocks
    }

    func testRowsOfOneResultDecodeTheirOwnValuesRowAfterRow() throws {
        for wire in [false, true] {
            let block = try Self.block(50, wire: wire)
            for _ in 0 ..< 2 {
                XCTAssertEqual(try block.map { try $0.decode(Item.self) }, (0 ..< 50).map(Self.item), "wire \(wire)")
            }
        }
        // Rows built one by one over the same columns share the result's decoder too.
        let rows = (0 ..< 10).map { SQLRow(columns: Self.columns, values: Self.values($0)) }
        XCTAssertEqual(try rows.reversed().map { try $0.decode(Item.self) }, (0 ..< 10).reversed().map(Self.item))
    }

    func testConcurrentDecodesOfOneResultGiveEachRowsValues() async throws {
        for wire in [false, true] {
            try await Self.decodeConcurrently(try Self.block(400, wire: wire))
        }
    }

    static func decodeConcurrently(_ block: SQLRowBlock) async throws {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for task in 0 ..< 8 {
                group.addTask {
                    for pass in 0 ..< 25 {
                        for i in stride(from: (task + pass) % 4, to: block.count, by: 4) {
                            guard try block[i].decode(Item.self) == Self.item(i) else { return false }
                        }
                    }
                    return true
                }
            }
            var ok = 0
            for try await result in group where result { ok += 1 }
            XCTAssertEqual(ok, 8, "every task decoded every row to its own values")
        }
    }

    /// A type whose `init(from:)` keeps its decoder and its keyed container.
    final class Keeper: Decodable {
        nonisolated(unsafe) static var kept: [(any Decoder, KeyedDecodingContainer<Item.CodingKeys>)] = []
        let id: Int32
        required init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Item.CodingKeys.self)
            id = try container.decode(Int32.self, forKey: .id)
            Keeper.kept.append((decoder, container))
        }
    }

    func testAKeptContainerOrDecoderKeepsReadingItsOwnRow() throws {
        for wire in [false, true] { try keptContainersReadTheirOwnRows(wire: wire) }
    }

    func keptContainersReadTheirOwnRows(wire: Bool) throws {
        Keeper.kept = []
        defer { Keeper.kept = [] }
        var block: SQLRowBlock? = try Self.block(6, wire: wire)
        for i in 0 ..< 3 { XCTAssertEqual(try block?[i].decode(Keeper.self).id, Int32(i)) }
        // Later rows decode right while the earlier decoders and containers are kept.
        XCTAssertEqual(try block.map { b in try (3 ..< 6).map { try b[$0].decode(Item.self) } }, (3 ..< 6).map(Self.item))
        block = nil   // the rows are gone; what was kept holds its own row
        XCTAssertEqual(Keeper.kept.count, 3)
        for (i, (decoder, container)) in Keeper.kept.enumerated() {
            XCTAssertEqual(try container.decode(Int32.self, forKey: .id), Int32(i))
            XCTAssertEqual(try container.decodeIfPresent(String.self, forKey: .name), Self.item(i).name)
            XCTAssertEqual(try decoder.container(keyedBy: Item.CodingKeys.self).decodeIfPresent(Int64.self, forKey: .amount),
                           Self.item(i).amount)
            XCTAssertEqual(try Item(from: decoder), Self.item(i))
        }
    }

    /// Decodes another row of the same result inside its own `init(from:)`.
    struct Nested: Decodable {
        nonisolated(unsafe) static var other: SQLRow?
        let item: Item
        let inner: Item?
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Item.CodingKeys.self)
            inner = try Nested.other?.decode(Item.self)
            item = Item(id: try container.decode(Int32.self, forKey: .id),
                        name: try container.decodeIfPresent(String.self, forKey: .name),
                        amount: try container.decodeIfPresent(Int64.self, forKey: .amount))
        }
    }

    func testADecodeInsideADecodeOfTheSameResult() throws {
        for wire in [false, true] {
            let block = try Self.block(4, wire: wire)
            Nested.other = block[3]
            defer { Nested.other = nil }
            for i in 0 ..< 3 {
                let n = try block[i].decode(Nested.self)
                XCTAssertEqual(n.item, Self.item(i))
                XCTAssertEqual(n.inner, Self.item(3))
            }
            Nested.other = nil
            XCTAssertEqual(try block[2].decode(Nested.self).item, Self.item(2))
        }
    }

    class Base: Decodable {
        let id: Int32
        private enum CodingKeys: String, CodingKey { case id }
        required init(from decoder: any Decoder) throws {
            id = try decoder.container(keyedBy: CodingKeys.self).decode(Int32.self, forKey: .id)
        }
    }

    final class Derived: Base {
        let name: String?
        private enum CodingKeys: String, CodingKey { case name }
        required init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decodeIfPresent(String.self, forKey: .name)
            try super.init(from: container.superDecoder())
        }
    }

    /// Two key types over one decoder (a subclass's keys, then its superclass's from the same decoder).
    final class SameDecoder: Base {
        let amount: Int64?
        private enum CodingKeys: String, CodingKey { case amount }
        required init(from decoder: any Decoder) throws {
            amount = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(Int64.self, forKey: .amount)
            try super.init(from: decoder)
        }
    }

    func testSuperDecodersAndSecondKeyTypes() throws {
        for wire in [false, true] { try superDecodersAndSecondKeyTypes(try Self.block(8, wire: wire)) }
    }

    func superDecodersAndSecondKeyTypes(_ block: SQLRowBlock) throws {
        for i in 0 ..< 8 {
            let d = try block[i].decode(Derived.self)
            XCTAssertEqual(d.id, Int32(i))
            XCTAssertEqual(d.name, Self.item(i).name)
            let s = try block[i].decode(SameDecoder.self)
            XCTAssertEqual(s.id, Int32(i))
            XCTAssertEqual(s.amount, Self.item(i).amount)
            XCTAssertEqual(try block[i].decode(Item.self), Self.item(i))
        }
    }

    func testAFailedDecodeLeavesTheNextRowsRight() throws {
        for wire in [false, true] { try failedDecodesLeaveTheNextRowsRight(try Self.block(12, wire: wire)) }
    }

    func failedDecodesLeaveTheNextRowsRight(_ block: SQLRowBlock) throws {
        struct Narrow: Decodable { let amount: Int8 }
        for i in 0 ..< 12 {
            XCTAssertThrowsError(try block[i].decode(Narrow.self)) { error in
                let e = error as? SQLClientError
                XCTAssertEqual(e?.code, .decodingFailed)
                let expected = i % 5 == 0 ? "cannot convert NULL to Int8" : "\"amount\" (index 2): cannot convert value"
                XCTAssertTrue(e?.message.contains(expected) ?? false, "\(error)")
            }
            XCTAssertEqual(try block[i].decode(Item.self), Self.item(i))
        }
        struct Missing: Decodable { let id: Int32; let nope: String }
        XCTAssertThrowsError(try block[1].decode(Missing.self)) { error in
            XCTAssertTrue("\(error)".contains("no column named \"nope\""), "\(error)")
        }
        XCTAssertEqual(try block[1].decode(Item.self), Self.item(1))
    }

    func testARowWithFewerValuesThanColumnsThrowsInsteadOfTrapping() {
        // A row built by code with a value missing: its column is not in the row.
        let row = SQLRow(columns: Self.columns, values: [.int(1), .string("a")])
        struct Whole: Decodable { var id: Int32; var amount: Int64 }
        XCTAssertThrowsError(try row.decode(Whole.self)) { error in
            XCTAssertTrue("\(error)".contains("no column named \"amount\""), "\(error)")
        }
        XCTAssertEqual(try row.decode(Item.self), Item(id: 1, name: "a", amount: nil), "decodeIfPresent: absent is nil")
    }

    func testDatesDecodeToTheBitAsDateValueInUTC() throws {
        let utc = try XCTUnwrap(TimeZone(secondsFromGMT: 0))
        var generator = SystemRandomNumberGenerator()
        var values: [SQLValue] = [.date(SQLDate(days: 0)), .date(SQLDate(days: 3_652_058)),
                                  .datetime2(SQLDateTime2(date: SQLDate(days: 0), time: SQLTime(ticks: 0, scale: 7))),
                                  .datetime2(SQLDateTime2(date: SQLDate(days: 3_652_058), time: SQLTime(ticks: 863_999_999_999, scale: 7))),
                                  .datetime(SQLDateTime(days: -53_690, ticks: 0)), .smallDateTime(SQLSmallDateTime(days: 65_535, minutes: 1439))]
        for _ in 0 ..< 2_000 {
            let days = Int32.random(in: 0 ... 3_652_058, using: &generator)
            let scale = UInt8.random(in: 0 ... 7, using: &generator)
            let ticks = UInt64.random(in: 0 ..< 86_400 * [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000][Int(scale)], using: &generator)
            let dt2 = SQLDateTime2(date: SQLDate(days: days), time: SQLTime(ticks: ticks, scale: scale))
            values.append(.date(SQLDate(days: days)))
            values.append(.datetime2(dt2))
            values.append(.datetimeOffset(SQLDateTimeOffset(utc: dt2, offsetMinutes: Int16.random(in: -840 ... 840, using: &generator))))
            values.append(.datetime(SQLDateTime(days: Int32.random(in: -53_690 ... 2_958_463, using: &generator),
                                                ticks: UInt32.random(in: 0 ..< 25_920_000, using: &generator))))
            values.append(.smallDateTime(SQLSmallDateTime(days: UInt16.random(in: 0 ... 65_535, using: &generator),
                                                          minutes: UInt16.random(in: 0 ..< 1_440, using: &generator))))
        }
        struct At: Decodable { let at: Date }
        let columns = SQLColumns([SQLColumn(name: "at", typeInfo: .datetime2(scale: 7), isNullable: false)])
        for value in values {
            let expected = try XCTUnwrap(value.dateValue(in: utc))
            let decoded = try SQLRow(columns: columns, values: [value]).decode(At.self).at
            XCTAssertEqual(decoded.timeIntervalSinceReferenceDate.bitPattern, expected.timeIntervalSinceReferenceDate.bitPattern, "\(value)")
        }
    }

    // MARK: - Typed reads and the SQLValue path

    /// What decoding column "v" of `row` as `P` gave: `v` shown to the bit, or the error.
    static func outcome<P: Decodable>(_ row: SQLRow, _ type: P.Type, _ show: (P) -> String) -> String {
        do {
            return show(try row.decode(P.self))
        } catch {
            return "error: \(error)"
        }
    }

    static func text<T>(_ v: T?) -> String { v.map { String(reflecting: $0) } ?? "nil" }
    static func double(_ v: Double?) -> String { v.map { String($0.bitPattern) } ?? "nil" }
    static func float(_ v: Float?) -> String { v.map { String($0.bitPattern) } ?? "nil" }
    static func decimal(_ v: Decimal?) -> String { v.map { withUnsafeBytes(of: $0) { Array($0) }.description } ?? "nil" }
    static func date(_ v: Date?) -> String { v.map { String($0.timeIntervalSinceReferenceDate.bitPattern) } ?? "nil" }
    static func data(_ v: Data?) -> String { v.map { Array($0).description } ?? "nil" }

    // One struct per Swift type, not a generic one: a generic struct's synthesized `init(from:)`
    // calls the container's generic `decode<T>`, never its `decode(Int32.self, ...)`.
    struct IsBool: Decodable { let v: Bool }
    struct MaybeBool: Decodable { let v: Bool? }
    struct IsString: Decodable { let v: String }
    struct MaybeString: Decodable { let v: String? }
    struct IsDouble: Decodable { let v: Double }
    struct MaybeDouble: Decodable { let v: Double? }
    struct IsFloat: Decodable { let v: Float }
    struct MaybeFloat: Decodable { let v: Float? }
    struct IsInt: Decodable { let v: Int }
    struct MaybeInt: Decodable { let v: Int? }
    struct IsInt8: Decodable { let v: Int8 }
    struct MaybeInt8: Decodable { let v: Int8? }
    struct IsInt16: Decodable { let v: Int16 }
    struct MaybeInt16: Decodable { let v: Int16? }
    struct IsInt32: Decodable { let v: Int32 }
    struct MaybeInt32: Decodable { let v: Int32? }
    struct IsInt64: Decodable { let v: Int64 }
    struct MaybeInt64: Decodable { let v: Int64? }
    struct IsUInt: Decodable { let v: UInt }
    struct MaybeUInt: Decodable { let v: UInt? }
    struct IsUInt8: Decodable { let v: UInt8 }
    struct MaybeUInt8: Decodable { let v: UInt8? }
    struct IsUInt16: Decodable { let v: UInt16 }
    struct MaybeUInt16: Decodable { let v: UInt16? }
    struct IsUInt32: Decodable { let v: UInt32 }
    struct MaybeUInt32: Decodable { let v: UInt32? }
    struct IsUInt64: Decodable { let v: UInt64 }
    struct MaybeUInt64: Decodable { let v: UInt64? }
    struct IsDecimal: Decodable { let v: Decimal }
    struct MaybeDecimal: Decodable { let v: Decimal? }
    struct IsDate: Decodable { let v: Date }
    struct MaybeDate: Decodable { let v: Date? }
    struct IsUUID: Decodable { let v: UUID }
    struct MaybeUUID: Decodable { let v: UUID? }
    struct IsData: Decodable { let v: Data }
    struct MaybeData: Decodable { let v: Data? }
    struct IsArrayUInt8: Decodable { let v: [UInt8] }
    struct MaybeArrayUInt8: Decodable { let v: [UInt8]? }

    /// Every Swift type a column decodes to (the keyed container's own `decode`s and the types it
    /// reads itself), by `decode` and `decodeIfPresent`.
    static func outcomes(_ row: SQLRow) -> [String] {
        [
            "Bool: " + outcome(row, IsBool.self) { text($0.v) }, "Bool?: " + outcome(row, MaybeBool.self) { text($0.v) },
            "String: " + outcome(row, IsString.self) { text($0.v) }, "String?: " + outcome(row, MaybeString.self) { text($0.v) },
            "Double: " + outcome(row, IsDouble.self) { double($0.v) }, "Double?: " + outcome(row, MaybeDouble.self) { double($0.v) },
            "Float: " + outcome(row, IsFloat.self) { float($0.v) }, "Float?: " + outcome(row, MaybeFloat.self) { float($0.v) },
            "Int: " + outcome(row, IsInt.self) { text($0.v) }, "Int?: " + outcome(row, MaybeInt.self) { text($0.v) },
            "Int8: " + outcome(row, IsInt8.self) { text($0.v) }, "Int8?: " + outcome(row, MaybeInt8.self) { text($0.v) },
            "Int16: " + outcome(row, IsInt16.self) { text($0.v) }, "Int16?: " + outcome(row, MaybeInt16.self) { text($0.v) },
            "Int32: " + outcome(row, IsInt32.self) { text($0.v) }, "Int32?: " + outcome(row, MaybeInt32.self) { text($0.v) },
            "Int64: " + outcome(row, IsInt64.self) { text($0.v) }, "Int64?: " + outcome(row, MaybeInt64.self) { text($0.v) },
            "UInt: " + outcome(row, IsUInt.self) { text($0.v) }, "UInt?: " + outcome(row, MaybeUInt.self) { text($0.v) },
            "UInt8: " + outcome(row, IsUInt8.self) { text($0.v) }, "UInt8?: " + outcome(row, MaybeUInt8.self) { text($0.v) },
            "UInt16: " + outcome(row, IsUInt16.self) { text($0.v) }, "UInt16?: " + outcome(row, MaybeUInt16.self) { text($0.v) },
            "UInt32: " + outcome(row, IsUInt32.self) { text($0.v) }, "UInt32?: " + outcome(row, MaybeUInt32.self) { text($0.v) },
            "UInt64: " + outcome(row, IsUInt64.self) { text($0.v) }, "UInt64?: " + outcome(row, MaybeUInt64.self) { text($0.v) },
            "Decimal: " + outcome(row, IsDecimal.self) { decimal($0.v) }, "Decimal?: " + outcome(row, MaybeDecimal.self) { decimal($0.v) },
            "Date: " + outcome(row, IsDate.self) { date($0.v) }, "Date?: " + outcome(row, MaybeDate.self) { date($0.v) },
            "UUID: " + outcome(row, IsUUID.self) { text($0.v) }, "UUID?: " + outcome(row, MaybeUUID.self) { text($0.v) },
            "Data: " + outcome(row, IsData.self) { data($0.v) }, "Data?: " + outcome(row, MaybeData.self) { data($0.v) },
            "[UInt8]: " + outcome(row, IsArrayUInt8.self) { text($0.v) }, "[UInt8]?: " + outcome(row, MaybeArrayUInt8.self) { text($0.v) },
        ]
    }

    /// Every type of the oracle sessions (TDS 7.4) and every Swift type: a row of wire bytes
    /// (typed reads) decodes to exactly what the same values decoded as ``SQLValue``s give, and
    /// fails with the same error, whole, byte by byte and split at random.
    func testWireRowsDecodeAsDecodedValuesForEveryTypeAndSwiftType() throws {
        var compared = 0
        var wireTypes: Set<String> = []
        var rng = SystemRandomNumberGenerator()
        for c in OracleFixtures.typeCases() {
            let (type, cases) = OracleFixtures.adapt(c, version: .v7_4, utf8Acknowledged: true)
            let columns = SQLColumns([SQLColumn(name: "id", typeInfo: .int, isNullable: false),
                                      SQLColumn(name: "v", typeInfo: type, isNullable: true)])
            // Each value twice (a row of a block after another row).
            let rows = (cases + cases).enumerated().map { [SQLValue.int(Int32($0.offset)), $0.element.value] }
            let expected = rows.map { Self.outcomes(SQLRow(columns: columns, values: $0)) }
            for split in Split.allCases {
                if split == .byteByByte && Int.random(in: 0 ..< 4, using: &rng) != 0 { continue }   // a quarter of the types, to keep it short
                let blocks = try Self.wireBlocks(columns, rows, split: split, limit: 3)
                if blocks.isEmpty { break }   // not kept as wire bytes: decoded values only
                wireTypes.insert(c.name)
                let wireRows = blocks.flatMap { Array($0) }
                XCTAssertEqual(wireRows.count, rows.count, c.name)
                for (r, row) in wireRows.enumerated() where r < rows.count {
                    XCTAssertEqual(row.values, rows[r], "\(c.name) row \(r)")
                    let got = Self.outcomes(row)
                    for (g, e) in zip(got, expected[r]) where g != e {
                        XCTFail("\(c.name) \(split) \(cases[r % cases.count].label): wire row gives \(g), decoded values \(e)")
                    }
                    compared += got.count
                }
            }
        }
        XCTAssertGreaterThan(compared, 20_000)
        for name in ["int", "bigint", "smallint", "tinyint", "bit", "float", "real", "money", "smallmoney",
                     "date", "datetime2(7)", "datetimeoffset(7)", "datetime", "smalldatetime", "uniqueidentifier", "decimal(38,0)", "decimal(5,2)",
                     "nvarchar(50)", "nchar(5)", "varchar(50)", "char(10)", "varbinary(16)", "binary(4)", "timestamp"] where !wireTypes.contains(name) {
            XCTFail("\(name): no rows of wire bytes (wire types: \(wireTypes.sorted()))")
        }
    }
}
