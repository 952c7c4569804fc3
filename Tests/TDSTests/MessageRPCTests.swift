import XCTest
@testable import TDS

final class MessageRPCTests: XCTestCase {
    private func roundTrip(_ request: RPCRequest, _ version: TDSVersion, file: StaticString = #filePath, line: UInt = #line) throws -> [UInt8] {
        let bytes = try request.encode(version: version)
        let decoded = try RPCRequest.decode(from: bytes, version: version)
        XCTAssertEqual(decoded, request, file: file, line: line)
        XCTAssertEqual(try decoded.encode(version: version), bytes, file: file, line: line)
        return bytes
    }

    func testExecuteSQLWithParameters() throws {
        let big = String(repeating: "ab😀", count: 5000)  // 40,000 bytes of UTF-16: 5 PLP chunks
        let call = RPCCall(procedure: .id(.spExecuteSQL), options: [], parameters: [
            RPCParameter(typeInfo: .nvarchar(nil), value: .string("SELECT @P1, @P2, @P3, @P4, @P5")),
            RPCParameter(typeInfo: .nvarchar(4000), value: .string("@P1 int, @P2 nvarchar(20), @P3 nvarchar(max), @P4 varbinary(max), @P5 decimal(10,3)")),
            RPCParameter(name: "@P1", typeInfo: .int, value: .int(-42)),
            RPCParameter(name: "@P2", typeInfo: .nvarchar(20), value: .string("héllo")),
            RPCParameter(name: "@P3", typeInfo: .nvarchar(nil), value: .string(big)),
            RPCParameter(name: "@P4", typeInfo: .varbinary(nil), value: .null),
            RPCParameter(name: "@P5", typeInfo: .decimal(precision: 10, scale: 3), value: .decimal(try XCTUnwrap(SQLDecimal("1234.567", precision: 10)))),
            RPCParameter(name: "@out", status: [.byRefValue], typeInfo: .bigint, value: .null),
        ])
        let bytes = try roundTrip(RPCRequest(call), .v7_4)
        // ALL_HEADERS, then ProcIDSwitch 0xFFFF and ProcID 10, OptionFlags 0.
        XCTAssertEqual(Array(bytes[22..<28]), [0xFF, 0xFF, 0x0A, 0x00, 0x00, 0x00])
        XCTAssertEqual(RPCCall.ProcID.spExecuteSQL.description, "sp_executesql")
    }

    func testProcedureByNameOptionsAndStatusFlags() throws {
        let call = RPCCall(procedure: .name("dbo.my_proc"), options: [.withRecompile, .noMetadata, .reuseMetadata], parameters: [
            RPCParameter(name: "@a", status: [.defaultValue], typeInfo: .int, value: .null),
            RPCParameter(name: "@b", status: [.byRefValue], typeInfo: .nvarchar(10), value: .string("x")),
            RPCParameter(name: "@t", typeInfo: .ntext(), value: .string("long text")),
            RPCParameter(name: "@i", typeInfo: .image, value: .binary([1, 2, 3])),
            RPCParameter(name: "@n", typeInfo: .text(), value: .null),
        ])
        let bytes = try roundTrip(RPCRequest(call), .v7_4)
        XCTAssertEqual(Array(bytes[22..<24]), [11, 0])  // US_VARCHAR: 11 characters
        XCTAssertEqual(Array(bytes[46..<48]), [0x07, 0x00])  // all three option flags
    }

