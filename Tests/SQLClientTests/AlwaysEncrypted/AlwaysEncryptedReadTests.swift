import Foundation
import SQLClientTesting
import TDS
import XCTest
@testable import SQLClient

/// Always Encrypted on the read path, against ``AlwaysEncryptedTestServer``: every type Always
/// Encrypted allows, deterministic and randomized, NULL and not, decrypts to the value an
/// unencrypted column of its base type gives, through every read API; a cell or key that cannot
/// be used is a typed error naming the column.
final class AlwaysEncryptedReadTests: XCTestCase {
    /// A key store that hands out fixed keys by path (the test's column master key store).
    struct StaticKeyProvider: SQLColumnEncryptionKeyStoreProvider {
        let keys: [String: [UInt8]]
        func decryptColumnEncryptionKey(masterKeyPath: String, algorithm: String, encryptedKey: [UInt8]) async throws -> [UInt8] {
            guard let key = keys[masterKeyPath] else {
                throw ColumnEncryptionError(.keyNotFound, "no such key", keyPath: masterKeyPath)
            }
            return key
        }
    }

    static let store = "TEST_STORE"
    static let path = "test/cmk-1"

    /// A fresh key (its encrypted form random too, so the process-wide key cache never answers
    /// for another test's key).
    static func makeKey() -> AlwaysEncryptedTestServer.Key {
        AlwaysEncryptedTestServer.Key(rootKey: (0 ..< 32).map { _ in UInt8.random(in: 0 ... 255) },
                                      encryptedKey: (0 ..< 48).map { _ in UInt8.random(in: 0 ... 255) },
                                      keyStoreName: store, keyPath: path)
    }

