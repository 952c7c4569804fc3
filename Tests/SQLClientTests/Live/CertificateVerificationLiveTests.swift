#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import XCTest
@testable import SQLClient

/// pysqlbridge presenting a certificate signed by a test CA (scripts/pysqlbridge_with_certificate.py):
/// verification with a CA file and host-name checking succeeds end to end, and fails for a wrong
/// CA or a wrong name.
final class CertificateVerificationLiveTests: XCTestCase {
    func testCAFileAndHostNameVerificationAgainstTheLiveServer() async throws {
        try LiveServer.requirePysqlbridge("starts its own pysqlbridge with a test CA's certificate")
        let certs: TestCertificates
        do { certs = try TestCertificates.make() } catch { throw XCTSkip("openssl is not available: \(error)") }
        let python = LiveServer.packageRoot.appendingPathComponent(".venv/bin/python")
        guard FileManager.default.isExecutableFile(atPath: python.path) else {
            throw XCTSkip("the pysqlbridge venv is missing (scripts/pysqlbridge.sh install)")
        }
        // A free port: bind an ephemeral one, then release it.
        let probe = try LoopbackListener(accepting: false)
        let port = probe.port
        probe.stop()

        let process = Process()
        process.executableURL = python
        process.arguments = [LiveServer.packageRoot.appendingPathComponent("scripts/pysqlbridge_with_certificate.py").path,
                             LiveServer.packageRoot.appendingPathComponent("Fixtures/demo/config.json").path,
                             String(port), certs.serverCertificate, certs.serverKey]
        var env = ProcessInfo.processInfo.environment
        env["SQLCLIENT_DEMO_PASSWORD"] = LiveServer.password
        process.environment = env
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        defer {
            // SIGKILL: a child spawned from a Dispatch thread inherits its blocked signals (SIGTERM among them).
            kill(process.processIdentifier, SIGKILL)
            exited.wait()
        }
        // Wait (bounded) until it listens.
        var listening = false
        for _ in 0 ..< 300 where process.isRunning {
            if let s = try? await SocketStream.connect(host: "127.0.0.1", port: port, timeout: .seconds(1)) {
                s.close()
                listening = true
                break
            }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        XCTAssertTrue(listening, "the certificate server did not start")
        guard listening else { return }

        func config(host: String, tls: TLSConfiguration) -> SQLConnectionConfiguration {
            SQLConnectionConfiguration(address: SQLServerAddress(host: host, port: port), user: LiveServer.user,
                                       password: LiveServer.password, encryption: .on, tls: tls,
                                       connectTimeout: .seconds(20))
        }
        // Verified by the CA file, by DNS name and by IP address.
        for host in ["localhost", "127.0.0.1"] {
            let connection = try await SQLConnection.connect(config(host: host, tls: TLSConfiguration(caFile: certs.caCertificate)))
            let tables = try await connection.execute("SELECT name FROM people WHERE id = 3")
            XCTAssertEqual(tables.resultSets.first?.rows.first?["name"]?.stringValue, "Chloé")
            await connection.close()
        }
        // The wrong CA.
        do {
            _ = try await SQLConnection.connect(config(host: "localhost", tls: TLSConfiguration(caFile: certs.otherCACertificate)))
            XCTFail("a certificate from an unknown CA was accepted")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .certificateVerificationFailed)
        }
        // The right CA, the wrong name.
        do {
            _ = try await SQLConnection.connect(config(host: "127.0.0.1", tls: TLSConfiguration(
                caFile: certs.caCertificate, hostNameInCertificate: "db.example.org")))
            XCTFail("a certificate for another name was accepted")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .certificateVerificationFailed)
            XCTAssertTrue(error.message.contains("hostname mismatch"), error.message)
        }
    }
}
