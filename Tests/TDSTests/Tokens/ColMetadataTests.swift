import XCTest
@testable import TDS
import SQLClientTesting

/// COLMETADATA ([MS-TDS] 2.2.7.4) decoded as its bytes arrive (``ColMetadataProgress``,
/// ``ColumnProgress``, ``CryptoMetadataProgress``): a CEK table, text columns' table names and
/// encrypted columns' CryptoMetaData give the same token and errors whole, byte by byte and split
/// at random, in linear work.
final class ColMetadataTests: XCTestCase {
    let encryption = TokenStreamDecoder.Options(columnEncryption: true)

    /// A COLMETADATA with a CEK table of `entries` entries (each of 1 to 3 values) and `columns`
    /// columns: int, ntext (a three-part table name), and encrypted varbinary (CryptoMetaData of
    /// an nvarchar), in turn.
    func token(entries: Int, columns: Int) -> (bytes: [UInt8], value: ColMetadata) {
        var table: [CEKEntry] = []
        for e in 0 ..< entries {
            var values: [CEKEntry.Value] = []
            for v in 0 ... e % 3 {
                let key: [UInt8] = (0 ..< 40 + v).map { UInt8(truncatingIfNeeded: $0 * 7 + e) }
                values.append(CEKEntry.Value(encryptedKey: key, keyStoreName: "MSSQL_CERTIFICATE_STORE",
                                             keyPath: "CurrentUser/My/\(e)-\(v)", algorithm: "RSA_OAEP"))
            }
            table.append(CEKEntry(databaseID: UInt32(e), cekID: UInt32(e * 3), cekVersion: 1,
                                  cekMetadataVersion: UInt64(e) << 40, values: values))
        }
        var w = ByteWriter()
        w.writeUInt8(0x81)
        w.writeUInt16LE(UInt16(columns))
        w.writeUInt16LE(UInt16(table.count))
        for e in table {
            w.writeUInt32LE(e.databaseID); w.writeUInt32LE(e.cekID); w.writeUInt32LE(e.cekVersion); w.writeUInt64LE(e.cekMetadataVersion)
            w.writeUInt8(UInt8(e.values.count))
            for v in e.values {
                w.writeUInt16LE(UInt16(v.encryptedKey.count)); w.writeBytes(v.encryptedKey)
                w.writeBVarChar(v.keyStoreName); w.writeUSVarChar(v.keyPath); w.writeBVarChar(v.algorithm)
            }
        }
        var cols: [ColumnMetadata] = []
        for i in 0 ..< columns {
            let name = "column_\(i)"
            switch i % 3 {
            case 0:
                cols.append(ColumnMetadata(typeInfo: .int, name: name))
                w.writeUInt32LE(0); w.writeUInt16LE(ColumnFlags.nullable.rawValue)
                TypeInfo.int.encode(into: &w, version: .v7_4)
            case 1:
                let parts = ["db\(i)", "dbo", "table_\(i)"]
                cols.append(ColumnMetadata(typeInfo: .ntext(), tableName: parts, name: name))
                w.writeUInt32LE(0); w.writeUInt16LE(ColumnFlags.nullable.rawValue)
                TypeInfo.ntext().encode(into: &w, version: .v7_4)
                w.writeUInt8(UInt8(parts.count))
                for p in parts { w.writeUSVarChar(p) }
            default:
                let crypto = CryptoMetadata(ordinal: UInt16(i % max(entries, 1)), userType: 0, baseType: .nvarchar(20),
                                            algorithm: i % 2 == 0 ? 0 : 2, algorithmName: i % 2 == 0 ? "custom_\(i)" : nil,
                                            encryptionType: 1, normalizationVersion: 1)
                cols.append(ColumnMetadata(flags: [.nullable, .encrypted], typeInfo: .varbinary(8000), cryptoMetadata: crypto, name: name))
                w.writeUInt32LE(0); w.writeUInt16LE(ColumnFlags([.nullable, .encrypted]).rawValue)
                TypeInfo.varbinary(8000).encode(into: &w, version: .v7_4)
                w.writeUInt16LE(crypto.ordinal!); w.writeUInt32LE(crypto.userType)
                crypto.baseType.encode(into: &w, version: .v7_4)
                w.writeUInt8(crypto.algorithm)
                if let n = crypto.algorithmName { w.writeBVarChar(n) }
                w.writeUInt8(crypto.encryptionType); w.writeUInt8(crypto.normalizationVersion)
            }
            w.writeBVarChar(name)
        }
        return (w.bytes, ColMetadata(columns: cols, cekTable: table))
    }

