import Foundation
import SQLClient
import SQLClientTesting
import TDS
import XCTest

/// `bulkInsert` against the recording bulk-load server (SQLClientTesting.BulkLoadServer).
final class SQLBulkCopyTests: XCTestCase {
    static let people: [ColumnMetadata] = [
        ColumnMetadata(flags: [.identity], typeInfo: TypeInfo(type: .int4, length: 4), name: "id"),
        ColumnMetadata(flags: [.nullable, .updateable], typeInfo: .nvarchar(20), name: "name"),
        ColumnMetadata(flags: [.nullable, .updateable], typeInfo: .decimal(precision: 10, scale: 2), name: "price"),
        ColumnMetadata(flags: [.nullable, .updateable], typeInfo: .datetime2(scale: 0), name: "created"),
        ColumnMetadata(flags: [.updateable], typeInfo: TypeInfo(type: .int4, length: 4), name: "qty"),
    ]

    func connect(_ server: BulkLoadServer) async throws -> SQLConnection {
        let port = try server.start()
        return try await SQLConnection.connect(SQLConnectionConfiguration(
            address: SQLServerAddress(host: "127.0.0.1", port: Int(port)), user: "u", password: "p",
            encryption: .notSupported, connectTimeout: .seconds(10), packetSize: 512))
    }

    func peopleRows(_ n: Int) -> [[SQLValue]] {
        (1 ... n).map { (i: Int) -> [SQLValue] in
            let price = SQLDecimal(isNegative: false, precision: 10, scale: 2, magnitude: UInt128(i * 150))
            let created = SQLDateTime2(date: SQLDate(days: Int32(738_000 + i)), time: SQLTime(ticks: UInt64(i), scale: 0))
            return [SQLValue.string("p\(i)"), SQLValue.decimal(price), SQLValue.datetime2(created), SQLValue.int(Int32(i))]
        }
    }

    func testEveryInsertableTypeArrivesAsSentWithTheTablesMetadata() async throws {
        let server = BulkLoadServer(tables: ["everything": BulkLoadFixtures.tableColumns.map(\.metadata)])
        defer { server.stop() }
        let connection = try await connect(server)
        let result = try await connection.bulkInsert(into: "dbo.everything", rows: BulkLoadFixtures.rows)
        XCTAssertEqual(result.rowsCopied, 3)
        XCTAssertEqual(result.batches, 1)
        let expectedColumns = BulkLoadFixtures.bulkColumns
        XCTAssertEqual(result.columns, expectedColumns.map(\.name))
        XCTAssertEqual(server.requests.first, "SELECT TOP 0 * FROM [dbo].[everything]")
        let load = try XCTUnwrap(server.loads.first)
        XCTAssertEqual(load.statement, try BulkLoadStatement(table: "dbo.everything", columns: expectedColumns).text)
        XCTAssertEqual(load.columns.map(\.name), expectedColumns.map(\.name))
        XCTAssertEqual(load.columns.map(\.typeInfo), expectedColumns.map(\.typeInfo))
        XCTAssertEqual(load.rows, BulkLoadFixtures.rows.map { $0.map(BulkLoadFixtures.expectedDecoded) })
        XCTAssertGreaterThan(load.packetSizes.count, 20, "a 512-byte packet size cuts the message into packets")
        XCTAssertTrue(load.packetSizes.dropLast().allSatisfy { $0 == 504 })
        await connection.close()
    }

