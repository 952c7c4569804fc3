import Foundation
import SQLClientTesting
import TDS
import XCTest
@testable import SQLClient

/// Always Encrypted on the write path, against ``AlwaysEncryptedTestServer``: parameters the
/// server describes as encrypted (sp_describe_parameter_encryption, asked once per statement)
/// go normalized and encrypted with ParamCipherInfo; the server decrypts and checks them (a
/// deterministic one's IV included) and sends them back encrypted, which the client decrypts:
/// every type round-trips. A value that would go in clear to an encrypted column is refused.
final class AlwaysEncryptedParameterTests: XCTestCase {
    typealias Read = AlwaysEncryptedReadTests

    func testEveryTypeRoundTripsAsAnEncryptedParameter() async throws {
        var parameters: [SQLParameter] = []
        var described: [String: AEADAes256CbcHmacSha256.EncryptionType] = [:]
        var expected: [SQLValue] = []
        for (_, type, value) in Read.cases {
            for kind in [AEADAes256CbcHmacSha256.EncryptionType.deterministic, .randomized] {
                for v in [value, .null] {
                    parameters.append(SQLParameter(v, type: type))
                    described["@P\(parameters.count)"] = kind
                    expected.append(v)
                }
            }
        }
        parameters.append(SQLParameter(.int(42), type: .int))   // a plaintext parameter stays plaintext
        expected.append(.int(42))
        let server = try AlwaysEncryptedTestServer(key: Read.makeKey(), encryptedParameters: described)
        defer { server.stop() }
        let connection = try await Read.connect(server)
        let query = SQLQuery(unsafeSQL: "INSERT INTO t VALUES (...)", parameters: parameters)
        for _ in 0 ..< 2 {
            let result = try await connection.execute(query)
            XCTAssertEqual(result.rows.first?.values, expected)
        }
        let seen = server.observed
        XCTAssertEqual(seen.described, ["INSERT INTO t VALUES (...)"], "described once, then from the cache")
        XCTAssertEqual(seen.refusals, [])
        XCTAssertEqual(seen.parameters.count, 2)
        XCTAssertEqual(seen.encryptedNames, Set(described.keys))
        // Ciphertext (and NULL) as varbinary(max), as SqlClient sends it.
        XCTAssertEqual(Set(seen.encryptedTypeInfos.values), [.varbinary(nil)])
        XCTAssertEqual(seen.encryptedTypeInfos.count, described.count)
        for (i, v) in expected.enumerated() { XCTAssertEqual(seen.parameters.last?["@P\(i + 1)"], v, "@P\(i + 1)") }
        await connection.close()
    }

    /// Deterministic encryption gives equal ciphertexts for equal values (the IV derived from
    /// the plaintext, which the server checks), randomized different ones.
    func testDeterministicParametersAreEqualForEqualValues() async throws {
        let server = try AlwaysEncryptedTestServer(key: Read.makeKey(), encryptedParameters: ["@P1": .deterministic, "@P2": .randomized])
        defer { server.stop() }
        let connection = try await Read.connect(server)
        let query: SQLQuery = "SELECT \(SQLParameter.nvarchar("same", length: 50)), \(SQLParameter.nvarchar("same", length: 50))"
        _ = try await connection.execute(query)
        _ = try await connection.execute(query)
        XCTAssertEqual(server.observed.refusals, [])
        XCTAssertEqual(server.observed.parameters.map { $0["@P1"] }, [.string("same"), .string("same")])
        await connection.close()
    }