    static func connect(_ server: AlwaysEncryptedTestServer, keys: [String: [UInt8]]? = nil,
                        store: String = store) async throws -> SQLConnection {
        var config = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(server.port)), user: "app",
                                                password: "pw", database: "shop", encryption: .notSupported)
        config.connectTimeout = .seconds(20)
        config.columnEncryption = .enabled
        config.columnEncryptionKeyStoreProviders = [store: StaticKeyProvider(keys: keys ?? [path: server.key.rootKey])]
        return try await SQLConnection.connect(config)
    }

    /// Every type Always Encrypted allows, with a value.
    static let cases: [(String, TypeInfo, SQLValue)] = {
        let date = SQLDate(year: 2024, month: 2, day: 29)!
        let time7 = SQLTime(hour: 13, minute: 14, second: 15, fraction: 1_234_567, scale: 7)!
        let time3 = SQLTime(hour: 23, minute: 59, second: 58, fraction: 999, scale: 3)!
        let time5 = SQLTime(hour: 1, minute: 2, second: 3, fraction: 45_678, scale: 5)!
        return [
            ("tinyint", .tinyint, .tinyint(200)),
            ("smallint", .smallint, .smallint(-12_345)),
            ("int", .int, .int(-2_000_000_000)),
            ("bigint", .bigint, .bigint(Int64.min + 7)),
            ("bit", .bit, .bit(true)),
            ("decimal", .decimal(precision: 18, scale: 4), .decimal(SQLDecimal(isNegative: true, precision: 18, scale: 4, magnitude: 123_456_789_012))),
            ("numeric", .numeric(precision: 38, scale: 10),
             .decimal(SQLDecimal(precision: 38, scale: 10, magnitude: UInt128(10) << 100))),
            ("money", .money, .money(SQLMoney(units: -9_223_372_036_854_775_000))),
            ("smallmoney", .smallMoney, .smallMoney(SQLMoney(units: 2_147_483_000))),
            ("float", .float, .float(-3.25e300)),
            ("real", .real, .real(1.5)),
            ("date", .date, .date(date)),
            ("time7", .time(scale: 7), .time(time7)),
            ("time3", .time(scale: 3), .time(time3)),
            ("datetime2", .datetime2(scale: 3), .datetime2(SQLDateTime2(date: date, time: time3))),
            ("datetimeoffset", .datetimeOffset(scale: 5), .datetimeOffset(SQLDateTimeOffset(utc: SQLDateTime2(date: date, time: time5), offsetMinutes: -330))),
            ("datetime", .datetime, .datetime(SQLDateTime(days: 45_000, ticks: 12_345_678))),
            ("smalldatetime", .smallDateTime, .smallDateTime(SQLSmallDateTime(days: 45_000, minutes: 600))),
            ("char", .char(10), .string("abc       ")),
            ("varchar", .varchar(50), .string("plain ascii")),
            ("nchar", .nchar(5), .string("ñandú")),
            ("nvarchar", .nvarchar(100), .string("Zürich – 東京 🚀")),
            ("nvarcharmax", .nvarchar(nil), .string(String(repeating: "long text ", count: 2000))),
            ("varcharmax", .varchar(nil), .string(String(repeating: "x", count: 9000))),
            ("binary", .binary(4), .binary([0xDE, 0xAD, 0xBE, 0xEF])),
            ("varbinary", .varbinary(100), .binary([1, 2, 3, 0, 255])),
            ("varbinarymax", .varbinary(nil), .binary((0 ..< 10_000).map { UInt8($0 % 251) })),
            ("uniqueidentifier", .uniqueIdentifier, .uniqueIdentifier(UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")!)),
        ]
    }()

    /// Each type as a deterministic, a randomized and a plaintext column; a row of values and a row of NULLs.
    static func everyTypeServer(lies: AlwaysEncryptedTestServer.Lies = .init()) throws -> AlwaysEncryptedTestServer {
        var columns: [AlwaysEncryptedTestServer.Column] = []
        var values: [SQLValue] = []
        for (name, type, value) in cases {
            columns += [.init("\(name)_det", type, .deterministic), .init("\(name)_rnd", type, .randomized), .init("\(name)_plain", type, nil)]
            values += [value, value, value]
        }
        return try AlwaysEncryptedTestServer(key: makeKey(), columns: columns,
                                             rows: [values, values.map { _ in .null }], lies: lies)
    }

    static var expectedRows: [[SQLValue]] {
        let values = cases.flatMap { [$0.2, $0.2, $0.2] }
        return [values, values.map { _ in .null }]
    }

    func testEveryTypeDecryptsThroughEveryReadPath() async throws {
        let server = try Self.everyTypeServer()
        defer { server.stop() }
        let connection = try await Self.connect(server)
        let version = await connection.session.columnEncryptionVersion
        XCTAssertEqual(version, 1)
        let expected = Self.expectedRows

        // Buffered (execute), with the columns described by their base types.
        let result = try await connection.execute(SQLQuery(unsafeSQL: "SELECT * FROM t"))
        XCTAssertEqual(result.rows.map(\.values), expected)
        let columns = try XCTUnwrap(result.resultSets.first?.columns)
        for (i, (_, type, _)) in Self.cases.enumerated() {
            XCTAssertEqual(columns[3 * i].typeInfo, type)
            XCTAssertEqual(columns[3 * i + 1].typeInfo, type)
        }

        // Rows one at a time.
        var streamed: [[SQLValue]] = []
        for try await row in connection.query(SQLQuery(unsafeSQL: "SELECT * FROM t")) { streamed.append(row.values) }
        XCTAssertEqual(streamed, expected)

        // Row blocks.
        var blocks: [SQLValue] = []
        for try await block in connection.rowBlocks(SQLQuery(unsafeSQL: "SELECT * FROM t")) { blocks += block.values }
        XCTAssertEqual(blocks, expected.flatMap { $0 })

        // Streamed values: encrypted large values come whole, plaintext ones in chunks.
        var parts: [SQLValue] = []
        var chunks: [Int: [UInt8]] = [:]
        var rowEnds = 0
        for try await part in connection.streamingValues(SQLQuery(unsafeSQL: "SELECT * FROM t")) {
            switch part {
            case .value(_, let v): parts.append(v)
            case .chunk(let c, let bytes): chunks[c, default: []] += bytes
            case .valueEnd(let c):
                let type = try XCTUnwrap(columns[c].typeInfo as TypeInfo?)
                parts.append(try type.decodePLPValue(chunks.removeValue(forKey: c) ?? []))
            case .rowEnd: rowEnds += 1
            case .event: break
            }
        }
        XCTAssertEqual(rowEnds, 2)
        XCTAssertEqual(parts, expected.flatMap { $0 })
        await connection.close()
    }

    struct Person: Decodable, Equatable {
        var id: Int32
        var name: String?
    }

    func testTypedAndDecodableRowsSeeThePlaintext() async throws {
        let server = try AlwaysEncryptedTestServer(key: Self.makeKey(),
                                                   columns: [.init("id", .int, .deterministic), .init("name", .nvarchar(100), .randomized)],
                                                   rows: [[.int(7), .string("Ada")], [.int(-1), .null]])
        defer { server.stop() }
        let connection = try await Self.connect(server)
        var typed: [(Int32, String?)] = []
        for try await row in connection.query(SQLQuery(unsafeSQL: "SELECT id, name FROM p")).decode((Int32, String?).self) { typed.append(row) }
        XCTAssertEqual(typed.map(\.0), [7, -1])
        XCTAssertEqual(typed.map(\.1), ["Ada", nil])
        let people = try await connection.execute(SQLQuery(unsafeSQL: "SELECT id, name FROM p")).decode(Person.self)
        XCTAssertEqual(people, [Person(id: 7, name: "Ada"), Person(id: -1, name: nil)])
        await connection.close()
    }

    /// The typed error of a failing read, and that the connection serves the next request.
    func assertFails(_ server: AlwaysEncryptedTestServer, keys: [String: [UInt8]]? = nil, store: String = store,
                     code: ColumnEncryptionError.Code, column: String?, file: StaticString = #filePath, line: UInt = #line) async throws {
        let connection = try await Self.connect(server, keys: keys, store: store)
        for _ in 0 ..< 2 {   // twice: the failed request was drained and the connection goes on
            do {
                _ = try await connection.execute(SQLQuery(unsafeSQL: "SELECT * FROM t"))
                XCTFail("no error", file: file, line: line)
            } catch let error as SQLClientError {
                let underlying = error.underlying as? ColumnEncryptionError
                XCTAssertEqual(underlying?.code, code, "\(error)", file: file, line: line)
                XCTAssertEqual(underlying?.column, column, "\(error)", file: file, line: line)
                XCTAssertEqual(error.code, .decodingFailed, file: file, line: line)
            }
        }
        await connection.close()
    }

    func testTamperedCiphertextIsATypedErrorNamingTheColumn() async throws {
        var lies = AlwaysEncryptedTestServer.Lies()
        lies.tamperCells = true
        let server = try AlwaysEncryptedTestServer(key: Self.makeKey(), columns: [.init("id", .int, nil), .init("secret", .int, .deterministic)],
                                                   rows: [[.int(1), .int(2)]], lies: lies)
        defer { server.stop() }
        try await assertFails(server, code: .authenticationFailed, column: "secret")
    }

    /// The same typed error from the streaming paths (rows one at a time, values in parts), after
    /// the rows before it; a large encrypted value (nvarchar(max), chunks gathered) included.
    func testTamperedCiphertextFailsTheStreamingPaths() async throws {
        var lies = AlwaysEncryptedTestServer.Lies()
        lies.tamperCells = true
        let server = try AlwaysEncryptedTestServer(key: Self.makeKey(), columns: [.init("id", .int, nil), .init("doc", .nvarchar(nil), .randomized)],
                                                   rows: [[.int(1), .null], [.int(2), .string(String(repeating: "z", count: 6000))]], lies: lies)
        defer { server.stop() }
        let connection = try await Self.connect(server)
        var seen: [SQLValue] = []
        do {
            for try await row in connection.query(SQLQuery(unsafeSQL: "SELECT * FROM t")) { seen.append(row.values[0]) }
            XCTFail("no error")
        } catch let error as SQLClientError {
            XCTAssertEqual((error.underlying as? ColumnEncryptionError)?.code, .authenticationFailed, "\(error)")
            XCTAssertEqual((error.underlying as? ColumnEncryptionError)?.column, "doc")
        }
        XCTAssertEqual(seen, [.int(1)], "the NULL row before the bad cell came through")
        var values: [SQLValue] = []
        do {
            for try await part in connection.streamingValues(SQLQuery(unsafeSQL: "SELECT * FROM t")) {
                if case .value(_, let v) = part { values.append(v) }
                if case .chunk = part { XCTFail("an encrypted value's ciphertext was handed out") }
            }
            XCTFail("no error")
        } catch let error as SQLClientError {
            XCTAssertEqual((error.underlying as? ColumnEncryptionError)?.code, .authenticationFailed, "\(error)")
        }
        XCTAssertEqual(values.prefix(3), [.int(1), .null, .int(2)])
        await connection.close()
    }

    func testWrongKeyIsATypedError() async throws {
        let server = try AlwaysEncryptedTestServer(key: Self.makeKey(), columns: [.init("card", .nvarchar(20), .randomized)],
                                                   rows: [[.string("4111")]])
        defer { server.stop() }
        try await assertFails(server, keys: [Self.path: [UInt8](repeating: 9, count: 32)], code: .authenticationFailed, column: "card")
    }

    func testMissingProviderIsATypedError() async throws {
        let server = try AlwaysEncryptedTestServer(key: Self.makeKey(), columns: [.init("card", .nvarchar(20), .randomized)],
                                                   rows: [[.string("4111")]])
        defer { server.stop() }
        try await assertFails(server, store: "OTHER_STORE", code: .unknownKeyStoreProvider, column: "card")
    }

    func testUnknownAlgorithmIsATypedError() async throws {
        var lies = AlwaysEncryptedTestServer.Lies()
        lies.algorithm = 9
        let server = try AlwaysEncryptedTestServer(key: Self.makeKey(), columns: [.init("card", .nvarchar(20), .randomized)],
                                                   rows: [[.string("4111")]], lies: lies)
        defer { server.stop() }
        try await assertFails(server, code: .unknownAlgorithm, column: "card")
    }

    /// An Ordinal outside the CEK table is malformed COLMETADATA: the decoder's typed error (a
    /// protocol error, the connection closes), never an out-of-range read.
    func testWrongOrdinalIsATypedError() async throws {
        var lies = AlwaysEncryptedTestServer.Lies()
        lies.ordinal = 3
        let server = try AlwaysEncryptedTestServer(key: Self.makeKey(), columns: [.init("card", .nvarchar(20), .randomized)],
                                                   rows: [[.string("4111")]], lies: lies)
        defer { server.stop() }
        let connection = try await Self.connect(server)
        do {
            _ = try await connection.execute(SQLQuery(unsafeSQL: "SELECT * FROM t"))
            XCTFail("no error")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .protocolError, "\(error)")
            XCTAssertTrue(error.message.contains("Ordinal 3"), error.message)
        }
        await connection.close()
    }

    /// With column encryption disabled the same result reads as varbinary ciphertext.
    func testDisabledReadsCiphertext() async throws {
        let server = try AlwaysEncryptedTestServer(key: Self.makeKey(), columns: [.init("n", .int, .deterministic)], rows: [[.int(5)]])
        defer { server.stop() }
        var config = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(server.port)), user: "app",
                                                password: "pw", database: "shop", encryption: .notSupported)
        config.connectTimeout = .seconds(20)
        let connection = try await SQLConnection.connect(config)
        let rows = try await connection.execute(SQLQuery(unsafeSQL: "SELECT n FROM t")).rows
        guard case .binary(let bytes)? = rows.first?.values.first else { return XCTFail("\(rows)") }
        XCTAssertEqual(bytes.first, 0x01)
        XCTAssertEqual(try AEADAes256CbcHmacSha256(rootKey: server.key.rootKey).decrypt(bytes), [5, 0, 0, 0, 0, 0, 0, 0])
        await connection.close()
    }

    /// `sqlclient --column-master-key-folder DIR`: the certificate-file provider unwraps the
    /// published CEK (the swisscom fixture) with the key in DIR; the CLI prints the plaintext.
    func testCLIDecryptsWithTheColumnMasterKeyFolder() async throws {
        let dir = try AEFixtures.keyFolder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let encryptedKey = try AEFixtures.bytes("swisscom/cekv.key")
        let rootKey = try await SQLCertificateFileKeyStoreProvider(folder: dir.path)
            .decryptColumnEncryptionKey(masterKeyPath: AEFixtures.masterKeyPath, algorithm: "RSA_OAEP", encryptedKey: encryptedKey)
        let key = AlwaysEncryptedTestServer.Key(rootKey: rootKey, encryptedKey: encryptedKey,
                                                keyStoreName: SQLCertificateFileKeyStoreProvider.providerName,
                                                keyPath: AEFixtures.masterKeyPath)
        let server = try AlwaysEncryptedTestServer(key: key, columns: [.init("id", .int, .deterministic), .init("name", .nvarchar(100), .randomized)],
                                                   rows: [[.int(41), .string("Grace")], [.int(42), .null]])
        defer { server.stop() }
        let args = ["-S", "127.0.0.1,\(server.port)", "-U", "u", "-P", "p", "--encrypt", "notsupported", "--format", "csv"]
        let r = try CLI.run(args + ["--column-master-key-folder", dir.path, "-Q", "SELECT id, name FROM t"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("41,Grace"), r.stdout)
        XCTAssertTrue(r.stdout.contains("42,NULL") || r.stdout.contains("42,\n") || r.stdout.contains("42,\r"), r.stdout)
        // Without the folder, the CLI does not ask for column encryption: ciphertext, no plaintext.
        let plain = try CLI.run(args + ["-Q", "SELECT id, name FROM t"])
        XCTAssertEqual(plain.status, 0, plain.stderr)
        XCTAssertFalse(plain.stdout.contains("Grace"), plain.stdout)
        XCTAssertTrue(plain.stdout.contains("0x01"), plain.stdout)
        let missing = try CLI.run(args + ["--column-master-key-folder", dir.path + "/nope", "-Q", "SELECT 1"])
        XCTAssertNotEqual(missing.status, 0)
    }
}
