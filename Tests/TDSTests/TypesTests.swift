import Foundation
import XCTest
@testable import TDS

/// Shared helpers for the Types tests.
enum TypesTestSupport {
    static let latin1 = Collation.sqlLatin1GeneralCP1CIAS

    static func decode(_ info: TypeInfo, _ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) throws -> SQLValue {
        var r = ByteReader(bytes)
        let v = try info.decodeValue(from: &r)
        XCTAssertEqual(r.remaining, 0, "value must consume exactly its bytes", file: file, line: line)
        return v
    }

    static func encode(_ info: TypeInfo, _ value: SQLValue) throws -> [UInt8] {
        var w = ByteWriter()
        try info.encodeValue(value, into: &w)
        return w.bytes
    }

    static func decodeError(_ info: TypeInfo, _ bytes: [UInt8], baseOffset: Int = 0) -> TDSDecodingError? {
        var r = ByteReader(bytes, baseOffset: baseOffset)
        do {
            _ = try info.decodeValue(from: &r)
            return nil
        } catch {
            return error
        }
    }

    /// Reassembles a PLP stream: 8-byte total, chunks, 0 terminator. nil = PLP NULL.
    static func reassemblePLP(_ bytes: [UInt8]) throws -> [UInt8]? {
        var r = ByteReader(bytes)
        let total = try r.readUInt64LE()
        if total == 0xFFFF_FFFF_FFFF_FFFF { return nil }
        var out: [UInt8] = []
        while true {
            let n = Int(try r.readUInt32LE())
            if n == 0 { break }
            out += try r.readBytes(n)
        }
        XCTAssertEqual(r.remaining, 0)
        if total != 0xFFFF_FFFF_FFFF_FFFE { XCTAssertEqual(Int(total), out.count) }
        return out
    }
}

final class TypesTypeInfoTests: XCTestCase {
    typealias S = TypesTestSupport

    func testEveryTypeByteHasItsSpecName() {
        XCTAssertEqual(TDSDataType.allKnown.count, 44)
        XCTAssertEqual(Set(TDSDataType.allKnown.map(\.rawValue)).count, 44)
        XCTAssertEqual(TDSDataType.intN.name, "INTN")
        XCTAssertEqual(TDSDataType.nvarchar.name, "NVARCHAR")
        XCTAssertEqual(TDSDataType(0xE7), .nvarchar)
        XCTAssertEqual(TDSDataType.datetimeOffsetN.rawValue, 0x2B)
        XCTAssertEqual(TDSDataType.ssVariant.rawValue, 0x62)
        XCTAssertEqual(TDSDataType(0x99).name, "0x99")
        XCTAssertFalse(TDSDataType(0x99).isKnown)
        for t in TDSDataType.allKnown {
            XCTAssertTrue(t.isKnown, t.name)
            XCTAssertNotNil(t.lengthKind, t.name)
        }
    }

    func testUnknownTypeByteIsTypedErrorWithOffset() {
        var r = ByteReader([0x00, 0x99, 0x01], start: 1, baseOffset: 100)
        XCTAssertThrowsError(try TypeInfo.decode(from: &r, version: .v7_4)) { e in
            let e = e as? TDSDecodingError
            XCTAssertEqual(e?.code, .unknownType)
            XCTAssertEqual(e?.offset, 101)
        }
    }

    func testNVarCharTypeInfoBytesAndCollation() throws {
        var r = ByteReader([0xE7, 0x28, 0x00, 0x09, 0x04, 0xD0, 0x00, 0x34])
        let info = try TypeInfo.decode(from: &r, version: .v7_4)
        XCTAssertEqual(r.remaining, 0)
        XCTAssertEqual(info.type, .nvarchar)
        XCTAssertEqual(info.length, 40)
        XCTAssertEqual(info.sqlTypeName, "nvarchar(20)")
        XCTAssertFalse(info.isPLP)
        XCTAssertEqual(info.collation, S.latin1)
        XCTAssertEqual(info.collation?.lcid, 0x0409)
        XCTAssertEqual(info.collation?.sortID, 52)
        XCTAssertEqual(info.collation?.codePage, 1252)
        XCTAssertEqual(info.collation?.bytes, [0x09, 0x04, 0xD0, 0x00, 0x34])
        XCTAssertTrue(info.collation?.flags.contains(.ignoreCase) ?? false)
        var w = ByteWriter()
        info.encode(into: &w, version: .v7_4)
        XCTAssertEqual(w.bytes, [0xE7, 0x28, 0x00, 0x09, 0x04, 0xD0, 0x00, 0x34])
    }