    func testACEKTableAndManyColumnsAreTheSameWholeByteByByteAndSplitAtRandom() throws {
        let (bytes, value) = token(entries: 60, columns: 120)
        XCTAssertGreaterThan(bytes.count, 15_000)
        let tokens = try DecoderVerifier.verify(bytes, version: .v7_4, options: encryption, randomSplits: 12, seed: 81)
        XCTAssertEqual(tokens, [.colMetadata(value)])
        XCTAssertEqual(value.cekTable?.count, 60)
        XCTAssertEqual(value.columns[2].cryptoMetadata?.algorithmName, "custom_2")
        XCTAssertEqual(value.columns[1].tableName, ["db1", "dbo", "table_1"])
    }

    /// One byte at a time, every attempt re-reads at most one unit (a CEK entry's 25-byte head,
    /// a column's UserType, Flags and TYPE_INFO): the work is within a small multiple of the
    /// length, where re-reading the CEK table from the token's start on every byte (as before)
    /// was quadratic.
    func testByteByByteWorkIsLinearInTheTokensLength() throws {
        let (bytes, value) = token(entries: 80, columns: 150)
        XCTAssertGreaterThan(bytes.count, 20_000)
        let (tokens, examined) = try examinedBytes(bytes, options: encryption)
        XCTAssertEqual(tokens, [.colMetadata(value)])
        XCTAssertLessThanOrEqual(examined, 6 * bytes.count)
        let (_, whole) = try examinedBytes(bytes, piece: bytes.count, options: encryption)
        XCTAssertEqual(whole, bytes.count)
    }

