import SQLClientTesting
import TDS
import XCTest

/// COLMETADATA with a CEK table and CryptoMetaData ([MS-TDS] 2.2.7.4) when column encryption
/// was negotiated: the same whole, byte by byte and split; hostile tables bounded.
final class ColMetadataCEKTableTests: XCTestCase {
    let encryption = TokenStreamDecoder.Options(columnEncryption: true)

    /// The published CEK (swisscom fixture) and a second entry with two values, an int column,
    /// and encrypted nchar(10) (deterministic) and int (randomized) columns.
    static func token() throws -> (bytes: [UInt8], value: ColMetadata) {
        let published = CEKEntry.Value(encryptedKey: try AEFixtures.bytes("swisscom/cekv.key"), keyStoreName: "MSSQL_CERTIFICATE_STORE",
                                       keyPath: AEFixtures.masterKeyPath, algorithm: "RSA_OAEP")
        let rotated = [CEKEntry.Value(encryptedKey: [UInt8](repeating: 0xA5, count: 300), keyStoreName: "CUSTOM", keyPath: "vault/key1", algorithm: "RSA_OAEP"),
                       CEKEntry.Value(encryptedKey: [1, 2, 3], keyStoreName: "MSSQL_CERTIFICATE_STORE", keyPath: "LocalMachine/My/AB12", algorithm: "RSA_OAEP")]
        let table = [CEKEntry(databaseID: 7, cekID: 1, cekVersion: 1, cekMetadataVersion: 0x0102_0304_0506_0708, values: [published]),
                     CEKEntry(databaseID: 7, cekID: 2, cekVersion: 3, cekMetadataVersion: 9, values: rotated)]
        let columns = [
            ColumnMetadata(typeInfo: .int, name: "id"),
            ColumnMetadata(flags: [.nullable, .encrypted], typeInfo: .varbinary(8000),
                           cryptoMetadata: CryptoMetadata(ordinal: 0, userType: 0, baseType: .nchar(10), algorithm: 2, encryptionType: 1), name: "name"),
            ColumnMetadata(flags: [.encrypted], typeInfo: .varbinary(8000),
                           cryptoMetadata: CryptoMetadata(ordinal: 1, userType: 0, baseType: .int, algorithm: 2, encryptionType: 2), name: "salary"),
        ]
        let value = ColMetadata(columns: columns, cekTable: table)
        var w = ByteWriter()
        value.encode(into: &w, version: .v7_4)
        return (w.bytes, value)
    }

    func testCEKTableAndCryptoMetadataAreTheSameWholeByteByByteAndSplit() throws {
        let (bytes, value) = try Self.token()
        let tokens = try DecoderVerifier.verify(bytes, version: .v7_4, options: encryption, randomSplits: 24, seed: 42)
        XCTAssertEqual(tokens, [.colMetadata(value)])
        guard case .colMetadata(let m) = tokens.first else { return XCTFail() }
        XCTAssertEqual(m.cekTable?.first?.values.first?.encryptedKey, try AEFixtures.bytes("swisscom/cekv.key"))
        XCTAssertEqual(m.columns[1].cryptoMetadata?.baseType, .nchar(10))
        XCTAssertEqual(m.columns[2].cryptoMetadata?.encryptionType, 2)
        // Then a ROW whose encrypted cells are varbinary ciphertexts, as the server sends them.
        var w = ByteWriter()
        w.writeBytes(bytes)
        w.writeUInt8(0xD1)
        w.writeUInt8(4); w.writeUInt32LE(5)
        let cell = try AEFixtures.bytes("swisscom/column_value.enc")
        w.writeUInt16LE(UInt16(cell.count)); w.writeBytes(cell)
        w.writeUInt16LE(0xFFFF)   // NULL: an encrypted NULL is a NULL varbinary
        let withRow = try DecoderVerifier.verify(w.bytes, version: .v7_4, options: encryption, randomSplits: 8, seed: 43)
        XCTAssertEqual(withRow.count, 2)
    }

    /// Without column encryption negotiated the same bytes do not parse as this metadata.
    func testWithoutNegotiationTheCEKTableIsNotRead() throws {
        let (bytes, value) = try Self.token()
        let out = DecoderVerifier.decode(bytes, pieces: [bytes.count], version: .v7_4)
        XCTAssertNotEqual(out.tokens, [.colMetadata(value)])
    }

    /// An Ordinal at or past the CEK table's end is `.invalidValue` at the Ordinal, however the
    /// bytes arrive; so is one with an empty table.
    func testAnOrdinalOutsideTheTableIsInvalidValue() throws {
        var (_, value) = try Self.token()
        value.columns[2].cryptoMetadata?.ordinal = 2
        var w = ByteWriter()
        value.encode(into: &w, version: .v7_4)
        let bytes = w.bytes
        let out = try DecoderVerifier.outcome(bytes, version: .v7_4, options: encryption, randomSplits: 12, seed: 7)
        XCTAssertEqual(out.error?.code, .invalidValue)
        XCTAssertEqual(out.error?.context, "COLMETADATA")
        // The Ordinal sits after "salary" column's UserType, Flags and varbinary(8000) TYPE_INFO.
        let at = try XCTUnwrap(bytes.lastRange(of: [0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0xA5, 0x40, 0x1F])) + 9
        XCTAssertEqual(out.error?.offset, at)
        XCTAssertTrue(out.error?.detail.contains("Ordinal 2 is outside the CEK table of 2 entries") ?? false, "\(String(describing: out.error))")

        let none = ColMetadata(columns: [value.columns[1]], cekTable: [])
        var e = ByteWriter()
        none.encode(into: &e, version: .v7_4)
        XCTAssertEqual(try DecoderVerifier.outcome(e.bytes, version: .v7_4, options: encryption, randomSplits: 4, seed: 8).error?.code, .invalidValue)
    }

