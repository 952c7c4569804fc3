#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import XCTest
@testable import SQLClient
import TDS

/// The live test server: pysqlbridge 2.1.3 on 127.0.0.1 serving Fixtures/demo (see scripts/pysqlbridge.sh),
/// or a real SQL Server when SQLCLIENT_TEST_HOST is set (real-server mode).
///
/// `LiveServer.require()` makes sure it answers: pysqlbridge is started through the script when
/// nothing listens yet; a real server is logged into once and given the demo tables (`people`,
/// `products`, created with pysqlbridge's column types from Fixtures/demo when absent). When it
/// cannot be reached the test is skipped, unless SQLCLIENT_REQUIRE_LIVE=1 (set by scripts/test.sh
/// and CI) or real-server mode, where it fails.
///
/// Real-server mode: SQLCLIENT_TEST_HOST (`host`, `host,port`, `host:port`, `host\instance`,
/// `host\instance:port`…), SQLCLIENT_TEST_USER, SQLCLIENT_TEST_PASSWORD, optional
/// SQLCLIENT_TEST_DATABASE (default tempdb). The server's certificate is trusted unless
/// SQLCLIENT_TEST_TRUST_SERVER_CERTIFICATE=0 (then SQLCLIENT_TEST_CA_FILE may name the CA).
enum LiveServer {
    private static var environment: [String: String] { ProcessInfo.processInfo.environment }
    /// The real server named by SQLCLIENT_TEST_HOST, if any.
    static var realServer: String? { environment["SQLCLIENT_TEST_HOST"].flatMap { $0.isEmpty ? nil : $0 } }
    /// True in real-server mode.
    static var isReal: Bool { realServer != nil }
    /// True when the live server is pysqlbridge (its quirks may be asserted).
    static var isPysqlbridge: Bool { !isReal }

    static var address: SQLServerAddress {
        if let realServer, let parsed = try? SQLServerAddress(parsing: realServer) { return parsed }
        return SQLServerAddress(host: "127.0.0.1", port: pysqlbridgePort)
    }
    static var host: String { address.host }
    static var port: Int { address.port ?? 1433 }
    private static var pysqlbridgePort: Int { Int(environment["SQLCLIENT_TEST_PORT"] ?? "") ?? 14333 }
    /// The server as `sqlclient -S` takes it.
    static var serverArgument: String { realServer ?? "127.0.0.1,\(pysqlbridgePort)" }
    static var user: String { isReal ? environment["SQLCLIENT_TEST_USER"] ?? "" : "demo" }
    static var password: String {
        isReal ? environment["SQLCLIENT_TEST_PASSWORD"] ?? "" : environment["SQLCLIENT_DEMO_PASSWORD"] ?? "demo-Passw0rd"
    }
    /// The database the tests use ("" on pysqlbridge: its default).
    static var database: String { isReal ? (environment["SQLCLIENT_TEST_DATABASE"].flatMap { $0.isEmpty ? nil : $0 } ?? "tempdb") : "" }
    static var trustsCertificate: Bool { !isReal || environment["SQLCLIENT_TEST_TRUST_SERVER_CERTIFICATE"] != "0" }
    /// `sqlclient` arguments for the live server (the password goes through SQLCMDPASSWORD).
    static var cliArguments: [String] {
        var args = ["-S", serverArgument, "-U", user]
        if !database.isEmpty { args += ["-d", database] }
        if trustsCertificate { args.append("-C") }
        if let ca = environment["SQLCLIENT_TEST_CA_FILE"], isReal, !trustsCertificate { args += ["--ca-file", ca] }
        return args
    }
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Skips a test that asserts what pysqlbridge does (its quirks, its certificate, loopback forms).
    static func requirePysqlbridge(_ why: String) throws {
        if isReal { throw XCTSkip("pysqlbridge only (real-server mode): \(why)") }
        try require()
    }

    /// Skips a test that needs a real SQL Server unless real-server mode is on.
    static func requireRealServer() throws {
        guard isReal else {
            throw XCTSkip("needs a real SQL Server: set SQLCLIENT_TEST_HOST (server\\instance:port forms), "
                          + "SQLCLIENT_TEST_USER, SQLCLIENT_TEST_PASSWORD and optionally SQLCLIENT_TEST_DATABASE")
        }
        try require()
    }

    private static let lock = NSLock()
    nonisolated(unsafe) private static var checked: Result<Void, Error>?

    static func require() throws {
        let outcome: Result<Void, Error> = lock.withLock {
            if let checked { return checked }
            let result = Result { try ensureRunning() }
            checked = result
            return result
        }
        switch outcome {
        case .success: return
        case .failure(let error):
            if isReal {
                XCTFail("the SQL Server named by SQLCLIENT_TEST_HOST is not usable: \(error)")
                throw error
            }
            if ProcessInfo.processInfo.environment["SQLCLIENT_REQUIRE_LIVE"] == "1" {
                XCTFail("the live test server is required but not available: \(error)")
                throw error
            }
            throw XCTSkip("the live test server (pysqlbridge) is not available: \(error)")
        }
    }

