#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import XCTest
import TDS
import SQLClientTesting
@testable import SQLClient

/// The connect options through `sqlclient` against the scenario server (and pysqlbridge with
/// pyspnego for NTLM): -N strict, routing, --access-token-file, -U DOMAIN\user, ConnectRetryCount,
/// keep-alive (read back with `ss`), -K ReadOnly, -M, and a TDS 7.1 server's refusal.
final class CLIConnectivityTests: XCTestCase {
    func certificates() throws -> TestCertificates {
        do { return try TestCertificates.make() } catch { throw XCTSkip("openssl is not available: \(error)") }
    }

    func args(_ host: String = "127.0.0.1", _ port: UInt16, _ rest: [String]) -> [String] {
        ["-S", "\(host),\(port)", "-U", "app", "-P", "pw", "-d", "shop"] + rest + ["-Q", "SELECT @@SERVERNAME", "-h", "-1"]
    }

    func testStrict() throws {
        let certs = try certificates()
        let server = try LoginScenarioServer(name: "strict-server", behaviour: .init(
            tlsFirst: .init(certificatePath: certs.serverCertificate, keyPath: certs.serverKey)))
        defer { server.stop() }
        let ok = try CLI.run(args("localhost", server.port, ["-N", "strict", "--ca-file", certs.caCertificate]))
        XCTAssertEqual(ok.status, 0, ok.stderr)
        XCTAssertTrue(ok.stdout.contains("strict-server"), ok.stdout)
        XCTAssertEqual(server.records(atLeast: 1).first?.alpn, "tds/8.0")
        let trusted = try CLI.run(args("localhost", server.port, ["--encrypt", "strict", "-C"]))
        XCTAssertEqual(trusted.status, 3, "-C does not apply to strict: \(trusted.stderr)")
        XCTAssertTrue(trusted.stderr.contains("-N strict always verifies"), trusted.stderr)
    }

    /// `-F ""` is no name given: the certificate is checked against the host connected to, never
    /// accepted for any name. A certificate naming only localhost, reached as 127.0.0.1: refused
    /// with `-F ""` (as without -F), accepted with `-F localhost`.
    func testEmptyHostNameInCertificateChecksTheHost() throws {
        let certs = try certificates()
        let server = try LoginScenarioServer(name: "named-server", behaviour: .init(
            tlsFirst: .init(certificatePath: certs.localhostOnlyCertificate, keyPath: certs.localhostOnlyKey)))
        defer { server.stop() }
        let tls = ["-N", "strict", "--ca-file", certs.caCertificate]
        for empty in [["-F", ""], ["--host-name-in-certificate", ""], []] {
            let refused = try CLI.run(args("127.0.0.1", server.port, tls + empty))
            XCTAssertEqual(refused.status, 3, "\(empty): \(refused.stderr)")
            XCTAssertTrue(refused.stderr.contains("127.0.0.1"), "\(empty): \(refused.stderr)")
            XCTAssertFalse(refused.stdout.contains("named-server"), "\(empty): \(refused.stdout)")
        }
        let named = try CLI.run(args("127.0.0.1", server.port, tls + ["-F", "localhost"]))
        XCTAssertEqual(named.status, 0, named.stderr)
        XCTAssertTrue(named.stdout.contains("named-server"), named.stdout)
    }