    func testBatchSeparatorsAndVersions() throws {
        let a = RPCCall(procedure: .id(.spPrepare), parameters: [RPCParameter(name: "@h", status: [.byRefValue], typeInfo: .int, value: .null)], separator: .batch)
        let b = RPCCall(procedure: .id(.spExecute), parameters: [RPCParameter(typeInfo: .int, value: .int(1))], separator: .noExec)
        let c = RPCCall(procedure: .id(.spUnprepare), parameters: [RPCParameter(typeInfo: .int, value: .int(1))])
        let bytes = try roundTrip(RPCRequest(calls: [a, b, c]), .v7_4)
        XCTAssertTrue(bytes.contains(0xFF))
        XCTAssertTrue(bytes.contains(0xFE))
        // Trailing separator kept.
        var withTrailing = c
        withTrailing.separator = .batch
        let t = try roundTrip(RPCRequest(calls: [a, withTrailing]), .v7_4)
        XCTAssertEqual(t.last, 0xFF)
        // TDS 7.1: no ALL_HEADERS, separator 0x80.
        let old = RPCRequest(calls: [a, c], allHeaders: nil)
        let oldBytes = try roundTrip(old, .v7_1_1)
        XCTAssertEqual(Array(oldBytes.prefix(4)), [0xFF, 0xFF, 11, 0])
        XCTAssertTrue(oldBytes.contains(0x80))
        XCTAssertEqual(try RPCRequest.decode(from: oldBytes, version: .v7_1_1).calls.count, 2)
    }

    func testTruncatedRPCIsTypedError() throws {
        let call = RPCCall(procedure: .name("p"), parameters: [
            RPCParameter(name: "@s", typeInfo: .nvarchar(nil), value: .string(String(repeating: "z", count: 9000))),
            RPCParameter(name: "@i", typeInfo: .int, value: .int(7)),
        ])
        let bytes = try RPCRequest(call).encode(version: .v7_4)
        var rng = SplitMix64(seed: 3)
        var cuts = Array(0..<64) + [bytes.count - 1]
        XCTAssertEqual(try RPCRequest.decode(from: Array(bytes.prefix(28)), version: .v7_4).calls[0].parameters.count, 0)
        XCTAssertEqual(try RPCRequest.decode(from: Array(bytes.dropLast(13)), version: .v7_4).calls[0].parameters.count, 1)
        for _ in 0..<200 { cuts.append(Int.random(in: 0..<bytes.count, using: &rng)) }
        // Cuts at 28 (the call without parameters) and before "@i" (13 bytes) are whole calls.
        for cut in cuts where cut != 28 && cut != bytes.count - 13 {
            XCTAssertThrowsError(try RPCRequest.decode(from: Array(bytes.prefix(cut)), version: .v7_4), "cut \(cut)") { e in
                XCTAssertEqual((e as? TDSDecodingError)?.context.isEmpty, false)
            }
        }
        // An encrypted parameter (Always Encrypted): varbinary ciphertext, then ParamCipherInfo.
        var encrypted = RPCParameter(name: "@e", status: [.encrypted], typeInfo: .varbinary(8000), value: .binary([1, 2, 3]))
        encrypted.cipherInfo = ParamCipherInfo(baseType: .nvarchar(50), encryptionType: 1, databaseID: 5, cekID: 7, cekVersion: 1,
                                               cekMetadataVersion: 0x0102_0304_0506_0708)
        let enc = RPCRequest(RPCCall(procedure: .name("p"), parameters: [encrypted]), allHeaders: nil)
        let encBytes = try enc.encode(version: .v7_4)
        XCTAssertEqual(try RPCRequest.decode(from: encBytes, version: .v7_4).calls, enc.calls)
        // Cut anywhere inside ParamCipherInfo: truncated, never misread.
        for cut in 1 ..< 30 {
            XCTAssertThrowsError(try RPCRequest.decode(from: Array(encBytes.dropLast(cut)), version: .v7_4)) { e in
                XCTAssertEqual((e as? TDSDecodingError)?.code, .truncated, "cut \(cut)")
            }
        }
    }