    func testTDS70HasNoCollation() throws {
        var r = ByteReader([0xE7, 0x28, 0x00, 0x26, 0x04])
        let info = try TypeInfo.decode(from: &r, version: .v7_0)
        XCTAssertNil(info.collation)
        XCTAssertEqual(r.remaining, 2)
    }

    func testSQLTypeNamesAndTypeInfoRoundTrip() throws {
        let cases: [(TypeInfo, String)] = [
            (TypeInfo(type: .int4, length: 4), "int"), (TypeInfo(type: .int1, length: 1), "tinyint"),
            (TypeInfo(type: .int2, length: 2), "smallint"), (TypeInfo(type: .int8, length: 8), "bigint"),
            (TypeInfo(type: .bit, length: 1), "bit"), (TypeInfo(type: .flt4, length: 4), "real"),
            (TypeInfo(type: .flt8, length: 8), "float"), (TypeInfo(type: .money, length: 8), "money"),
            (TypeInfo(type: .money4, length: 4), "smallmoney"), (TypeInfo(type: .datetime, length: 8), "datetime"),
            (TypeInfo(type: .datetim4, length: 4), "smalldatetime"), (TypeInfo(type: .null), "null"),
            (.int, "int"), (.bigint, "bigint"), (.smallint, "smallint"), (.tinyint, "tinyint"), (.bit, "bit"),
            (.real, "real"), (.float, "float"), (.money, "money"), (.smallMoney, "smallmoney"),
            (.datetime, "datetime"), (.smallDateTime, "smalldatetime"), (.uniqueIdentifier, "uniqueidentifier"),
            (.decimal(precision: 10, scale: 3), "decimal(10,3)"), (.numeric(precision: 38, scale: 38), "numeric(38,38)"),
            (TypeInfo(type: .decimal, length: 17, precision: 38, scale: 2), "decimal(38,2)"),
            (TypeInfo(type: .numeric, length: 5, precision: 5, scale: 0), "numeric(5,0)"),
            (.date, "date"), (.time(scale: 0), "time(0)"), (.time(scale: 7), "time(7)"),
            (.datetime2(scale: 7), "datetime2(7)"), (.datetime2(scale: 0), "datetime2(0)"),
            (.datetimeOffset(scale: 3), "datetimeoffset(3)"),
            (.nvarchar(20), "nvarchar(20)"), (.nvarchar(nil), "nvarchar(max)"), (.nchar(10), "nchar(10)"),
            (.varchar(8000), "varchar(8000)"), (.varchar(nil), "varchar(max)"), (.char(3), "char(3)"),
            (.varbinary(16), "varbinary(16)"), (.varbinary(nil), "varbinary(max)"), (.binary(8), "binary(8)"),
            (.text(), "text"), (.ntext(), "ntext"), (.image, "image"), (.xml, "xml"), (.sqlVariant, "sql_variant"),
            (TypeInfo(type: .char, length: 10), "char(10)"), (TypeInfo(type: .varchar, length: 255), "varchar(255)"),
            (TypeInfo(type: .binary, length: 4), "binary(4)"), (TypeInfo(type: .varbinary, length: 30), "varbinary(30)"),
            (TypeInfo(type: .xml, length: -1, isPLP: true,
                      xmlSchema: XMLSchemaInfo(databaseName: "db", owningSchema: "dbo", schemaCollection: "Coll")), "xml"),
            (TypeInfo(type: .udt, length: 892, isPLP: true,
                      udt: UDTInfo(maxByteSize: 892, databaseName: "master", schemaName: "sys", typeName: "geometry",
                                   assemblyQualifiedName: "Microsoft.SqlServer.Types.SqlGeometry, Version=11")), "geometry"),
        ]
        for (info, name) in cases {
            XCTAssertEqual(info.sqlTypeName, name)
            var w = ByteWriter()
            info.encode(into: &w, version: .v7_4)
            var r = ByteReader(w.bytes)
            let back = try TypeInfo.decode(from: &r, version: .v7_4)
            XCTAssertEqual(r.remaining, 0, name)
            XCTAssertEqual(back, info, name)
            // Every strict prefix is .truncated.
            for cut in 0 ..< w.bytes.count {
                var p = ByteReader(Array(w.bytes[..<cut]))
                XCTAssertThrowsError(try TypeInfo.decode(from: &p, version: .v7_4), "\(name) cut \(cut)") { e in
                    XCTAssertEqual((e as? TDSDecodingError)?.code, .truncated, "\(name) cut \(cut)")
                }
            }
        }
    }

