import Foundation
import XCTest
@testable import SQLClient

/// ``SQLRowDecoder`` and the decoder context ``SQLRow/decode(_:)`` reuses per result set
/// (``SQLRowDecoding``): every row decodes its own values whatever was decoded before, at the
/// same time, or kept from an earlier row.
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

    /// Rows of one block (one storage, one `SQLColumns`), as a result's rows are.
    static func block(_ count: Int, columns: SQLColumns = columns) -> SQLRowBlock {
        SQLRowBlock(columns: columns, values: (0 ..< count).flatMap { values($0) })
    }

    func testRowsOfOneResultDecodeTheirOwnValuesRowAfterRow() throws {
        let block = Self.block(50)
        for _ in 0 ..< 2 {
            XCTAssertEqual(try block.map { try $0.decode(Item.self) }, (0 ..< 50).map(Self.item))
        }
        // Rows built one by one over the same columns share the result's decoder too.
        let rows = (0 ..< 10).map { SQLRow(columns: Self.columns, values: Self.values($0)) }
        XCTAssertEqual(try rows.reversed().map { try $0.decode(Item.self) }, (0 ..< 10).reversed().map(Self.item))
    }

    func testConcurrentDecodesOfOneResultGiveEachRowsValues() async throws {
        let block = Self.block(400)
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
        Keeper.kept = []
        defer { Keeper.kept = [] }
        var block: SQLRowBlock? = Self.block(6)
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
        let block = Self.block(4)
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
        let block = Self.block(8)
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
        struct Narrow: Decodable { let amount: Int8 }
        let block = Self.block(12)
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
}