    /// Errors in the CEK table and in a column's CryptoMetaData, and a token the message ends
    /// inside of, are the same however the bytes arrive.
    func testErrorsAreTheSameHoweverTheBytesArrive() throws {
        let (bytes, _) = token(entries: 4, columns: 9)
        // The first key path's first UTF-16 unit: a lone low surrogate.
        let path = Array("CurrentUser/My/0-0".utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        guard let at = (0 ..< bytes.count - path.count).first(where: { Array(bytes[$0 ..< $0 + path.count]) == path }) else {
            return XCTFail("no key path")
        }
        var bad = bytes
        bad[at] = 0x00; bad[at + 1] = 0xDC
        let out = try DecoderVerifier.outcome(bad, version: .v7_4, options: encryption, randomSplits: 12, seed: 3)
        XCTAssertEqual(out.error?.code, .invalidEncoding)
        XCTAssertEqual(out.error?.context, "COLMETADATA")
        XCTAssertEqual(out.error?.offset, at)
        // The CryptoMetaData base type of column 3: an unknown type byte.
        let cut = try XCTUnwrap(bytes.lastRange(of: [0xE7, 0x28, 0x00]))   // nvarchar(20): type byte, MaxLength
        var badType = bytes
        badType[cut] = 0x01
        let typeOut = try DecoderVerifier.outcome(badType, version: .v7_4, options: encryption, randomSplits: 12, seed: 4)
        XCTAssertEqual(typeOut.error?.code, .unknownType)
        XCTAssertEqual(typeOut.error?.offset, cut)
        let truncated = try DecoderVerifier.outcome(Array(bytes.dropLast(5)), version: .v7_4, options: encryption, randomSplits: 12, seed: 5)
        XCTAssertEqual(truncated.error?.code, .truncated)
        XCTAssertEqual(truncated.error?.context, "COLMETADATA")
        XCTAssertEqual(truncated.error?.offset, 0)
        XCTAssertEqual(truncated.error?.detail, "the message ended inside the token (after 8 column(s))")
    }

    /// An xml column with a schema collection and a UDT column, each name arriving a byte at a
    /// time: the names before the last are checked once (``TypeInfoNames``), not decoded again
    /// on every byte of the long last one; an invalid name before it is the same error whether
    /// or not the rest arrives.
    func testXMLAndUDTNamesAreCheckedOnceAsTheyArrive() throws {
        let xml = TypeInfo(type: .xml, length: -1, isPLP: true,
                           xmlSchema: XMLSchemaInfo(databaseName: String(repeating: "d", count: 200), owningSchema: "dbo",
                                                    schemaCollection: String(repeating: "schema/", count: 1500)))
        let udt = TypeInfo(type: .udt, length: 0xFFFF, isPLP: true,
                           udt: UDTInfo(maxByteSize: 0xFFFF, databaseName: String(repeating: "u", count: 250), schemaName: "sys",
                                        typeName: "hierarchyid", assemblyQualifiedName: String(repeating: "Microsoft.SqlServer.Types ", count: 200)))
        let columns = [ColumnMetadata(typeInfo: xml, name: "doc"), ColumnMetadata(typeInfo: udt, name: "node")]
        var w = ByteWriter()
        ColMetadata(columns: columns).encode(into: &w, version: .v7_4)
        let bytes = w.bytes
        XCTAssertGreaterThan(bytes.count, 25_000)
        let tokens = try DecoderVerifier.verify(bytes, version: .v7_4, randomSplits: 12, seed: 0xF1)
        XCTAssertEqual(tokens, [.colMetadata(ColMetadata(columns: columns))])
        let (_, examined) = try examinedBytes(bytes)
        XCTAssertLessThanOrEqual(examined, 4 * bytes.count)
        // A lone surrogate in the xml DBNAME, the stream ending inside XML_SCHEMA_COLLECTION.
        let name = Array(String(repeating: "d", count: 200).utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        guard let at = (0 ..< bytes.count - name.count).first(where: { Array(bytes[$0 ..< $0 + name.count]) == name }) else {
            return XCTFail("no DBNAME")
        }
        var bad = Array(bytes.prefix(at + 2000))
        bad[at + 10] = 0x00; bad[at + 11] = 0xDC
        let out = try DecoderVerifier.outcome(bad, version: .v7_4, randomSplits: 12, seed: 0xF2)
        XCTAssertEqual(out.error?.code, .invalidEncoding)
        XCTAssertEqual(out.error?.offset, at + 10)
    }

    /// The standalone decoder reads the same token; a truncated one throws `.truncated` at the
    /// read that ran out of bytes.
    func testDecodeWholeAndTruncated() throws {
        let (bytes, value) = token(entries: 3, columns: 6)
        var r = ByteReader(bytes, start: 1)
        XCTAssertEqual(try ColMetadata.decode(from: &r, version: .v7_4, columnEncryption: true), value)
        XCTAssertTrue(r.isAtEnd)
        var short = ByteReader(Array(bytes.dropLast(1)), start: 1)
        XCTAssertThrowsError(try ColMetadata.decode(from: &short, version: .v7_4, columnEncryption: true)) { error in
            let e = error as? TDSDecodingError
            XCTAssertEqual(e?.code, .truncated)
            XCTAssertEqual(e?.context, "COLMETADATA")
            XCTAssertEqual(e?.offset, bytes.count - 2 * "column_5".utf16.count, "the last column name's characters")
        }
    }
}

extension Array where Element == UInt8 {
    /// The index of the last occurrence of `pattern`.
    func lastRange(of pattern: [UInt8]) -> Int? {
        guard count >= pattern.count else { return nil }
        return (0 ... count - pattern.count).reversed().first { Array(self[$0 ..< $0 + pattern.count]) == pattern }
    }
}
