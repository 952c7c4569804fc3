import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient
import TDS

/// Issue 44: the pool never lends a connection that died while it sat idle. Connections go
/// through ``FaultInjectingProxy``, which resets (RST) or closes (FIN) them while the pool holds
/// them idle; the check at lease must find every one, discard it (counted, logged) and lend
/// another, so that no request fails because of a drop. Against pysqlbridge (TLS on, as a
/// user's server) and against the replay server (plaintext; needs no live server).
final class SQLConnectionPoolIdleDropTests: XCTestCase {
    /// Waits (polling, bounded) for a condition that I/O on other threads makes true.
    func eventually(_ what: String, _ condition: () -> Bool) async throws {
        for _ in 0 ..< 5_000 {
            if condition() { return }
            try await Task.sleep(for: .milliseconds(2))
        }
        XCTFail("never: \(what)")
        throw SQLClientError(.timeout, "never: \(what)")
    }

    /// Once the proxy dropped connections: waits until this process's sockets to the proxy
    /// show it (a RST or a FIN takes them out of ESTABLISHED; Linux's table of TCP sockets),
    /// so that the check at lease cannot race the loopback's delivery.
    func waitUntilClientsSee(_ proxy: FaultInjectingProxy, established: Int) async throws {
        guard SQLConnectionPoolLiveTests.establishedConnections(toPort: Int(proxy.port)) != nil else { return }
        try await eventually("\(established) connections to the proxy still established") {
            SQLConnectionPoolLiveTests.establishedConnections(toPort: Int(proxy.port)) == established
        }
    }

    struct Outcome {
        var requests = 0
        var failures: [String] = []
        var drops = 0
        var metrics: SQLConnectionPool.Metrics?
        var discardLogs: [SQLLogEvent] = []
    }

    /// `rounds` rounds through a pool of `size`: in each, `size` leases held at once (so every
    /// idle connection is lent, and checked) each run `queries` requests; then, with no lease
    /// out, the proxy drops 1…`size` idle connections, resets and closes in turn.
    func runIdleDrops(_ configuration: SQLConnectionConfiguration, upstreamPort: Int, size: Int, rounds: Int,
                      queries: Int, query: @escaping @Sendable (Int) -> (SQLQuery, SQLValue)) async throws -> Outcome {
        let proxy = try FaultInjectingProxy(upstreamPort: upstreamPort)
        try proxy.start()
        defer { proxy.stop() }
        var configuration = configuration
        configuration.address = SQLServerAddress(host: "127.0.0.1", port: Int(proxy.port))
        let log = EventLog()
        configuration.logger = SQLClientLogger(minimumLevel: .debug) { log.append($0) }
        var options = SQLConnectionPool.Options(maximumConnections: size)
        options.leaseTimeout = .seconds(30)
        let pool = try SQLConnectionPool(configuration: configuration, options: options)
        var outcome = Outcome()
        for round in 0 ..< rounds {
            let holding = Gate()
            let tasks = (0 ..< size).map { t in
                Task { () -> [String] in
                    do {
                        return try await pool.withConnection { connection -> [String] in
                            var failures: [String] = []
                            for q in 0 ..< queries {
                                let (sql, expected) = query(round * 10_000 + t * 100 + q)
                                do {
                                    let value = try await connection.execute(sql).resultSets.first?.rows.first?[0]
                                    if value != expected { failures.append("round \(round): \(String(describing: value)) for \(expected)") }
                                } catch {
                                    failures.append("round \(round) request: \(error)")
                                }
                            }
                            await holding.wait()
                            return failures
                        }
                    } catch {
                        return ["round \(round) lease: \(error)"]
                    }
                }
            }
            try await eventually("round \(round): \(size) leased at once") { pool.metrics.leased == size }
            await holding.open()
            for task in tasks { outcome.failures += await task.value }
            outcome.requests += size * queries
            try await eventually("round \(round): all back, none opening or closing") {
                let m = pool.metrics
                return m.leased == 0 && m.opening == 0 && m.closing == 0 && m.idle == size
            }
            try await waitUntilClientsSee(proxy, established: size)
            guard round < rounds - 1 else { break }
            // At rest: drop some of the idle connections.
            let idle = proxy.idleConnections
            XCTAssertEqual(idle.count, size, "round \(round): every connection at rest in the proxy")
            let fault: FaultInjectingProxy.Fault = round % 2 == 0 ? .reset : .close
            let victims = Array(idle.shuffled().prefix(1 + round % size))
            outcome.drops += proxy.inject(fault, into: victims)
            try await waitUntilClientsSee(proxy, established: size - victims.count)
        }
        outcome.metrics = pool.metrics
        await pool.close()
        outcome.discardLogs = log.events.filter { $0.metadata[SQLLogEvent.Key.poolEvent] == "discardedAtLease" }
        XCTAssertEqual(proxy.injected.values.reduce(0, +), outcome.drops)
        return outcome
    }