    /// ParamCipherInfo as Microsoft.Data.SqlClient writes it (TdsParser.WriteEncryptionMetadata):
    /// the plaintext TYPE_INFO with no UserType before it, EncryptionAlgo, EncryptionType,
    /// DatabaseId, CekId, CekVersion (4 bytes each, little-endian), CekMDVersion (8), NormVersion.
    func testParamCipherInfoBytes() throws {
        let info = ParamCipherInfo(baseType: .int, encryptionType: 1, databaseID: 5, cekID: 7, cekVersion: 1,
                                   cekMetadataVersion: 0x0102_0304_0506_0708)
        var w = ByteWriter()
        info.encode(into: &w, version: .v7_4)
        let expected: [UInt8] = [0x26, 4,   // TYPE_INFO: INTN, 4
                                 2,   // EncryptionAlgo: AEAD_AES_256_CBC_HMAC_SHA256
                                 1,   // EncryptionType: deterministic
                                 5, 0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0,   // DatabaseId, CekId, CekVersion
                                 8, 7, 6, 5, 4, 3, 2, 1,   // CekMDVersion
                                 1]   // NormVersion
        XCTAssertEqual(w.bytes, expected)
        var r = ByteReader(expected)
        XCTAssertEqual(try ParamCipherInfo.decode(from: &r, version: .v7_4), info)
        XCTAssertEqual(r.remaining, 0)
        // A decimal's TYPE_INFO in SqlClient's shape: NUMERICN, 17, precision, scale.
        var d = ByteWriter()
        ParamCipherInfo(baseType: TypeInfo.decimal(precision: 18, scale: 4).paramCipherTypeInfo, encryptionType: 2, databaseID: 1, cekID: 1, cekVersion: 1,
                        cekMetadataVersion: 0).encode(into: &d, version: .v7_4)
        XCTAssertEqual(Array(d.bytes.prefix(5)), [0x6C, 17, 18, 4, 2])
    }

    func testSpecRPCRequest() throws {
        let (header, body) = try MessageFixtures.packet("ms-tds-spec/08-rpc-client-request.hex")
        XCTAssertEqual(header.type, .rpc)
        let r = try RPCRequest.decode(from: body, version: .v7_2)
        XCTAssertEqual(r.allHeaders?.transactionDescriptor?.descriptor, 0x0100_0000_0000_0000)
        XCTAssertEqual(r.calls.count, 1)
        let call = r.calls[0]
        XCTAssertEqual(call.procedure, .name("foo3"))
        XCTAssertEqual(call.options, [])
        XCTAssertEqual(call.parameters.count, 1)
        let p = call.parameters[0]
        XCTAssertEqual(p.name, "")
        XCTAssertEqual(p.status, [.defaultValue])
        XCTAssertEqual(p.typeInfo.type, .intN)
        XCTAssertEqual(p.typeInfo.length, 2)
        XCTAssertEqual(p.value, .null)
        XCTAssertEqual(try r.encode(version: .v7_2), body)
    }

    private func r2dbc(_ name: String) throws -> RPCRequest {
        let body = try MessageFixtures.hex("r2dbc-mssql/client-requests/\(name).hex")
        let r = try RPCRequest.decode(from: body, version: .v7_4, allHeaders: false)
        XCTAssertNil(r.allHeaders)
        // Re-encode with an ALL_HEADERS block, strip it, compare to the recorded body.
        let reencoded = try RPCRequest(calls: r.calls).encode(version: .v7_4)
        XCTAssertEqual(Array(reencoded.dropFirst(22)), body, name)
        return r
    }