    func testInvalidTypeInfoLengthsAndScales() {
        func code(_ bytes: [UInt8]) -> TDSDecodingError.Code? {
            var r = ByteReader(bytes)
            do { _ = try TypeInfo.decode(from: &r, version: .v7_4); return nil } catch { return error.code }
        }
        XCTAssertEqual(code([0x26, 0x03]), .invalidLength)          // INTN(3)
        XCTAssertEqual(code([0x24, 0x10]), nil)                     // GUID(16)
        XCTAssertEqual(code([0x24, 0x08]), .invalidLength)
        XCTAssertEqual(code([0x29, 0x08]), .invalidValue)           // TIMEN scale 8
        XCTAssertEqual(code([0x6A, 0x11, 0x27, 0x00]), .invalidValue) // precision 39
        XCTAssertEqual(code([0x6A, 0x11, 0x05, 0x06]), .invalidValue) // scale > precision
        XCTAssertEqual(code([0xAF, 0xFF, 0xFF, 0, 0, 0, 0, 0]), .invalidLength) // char(0xFFFF) is not PLP
        XCTAssertEqual(code([0xF1, 0x02]), .invalidValue)           // SCHEMA_PRESENT 2
    }

    func testTextTypeInfoAndXMLSchema() throws {
        var r = ByteReader([0x23, 0xFF, 0xFF, 0xFF, 0x7F, 0x09, 0x04, 0xD0, 0x00, 0x34])
        let t = try TypeInfo.decode(from: &r, version: .v7_4)
        XCTAssertEqual(t.type, .text)
        XCTAssertEqual(t.length, 0x7FFF_FFFF)
        XCTAssertEqual(t.collation?.codePage, 1252)
        var x = ByteReader([0xF1, 0x01, 0x02, 0x64, 0x00, 0x62, 0x00, 0x01, 0x6F, 0x00, 0x01, 0x00, 0x63, 0x00])
        let xi = try TypeInfo.decode(from: &x, version: .v7_4)
        XCTAssertTrue(xi.isPLP)
        XCTAssertEqual(xi.xmlSchema, XMLSchemaInfo(databaseName: "db", owningSchema: "o", schemaCollection: "c"))
    }
}