    func testBatchesOptionsAndExplicitColumnsSendNoMetadataQuery() async throws {
        let server = BulkLoadServer(tables: [:])
        defer { server.stop() }
        let connection = try await connect(server)
        var options = SQLBulkCopyOptions(checkConstraints: true, fireTriggers: true, keepNulls: true, tableLock: true,
                                         order: [("qty", true)], rowsPerBatch: 5, batchSize: 2)
        options.kilobytesPerBatch = 8
        let columns = [SQLBulkColumn("name", type: .nvarchar(20)), SQLBulkColumn("price", type: .decimal(precision: 10, scale: 2)),
                       SQLBulkColumn("created", type: .datetime2(scale: 0)), SQLBulkColumn("qty", type: .int, nullable: false)]
        let result = try await connection.bulkInsert(into: "people", columns: columns, rows: peopleRows(5), options: options)
        XCTAssertEqual(result.rowsCopied, 5)
        XCTAssertEqual(result.batches, 3)
        XCTAssertEqual(result.columns, ["name", "price", "created", "qty"])
        XCTAssertEqual(server.loads.map(\.rowCount), [2, 2, 1])
        XCTAssertEqual(server.committedRows, 5)
        let statement = "INSERT BULK [people] ([name] nvarchar(20), [price] decimal(10,2), [created] datetime2(0), [qty] int) "
            + "WITH (CHECK_CONSTRAINTS, FIRE_TRIGGERS, KEEP_NULLS, KILOBYTES_PER_BATCH = 8, ROWS_PER_BATCH = 5, ORDER([qty] DESC), TABLOCK)"
        XCTAssertEqual(server.requests, [statement, "BULKLOAD 2 rows", statement, "BULKLOAD 2 rows", statement, "BULKLOAD 1 rows"])
        XCTAssertEqual(server.loads.flatMap(\.rows), peopleRows(5))
        await connection.close()
    }

    func testAValueThatDoesNotFitNamesItsRowAndColumnAndNothingOfItsBatchIsInserted() async throws {
        let server = BulkLoadServer(tables: ["people": Self.people])
        defer { server.stop() }
        let connection = try await connect(server)
        var rows = peopleRows(5)
        rows[3][0] = .string(String(repeating: "x", count: 21))   // row 4: nvarchar(20)
        do {
            _ = try await connection.bulkInsert(into: "people", columns: ["name", "price", "created", "qty"], rows: rows,
                                                options: SQLBulkCopyOptions(batchSize: 2))
            XCTFail("expected an error")
        } catch let error as SQLBulkCopyError {
            XCTAssertEqual(error.rowsCommitted, 2)
            XCTAssertEqual(error.row, 4)
            XCTAssertEqual(error.column, "name")
            XCTAssertEqual(error.error.code, .invalidParameter)
            XCTAssertTrue(error.error.message.hasPrefix("row 4, column [name]: 21 UTF-16 code units exceed nvarchar(20)"),
                          error.error.message)
        }
        // The error comes once the server has answered the refused batch's message (EOM|IGNORE).
        XCTAssertEqual(server.loads.map(\.ignored), [false, true], "the second batch's message ends with EOM|IGNORE")
        XCTAssertEqual(server.committedRows, 2)
        // NULL in a NOT NULL column, on a connection that is still usable.
        rows = peopleRows(1)
        rows[0][3] = .null
        do {
            _ = try await connection.bulkInsert(into: "people", columns: ["name", "price", "created", "qty"], rows: rows)
            XCTFail("expected an error")
        } catch let error as SQLBulkCopyError {
            XCTAssertEqual(error.rowsCommitted, 0)
            XCTAssertEqual(error.error.message, "row 1, column [qty]: NULL in a NOT NULL column")
        }
        XCTAssertEqual(server.loads.map(\.ignored), [false, true, true], "a batch refused at its first row is ended too")
        let ok = try await connection.bulkInsert(into: "people", columns: ["name", "price", "created", "qty"], rows: peopleRows(1))
        XCTAssertEqual(ok.rowsCopied, 1)
        // Only good batches were committed.
        XCTAssertEqual(server.loads.map(\.ignored), [false, true, true, false])
        XCTAssertEqual(server.committedRows, 3)
        await connection.close()
    }