    func testR2DBCRequests() throws {
        let close = try r2dbc("RpcQueryMessageFlowUnitTests_shouldEncodeSpCursorClose")
        XCTAssertEqual(close.calls[0].procedure, .id(.spCursorClose))
        XCTAssertEqual(close.calls[0].parameters.map(\.value), [.int(180_150_003)])

        let fetch = try r2dbc("RpcQueryMessageFlowUnitTests_shouldEncodeSpCursorFetch")
        XCTAssertEqual(fetch.calls[0].procedure, .id(.spCursorFetch))
        XCTAssertEqual(fetch.calls[0].options, [.noMetadata])
        XCTAssertEqual(fetch.calls[0].parameters.map(\.value), [.int(180_150_003), .int(2), .int(0), .int(128)])

        let open = try r2dbc("RpcQueryMessageFlowUnitTests_shouldEncodeSpCursorOpen")
        XCTAssertEqual(open.calls[0].procedure, .id(.spCursorOpen))
        XCTAssertEqual(open.calls[0].parameters.first?.status, [.byRefValue])
        XCTAssertEqual(open.calls[0].parameters.dropFirst().first?.value, .string("SELECT * FROM my_table"))

        let exec = try r2dbc("RpcQueryMessageFlowUnitTests_shouldEncodeSpExecuteSql")
        XCTAssertEqual(exec.calls[0].procedure, .id(.spExecuteSQL))
        XCTAssertEqual(exec.calls[0].parameters.first?.value, .string("SELECT * FROM my_table"))

        let prep = try r2dbc("RpcQueryMessageFlowUnitTests_shouldEncodeSpPrepExec")
        XCTAssertEqual(prep.calls[0].procedure, .id(.spCursorPrepExec))

        let cexec = try r2dbc("RpcQueryMessageFlowUnitTests_shouldEncodeSpCursorExec")
        XCTAssertEqual(cexec.calls[0].procedure, .id(.spCursorExecute))
        XCTAssertTrue(cexec.calls[0].parameters.contains { $0.name == "@P0" })
    }

    /// Recipe: RpcRequestUnitTests_shouldEncodeSpCursorOpen.hex holds parameters only; give it
    /// a NameLenProcID (0xFFFF, 2 = sp_cursoropen) and OptionFlags 0 at test time.
    func testR2DBCParametersFragment() throws {
        let fragment = try MessageFixtures.hex("r2dbc-mssql/client-requests/RpcRequestUnitTests_shouldEncodeSpCursorOpen.hex")
        let r = try RPCRequest.decode(from: [0xFF, 0xFF, 0x02, 0x00, 0x00, 0x00] + fragment, version: .v7_4, allHeaders: false)
        let params = r.calls[0].parameters
        XCTAssertEqual(params.first?.status, [.byRefValue])
        XCTAssertEqual(params.first?.value, .int(0))
        XCTAssertEqual(params.dropFirst().first?.value, .string("SELECT * FROM my_table"))
    }
}

final class MessageRPCExecuteSQLTests: XCTestCase {
    func testExecuteSQLBuildsDeclarationAndNames() throws {
        let call = RPCCall.executeSQL("SELECT @P1, @name, @P3", parameters: [
            RPCParameter(typeInfo: .int, value: .int(42)),
            RPCParameter(name: "@name", typeInfo: .nvarchar(20), value: .string("Zoë")),
            RPCParameter(status: [.byRefValue], typeInfo: .decimal(precision: 10, scale: 3), value: .null),
        ])
        XCTAssertEqual(call.procedure, .id(.spExecuteSQL))
        XCTAssertEqual(call.parameters.count, 5)
        XCTAssertEqual(call.parameters[0].value, .string("SELECT @P1, @name, @P3"))
        XCTAssertEqual(call.parameters[0].typeInfo.length, 8000)
        XCTAssertEqual(call.parameters[1].value, .string("@P1 int, @name nvarchar(20), @P3 decimal(10,3) output"))
        XCTAssertEqual(call.parameters[2...].map(\.name), ["@P1", "@name", "@P3"])
        let request = RPCRequest(call)
        XCTAssertEqual(try RPCRequest.decode(from: try request.encode(version: .v7_4), version: .v7_4), request)
        // A long statement goes as nvarchar(max); no parameters: no declaration.
        let long = RPCCall.executeSQL(String(repeating: "-", count: 4001))
        XCTAssertEqual(long.parameters.count, 1)
        XCTAssertTrue(long.parameters[0].typeInfo.isPLP)
    }
}
