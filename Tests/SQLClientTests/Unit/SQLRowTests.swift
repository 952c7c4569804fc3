import Foundation
import XCTest
@testable import SQLClient

final class SQLRowTests: XCTestCase {
    static let columns = SQLColumns([
        SQLColumn(name: "id", typeInfo: .int, isNullable: false),
        SQLColumn(name: "Name", typeInfo: .nvarchar(20), isNullable: true),
        SQLColumn(name: "price", typeInfo: .float, isNullable: true),
        SQLColumn(name: "active", typeInfo: .int, isNullable: true),
        SQLColumn(name: "big", typeInfo: .bigint, isNullable: true),
        SQLColumn(name: "guid", typeInfo: .nvarchar(36), isNullable: true),
    ])

    static func row(_ values: [SQLValue]) -> SQLRow { SQLRow(columns: columns, values: values) }

    func testLookupByIndexAndName() {
        let row = Self.row([.int(7), .string("Ann"), .float(2.5), .bit(true), .bigint(1 << 40), .null])
        XCTAssertEqual(row[0], .int(7))
        XCTAssertEqual(row["Name"], .string("Ann"))
        XCTAssertEqual(row["name"], .string("Ann"), "case-insensitive fallback")
        XCTAssertNil(row["missing"])
        XCTAssertEqual(row.namedValues.map(\.name), ["id", "Name", "price", "active", "big", "guid"])
        XCTAssertEqual(row.description, "[id: 7, Name: Ann, price: 2.5, active: 1, big: 1099511627776, guid: NULL]")
    }

    func testDecodable() throws {
        struct Item: Decodable, Equatable {
            let id: Int
            let name: String?
            let price: Decimal
            let active: Bool
            let big: Int64
            let guid: UUID?
        }
        let row = Self.row([.int(7), .null, .float(2.5), .bit(true), .bigint(1 << 40), .null])
        XCTAssertEqual(try row.decode(Item.self),
                       Item(id: 7, name: nil, price: Decimal(string: "2.5")!, active: true, big: 1 << 40, guid: nil))
        let uuid = UUID()
        let withGUID = Self.row([.int(1), .string("x"), .float(0), .bit(false), .bigint(0), .string(uuid.uuidString)])
        XCTAssertEqual(try withGUID.decode(Item.self).guid, uuid)
    }

    func testConversionsAreExactOrFailNamingTheColumn() {
        struct Small: Decodable { let big: Int8 }
        XCTAssertThrowsError(try Self.row([.int(1), .null, .null, .null, .bigint(300), .null]).decode(Small.self)) { error in
            let e = error as? SQLClientError
            XCTAssertEqual(e?.code, .decodingFailed)
            XCTAssertTrue(e?.message.contains("\"big\" (index 4)") ?? false, "\(error)")
        }
        struct Fractional: Decodable { let price: Int }
        XCTAssertThrowsError(try Self.row([.int(1), .null, .float(2.5), .null, .null, .null]).decode(Fractional.self))
        XCTAssertEqual(try Self.row([.int(1), .null, .float(2.0), .null, .null, .null]).decode(Fractional.self).price, 2)
        struct Missing: Decodable { let nope: Int }
        XCTAssertThrowsError(try Self.row([.int(1), .null, .null, .null, .null, .null]).decode(Missing.self)) { error in
            XCTAssertTrue("\(error)".contains("no column named \"nope\""), "\(error)")
        }
    }