    func testAServerFailureMidLoadReportsTheRowsCommitted() async throws {
        let server = BulkLoadServer(tables: ["people": Self.people], failAtRow: 5)
        defer { server.stop() }
        let connection = try await connect(server)
        do {
            _ = try await connection.bulkInsert(into: "people", columns: ["name", "price", "created", "qty"], rows: peopleRows(7),
                                                options: SQLBulkCopyOptions(batchSize: 2))
            XCTFail("expected an error")
        } catch let error as SQLBulkCopyError {
            XCTAssertEqual(error.rowsCommitted, 4)
            XCTAssertNil(error.row)
            XCTAssertEqual(error.error.code, .serverError)
            XCTAssertEqual(error.error.number, 4866)
        }
        XCTAssertEqual(server.committedRows, 4)
        await connection.close()
    }

    struct Person: Encodable {
        var name: String?
        var price: Decimal
        var created: Date
        var QTY: Int
        var ignored = "not a column"
    }

    func testEncodableValuesMapToColumnsByNameFromAnAsyncSequence() async throws {
        let server = BulkLoadServer(tables: ["people": Self.people])
        defer { server.stop() }
        let connection = try await connect(server)
        let people = [Person(name: "Ada", price: Decimal(string: "12.5")!, created: Date(timeIntervalSince1970: 86_400), QTY: 3),
                      Person(name: nil, price: 0, created: Date(timeIntervalSince1970: 0), QTY: -1)]
        let stream = AsyncStream<Person> { c in
            for p in people { c.yield(p) }
            c.finish()
        }
        let result = try await connection.bulkInsert(into: "people", values: stream)
        XCTAssertEqual(result.rowsCopied, 2)
        XCTAssertEqual(result.columns, ["name", "price", "created", "qty"], "identity left out")
        let rows = try XCTUnwrap(server.loads.first?.rows)
        XCTAssertEqual(rows[0][0], .string("Ada"))
        XCTAssertEqual(rows[0][1].canonicalText, "12.50")
        XCTAssertEqual(rows[0][2].canonicalText, "1970-01-02 00:00:00")
        XCTAssertEqual(rows[0][3], .int(3))
        XCTAssertEqual(rows[1][0], .null)
        XCTAssertEqual(rows[1][3], .int(-1))
        // A row that cannot convert names its row.
        do {
            _ = try await connection.bulkInsert(into: "people", values: [people[0], Person(name: "x", price: Decimal(string: "0.001")!,
                                                                                            created: Date(), QTY: 1)])
            XCTFail("expected an error")
        } catch let error as SQLBulkCopyError {
            XCTAssertEqual(error.row, 2)
            XCTAssertTrue(error.error.message.contains("does not fit decimal(10,2)"), error.error.message)
        }
        await connection.close()
    }

    func testUnknownTablesAndColumnsAndAnEmptyLoad() async throws {
        let server = BulkLoadServer(tables: ["people": Self.people])
        defer { server.stop() }
        let connection = try await connect(server)
        do {
            _ = try await connection.bulkInsert(into: "nope", rows: peopleRows(1))
            XCTFail("expected an error")
        } catch let error as SQLBulkCopyError {
            XCTAssertEqual(error.error.number, 208)
        }
        do {
            _ = try await connection.bulkInsert(into: "people", columns: ["name", "colour"], rows: peopleRows(1))
            XCTFail("expected an error")
        } catch let error as SQLBulkCopyError {
            XCTAssertEqual(error.error.code, .bulkCopyInvalidColumns)
            XCTAssertEqual(error.error.message, "[people] has no column [colour]")
        }
        do {
            _ = try await connection.bulkInsert(into: "a.b.c.d.e", rows: peopleRows(1))
            XCTFail("expected an error")
        } catch let error as SQLBulkCopyError {
            XCTAssertEqual(error.error.code, .invalidParameter)
        }
        let empty = try await connection.bulkInsert(into: "people", rows: [] as [[SQLValue]])
        XCTAssertEqual(empty.rowsCopied, 0)
        XCTAssertEqual(empty.batches, 0)
        XCTAssertTrue(server.loads.isEmpty)
        await connection.close()
    }
}
