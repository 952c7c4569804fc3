import XCTest
@testable import TDS

/// The BULKLOAD COLMETADATA of a connection that negotiated column encryption: a CEK table
/// (empty, or entries without key values) after Count and CryptoMetaData after an encrypted
/// column's TYPE_INFO, read back by the COLMETADATA decoder; the option's INSERT BULK hint.
final class BulkLoadColumnEncryptionTests: XCTestCase {
    let version = TDSVersion.v7_4

    private func metadata(_ encoder: BulkLoadEncoder, columnEncryption: Bool) throws -> ColMetadata {
        var w = ByteWriter()
        encoder.encodeMetadata(into: &w)
        var r = ByteReader(w.bytes)
        XCTAssertEqual(try r.readUInt8(), TokenType.colMetadata.rawValue)
        let decoded = try ColMetadata.decode(from: &r, version: version, columnEncryption: columnEncryption)
        XCTAssertEqual(r.remaining, 0)
        return decoded
    }

    func testAnEmptyCEKTableIsWrittenOnlyWhenColumnEncryptionIsNegotiated() throws {
        let columns = [BulkLoadColumn(name: "id", type: .int), BulkLoadColumn(name: "name", type: .nvarchar(10))]
        let plain = BulkLoadEncoder(columns: columns, version: version)
        var a = ByteWriter(), b = ByteWriter()
        plain.encodeMetadata(into: &a)
        BulkLoadEncoder(columns: columns, version: version, cekTable: []).encodeMetadata(into: &b)
        XCTAssertEqual(b.bytes, Array(a.bytes[..<3]) + [0, 0] + Array(a.bytes[3...]), "Count, then CekTable count 0")
        let decoded = try metadata(BulkLoadEncoder(columns: columns, version: version, cekTable: []), columnEncryption: true)
        XCTAssertEqual(decoded.cekTable, [])
        XCTAssertEqual(decoded.columns.map(\.name), ["id", "name"])
        XCTAssertEqual(try metadata(plain, columnEncryption: false).columns.map(\.typeInfo), columns.map(\.typeInfo))
    }

    func testAnEncryptedColumnCarriesItsCryptoMetadataAndTheTableItsEntry() throws {
        let crypto = CryptoMetadata(ordinal: 0, userType: 0, baseType: .nvarchar(11), algorithm: 2, encryptionType: 1)
        var ssn = BulkLoadColumn(name: "ssn", type: .varbinary(8000))
        ssn.cryptoMetadata = crypto
        XCTAssertTrue(ssn.flags.contains(.encrypted))
        let entry = CEKEntry(databaseID: 5, cekID: 1, cekVersion: 1, cekMetadataVersion: 0x0102_0304_0506_0708, values: [])
        let decoded = try metadata(BulkLoadEncoder(columns: [BulkLoadColumn(name: "id", type: .int), ssn], version: version, cekTable: [entry]),
                                   columnEncryption: true)
        XCTAssertEqual(decoded.cekTable, [entry], "no key values are sent")
        XCTAssertEqual(decoded.columns[1].cryptoMetadata, crypto)
        XCTAssertTrue(decoded.columns[1].flags.contains(.encrypted))
        XCTAssertNil(decoded.columns[0].cryptoMetadata)
        // Without a CEK table (not negotiated) the column goes as plain varbinary: no flag, no CryptoMetaData.
        let plain = try metadata(BulkLoadEncoder(columns: [ssn], version: version), columnEncryption: false)
        XCTAssertFalse(plain.columns[0].flags.contains(.encrypted))
        XCTAssertEqual(plain.columns[0].typeInfo, .varbinary(8000))
        ssn.cryptoMetadata = nil
        XCTAssertFalse(ssn.flags.contains(.encrypted))
    }

    func testTheOptionAddsItsHint() throws {
        let statement = try BulkLoadStatement(table: "t", columns: [BulkLoadColumn(name: "c", type: .varbinary(100))],
                                              options: .init(keepNulls: true, allowEncryptedValueModifications: true))
        XCTAssertEqual(statement.text, "INSERT BULK [t] ([c] varbinary(100)) WITH (KEEP_NULLS, ALLOW_ENCRYPTED_VALUE_MODIFICATIONS)")
        XCTAssertNotEqual(BulkLoadStatement.Options(allowEncryptedValueModifications: true), BulkLoadStatement.Options())
    }
}
