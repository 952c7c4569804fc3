#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import XCTest
@testable import SQLClient

/// A throwaway MIT Kerberos realm (SQLCLIENT.TEST) for the Kerberos tests: scripts/kdc.sh starts a
/// KDC on loopback in a temporary folder (its own krb5.conf and kdc.conf), adds service principals
/// and runs kinit with the client keytab; scripts/pysqlbridge_kerberos.py is the GSSAPI acceptor in
/// front of pysqlbridge. Tests skip with a message when the KDC (krb5-kdc, krb5-admin-server,
/// krb5-user) or the acceptor (python-gssapi, the project's venv) is missing.
final class KerberosRealm: @unchecked Sendable {
    static let realm = "SQLCLIENT.TEST"
    static let script = LiveServer.packageRoot.appendingPathComponent("scripts/kdc.sh").path
    let directory: URL
    let kdcPort: Int
    var krb5Config: String { directory.appendingPathComponent("krb5.conf").path }
    var clientKeytab: String { directory.appendingPathComponent("client.keytab").path }
    var serviceKeytab: String { directory.appendingPathComponent("service.keytab").path }

    private init(directory: URL, kdcPort: Int) {
        self.directory = directory
        self.kdcPort = kdcPort
    }

    private static let lock = NSLock()
    nonisolated(unsafe) private static var started: Result<KerberosRealm, Error>?

    /// The realm, started on first use (once per test process; ``stopShared()`` ends it). Points
    /// this process's KRB5_CONFIG at the realm's krb5.conf.
    static func shared() throws -> KerberosRealm {
        // Without libgssapi_krb5 (or with SQLCLIENT_GSSAPI_LIBRARY pointing elsewhere) the live tests skip.
        do {
            try GSSBackend.checkAvailable()
        } catch {
            throw XCTSkip("no GSSAPI library, the Kerberos live tests skip: \(error.message)")
        }
        lock.lock()
        defer { lock.unlock() }
        if started == nil {
            started = Result { try start() }
        }
        let realm = try started!.get()
        setenv("KRB5_CONFIG", realm.krb5Config, 1)
        return realm
    }

    /// Stops the shared KDC (class tearDown) and forgets it.
    static func stopShared() {
        lock.lock()
        defer { lock.unlock() }
        if case .success(let realm)? = started {
            _ = try? run(["stop", realm.directory.path])
            try? FileManager.default.removeItem(at: realm.directory)
        }
        started = nil
        unsetenv("KRB5_CONFIG")
    }

    private static func start() throws -> KerberosRealm {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sqlclient-kdc-\(getpid())-\(UUID().uuidString.prefix(8))")
        let (status, output) = try run(["start", dir.path])
        guard status == 0, let line = output.split(separator: "\n").first(where: { $0.hasPrefix("kdc ") }),
              let port = Int(line.split(separator: " ")[1]) else {
            throw XCTSkip("no MIT Kerberos KDC (scripts/kdc.sh install: krb5-kdc, krb5-admin-server, krb5-user): \(output)")
        }
        return KerberosRealm(directory: dir, kdcPort: port)
    }