final class TypesCollationTests: XCTestCase {
    func testCodePagesFromSortIDAndLCID() throws {
        XCTAssertEqual(Collation(lcid: 0x0409, sortID: 52).codePage, 1252)
        XCTAssertEqual(Collation(lcid: 0x0409, sortID: 30).codePage, 437)
        XCTAssertEqual(Collation(lcid: 0x0419).codePage, 1251)        // Cyrillic_General
        XCTAssertEqual(Collation(lcid: 0x0411).codePage, 932)         // Japanese
        XCTAssertEqual(Collation(lcid: 0x0804).codePage, 936)         // Chinese_PRC
        XCTAssertEqual(Collation(lcid: 0x0404).codePage, 950)         // Chinese_Taiwan
        XCTAssertEqual(Collation(lcid: 0x0412).codePage, 949)         // Korean
        XCTAssertEqual(Collation(lcid: 0x041E).codePage, 874)         // Thai
        XCTAssertEqual(Collation(lcid: 0x0405).codePage, 1250)        // Czech
        XCTAssertEqual(Collation(lcid: 0x0408).codePage, 1253)
        XCTAssertEqual(Collation(lcid: 0x041F).codePage, 1254)
        XCTAssertEqual(Collation(lcid: 0x040D).codePage, 1255)
        XCTAssertEqual(Collation(lcid: 0x0401).codePage, 1256)
        XCTAssertEqual(Collation(lcid: 0x0425).codePage, 1257)
        XCTAssertEqual(Collation(lcid: 0x042A).codePage, 1258)
        XCTAssertEqual(Collation(lcid: 0x0C1A).codePage, 1251)        // Serbian Cyrillic
        XCTAssertEqual(Collation(lcid: 0x20804).codePage, 936)        // sort-variant bits ignored
        let utf8 = Collation(lcid: 0x0409, flags: [.ignoreCase, .utf8])
        XCTAssertTrue(utf8.isUTF8)
        XCTAssertEqual(utf8.codePage, 65001)
        XCTAssertEqual(Collation(bytes: utf8.bytes), utf8)
        // Documented fallback: unknown LCID -> 1252, flagged.
        let unknown = Collation(lcid: 0x0439)  // Hindi: Unicode-only
        XCTAssertEqual(unknown.codePage, 1252)
        XCTAssertFalse(unknown.isCodePageKnown)
        XCTAssertTrue(Collation(lcid: 0x0419).isCodePageKnown)
        // SQL sort orders: known ids win over the LCID; unknown ids fall back to the LCID.
        XCTAssertEqual(Collation(lcid: 0x0409, sortID: 98).codePage, 1250)
        XCTAssertEqual(Collation(lcid: 0x0409, sortID: 106).codePage, 1251)
        XCTAssertEqual(Collation(lcid: 0x0409, sortID: 124).codePage, 1253)
        XCTAssertEqual(Collation(lcid: 0x0409, sortID: 192).codePage, 932)
        XCTAssertEqual(Collation(lcid: 0x0409, sortID: 199).codePage, 936)
        XCTAssertEqual(Collation(lcid: 0x0409, sortID: 204).codePage, 874)
        XCTAssertEqual(Collation(lcid: 0x0419, sortID: 36).codePage, 1251)
        // Raw collation (all zero bytes): documented 1252 fallback.
        let raw = try XCTUnwrap(Collation(bytes: [0, 0, 0, 0, 0]))
        XCTAssertEqual(raw.codePage, 1252)
        XCTAssertFalse(raw.isCodePageKnown)
    }

    func testCollationBitLayout() throws {
        // LCID 0x00411 (Japanese), flags fIgnoreCase|fBinary2 (0x21), version 2, sort 0.
        let c = Collation(lcid: 0x0411, flags: [.ignoreCase, .binary2], version: 2, sortID: 0)
        XCTAssertEqual(c.bytes, [0x11, 0x04, 0x10, 0x22, 0x00])
        // ColFlags order: fIgnoreCase, fIgnoreAccent, fIgnoreKana, fIgnoreWidth, fBinary, fBinary2, fUTF8.
        XCTAssertEqual(Collation(lcid: 0, flags: [.ignoreKana]).bytes[2], 0x40)
        XCTAssertEqual(Collation(lcid: 0, flags: [.ignoreWidth]).bytes[2], 0x80)
        XCTAssertEqual(Collation(lcid: 0, flags: [.utf8]).bytes[3], 0x04)
        var r = ByteReader(c.bytes)
        XCTAssertEqual(try Collation.decode(from: &r), c)
        var short = ByteReader([0x11, 0x04, 0x10, 0x22])
        XCTAssertThrowsError(try Collation.decode(from: &short)) { e in
            XCTAssertEqual((e as? TDSDecodingError)?.code, .truncated)
        }
    }
}