    private static func ensureRunning() throws {
        if isReal { return try prepareRealServer() }
        if portOpen() { return }
        let script = packageRoot.appendingPathComponent("scripts/pysqlbridge.sh").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [script, "start"]
        var env = ProcessInfo.processInfo.environment
        env["SQLCLIENT_TEST_PORT"] = String(port)
        env["SQLCLIENT_DEMO_PASSWORD"] = password
        process.environment = env
        process.standardInput = FileHandle.nullDevice
        let done = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in done.signal() }
        try process.run()
        guard try process.waitForExit(done, timeout: 300) == 0, portOpen() else {
            throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "scripts/pysqlbridge.sh start failed"])
        }
    }

    /// The demo tables, with the column types pysqlbridge declares for Fixtures/demo, so that a
    /// test reads the same on both servers.
    static let demoTables: [(name: String, columns: String, csv: String)] = [
        ("people", "id int NULL, name nvarchar(6) NULL, score float NULL, city nvarchar(6) NULL", "people.csv"),
        ("products", "sku int NULL, title nvarchar(12) NULL, price float NULL, stock int NULL", "products.csv"),
    ]

    /// Logs into the real server once and creates the demo tables that are missing; a table of
    /// that name holding something else is an error (never dropped or changed).
    private static func prepareRealServer() throws {
        let done = DispatchSemaphore(value: 0)
        let outcome = ResultBox()
        Task {
            do {
                let connection = try await SQLConnection.connect(configuration())
                defer { Task { await connection.close() } }
                for table in demoTables {
                    let rows = try demoRows(table.csv)
                    let exists = try await connection.execute("SELECT OBJECT_ID(N'dbo.\(unsafeRaw: table.name)', N'U') AS id")
                    if exists.resultSets.first?.rows.first?["id"] == .null {
                        let values = rows.map { "(" + $0.map(sqlLiteral).joined(separator: ", ") + ")" }.joined(separator: ", ")
                        _ = try await connection.execute(SQLQuery(unsafeSQL: "CREATE TABLE dbo.\(table.name) (\(table.columns)); "
                                                         + "INSERT INTO dbo.\(table.name) VALUES \(values)"))
                    } else {
                        let count = try await connection.execute("SELECT COUNT(*) AS n FROM dbo.\(unsafeRaw: table.name)")
                        guard count.resultSets.first?.rows.first?["n"]?.intValue == rows.count else {
                            throw CocoaError(.fileWriteFileExists, userInfo: [NSLocalizedDescriptionKey:
                                "dbo.\(table.name) in \(database) is not the demo table; use another SQLCLIENT_TEST_DATABASE"])
                        }
                    }
                }
                outcome.set(nil)
            } catch {
                outcome.set(error)
            }
            done.signal()
        }
        guard done.wait(timeout: .now() + 120) == .success else {
            throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "no answer from \(serverArgument) within 120 s"])
        }
        if let error = outcome.error { throw error }
    }

    /// The rows of a Fixtures/demo CSV (no quoted fields there): an empty cell is NULL.
    static func demoRows(_ file: String) throws -> [[String?]] {
        let text = try String(contentsOf: packageRoot.appendingPathComponent("Fixtures/demo/\(file)"), encoding: .utf8)
        return text.split(whereSeparator: \.isNewline).dropFirst().map { line in
            line.split(separator: ",", omittingEmptySubsequences: false).map { $0.isEmpty ? nil : String($0) }
        }
    }

    /// A cell as SQL: NULL, a number as written, anything else as an N'' literal (quotes doubled).
    private static func sqlLiteral(_ cell: String?) -> String {
        guard let cell else { return "NULL" }
        if Double(cell) != nil { return cell }
        return "N'" + cell.replacingOccurrences(of: "'", with: "''") + "'"
    }

    private static func portOpen() -> Bool {
        #if canImport(Darwin)
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #else
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = UInt16(port).bigEndian
        inet_pton(AF_INET, host, &sin.sin_addr)
        let rc = withUnsafePointer(to: &sin) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddrPointer -> Int32 in
                #if canImport(Darwin)
                return Darwin.connect(fd, sockaddrPointer, socklen_t(MemoryLayout<sockaddr_in>.size))
                #else
                return Glibc.connect(fd, sockaddrPointer, socklen_t(MemoryLayout<sockaddr_in>.size))
                #endif
            }
        }
        return rc == 0
    }

    /// A configuration for the live server's login (the demo login on pysqlbridge, trusting its
    /// self-signed certificate).
    static func configuration(encryption: SQLEncryption = .on, trust: Bool = true,
                              password: String? = nil, tdsVersion: TDSVersion = .v7_4) -> SQLConnectionConfiguration {
        var tls = TLSConfiguration(trustServerCertificate: trust && trustsCertificate)
        if isReal, !trustsCertificate, let ca = environment["SQLCLIENT_TEST_CA_FILE"] { tls.caFile = ca }
        var config = SQLConnectionConfiguration(address: address, user: user,
                                                password: password ?? self.password, database: database,
                                                encryption: encryption, tls: tls,
                                                connectTimeout: .seconds(20), tdsVersion: tdsVersion)
        config.applicationName = "SQLClientTests"
        return config
    }

    static func connect(encryption: SQLEncryption = .on) async throws -> SQLConnection {
        try require()
        return try await SQLConnection.connect(configuration(encryption: encryption))
    }
}

/// An error (or none) handed from a task to the thread that waits for it.
final class ResultBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Error?
    func set(_ error: Error?) { lock.withLock { value = error } }
    var error: Error? { lock.withLock { value } }
}