    /// Runs scripts/kdc.sh with `arguments`: exit status and stdout+stderr.
    @discardableResult
    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [script] + arguments
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        process.environment = env
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        let done = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in done.signal() }
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        let status = try process.waitForExit(done, timeout: 60)
        return (status, String(decoding: data, as: UTF8.self))
    }

    /// Adds service principal `spn` (no realm) to the service keytab.
    func addService(_ spn: String) throws {
        let (status, output) = try Self.run(["service", directory.path, spn])
        guard status == 0 else { throw XCTSkip("kdc.sh service \(spn) failed: \(output)") }
    }

    /// A fresh credential cache (`FILE:` name) with a ticket for `principal` from the client keytab.
    func kinit(_ principal: String = "alice", lifetime: String? = nil) throws -> String {
        let cache = "FILE:" + directory.appendingPathComponent("cc-\(principal)-\(UUID().uuidString.prefix(8))").path
        let (status, output) = try Self.run(["kinit", directory.path, cache, principal] + (lifetime.map { [$0] } ?? []))
        guard status == 0 else { throw XCTSkip("kinit failed: \(output)") }
        return cache
    }

    /// Whether `cache` still holds a valid ticket (klist -s).
    func hasValidTicket(_ cache: String) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["klist", "-s", "-c", cache]
        var env = ProcessInfo.processInfo.environment
        env["KRB5_CONFIG"] = krb5Config
        process.environment = env
        let done = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in done.signal() }
        guard (try? process.run()) != nil else { return false }
        return (try? process.waitForExit(done, timeout: 10)) == 0
    }

    /// A copy of krb5.conf whose KDC is 127.0.0.1:`port`.
    func config(kdcPort port: Int) throws -> String {
        let text = try String(contentsOfFile: krb5Config, encoding: .utf8)
        let path = directory.appendingPathComponent("kdc-\(port)-krb5.conf").path
        try text.replacingOccurrences(of: "127.0.0.1:\(kdcPort)", with: "127.0.0.1:\(port)")
            .write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// A copy of krb5.conf whose KDC is a port nothing listens on (bound, then closed at once).
    func unreachableConfig() throws -> String {
        let (fd, port) = Self.loopbackSocket(listening: false)
        if fd >= 0 { close(fd) }
        return try config(kdcPort: port)
    }

    /// A TCP socket bound to an ephemeral loopback port, listening (connections complete in the
    /// backlog and are never accepted: a KDC that never answers) or not; the caller closes it.
    static func loopbackSocket(listening: Bool) -> (Int32, Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM_VALUE), 0)
        guard fd >= 0 else { return (-1, 1) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        if listening { _ = listen(fd, 8) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// The GSSAPI acceptor server (scripts/pysqlbridge_kerberos.py serve) with `keytab` (default: the
    /// service keytab), and its port.
    /// `separateFinalToken`: the AP-REP in a message of its own before the login response (else in
    /// the login response's message, before LOGINACK, as SQL Server sends it).
    func startServer(keytab: String? = nil, separateFinalToken: Bool = false) throws -> (KerberosServer, Int) {
        let server = try KerberosServer(realm: self, keytab: keytab ?? serviceKeytab, separateFinalToken: separateFinalToken)
        guard let line = server.readLine(), line.hasPrefix("listening "), let port = Int(line.dropFirst(10)) else {
            server.stop()
            throw XCTSkip("the Kerberos test server did not start (python-gssapi: Debian python3-gssapi; .venv: scripts/pysqlbridge.sh install)")
        }
        return (server, port)
    }
}

#if canImport(Glibc)
private let SOCK_STREAM_VALUE = SOCK_STREAM.rawValue
#else
private let SOCK_STREAM_VALUE = SOCK_STREAM
#endif

/// A running scripts/pysqlbridge_kerberos.py, killed by `stop()`.
final class KerberosServer: @unchecked Sendable {
    static let script = LiveServer.packageRoot.appendingPathComponent("scripts/pysqlbridge_kerberos.py").path
    let process = Process()
    private let output = Pipe()
    private let exited = DispatchSemaphore(value: 0)
    private var buffer: [UInt8] = []

    init(realm: KerberosRealm, keytab: String, separateFinalToken: Bool) throws {
        let python = LiveServer.packageRoot.appendingPathComponent(".venv/bin/python")
        guard FileManager.default.isExecutableFile(atPath: python.path) else {
            throw XCTSkip("the project's venv is missing (scripts/pysqlbridge.sh install)")
        }
        process.executableURL = python
        let config = LiveServer.packageRoot.appendingPathComponent("Fixtures/demo/config.json").path
        process.arguments = [Self.script, "serve", config]
        var env = ProcessInfo.processInfo.environment
        env["KRB5_CONFIG"] = realm.krb5Config
        env["KRB5_KTNAME"] = "FILE:" + keytab
        env["KERBEROS_FINAL_TOKEN"] = separateFinalToken ? "separate" : "with-loginack"
        process.environment = env
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        let log = realm.directory.appendingPathComponent("server-\(UUID().uuidString.prefix(8)).log").path
        FileManager.default.createFile(atPath: log, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: log) ?? FileHandle.nullDevice
        process.terminationHandler = { [exited] _ in exited.signal() }
        try process.run()
    }

    /// The next line the server prints (nil at its end).
    func readLine() -> String? {
        while true {
            if let nl = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[..<nl], as: UTF8.self)
                buffer.removeSubrange(...nl)
                return line
            }
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { return nil }
            buffer += data
        }
    }

    func stop() {
        // SIGKILL: a child spawned from a Dispatch thread inherits its blocked signals.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        exited.wait()
    }
}
