import Foundation
import XCTest
import TDS
import SQLClientTesting
@testable import SQLClient

/// Character parameters without an explicit collation take the session's: declared with it and
/// encoded in its code page (a varchar parameter is converted by its declared collation).
final class SQLParameterTests: XCTestCase {
    /// Cyrillic_General_CI_AS: LCID 0x0419, IgnoreCase|IgnoreKanaType|IgnoreWidth, Windows collation (code page 1251).
    static let cyrillic: [UInt8] = [0x19, 0x04, 0xD0, 0x00, 0x00]
    /// "Привет" in cp1251.
    static let privetCP1251: [UInt8] = [0xCF, 0xF0, 0xE8, 0xE2, 0xE5, 0xF2]

    func testCharacterParametersTakeTheSessionCollationUnlessOneIsGiven() throws {
        let cyrillic = try XCTUnwrap(Collation(bytes: Self.cyrillic))
        XCTAssertEqual(cyrillic.codePage, 1251)
        let sent = try SQLParameter.varchar("Привет", length: 20).rpcParameter(version: .v7_4, collation: cyrillic)
        XCTAssertEqual(sent.typeInfo.collation, cyrillic)
        XCTAssertEqual(sent.typeInfo.sqlTypeName, "varchar(20)")
        for p in [SQLParameter.char("a", length: 1), .nvarchar("a"), .nchar("a", length: 1), .varchar(nil)] {
            XCTAssertEqual(try p.rpcParameter(version: .v7_4, collation: cyrillic).typeInfo.collation, cyrillic)
        }
        // An explicit collation is kept.
        let latin = try SQLParameter.varchar("x", collation: .sqlLatin1GeneralCP1CIAS).rpcParameter(version: .v7_4, collation: cyrillic)
        XCTAssertEqual(latin.typeInfo.collation, .sqlLatin1GeneralCP1CIAS)
        // varchar(max) sent to a 7.1 server as text keeps the session's collation too.
        let text = try SQLParameter.varchar("Привет", length: nil).rpcParameter(version: .v7_1, collation: cyrillic)
        XCTAssertEqual(text.typeInfo.collation, cyrillic)
    }

    func testCyrillicVarcharArrivesAsCP1251WithTheSessionCollation() async throws {
        let server = try LoginScenarioServer(behaviour: .init(collation: Self.cyrillic))
        defer { server.stop() }
        var config = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(server.port)),
                                                user: "u", password: "p", encryption: .notSupported)
        config.connectTimeout = .seconds(10)
        let connection = try await SQLConnection.connect(config)
        let session = await connection.session
        XCTAssertEqual(session.collation?.codePage, 1251)
        _ = try await connection.callProcedure("dbo.greet", parameters: [.input("@text", .varchar("Привет", length: 20))])
        await connection.close()

        let rpc = try XCTUnwrap(server.records(atLeast: 1).first?.requests.first { $0.type == .rpc })
        XCTAssertNotNil(rpc.payload.firstRange(of: [0x06, 0x00] + Self.privetCP1251), "the value is not 6 cp1251 bytes")
        let request = try RPCRequest.decode(from: rpc.payload, version: .v7_4)
        let parameter = try XCTUnwrap(request.calls.first?.parameters.first)
        XCTAssertEqual(parameter.typeInfo.collation, Collation(bytes: Self.cyrillic))
        XCTAssertEqual(parameter.value.stringValue, "Привет")
    }
}