    /// A CEK table of 65,535 entries (no values each: 21 bytes an entry) is read in bounded
    /// memory and time, whole and in packet-sized pieces; one whose entries carry keys beyond the
    /// token cap (16 MiB by default) is `.limitExceeded`, and with a smaller cap sooner.
    func testAHostileTableOf65535EntriesIsBounded() throws {
        var w = ByteWriter()
        w.writeUInt8(0x81)
        w.writeUInt16LE(1)
        w.writeUInt16LE(0xFFFF)
        for i in 0 ..< 0xFFFF {
            w.writeUInt32LE(UInt32(i)); w.writeUInt32LE(1); w.writeUInt32LE(1); w.writeUInt64LE(0); w.writeUInt8(0)
        }
        w.writeUInt32LE(0); w.writeUInt16LE(ColumnFlags.nullable.rawValue)
        TypeInfo.int.encode(into: &w, version: .v7_4)
        w.writeBVarChar("c")
        let bytes = w.bytes
        XCTAssertEqual(bytes.count, 5 + 0xFFFF * 21 + 6 + 2 + 3)
        let whole = DecoderVerifier.decode(bytes, pieces: [bytes.count], version: .v7_4, options: encryption)
        XCTAssertNil(whole.error)
        guard case .colMetadata(let m)? = whole.tokens.first else { return XCTFail("\(whole)") }
        XCTAssertEqual(m.cekTable?.count, 0xFFFF)
        XCTAssertEqual(m.cekTable?.last?.databaseID, 0xFFFE)
        let packets = DecoderVerifier.decode(bytes, pieces: Array(repeating: 4088, count: bytes.count / 4088 + 1), version: .v7_4, options: encryption)
        XCTAssertEqual(packets, whole)
        // A smaller token cap refuses the same table as soon as it is passed.
        var capped = encryption
        capped.maximumTokenSize = 1 << 20
        let refused = DecoderVerifier.decode(bytes, pieces: Array(repeating: 4088, count: bytes.count / 4088 + 1), version: .v7_4, options: capped)
        XCTAssertEqual(refused.error?.code, .limitExceeded)
        XCTAssertEqual(refused.error?.offset, 0)
    }

    func testATableWithLargeKeysBeyondTheDefaultCapIsLimitExceeded() throws {
        // 65,535 entries each with one 255-byte key: ~19 MB, past the 16 MiB default cap.
        var w = ByteWriter()
        w.writeUInt8(0x81)
        w.writeUInt16LE(1)
        w.writeUInt16LE(0xFFFF)
        let key = [UInt8](repeating: 0x5A, count: 255)
        for i in 0 ..< 0xFFFF {
            w.writeUInt32LE(UInt32(i)); w.writeUInt32LE(1); w.writeUInt32LE(1); w.writeUInt64LE(0); w.writeUInt8(1)
            w.writeUInt16LE(255); w.writeBytes(key)
            w.writeBVarChar("S"); w.writeUSVarChar("p"); w.writeBVarChar("RSA_OAEP")
        }
        let bytes = w.bytes
        XCTAssertGreaterThan(bytes.count, TokenStreamDecoder.Options.defaultMaximumTokenSize)
        let out = DecoderVerifier.decode(bytes, pieces: Array(repeating: 32_768, count: bytes.count / 32_768 + 1), version: .v7_4, options: encryption)
        XCTAssertEqual(out.error?.code, .limitExceeded)
        XCTAssertEqual(out.tokens, [])
    }

    /// Every truncation of the token is `.truncated` at the end of the message, never a trap,
    /// and never a token.
    func testEveryTruncationIsTruncated() throws {
        let (bytes, _) = try Self.token()
        for n in Swift.stride(from: 1, to: bytes.count, by: 3) {
            let out = DecoderVerifier.decode(Array(bytes.prefix(n)), pieces: [n], version: .v7_4, options: encryption)
            XCTAssertEqual(out.error?.code, .truncated, "\(n) bytes")
            XCTAssertEqual(out.tokens, [])
        }
    }

    /// The CEK table's strings: an unpaired surrogate in a key path, an unknown base type in
    /// CryptoMetaData, are their typed errors; custom algorithm names are kept for the client
    /// to refuse (``SQLColumnDecryptor``).
    func testMalformedStringsAndTypesAndCustomAlgorithmNames() throws {
        var (_, value) = try Self.token()
        value.columns[2].cryptoMetadata?.algorithm = 0
        value.columns[2].cryptoMetadata?.algorithmName = "MY_ALGORITHM"
        var w = ByteWriter()
        value.encode(into: &w, version: .v7_4)
        XCTAssertEqual(try DecoderVerifier.verify(w.bytes, version: .v7_4, options: encryption, randomSplits: 6, seed: 9), [.colMetadata(value)])
        var bytes = w.bytes
        let path = AEFixtures.utf16LE("vault/key1")
        let at = try XCTUnwrap(bytes.lastRange(of: path))
        bytes[at] = 0x00; bytes[at + 1] = 0xDC
        let bad = try DecoderVerifier.outcome(bytes, version: .v7_4, options: encryption, randomSplits: 6, seed: 10)
        XCTAssertEqual(bad.error?.code, .invalidEncoding)
        XCTAssertEqual(bad.error?.offset, at)
    }
}

extension Array where Element == UInt8 {
    /// The index of the last occurrence of `pattern`.
    func lastRange(of pattern: [UInt8]) -> Int? {
        guard count >= pattern.count else { return nil }
        return (0 ... count - pattern.count).reversed().first { Array(self[$0 ..< $0 + pattern.count]) == pattern }
    }
}
