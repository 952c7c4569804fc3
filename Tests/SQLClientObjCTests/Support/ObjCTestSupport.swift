#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import SQLClient
import SQLClientObjC
import SQLClientTesting
import XCTest

/// The demo server (pysqlbridge on 127.0.0.1, port SQLCLIENT_TEST_PORT, login demo), started
/// through scripts/pysqlbridge.sh when nothing answers yet. Skipped in real-server mode
/// (SQLCLIENT_TEST_HOST): these tests assert the demo tables' rows.
enum DemoServer {
    static var environment: [String: String] { ProcessInfo.processInfo.environment }
    static var port: Int { Int(environment["SQLCLIENT_TEST_PORT"] ?? "") ?? 14333 }
    static var host: String { "127.0.0.1:\(port)" }   // the old library's server:port form
    static let user = "demo"
    static var password: String { environment["SQLCLIENT_DEMO_PASSWORD"] ?? "demo-Passw0rd" }
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    private static let lock = NSLock()
    nonisolated(unsafe) private static var started: Bool?

    /// Makes sure the demo server runs; skips (or fails under SQLCLIENT_REQUIRE_LIVE=1) when it cannot.
    static func require() throws {
        if let host = environment["SQLCLIENT_TEST_HOST"], !host.isEmpty {
            throw XCTSkip("SQLClientObjCTests assert the demo server's rows: pysqlbridge only (SQLCLIENT_TEST_HOST is set)")
        }
        let ok: Bool = lock.withLock {
            if let started { return started }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments = [packageRoot.appendingPathComponent("scripts/pysqlbridge.sh").path, "start"]
            var env = environment
            env["SQLCLIENT_TEST_PORT"] = String(port)
            process.environment = env
            process.standardInput = FileHandle.nullDevice
            let result = (try? process.run()).map { process.waitUntilExit(); return process.terminationStatus == 0 } ?? false
            started = result
            return result
        }
        if !ok {
            if environment["SQLCLIENT_REQUIRE_LIVE"] == "1" { XCTFail("the demo server could not be started") }
            throw XCTSkip("the demo server (pysqlbridge) could not be started")
        }
    }
}

/// A delivery queue for tests: serial, so completions and notifications can be recorded in order.
func testQueue(_ name: String) -> OperationQueue {
    let queue = OperationQueue()
    queue.name = name
    queue.maxConcurrentOperationCount = 1
    return queue
}

/// Results handed across the completion block (the values are not Sendable; nothing else holds them).
struct Results: @unchecked Sendable {
    let tables: [[[String: Any]]]?
}

extension SQLClient {
    /// A client for the demo server: its self-signed certificate trusted, deliveries on a queue of its own.
    static func forDemo(_ name: String = "demo") -> SQLClient {
        let client = SQLClient()
        client.trustServerCertificate = true
        client.callbackQueue = testQueue(name)
        return client
    }

    /// `connect` awaited.
    func connect(_ host: String, username: String, password: String, database: String?) async -> Bool {
        await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            connect(host, username: username, password: password, database: database) { c.resume(returning: $0) }
        }
    }

    /// `connect` to the demo server, awaited.
    func connectDemo() async -> Bool {
        await connect(DemoServer.host, username: DemoServer.user, password: DemoServer.password, database: nil)
    }

    /// `execute` awaited.
    func execute(_ sql: String) async -> [[[String: Any]]]? {
        await withCheckedContinuation { (c: CheckedContinuation<Results, Never>) in
            execute(sql) { c.resume(returning: Results(tables: $0)) }
        }.tables
    }

    /// `execute(_:parameters:)` awaited.
    func execute(_ sql: String, parameters: [Any]) async -> [[[String: Any]]]? {
        await withCheckedContinuation { (c: CheckedContinuation<Results, Never>) in
            execute(sql, parameters: parameters) { c.resume(returning: Results(tables: $0)) }
        }.tables
    }
}

/// Records the notifications a client posts (its own only: `object` is the client).
final class NotificationRecorder: @unchecked Sendable {
    struct Entry {
        var name: String
        var code: Int?
        var message: String?
        var severity: Int?
        var error: SQLClientError?
    }
    private let lock = NSLock()
    private var _entries: [Entry] = []
    private var tokens: [NSObjectProtocol] = []