    func testAValueThatWouldGoInClearIsRefused() async throws {
        let server = try AlwaysEncryptedTestServer(key: Read.makeKey(), encryptedParameters: ["@P1": .deterministic])
        defer { server.stop() }
        let connection = try await Read.connect(server)
        // xml cannot be encrypted: refused before anything is sent to sp_executesql.
        do {
            _ = try await connection.execute(SQLQuery(unsafeSQL: "SELECT @P1", parameters: [SQLParameter(.xml("<a/>"), type: .xml)]))
            XCTFail("sent")
        } catch let error as SQLClientError {
            XCTAssertEqual((error.underlying as? ColumnEncryptionError)?.code, .unencryptedParameter, "\(error)")
            XCTAssertEqual((error.underlying as? ColumnEncryptionError)?.column, "@P1")
        }
        // A value that does not fit its declared type: refused, never sent in clear.
        do {
            _ = try await connection.execute(SQLQuery(unsafeSQL: "SELECT @P1", parameters: [SQLParameter(.bigint(1 << 40), type: .int)]))
            XCTFail("sent")
        } catch let error as SQLClientError {
            XCTAssertEqual((error.underlying as? ColumnEncryptionError)?.code, .unencryptedParameter, "\(error)")
        }
        XCTAssertEqual(server.observed.parameters.count, 0)
        // Asked not to encrypt (resultSetOnly), the parameter goes in clear and the server refuses it.
        do {
            _ = try await connection.execute(SQLQuery(unsafeSQL: "SELECT @P1", parameters: [SQLParameter(.int(1), type: .int)])
                .columnEncryption(.resultSetOnly))
            XCTFail("accepted")
        } catch let error as SQLClientError {
            XCTAssertTrue("\(error)".contains("Operand type clash"), "\(error)")
        }
        XCTAssertEqual(server.observed.refusals, ["@P1 in clear"])
        // The connection goes on: the same statement encrypted is accepted.
        let result = try await connection.execute(SQLQuery(unsafeSQL: "SELECT @P1", parameters: [SQLParameter(.int(1), type: .int)]))
        XCTAssertEqual(result.rows.first?.values, [.int(1)])
        await connection.close()
    }

    /// `.disabled` for one query: its encrypted columns read as ciphertext on a connection that decrypts.
    func testPerQueryDisabledReadsCiphertext() async throws {
        let server = try AlwaysEncryptedTestServer(key: Read.makeKey(), columns: [.init("n", .int, .deterministic)], rows: [[.int(5)]])
        defer { server.stop() }
        let connection = try await Read.connect(server)
        let raw = try await connection.execute(SQLQuery(unsafeSQL: "SELECT n FROM t").columnEncryption(.disabled)).rows
        guard case .binary(let bytes)? = raw.first?.values.first else { return XCTFail("\(raw)") }
        XCTAssertEqual(try AEADAes256CbcHmacSha256(rootKey: server.key.rootKey).decrypt(bytes), [5, 0, 0, 0, 0, 0, 0, 0])
        let plain = try await connection.execute(SQLQuery(unsafeSQL: "SELECT n FROM t")).rows
        XCTAssertEqual(plain.first?.values, [.int(5)])
        await connection.close()
    }

    /// An encrypted OUTPUT parameter comes back (RETURNVALUE with CryptoMetaData) decrypted with
    /// the key it was sent with, typed by its base type.
    func testEncryptedOutputParametersAreDecrypted() async throws {
        let server = try AlwaysEncryptedTestServer(key: Read.makeKey(), encryptedParameters: ["@P1": .randomized, "@P2": .deterministic])
        defer { server.stop() }
        let connection = try await Read.connect(server)
        let query = SQLQuery(unsafeSQL: "SELECT @P1 = @P1, @P2 = @P2", parameters: [
            SQLParameter(.decimal(SQLDecimal(precision: 10, scale: 2, magnitude: 12_345)), type: .decimal(precision: 10, scale: 2),
                         direction: .inputOutput),
            SQLParameter(.string("out"), type: .nvarchar(20), direction: .inputOutput),
        ])
        let result = try await connection.execute(query)
        XCTAssertEqual(result.outputs.map(\.value), [.decimal(SQLDecimal(precision: 10, scale: 2, magnitude: 12_345)), .string("out")])
        // The test server echoes the ParamCipherInfo TYPE_INFO: a decimal goes as SqlClient sends
        // it, NUMERICN with length 17 (precision and scale kept).
        XCTAssertEqual(result.outputs.map(\.typeInfo), [TypeInfo(type: .numericN, length: 17, precision: 10, scale: 2), .nvarchar(20)])
        XCTAssertEqual(result.output("@P2"), .string("out"))
        await connection.close()
    }

