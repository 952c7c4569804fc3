import Foundation
import SQLClientTesting
import TDS
import XCTest
@testable import SQLClient

/// Bulk copy into Always Encrypted columns: refused by default, naming the column, before any
/// INSERT BULK; with `allowEncryptedValueModifications` the caller's ciphertext arrives byte for
/// byte as varbinary under `WITH (ALLOW_ENCRYPTED_VALUE_MODIFICATIONS)` and still decrypts.
final class BulkCopyEncryptedColumnTests: XCTestCase {
    static let patients: [ColumnMetadata] = [
        ColumnMetadata(flags: [.updateable], typeInfo: TypeInfo(type: .int4, length: 4), name: "id"),
        ColumnMetadata(flags: [.nullable, .updateable, .encrypted], typeInfo: .varbinary(81), name: "ssn"),
        ColumnMetadata(flags: [.nullable, .updateable], typeInfo: .nvarchar(20), name: "city"),
    ]

    private func connect(_ server: BulkLoadServer) async throws -> SQLConnection {
        let port = try server.start()
        return try await SQLConnection.connect(SQLConnectionConfiguration(
            address: SQLServerAddress(host: "127.0.0.1", port: Int(port)), user: "u", password: "p",
            encryption: .notSupported, connectTimeout: .seconds(10)))
    }

    /// Real ciphertexts: randomized AEAD_AES_256_CBC_HMAC_SHA256 under a key made here.
    private func ciphertexts(_ plaintexts: [String]) throws -> (AEADAes256CbcHmacSha256, [[UInt8]]) {
        let aead = try AEADAes256CbcHmacSha256(rootKey: try AECrypto.randomBytes(32))
        return (aead, try plaintexts.map { try aead.encrypt(EncryptedColumnEncryptionKey.utf16LE($0), type: .randomized) })
    }

    func testAnEncryptedColumnIsRefusedByNameBeforeAnythingIsSent() async throws {
        let server = BulkLoadServer(tables: ["patients": Self.patients])
        defer { server.stop() }
        let connection = try await connect(server)
        let (_, cells) = try ciphertexts(["123-45-6789"])
        for columns in [nil, [SQLBulkColumn("id"), SQLBulkColumn("SSN")]] as [[SQLBulkColumn]?] {
            do {
                _ = try await connection.bulkInsert(into: "dbo.patients", columns: columns,
                                                    rows: [[.int(1), .binary(cells[0])] + (columns == nil ? [.string("Bern")] : [])])
                XCTFail("an encrypted column was loaded")
            } catch let error as SQLBulkCopyError {
                XCTAssertEqual(error.error.code, .bulkCopyEncryptedColumn)
                XCTAssertEqual(error.column, "ssn")
                XCTAssertEqual(error.rowsCommitted, 0)
                XCTAssertTrue(error.error.message.contains("allowEncryptedValueModifications"), error.error.message)
            }
        }
        XCTAssertEqual(server.requests, ["SELECT TOP 0 * FROM [dbo].[patients]", "SELECT TOP 0 * FROM [dbo].[patients]"], "no INSERT BULK")
        XCTAssertTrue(server.loads.isEmpty)
        do {
            _ = try await connection.bulkCopyColumns(for: "patients")
            XCTFail("listed an encrypted column")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .bulkCopyEncryptedColumn)
        }
        // The other columns load as before.
        let result = try await connection.bulkInsert(into: "patients", columns: ["id", "city"], rows: [[.int(7), .string("Chur")]])
        XCTAssertEqual(result.rowsCopied, 1)
        XCTAssertEqual(server.loads.last?.statement, "INSERT BULK [patients] ([id] int, [city] nvarchar(20))")
        await connection.close()
    }

    func testWithTheOptionTheCiphertextArrivesAsItIsAndStillDecrypts() async throws {
        let server = BulkLoadServer(tables: ["patients": Self.patients])
        defer { server.stop() }
        let connection = try await connect(server)
        let (aead, cells) = try ciphertexts(["123-45-6789", "987-65-4321"])
        let rows: [[SQLValue]] = [[.int(1), .binary(cells[0]), .string("Bern")], [.int(2), .null, .string("Genf")],
                                  [.int(3), .binary(cells[1]), .null]]
        let options = SQLBulkCopyOptions(allowEncryptedValueModifications: true)
        let result = try await connection.bulkInsert(into: "patients", rows: rows, options: options)
        XCTAssertEqual(result.rowsCopied, 3)
        let load = try XCTUnwrap(server.loads.first)
        XCTAssertEqual(load.statement, "INSERT BULK [patients] ([id] int, [ssn] varbinary(81), [city] nvarchar(20)) WITH (ALLOW_ENCRYPTED_VALUE_MODIFICATIONS)")
        XCTAssertEqual(load.columns.map(\.typeInfo), [.int, .varbinary(81), .nvarchar(20)])
        XCTAssertFalse(load.columns[1].flags.contains(.encrypted), "no fEncrypted without negotiated column encryption")
        XCTAssertEqual(load.rows, rows)
        guard case .binary(let arrived)? = load.rows.first?[1] else { return XCTFail("no ciphertext") }
        XCTAssertEqual(try aead.decrypt(arrived), EncryptedColumnEncryptionKey.utf16LE("123-45-6789"))
        // Listing the columns with the option gives the ciphertext's type.
        let listed = try await connection.bulkCopyColumns(for: "patients", allowEncryptedValueModifications: true)
        XCTAssertEqual(listed.map(\.type), [.int, .varbinary(81), .nvarchar(20)])
        await connection.close()
    }

    /// A value for an encrypted column that is not ciphertext bytes (or too long for it) is
    /// refused naming its row and column; nothing of its batch is inserted.
    func testAPlaintextValueForAnEncryptedColumnIsRefusedByRowAndColumn() async throws {
        let server = BulkLoadServer(tables: ["patients": Self.patients])
        defer { server.stop() }
        let connection = try await connect(server)
        let (_, cells) = try ciphertexts(["a"])
        for bad in [SQLValue.string("123-45-6789"), .binary([UInt8](repeating: 1, count: 82))] {
            do {
                _ = try await connection.bulkInsert(into: "patients", rows: [[.int(1), .binary(cells[0]), .null], [.int(2), bad, .null]],
                                                    options: SQLBulkCopyOptions(allowEncryptedValueModifications: true))
                XCTFail("loaded \(bad)")
            } catch let error as SQLBulkCopyError {
                XCTAssertEqual(error.row, 2)
                XCTAssertEqual(error.column, "ssn")
                XCTAssertEqual(error.error.code, .invalidParameter)
            }
        }
        XCTAssertEqual(server.committedRows, 0)
        await connection.close()
    }
}