    init(_ client: SQLClient) {
        for name in [SQLClientErrorNotification, SQLClientMessageNotification] {
            tokens.append(NotificationCenter.default.addObserver(forName: Notification.Name(name), object: client,
                                                                 queue: nil) { [weak self] note in
                let info = note.userInfo ?? [:]
                let entry = Entry(name: name, code: (info[SQLClientCodeKey] as? NSNumber)?.intValue,
                                  message: info[SQLClientMessageKey] as? String,
                                  severity: (info[SQLClientSeverityKey] as? NSNumber)?.intValue,
                                  error: info[SQLClientErrorKey] as? SQLClientError)
                self?.append(entry)
            })
        }
    }

    deinit {
        for token in tokens { NotificationCenter.default.removeObserver(token) }
    }

    /// Called on the delivery queue: also used by tests to mark where a completion came in the order.
    func append(_ entry: Entry) {
        lock.withLock { _entries.append(entry) }
    }

    var entries: [Entry] { lock.withLock { _entries } }
    var errors: [Entry] { entries.filter { $0.name == SQLClientErrorNotification } }
    var messages: [Entry] { entries.filter { $0.name == SQLClientMessageNotification } }
}

/// A replay server for `session`, plaintext (the replay server's own TLS is covered elsewhere),
/// and a client set up for it at `version`.
func replayClient(_ session: ReplaySession, version: TDSVersion = .v7_4, name: String = "replay")
    throws -> (ReplayServer, SQLClient, String) {
    let server = ReplayServer(session: session)
    let port = try server.start()
    let client = SQLClient()
    client.callbackQueue = testQueue(name)
    client.configurationHandler = { configuration in
        configuration.encryption = .notSupported
        configuration.tdsVersion = version
    }
    return (server, client, "127.0.0.1:\(port)")
}

/// A session answering `sql` with `response` (token bytes), at `version`.
func session(_ exchanges: [(sql: String, response: [UInt8], options: String)], version: TDSVersion) throws -> ReplaySession {
    var text = "@version \(version == .v7_1 ? "7.1" : "7.4")\n"
    for e in exchanges {
        text += ">>> SQL_BATCH\n" + e.sql.split(separator: "\n", omittingEmptySubsequences: false).map { "| " + $0 }.joined(separator: "\n")
        text += "\n<<<" + (e.options.isEmpty ? "" : " " + e.options) + "\n"
        text += hex(e.response) + "\n\n"
    }
    return try ReplaySession(text: text)
}

/// Bytes as hex lines of 32 bytes.
func hex(_ bytes: [UInt8]) -> String {
    stride(from: 0, to: bytes.count, by: 32).map { i in
        bytes[i ..< min(i + 32, bytes.count)].map { String(format: "%02X", $0) }.joined(separator: " ")
    }.joined(separator: "\n")
}

/// A TCP port on 127.0.0.1 (or ::1) that accepts connections (into the kernel's backlog) and
/// never answers: a server that hangs during login.
final class SilentListener {
    let fd: Int32
    let port: Int

    init(ipv6: Bool = false) throws {
        #if canImport(Darwin)
        let fd = socket(ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0)
        #else
        let fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        guard fd >= 0 else { throw XCTSkip("socket() failed") }
        var port: UInt16 = 0
        var ok = false
        if ipv6 {
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            inet_pton(AF_INET6, "::1", &sin6.sin6_addr)
            let size = socklen_t(MemoryLayout<sockaddr_in6>.size)
            ok = withUnsafePointer(to: &sin6) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) } } == 0
            var length = size
            _ = withUnsafeMutablePointer(to: &sin6) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            port = UInt16(bigEndian: sin6.sin6_port)
        } else {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr)
            let size = socklen_t(MemoryLayout<sockaddr_in>.size)
            ok = withUnsafePointer(to: &sin) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) } } == 0
            var length = size
            _ = withUnsafeMutablePointer(to: &sin) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            port = UInt16(bigEndian: sin.sin_port)
        }
        guard ok, listen(fd, 8) == 0 else { close(fd); throw XCTSkip("bind/listen on \(ipv6 ? "::1" : "127.0.0.1") failed") }
        self.fd = fd
        self.port = Int(port)
    }

    deinit { close(fd) }
}