    func testKeyPlanFindsExactNamesAndEarlierColumnsWin() throws {
        // Columns: "id" twice (the first wins), "Name" (a key "name" finds it case-insensitively,
        // outside the plan), "n" (a key whose stringValue is not the case's name).
        let columns = SQLColumns([SQLColumn(name: "id", typeInfo: .int, isNullable: false),
                                  SQLColumn(name: "Name", typeInfo: .nvarchar(20), isNullable: true),
                                  SQLColumn(name: "id", typeInfo: .int, isNullable: false),
                                  SQLColumn(name: "n", typeInfo: .int, isNullable: true)])
        struct Item: Decodable, Equatable {
            var id: Int32
            var name: String?
            var count: Int?
            enum CodingKeys: String, CodingKey { case id, name, count = "n" }
        }
        let plan = columns.keyPlan(for: Item.CodingKeys.self)
        XCTAssertEqual(plan.column(of: Item.CodingKeys.id.stringValue), 0)
        XCTAssertNil(plan.column(of: Item.CodingKeys.name.stringValue), "no exact match")
        XCTAssertEqual(plan.column(of: Item.CodingKeys.count.stringValue), 3)
        XCTAssertNil(plan.column(of: "count"), "not a column name")
        XCTAssertTrue(columns.keyPlan(for: Item.CodingKeys.self) === plan, "one plan per key type")
        let rows = [SQLRow(columns: columns, values: [.int(1), .string("a"), .int(9), .int(5)]),
                    SQLRow(columns: columns, values: [.int(2), .null, .int(8), .null])]
        XCTAssertEqual(try rows.map { try $0.decode(Item.self) },
                       [Item(id: 1, name: "a", count: 5), Item(id: 2, name: nil, count: nil)])
        // A second key type over the same columns gets its own plan (kept beside the first).
        struct Other: Decodable, Equatable { var n: Int?; var id: Int }
        XCTAssertEqual(try rows[0].decode(Other.self), Other(n: 5, id: 1))
        XCTAssertEqual(try rows[1].decode(Other.self), Other(n: nil, id: 2))
        XCTAssertEqual(try rows[1].decode(Item.self), Item(id: 2, name: nil, count: nil))
        // A key type larger than a byte (a struct key holding a String) is found by its name.
        struct NameKey: CodingKey {
            var stringValue: String
            init?(stringValue: String) { self.stringValue = stringValue }
            var intValue: Int? { nil }
            init?(intValue: Int) { nil }
        }
        let byName = columns.keyPlan(for: NameKey.self)
        XCTAssertFalse(byName === plan)
        XCTAssertEqual(byName.column(of: "Name"), 1)
        XCTAssertEqual(byName.column(of: "id"), 0)
        XCTAssertNil(byName.column(of: "name"), "exact names only: case-insensitive matches are found by SQLColumns.index(of:)")
    }

    func testSingleValueAndUnkeyedDecoding() throws {
        let one = SQLRow(columns: SQLColumns([SQLColumn(name: "n", typeInfo: .int, isNullable: false)]), values: [.int(42)])
        XCTAssertEqual(try one.decode(Int.self), 42)
        XCTAssertEqual(try one.decode(String.self), "42")
        struct Pair: Decodable {
            let a: Int, b: String
            init(from decoder: Decoder) throws {
                var c = try decoder.unkeyedContainer()
                a = try c.decode(Int.self)
                b = try c.decode(String.self)
            }
        }
        let pair = try Self.row([.int(3), .string("three"), .null, .null, .null, .null]).decode(Pair.self)
        XCTAssertEqual(pair.a, 3)
        XCTAssertEqual(pair.b, "three")
    }

    private static func keys(_ names: [String]) -> [String] {
        SQLColumns(names.map { SQLColumn(name: $0, typeInfo: .int, isNullable: true) }).dictionaryKeys
    }

    func testDictionaryOfUnnamedAndRepeatedColumnsNeverTraps() {
        // SELECT COUNT(*), MAX(id): two columns named "", which Dictionary(uniqueKeysWithValues:) traps on.
        let columns = SQLColumns([SQLColumn(name: "", typeInfo: .int, isNullable: true),
                                  SQLColumn(name: "", typeInfo: .int, isNullable: true)])
        let row = SQLRow(columns: columns, values: [.int(3), .int(9)])
        XCTAssertEqual(row.dictionary, ["column1": .int(3), "column2": .int(9)])
        let set = SQLResultSet(columns: columns, rows: [row, SQLRow(columns: columns, values: [.null, .int(1)])])
        XCTAssertEqual(set.dictionaries, [["column1": .int(3), "column2": .int(9)], ["column1": .null, "column2": .int(1)]])
    }

    func testDictionaryKeyRule() {
        XCTAssertEqual(Self.keys(["", "", "x", "x"]), ["column1", "column2", "x", "x_2"])
        XCTAssertEqual(Self.keys(["a", "a", "a"]), ["a", "a_2", "a_3"])
        // A real name keeps its spelling even when a generated key would have used it.
        XCTAssertEqual(Self.keys(["a", "a", "a_2"]), ["a", "a_3", "a_2"])
        XCTAssertEqual(Self.keys(["column2", ""]), ["column2", "column2_2"])
        XCTAssertEqual(Self.keys(["a", "A"]), ["a", "A"], "exact, case-sensitive")
        XCTAssertEqual(Self.keys([]), [])
        let many = Self.keys(Array(repeating: "", count: 50) + Array(repeating: "column3", count: 3))
        XCTAssertEqual(Set(many).count, 53, "every key distinct")
        let row = Self.row([.int(7), .string("Ann"), .float(2.5), .bit(true), .bigint(1), .null])
        XCTAssertEqual(row.dictionary["Name"], .string("Ann"))
        XCTAssertEqual(row.dictionary["guid"], .null)
        XCTAssertEqual(row.dictionary.count, 6)
    }
}
