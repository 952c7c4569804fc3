import XCTest
@testable import TDS
import SQLClientTesting

/// RETURNVALUE ([MS-TDS] 2.2.7.19): the part before the value read as its bytes arrive
/// (``ReturnValueHeaderProgress``), the value as a row's.
final class ReturnValueTests: XCTestCase {
    /// A RETURNVALUE of a UDT (long names in its TYPE_INFO), encrypted when `crypto`, with a
    /// varbinary value.
    func token(crypto: Bool) -> [UInt8] {
        var w = ByteWriter()
        w.writeUInt8(0xAC)
        w.writeUInt16LE(3); w.writeBVarChar("@" + String(repeating: "p", count: 120)); w.writeUInt8(1)
        w.writeUInt32LE(0); w.writeUInt16LE(crypto ? 0x0801 : 0x0001)
        TypeInfo.varbinary(8000).encode(into: &w, version: .v7_4)
        if crypto {
            w.writeUInt32LE(0)
            let udt = TypeInfo(type: .udt, length: 0xFFFF, isPLP: true,
                               udt: UDTInfo(maxByteSize: 0xFFFF, databaseName: String(repeating: "d", count: 200),
                                            schemaName: "sys", typeName: "geography",
                                            assemblyQualifiedName: String(repeating: "Microsoft.SqlServer.Types ", count: 300)))
            udt.encode(into: &w, version: .v7_4)
            w.writeUInt8(0); w.writeBVarChar("my_algorithm"); w.writeUInt8(2); w.writeUInt8(1)
        }
        w.writeUInt16LE(6000); w.writeBytes((0 ..< 6000).map { UInt8(truncatingIfNeeded: $0) })
        return w.bytes
    }

    func testTheSameWholeByteByByteAndSplitAtRandom() throws {
        for crypto in [false, true] {
            let bytes = token(crypto: crypto)
            let tokens = try DecoderVerifier.verify(bytes, version: .v7_4, options: .init(columnEncryption: crypto),
                                                    randomSplits: 12, seed: 0xAC)
            guard case .returnValue(let rv)? = tokens.first, tokens.count == 1 else { return XCTFail("\(tokens)") }
            XCTAssertEqual(rv.name.count, 121)
            XCTAssertEqual(rv.value, .binary((0 ..< 6000).map { UInt8(truncatingIfNeeded: $0) }))
            XCTAssertEqual(rv.cryptoMetadata?.algorithmName, crypto ? "my_algorithm" : nil)
            XCTAssertEqual(rv.cryptoMetadata?.baseType.udt?.typeName, crypto ? "geography" : nil)
            let cut = Array(bytes.prefix(200))
            let truncated = try DecoderVerifier.outcome(cut, version: .v7_4, options: .init(columnEncryption: crypto),
                                                        randomSplits: 12, seed: 2)
            XCTAssertEqual(truncated.error?.code, .truncated)
            XCTAssertEqual(truncated.error?.context, "RETURNVALUE")
            XCTAssertEqual(truncated.error?.offset, 0)
            XCTAssertEqual(truncated.error?.detail, "the message ended inside the token: 200 byte(s) of it received")
        }
    }

    /// One byte at a time, a retry re-reads at most one unit of the header: the 16 KB
    /// AssemblyQualifiedName of the CryptoMetadata's UDT is read once, not once per byte after it.
    func testByteByByteWorkIsLinearInTheTokensLength() throws {
        let bytes = token(crypto: true)
        XCTAssertGreaterThan(bytes.count, 20_000)
        let (tokens, examined) = try examinedBytes(bytes, options: .init(columnEncryption: true))
        XCTAssertEqual(tokens.count, 1)
        XCTAssertLessThanOrEqual(examined, 4 * bytes.count)
    }
}
