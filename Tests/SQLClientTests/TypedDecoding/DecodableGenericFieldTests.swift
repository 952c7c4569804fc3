import Foundation
import SQLClientTesting
import TDS
import XCTest
@testable import SQLClient

/// `Decodable` fields the keyed container has no `decode` of its own for (the generic
/// `decode<T>` / `decodeIfPresent<T>`: `Decimal`, `UUID`, `[UInt8]`, `RawRepresentable` enums),
/// read without making a `T?`: values, NULL as nil for an Optional, and the failure fields of a
/// NULL for a non-optional type, from rows of decoded values and of wire bytes.
final class DecodableGenericFieldTests: XCTestCase {
    static let columns = SQLColumns([
        SQLColumn(name: "id", typeInfo: .int, isNullable: false),
        SQLColumn(name: "amount", typeInfo: .decimal(precision: 10, scale: 2), isNullable: true),
        SQLColumn(name: "guid", typeInfo: .uniqueIdentifier, isNullable: true),
        SQLColumn(name: "blob", typeInfo: .varbinary(16), isNullable: true),
        SQLColumn(name: "status", typeInfo: .nvarchar(10), isNullable: true),
        SQLColumn(name: "level", typeInfo: .int, isNullable: true),
    ])

    struct Record: Decodable, Equatable {
        enum Status: String, Decodable { case open, closed }
        enum Level: Int32, Decodable { case low = 1, high = 2 }
        var id: Int32
        var amount: Decimal?
        var guid: UUID?
        var blob: [UInt8]?
        var status: Status?
        var level: Level?
    }

    static let guid = UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))

    func rows() throws -> [(String, [SQLRow])] {
        let amount = try XCTUnwrap(SQLDecimal("1234.50"))
        let values: [[SQLValue]] = [
            [.int(1), .decimal(amount), .uniqueIdentifier(Self.guid), .binary([0xDE, 0xAD]), .string("closed"), .int(2)],
            [.int(2), .null, .null, .null, .null, .null],
            [.int(3), .null, .null, .null, .string("bogus"), .int(7)],
        ]
        let valueRows = values.map { SQLRow(columns: Self.columns, values: $0) }
        let wire = try SQLRowDecoderTests.wireBlocks(Self.columns, values, split: .whole).flatMap { Array($0) }
        XCTAssertEqual(wire.count, values.count)
        return [("values", valueRows), ("wire", wire)]
    }

    func testGenericFieldsDecodeTheirValuesAndNullAsNil() throws {
        for (shape, rows) in try rows() {
            XCTAssertEqual(try rows[0].decode(Record.self),
                           Record(id: 1, amount: Decimal(string: "1234.5"), guid: Self.guid, blob: [0xDE, 0xAD], status: .closed, level: .high),
                           shape)
            XCTAssertEqual(try rows[1].decode(Record.self), Record(id: 2), shape)
            // A raw value no case has: the enum's own error, as `.decodingFailed`.
            XCTAssertThrowsError(try rows[2].decode(Record.self), shape) { error in
                XCTAssertEqual((error as? SQLClientError)?.code, .decodingFailed, "\(shape): \(error)")
            }
        }
    }

    struct StrictAmount: Decodable { var amount: Decimal }
    struct StrictGuid: Decodable { var guid: UUID }
    struct StrictLevel: Decodable { var level: Record.Level }

    func testANullForANonOptionalGenericFieldNamesTheColumn() throws {
        for (shape, rows) in try rows() {
            func failure<T: Decodable>(_ type: T.Type) -> SQLDecodingFailure? {
                TypedDecodingArityTests.failure("\(shape) \(T.self)") { try rows[1].decode(T.self) }
            }
            XCTAssertEqual(failure(StrictAmount.self),
                           SQLDecodingFailure(columnName: "amount", columnIndex: 1, sqlType: Self.columns[1].typeName,
                                              swiftType: "Decimal", reason: .null), shape)
            XCTAssertEqual(failure(StrictGuid.self),
                           SQLDecodingFailure(columnName: "guid", columnIndex: 2, sqlType: "uniqueidentifier",
                                              swiftType: "UUID", reason: .null), shape)
            XCTAssertEqual(failure(StrictLevel.self),
                           SQLDecodingFailure(columnName: "level", columnIndex: 5, sqlType: "int",
                                              swiftType: "Level", reason: .null), shape)
            // Row 0's values decode through the same fields.
            XCTAssertEqual(try rows[0].decode(StrictAmount.self).amount, Decimal(string: "1234.5"), shape)
            XCTAssertEqual(try rows[0].decode(StrictLevel.self).level, .high, shape)
        }
    }
}