    func check(_ outcome: Outcome, size: Int, rounds: Int, queries: Int, file: StaticString = #filePath, line: UInt = #line) {
        let metrics = outcome.metrics
        print("POOL idle drops: \(outcome.drops) drops over \(rounds) rounds, \(outcome.requests) requests, "
              + "\(outcome.failures.count) failed; \(metrics.map { "\($0)" } ?? "-")")
        XCTAssertEqual(outcome.failures, [], "no request failed because of a drop", file: file, line: line)
        XCTAssertEqual(outcome.requests, size * queries * rounds, file: file, line: line)
        XCTAssertGreaterThanOrEqual(outcome.drops, rounds - 1, file: file, line: line)
        XCTAssertEqual(metrics?.discardedAtLease, outcome.drops, "every drop discarded at lease", file: file, line: line)
        XCTAssertEqual(metrics?.discarded, outcome.drops, "nothing else discarded", file: file, line: line)
        XCTAssertEqual(metrics?.created, size + outcome.drops, "each drop replaced once", file: file, line: line)
        XCTAssertEqual(metrics?.leaseTimeouts, 0, file: file, line: line)
        XCTAssertEqual(outcome.discardLogs.count, outcome.drops, "each discard logged", file: file, line: line)
        for event in outcome.discardLogs {
            XCTAssertEqual(event.level, .warning, file: file, line: line)
            XCTAssertTrue(event.message.contains("discarded at lease"), event.message, file: file, line: line)
            XCTAssertTrue(event.message.contains("while idle"), event.message, file: file, line: line)
            XCTAssertEqual(event.metadata[SQLLogEvent.Key.poolReason], "droppedWhileIdle", file: file, line: line)
        }
    }

    // MARK: - Against pysqlbridge (TLS)

    func testIdleDropsAgainstTheLiveServerFailNoRequest() async throws {
        try LiveServer.requirePysqlbridge("the proxy relays to a loopback server")
        let (size, rounds, queries) = (4, 12, 3)
        let outcome = try await runIdleDrops(LiveServer.configuration(), upstreamPort: LiveServer.port, size: size,
                                             rounds: rounds, queries: queries) { n in
            ("SELECT \(Int32(n)) AS n", .int(Int32(n)))
        }
        check(outcome, size: size, rounds: rounds, queries: queries)
    }

    func testHealthyConnectionIsLentAgainAsItIsThroughTheProxy() async throws {
        try LiveServer.requirePysqlbridge("the proxy relays to a loopback server")
        let proxy = try FaultInjectingProxy(upstreamPort: LiveServer.port)
        try proxy.start()
        defer { proxy.stop() }
        var configuration = LiveServer.configuration()
        configuration.address = SQLServerAddress(host: "127.0.0.1", port: Int(proxy.port))
        let pool = try SQLConnectionPool(configuration: configuration, maximumConnections: 1)
        var seen = Set<ObjectIdentifier>()
        for i in 0 ..< 20 {
            let value = try await pool.withConnection { connection -> SQLValue? in
                seen.insert(ObjectIdentifier(connection))
                return try await connection.execute("SELECT \(Int32(i)) AS n").resultSets.first?.rows.first?[0]
            }
            XCTAssertEqual(value, .int(Int32(i)))
        }
        let metrics = pool.metrics
        await pool.close()
        XCTAssertEqual(seen.count, 1, "the same connection served all twenty leases")
        XCTAssertEqual(metrics.created, 1)
        XCTAssertEqual(metrics.leases, 20)
        XCTAssertEqual(metrics.discarded, 0)
        XCTAssertEqual(metrics.discardedAtLease, 0)
        XCTAssertEqual(proxy.acceptedConnections, 1, "one TCP connection")
    }

    // MARK: - Against the replay server (plaintext)

