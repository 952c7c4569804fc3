import Foundation
import SQLClientTesting
import TDS
import XCTest
@testable import SQLClient

/// `Column Encryption Setting=Enabled`: COLUMNENCRYPTION in LOGIN7, its acknowledgement read,
/// and a server asking for secure enclaves refused with an error that says so.
final class ColumnEncryptionNegotiationTests: XCTestCase {
    func testConnectionStringKeyword() throws {
        XCTAssertEqual(try SQLConnectionConfiguration(connectionString: "Server=127.0.0.1;Column Encryption Setting=Enabled").columnEncryption, .enabled)
        XCTAssertEqual(try SQLConnectionConfiguration(connectionString: "Server=127.0.0.1;column encryption setting=disabled").columnEncryption, .disabled)
        XCTAssertEqual(try SQLConnectionConfiguration(connectionString: "Server=127.0.0.1").columnEncryption, .disabled)
        XCTAssertThrowsError(try SQLConnectionConfiguration(connectionString: "Server=127.0.0.1;Column Encryption Setting=Sometimes")) { error in
            XCTAssertEqual((error as? SQLClientError)?.code, .invalidConfiguration)
            XCTAssertFalse("\(error)".contains("Sometimes"), "values are not echoed")
        }
        XCTAssertThrowsError(try SQLConnectionConfiguration(connectionString: "Server=127.0.0.1;Enclave Attestation Url=http://127.0.0.1/")) {
            XCTAssertEqual(($0 as? SQLClientError)?.code, .unsupported)
        }
    }

    func testLogin7AsksForVersion1OnlyWhenEnabledFromTDS74() {
        var config = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: 1433), user: "u", password: "p")
        var login = config.login7(hostName: "h", clientPID: 1)
        config.columnEncryption.request(in: &login)
        XCTAssertFalse(login.featureExt?.contains { $0.id == 0x04 } ?? false)
        config.columnEncryption = .enabled
        config.columnEncryption.request(in: &login)
        config.columnEncryption.request(in: &login)
        XCTAssertEqual(login.featureExt?.filter { $0.id == 0x04 }, [Login7Feature(id: 0x04, data: [1])])
        // On the wire: FeatureId 0x04, FeatureDataLen 1, version 1, then the terminator.
        var w = ByteWriter()
        Login7Feature.encodeList(login.featureExt ?? [], into: &w)
        XCTAssertEqual(w.bytes.suffix(7), [0x04, 1, 0, 0, 0, 1, 0xFF])
        config.tdsVersion = .v7_3B
        var old = config.login7(hostName: "h", clientPID: 1)
        config.columnEncryption.request(in: &old)
        XCTAssertNil(old.featureExt)
        XCTAssertThrowsError(try config.validated()) { XCTAssertEqual(($0 as? SQLClientError)?.code, .invalidConfiguration) }
        config.tdsVersion = .v7_4
        XCTAssertNoThrow(try config.validated())
        config.columnEncryptionKeyStoreProviders = ["": SQLCertificateFileKeyStoreProvider(folder: "/nonexistent")]
        XCTAssertThrowsError(try config.validated()) { XCTAssertEqual(($0 as? SQLClientError)?.code, .invalidConfiguration) }
    }

    func testAcknowledgementVersionsAndEnclaves() throws {
        let enabled = SQLColumnEncryptionSetting.enabled
        XCTAssertEqual(try enabled.negotiated(by: nil), 0)
        XCTAssertEqual(try enabled.negotiated(by: FeatureExtAck(features: [])), 0)
        XCTAssertEqual(try enabled.negotiated(by: FeatureExtAck(features: [.init(id: .columnEncryption, data: [1])])), 1)
        var vbs = ByteWriter()
        vbs.writeUInt8(2)
        vbs.writeBVarChar("VBS")
        for data in [vbs.bytes, [3], [2], [1, 0]] {
            XCTAssertThrowsError(try enabled.negotiated(by: FeatureExtAck(features: [.init(id: .columnEncryption, data: data)]))) { error in
                let e = error as? ColumnEncryptionError
                XCTAssertEqual(e?.code, .enclaveNotSupported, "\(data)")
                XCTAssertTrue(e?.message.contains("secure enclaves") ?? false)
                XCTAssertTrue(e?.message.contains("not supported") ?? false)
                XCTAssertEqual(e?.sqlClientError.code, .unsupported)
            }
        }
        XCTAssertThrowsError(try enabled.negotiated(by: FeatureExtAck(features: [.init(id: .columnEncryption, data: [])])))
        XCTAssertThrowsError(try SQLColumnEncryptionSetting.disabled.negotiated(by: FeatureExtAck(features: [.init(id: .columnEncryption, data: [1])])))
    }

    /// Against the scenario server: LOGIN7 carries COLUMNENCRYPTION 1, the session records the
    /// acknowledged version; a server acknowledging version 2 with an enclave type fails the
    /// login with `.unsupported` naming secure enclaves.
    func testLoginNegotiatesAndRefusesEnclaves() async throws {
        let server = try LoginScenarioServer(name: "ae", behaviour: .init())
        defer { server.stop() }
        var config = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(server.port)), user: "app",
                                                password: "pw", database: "shop", encryption: .notSupported)
        config.connectTimeout = .seconds(20)
        config.columnEncryption = .enabled
        // The plain server does not acknowledge: the login succeeds, column encryption off.
        let plain = try await SQLConnection.connect(config)
        let plainSession = await plain.session
        XCTAssertEqual(plainSession.columnEncryptionVersion, 0)
        await plain.close()
        let record = try XCTUnwrap(server.records(atLeast: 1).first)
        XCTAssertEqual(record.login?.featureExt?.first { $0.id == 0x04 }?.data, [1])

        var acking = LoginScenarioServer.Behaviour()
        acking.extraAcknowledgements = [.init(id: .columnEncryption, data: [1])]
        let v1 = try LoginScenarioServer(name: "ae1", behaviour: acking)
        defer { v1.stop() }
        config.address = SQLServerAddress(host: "127.0.0.1", port: Int(v1.port))
        let connection = try await SQLConnection.connect(config)
        let session = await connection.session
        XCTAssertEqual(session.columnEncryptionVersion, 1)
        await connection.close()

        var enclave = LoginScenarioServer.Behaviour()
        var data = ByteWriter()
        data.writeUInt8(2)
        data.writeBVarChar("VBS")
        enclave.extraAcknowledgements = [.init(id: .columnEncryption, data: data.bytes)]
        let v2 = try LoginScenarioServer(name: "ae2", behaviour: enclave)
        defer { v2.stop() }
        config.address = SQLServerAddress(host: "127.0.0.1", port: Int(v2.port))
        config.connectRetry = SQLConnectRetryPolicy(count: 0)
        do {
            _ = try await SQLConnection.connect(config)
            XCTFail("a server asking for enclaves was accepted")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .unsupported, "\(error)")
            XCTAssertTrue(error.message.contains("secure enclaves"), error.message)
            XCTAssertEqual((error.underlying as? ColumnEncryptionError)?.code, .enclaveNotSupported)
        }
    }
}