    /// Error 33514 (stale encryption metadata): the cached description is dropped and the
    /// statement described and sent again, once.
    func testStaleMetadataIsDescribedAgainAndRetriedOnce() async throws {
        var lies = AlwaysEncryptedTestServer.Lies()
        lies.staleMetadataOnce = true
        let server = try AlwaysEncryptedTestServer(key: Read.makeKey(), encryptedParameters: ["@P1": .deterministic], lies: lies)
        defer { server.stop() }
        let connection = try await Read.connect(server)
        let query = SQLQuery(unsafeSQL: "SELECT @P1", parameters: [SQLParameter(.int(3), type: .int)])
        let result = try await connection.execute(query)
        XCTAssertEqual(result.rows.first?.values, [.int(3)])
        XCTAssertEqual(server.observed.described, ["SELECT @P1", "SELECT @P1"])
        XCTAssertEqual(server.observed.parameters.count, 1)
        await connection.close()
    }

    /// parameter_name is matched as SqlClient matches it, with or without its '@' (and, as SQL
    /// Server's names, without regard to case).
    func testDescribedNamesMatchWithoutAtAndCase() async throws {
        var lies = AlwaysEncryptedTestServer.Lies()
        lies.parameterNamesUpperCasedWithoutAt = true
        let server = try AlwaysEncryptedTestServer(key: Read.makeKey(), encryptedParameters: ["@P1": .deterministic], lies: lies)
        defer { server.stop() }
        let connection = try await Read.connect(server)
        let query = SQLQuery(unsafeSQL: "SELECT @P1, @P2", parameters: [SQLParameter(.int(3), type: .int), SQLParameter(.int(4), type: .int)])
        let result = try await connection.execute(query)
        XCTAssertEqual(result.rows.first?.values, [.int(3), .int(4)])
        XCTAssertEqual(server.observed.encryptedNames, ["@P1"])
        XCTAssertEqual(server.observed.refusals, [])
        await connection.close()
    }

    /// A parameter sp_describe_parameter_encryption does not describe (not even as plaintext) is
    /// an error before anything is sent (SqlClient's ParamEncryptionMetadataMissing).
    func testAnUndescribedParameterIsRefused() async throws {
        var lies = AlwaysEncryptedTestServer.Lies()
        lies.undescribedParameter = "@P2"
        let server = try AlwaysEncryptedTestServer(key: Read.makeKey(), encryptedParameters: ["@P1": .deterministic], lies: lies)
        defer { server.stop() }
        let connection = try await Read.connect(server)
        let query = SQLQuery(unsafeSQL: "SELECT @P1, @P2", parameters: [SQLParameter(.int(3), type: .int), SQLParameter(.int(4), type: .int)])
        do {
            _ = try await connection.execute(query)
            XCTFail("sent")
        } catch let error as SQLClientError {
            XCTAssertEqual((error.underlying as? ColumnEncryptionError)?.code, .invalidMetadata, "\(error)")
            XCTAssertEqual((error.underlying as? ColumnEncryptionError)?.column, "@P2")
        }
        XCTAssertEqual(server.observed.parameters.count, 0)
        await connection.close()
    }

    /// A stored procedure called by name: described as `EXEC name @a=@a, @b=@b output`, its
    /// parameters for encrypted columns encrypted, its encrypted OUTPUT decrypted.
    func testStoredProcedureParametersAreEncrypted() async throws {
        let server = try AlwaysEncryptedTestServer(key: Read.makeKey(), encryptedParameters: ["@ssn": .deterministic, "@balance": .randomized])
        defer { server.stop() }
        let connection = try await Read.connect(server)
        let balance = SQLValue.money(SQLMoney(units: 1_234_500))
        let result = try await connection.callProcedure("dbo.open_account", parameters: [
            .input("@ssn", SQLParameter(.string("795-73-9838"), type: .char(11))),
            .input("@branch", SQLParameter(.int(7), type: .int)),
            .inputOutput("@balance", SQLParameter(balance, type: .money)),
        ])
        XCTAssertEqual(server.observed.described, ["EXEC dbo.open_account @ssn=@ssn, @branch=@branch, @balance=@balance output"])
        XCTAssertEqual(server.observed.encryptedNames, ["@ssn", "@balance"])
        XCTAssertEqual(server.observed.parameters.last?["@ssn"], .string("795-73-9838"))
        XCTAssertEqual(result.rows.first?.values, [.string("795-73-9838"), .int(7), balance])
        XCTAssertEqual(result.output("@balance"), balance)
        await connection.close()
    }
}
