#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import XCTest
@testable import SQLClient

/// The live test server: pysqlbridge 2.1.3 on 127.0.0.1 serving Fixtures/demo (see scripts/pysqlbridge.sh).
///
/// `LiveServer.require()` returns its address, starting it through the script when nothing
/// listens yet. When it cannot be started the test is skipped, unless SQLCLIENT_REQUIRE_LIVE=1
/// (set by scripts/test.sh and CI), where it fails.
enum LiveServer {
    static let host = "127.0.0.1"
    static var port: Int { Int(ProcessInfo.processInfo.environment["SQLCLIENT_TEST_PORT"] ?? "") ?? 14333 }
    static let user = "demo"
    static var password: String { ProcessInfo.processInfo.environment["SQLCLIENT_DEMO_PASSWORD"] ?? "demo-Passw0rd" }
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

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
            if ProcessInfo.processInfo.environment["SQLCLIENT_REQUIRE_LIVE"] == "1" {
                XCTFail("the live test server is required but not available: \(error)")
                throw error
            }
            throw XCTSkip("the live test server (pysqlbridge) is not available: \(error)")
        }
    }

    private static func ensureRunning() throws {
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

    /// A configuration for the demo login, trusting the self-signed certificate.
    static func configuration(encryption: SQLEncryption = .on, trust: Bool = true,
                              password: String? = nil, tdsVersion: TDSVersion = .v7_4) -> SQLConnectionConfiguration {
        var config = SQLConnectionConfiguration(address: SQLServerAddress(host: host, port: port), user: user,
                                                password: password ?? self.password, encryption: encryption,
                                                tls: TLSConfiguration(trustServerCertificate: trust),
                                                connectTimeout: .seconds(20), tdsVersion: tdsVersion)
        config.applicationName = "SQLClientTests"
        return config
    }

    static func connect(encryption: SQLEncryption = .on) async throws -> SQLConnection {
        try require()
        return try await SQLConnection.connect(configuration(encryption: encryption))
    }
}
