#if SwiftLog || Metrics || Tracing || ServiceLifecycle
import Foundation
import XCTest
@testable import SQLClient
import SQLClientTesting

/// The live server for the trait tests: pysqlbridge on 127.0.0.1 (SQLCLIENT_TEST_PORT, default
/// 14333), started through scripts/pysqlbridge.sh when nothing listens. Skipped when it cannot
/// be reached, unless SQLCLIENT_REQUIRE_LIVE=1 (scripts/test.sh and CI), where that fails.
enum Bridge {
    static var environment: [String: String] { ProcessInfo.processInfo.environment }
    static var port: Int { Int(environment["SQLCLIENT_TEST_PORT"] ?? "") ?? 14333 }
    /// The demo login's password: the tests assert it appears in no record, metric or span.
    static var password: String { environment["SQLCLIENT_DEMO_PASSWORD"] ?? "demo-Passw0rd" }
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    static func configuration() -> SQLConnectionConfiguration {
        var c = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: port), user: "demo",
                                           password: password, tls: TLSConfiguration(trustServerCertificate: true),
                                           connectTimeout: .seconds(20))
        c.applicationName = "SQLClientObservabilityTests"
        return c
    }

    private static let lock = NSLock()
    nonisolated(unsafe) private static var checked: Bool?

    /// Makes sure pysqlbridge answers (starting it once), else skips or fails.
    static func require() throws {
        let up: Bool = lock.withLock {
            if let checked { return checked }
            let result = portOpen() || start()
            checked = result
            return result
        }
        if up { return }
        if environment["SQLCLIENT_REQUIRE_LIVE"] == "1" {
            XCTFail("the live test server (pysqlbridge) is required but not available on port \(port)")
        }
        throw XCTSkip("the live test server (pysqlbridge) is not available on port \(port)")
    }

    private static func start() -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [packageRoot.appendingPathComponent("scripts/pysqlbridge.sh").path, "start"]
        var env = environment
        env["SQLCLIENT_TEST_PORT"] = String(port)
        process.environment = env
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0 && portOpen()
    }

    #if os(Linux)
    private static func portOpen() -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// This process's TCP sockets connected to the server's `port` (its fds' socket inodes
    /// matched against /proc/net/tcp and tcp6 by remote port).
    static func openSockets(to port: Int = Bridge.port) -> Int? {
        let fm = FileManager.default
        let fds = (try? fm.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        let inodes = Set(fds.compactMap { fd -> String? in
            guard let link = try? fm.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"), link.hasPrefix("socket:[") else { return nil }
            return String(link.dropFirst(8).dropLast())
        })
        let remotePort = String(port, radix: 16, uppercase: true).leftPadded4
        var count = 0
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            // Read to the end (a /proc file reports size 0).
            guard let handle = FileHandle(forReadingAtPath: table) else { continue }
            let text = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
            try? handle.close()
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                guard fields.count > 9, fields[2].hasSuffix(":" + remotePort), inodes.contains(String(fields[9])) else { continue }
                count += 1
            }
        }
        return count
    }
    #else
    private static func portOpen() -> Bool { false }   // scripts/pysqlbridge.sh start finds it running

    /// No /proc here: the socket checks are Linux's.
    static func openSockets(to port: Int = Bridge.port) -> Int? { nil }
    #endif
}

private extension String {
    var leftPadded4: String { count >= 4 ? self : String(repeating: "0", count: 4 - count) + self }
}

/// Collects values from concurrent callbacks.
final class Collected<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [T] = []
    func append(_ item: T) { lock.withLock { items.append(item) } }
    var all: [T] { lock.withLock { items } }
}

/// A recovering server (``LoginScenarioServer`` with a ``SessionRecoveryScenario``), database
/// `shop`, and a configuration for it whose password is `password`.
enum RecoveringServer {
    static let password = "Rec0very-S3cret-Passw0rd"

    static func start() throws -> LoginScenarioServer {
        var behaviour = LoginScenarioServer.Behaviour(login: { _ in .accept })
        behaviour.sessionRecovery = SessionRecoveryScenario()
        return try LoginScenarioServer(name: "observed", behaviour: behaviour)
    }

    static func configuration(_ server: LoginScenarioServer) -> SQLConnectionConfiguration {
        var c = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(server.port)), user: "app",
                                           password: password, database: "shop", encryption: .notSupported)
        c.connectTimeout = .seconds(20)
        return c
    }

    /// Connects, drops the idle connection (FIN) and runs a query, which recovers the session.
    static func recoverOnce(_ configuration: SQLConnectionConfiguration, _ server: LoginScenarioServer) async throws {
        let connection = try await SQLConnection.connect(configuration)
        _ = try await connection.execute("SELECT DB_NAME()")
        XCTAssertEqual(server.dropConnections(.fin), 1)
        _ = try await connection.execute("SELECT DB_NAME()")
        await connection.close()
    }
}
#endif