    static func replaySession() throws -> ReplaySession {
        ReplaySession(name: "idle drops", exchanges: [RPCTokens.batch("SELECT 1", try SQLConnectionPoolTests.selectAnswer(1))])
    }

    static func replayConfiguration(port: Int, password: String = "p") -> SQLConnectionConfiguration {
        SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: port), user: "u", password: password,
                                   encryption: .notSupported, connectTimeout: .seconds(20))
    }

    func testIdleDropsAgainstTheReplayServerFailNoRequest() async throws {
        let server = ReplayServer(session: try Self.replaySession())
        let port = try server.start()
        defer { server.stop() }
        let (size, rounds, queries) = (3, 10, 2)
        let outcome = try await runIdleDrops(Self.replayConfiguration(port: Int(port)), upstreamPort: Int(port), size: size,
                                             rounds: rounds, queries: queries) { _ in ("SELECT 1", .int(1)) }
        check(outcome, size: size, rounds: rounds, queries: queries)
    }

    /// A lone connection keeps today's rule: no silent reconnect; its `.connectionLost` error
    /// says how to go on, and holds no secret.
    func testALoneConnectionDroppedWhileIdleFailsWithConnectionLostSayingHowToReconnect() async throws {
        let server = ReplayServer(session: try Self.replaySession())
        let port = try server.start()
        defer { server.stop() }
        for fault in FaultInjectingProxy.Fault.allCases {
            let proxy = try FaultInjectingProxy(upstreamPort: Int(port))
            try proxy.start()
            defer { proxy.stop() }
            let secret = "Sup3r-secret-Pw"
            let connection = try await SQLConnection.connect(Self.replayConfiguration(port: Int(proxy.port), password: secret))
            let first = try await connection.execute("SELECT 1").resultSets.first?.rows.first?[0]
            XCTAssertEqual(first, .int(1))
            XCTAssertEqual(proxy.inject(fault, into: proxy.idleConnections), 1)
            try await waitUntilClientsSee(proxy, established: 0)
            do {
                _ = try await connection.execute("SELECT 1")
                XCTFail("\(fault): a dropped connection does not reconnect by itself")
            } catch let error as SQLClientError {
                XCTAssertEqual(error.code, .connectionLost, "\(fault): \(error)")
                XCTAssertTrue(error.message.contains("open a new one (SQLConnection.connect)"), error.message)
                XCTAssertTrue(error.message.contains("SQLConnectionPool"), error.message)
                XCTAssertTrue(error.message.contains(fault == .reset ? "RST" : "FIN"), error.message)
                XCTAssertFalse("\(error) \(error.message) \(error.errorDescription ?? "")".contains(secret))
            }
            let stillOpen = await connection.isOpen
            XCTAssertFalse(stillOpen, "\(fault)")
            XCTAssertEqual(proxy.acceptedConnections, 1, "\(fault): no new connection was opened")
        }
    }

    /// A whole TDS message sent unasked to an idle plaintext connection (a server sends nothing
    /// unasked; on a plaintext session anyone on the path can inject one) is not taken as the next
    /// request's answer: the pool discards that connection at lease and the request gets its own.
    func testAnAnswerInjectedIntoAnIdlePlaintextConnectionIsNeverReadAsTheNextOne() async throws {
        let server = ReplayServer(session: try Self.replaySession())
        let port = try server.start()
        defer { server.stop() }
        let proxy = try FaultInjectingProxy(upstreamPort: Int(port))
        try proxy.start()
        defer { proxy.stop() }
        let pool = try SQLConnectionPool(configuration: Self.replayConfiguration(port: Int(proxy.port)), maximumConnections: 1)
        let select = { () async throws -> SQLValue? in
            try await pool.withConnection { try await $0.execute("SELECT 1").resultSets.first?.rows.first?[0] }
        }
        let first = try await select()
        XCTAssertEqual(first, .int(1))
        // A complete tabular response saying 2, in one packet (type 4, EOM).
        let payload = try SQLConnectionPoolTests.selectAnswer(2).flatMap { $0 }
        let length = 8 + payload.count
        let packet: [UInt8] = [0x04, 0x01, UInt8(length >> 8), UInt8(length & 0xFF), 0, 0, 1, 0] + payload
        let number = try XCTUnwrap(proxy.idleConnections.first)
        XCTAssertTrue(proxy.send(packet, toClientOf: number))
        if Self.unreadBytes(toPort: Int(proxy.port)) != nil {
            try await eventually("the injected message arrived") { Self.unreadBytes(toPort: Int(proxy.port)) == packet.count }
        }
        let second = try await select()
        XCTAssertEqual(second, .int(1), "the request read its own answer, not the injected one")
        let metrics = pool.metrics
        await pool.close()
        XCTAssertEqual(metrics.discardedAtLease, 1, "the connection with foreign bytes was discarded at lease")
        XCTAssertEqual(metrics.created, 2)
        XCTAssertEqual(proxy.acceptedConnections, 2)
    }

    /// Bytes a server sends to an idle connection unasked do not make it dead (the check only
    /// peeks); a RST or a FIN behind them does. On a plaintext session they are foreign.
    func testIdleCheckSeesUnreadBytesAsOpenAndADropBehindThemAsDead() async throws {
        let server = ReplayServer(session: try Self.replaySession())
        let port = try server.start()
        defer { server.stop() }
        let proxy = try FaultInjectingProxy(upstreamPort: Int(port))
        try proxy.start()
        defer { proxy.stop() }
        for fault in FaultInjectingProxy.Fault.allCases {
            let socket = try await SocketStream.connect(host: "127.0.0.1", port: Int(proxy.port))
            defer { socket.close() }
            try await eventually("the proxy relays") { proxy.openConnections.count == 1 }
            let number = try XCTUnwrap(proxy.openConnections.first)
            XCTAssertEqual(socket.idleStatus(), .open)
            XCTAssertTrue(proxy.send([0x04, 0x01, 0x00, 0x08, 0x00, 0x00, 0x01, 0x00], toClientOf: number))
            if Self.unreadBytes(toPort: Int(proxy.port)) != nil {
                try await eventually("the bytes arrived") { Self.unreadBytes(toPort: Int(proxy.port)) == 8 }
            }
            XCTAssertEqual(socket.idleStatus(), .open, "unread bytes: not dead")
            XCTAssertEqual(socket.idleStatus(), .open, "and still there: the check consumed nothing")
            XCTAssertEqual(socket.idleStatus(unreadBytesAreForeign: true), .unsolicitedBytes, "foreign on a plaintext session")
            XCTAssertTrue(proxy.inject(fault, into: number))
            try await waitUntilClientsSee(proxy, established: 0)
            let status = socket.idleStatus()
            #if os(Linux)
            XCTAssertEqual(status, fault == .reset ? .reset("RST") : .closedByPeer, "\(fault)")
            #else
            if fault == .reset { XCTAssertEqual(status, .reset("RST")) }
            #endif
            // The bytes are still there for the next read.
            let bytes = try await socket.read(maxLength: 64)
            XCTAssertEqual(bytes, [0x04, 0x01, 0x00, 0x08, 0x00, 0x00, 0x01, 0x00], "\(fault)")
            try await eventually("the proxy forgot it") { proxy.openConnections.isEmpty }
        }
    }

    /// Bytes received and not yet read on this machine's established IPv4 sockets whose remote
    /// port is `port` (the rx_queue of Linux's `/proc/net/tcp`); nil off Linux.
    static func unreadBytes(toPort port: Int) -> Int? {
        #if os(Linux)
        guard let handle = FileHandle(forReadingAtPath: "/proc/net/tcp") else { return nil }
        let text = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        handle.closeFile()
        var total = 0
        for line in text.split(separator: "\n").dropFirst() {
            // sl local_address rem_address st tx_queue:rx_queue …
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 4, fields[3] == "01", let remote = fields[2].split(separator: ":").last,
                  Int(remote, radix: 16) == port, let rx = fields[4].split(separator: ":").last else { continue }
            total += Int(rx, radix: 16) ?? 0
        }
        return total
        #else
        return nil
        #endif
    }

    func testTheProxyRelaysToLoopbackOnly() {
        for host in ["10.0.0.1", "169.254.169.254", "db.example.com", "127.0.0", "0.0.0.0"] {
            XCTAssertThrowsError(try FaultInjectingProxy(upstreamHost: host, upstreamPort: 1433), host)
        }
        for host in ["127.0.0.1", "127.1.2.3", "localhost", "::1"] {
            XCTAssertNoThrow(try FaultInjectingProxy(upstreamHost: host, upstreamPort: 1433), host)
        }
    }
}