    func testRouting() throws {
        let replica = try LoginScenarioServer(name: "replica-7", behaviour: .init())
        defer { replica.stop() }
        let listener = try LoginScenarioServer(name: "listener", behaviour: .init(login: { [port = replica.port] _ in
            .route(server: "localhost", port: port)
        }))
        defer { listener.stop() }
        let r = try CLI.run(args("127.0.0.1", listener.port, ["-N", "notsupported"]))
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("replica-7"), r.stdout)
        XCTAssertEqual(replica.records(atLeast: 1).first?.login?.serverName, "localhost")
    }

    func testAccessTokenFile() throws {
        let server = try LoginScenarioServer(behaviour: .init(fedAuthRequired: 1))
        defer { server.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("token-\(UUID().uuidString)")
        try "eyJhbGciOi.secret-token.sig\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        for arguments in [["-S", "127.0.0.1,\(server.port)", "--access-token-file", file.path, "-N", "notsupported"],
                          ["--connection-string", "Server=127.0.0.1,\(server.port);Authentication=ActiveDirectoryAccessToken;Encrypt=notsupported",
                           "--access-token-file", file.path]] {
            let r = try CLI.run(arguments + ["-Q", "SELECT 1"])
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertFalse(r.stderr.contains("secret-token"))
        }
        for record in server.records(atLeast: 2) {
            let data = try XCTUnwrap(record.login?.featureExt?.first { $0.id == Login7Feature.fedAuthID }?.data)
            XCTAssertEqual(try FedAuth.decode(data).accessToken, "eyJhbGciOi.secret-token.sig")
            XCTAssertEqual(record.prelogin?.fedAuthRequired, 1)
        }
        let missing = try CLI.run(["-S", "127.0.0.1,\(server.port)", "--access-token-file", "/nonexistent/token", "-Q", "SELECT 1"])
        XCTAssertEqual(missing.status, 2, missing.stderr)
    }

    func testNTLMAgainstPyspnego() throws {
        let users = try NTLMAcceptor.userFile(["CORP:alice:S3cret-pass"])
        let (server, port) = try NTLMAcceptor.startServer(userFile: users)
        defer { server.stop() }
        let ok = try CLI.run(["-S", "127.0.0.1,\(port)", "-U", #"CORP\alice"#, "-P", "S3cret-pass", "-C",
                              "-Q", "SELECT SUSER_SNAME() AS login", "-h", "-1"])
        XCTAssertEqual(ok.status, 0, ok.stderr)
        XCTAssertTrue(ok.stdout.lowercased().contains(#"corp\alice"#), ok.stdout)
        let wrong = try CLI.run(["-S", "127.0.0.1,\(port)", "-U", #"CORP\alice"#, "-P", "nope", "-C", "-Q", "SELECT 1"])
        XCTAssertEqual(wrong.status, 3, wrong.stderr)
        XCTAssertTrue(wrong.stderr.contains("refused"), wrong.stderr)
    }

    func testRetryAndNoRetry() throws {
        let flaky = try LoginScenarioServer(name: "flaky", behaviour: .init(login: { context in
            context.connectionIndex < 2 ? .fail(number: 40613, message: "Database 'shop' is not currently available.", severity: 20) : .accept
        }))
        defer { flaky.stop() }
        let cs = "Server=127.0.0.1,\(flaky.port);User ID=u;Password=p;Encrypt=notsupported;ConnectRetryInterval=1"
        let ok = try CLI.run(["--connection-string", cs + ";ConnectRetryCount=2", "-Q", "SELECT 1", "-h", "-1"])
        XCTAssertEqual(ok.status, 0, ok.stderr)
        XCTAssertTrue(ok.stdout.contains("flaky"), ok.stdout)
        XCTAssertEqual(flaky.records.count, 3)
        let refusing = try LoginScenarioServer(behaviour: .init(login: { _ in .fail(number: 18456, message: "Login failed for user 'u'.") }))
        defer { refusing.stop() }
        let no = try CLI.run(["--connection-string", "Server=127.0.0.1,\(refusing.port);User ID=u;Password=p;Encrypt=notsupported;"
                              + "ConnectRetryCount=2;ConnectRetryInterval=1", "-Q", "SELECT 1"])
        XCTAssertEqual(no.status, 3)
        XCTAssertTrue(no.stderr.contains("Msg 18456"), no.stderr)
        XCTAssertEqual(refusing.records.count, 1)
    }

    /// The client socket's keep-alive timer as the system shows it (`ss -o`), while sqlclient is
    /// connected and waits for standard input.
    func testKeepAliveOnTheCLIsSocket() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/ss") || FileManager.default.isExecutableFile(atPath: "/bin/ss") else {
            throw XCTSkip("ss (iproute2) is not installed: cannot read another process's socket options")
        }
        let server = try LoginScenarioServer(behaviour: .init())
        defer { server.stop() }
        for (extra, expected) in [("", 30), (";KeepAlive=45;KeepAliveInterval=3", 45)] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try CLI.binary())
            process.arguments = ["--connection-string", "Server=127.0.0.1,\(server.port);User ID=u;Password=p;Encrypt=notsupported" + extra]
            process.environment = CLI.environment([:])
            let input = Pipe()
            process.standardInput = input
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            let done = DispatchSemaphore(value: 0)
            process.terminationHandler = { _ in done.signal() }
            try process.run()
            let before = server.records.count
            _ = server.records(atLeast: before + 1)
            let ss = Process()
            ss.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            ss.arguments = ["ss", "-tno", "state", "established", "( dport = :\(server.port) )"]
            let out = Pipe()
            ss.standardOutput = out
            let ssDone = DispatchSemaphore(value: 0)
            ss.terminationHandler = { _ in ssDone.signal() }
            try ss.run()
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            _ = try ss.waitForExit(ssDone, timeout: 30)
            try input.fileHandleForWriting.close()
            _ = try process.waitForExit(done, timeout: 60)
            // "timer:(keepalive,29sec,0)": the idle time counts down from the configured value.
            guard let range = text.range(of: #"keepalive,(\d+)(\.\d+)?(ms|sec|min)"#, options: .regularExpression) else {
                return XCTFail("no keep-alive timer on the client socket: \(text)")
            }
            let digits = text[range].drop { !$0.isNumber }.prefix { $0.isNumber }
            let seconds = Int(digits) ?? -1
            XCTAssertTrue((expected - 5 ... expected).contains(seconds), "\(text[range]) for \(expected) s")
        }
    }

    func testApplicationIntentMultiSubnetFailoverAnd71Refusal() throws {
        let server = try LoginScenarioServer(name: "ag-secondary", behaviour: .init())
        defer { server.stop() }
        let r = try CLI.run(args("localhost", server.port, ["-N", "notsupported", "-K", "ReadOnly", "-M"]))
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("ag-secondary"), r.stdout)
        XCTAssertEqual(server.records(atLeast: 1).first?.login?.typeFlags.contains(.readOnlyIntent), true)

        let old = try LoginScenarioServer(behaviour: .init(login: { _ in
            .fail(number: 18456, message: "Login failed for user 'app'.", version: .v7_1)
        }))
        defer { old.stop() }
        let refused = try CLI.run(args("127.0.0.1", old.port, ["-N", "notsupported", "--tds-version", "7.4"]))
        XCTAssertEqual(refused.status, 3)
        XCTAssertTrue(refused.stderr.contains("Msg 18456"), refused.stderr)
        XCTAssertFalse(refused.stderr.contains("malformed"), refused.stderr)
    }
}
