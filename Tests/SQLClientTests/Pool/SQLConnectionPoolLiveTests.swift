import Foundation
import XCTest
@testable import SQLClient
import TDS

/// The pool under load against the live test server (pysqlbridge, see LiveServer): 64 tasks × 50
/// parameterized queries through a pool of 8. The connections the server sees are counted from
/// the kernel's table of TCP sockets (`/proc/net/tcp`, established sockets whose remote port is
/// the server's), sampled while the load runs; descriptors and resident memory are read before
/// and after (figures printed on lines starting with `LOAD:`, recorded in Load/LOAD.md).
final class SQLConnectionPoolLiveTests: XCTestCase {
    func testSixtyFourTasksThroughAPoolOfEight() async throws {
        try LiveServer.require()
        let warm = try await SQLConnection.connect(LiveServer.configuration())
        _ = try await warm.execute("SELECT \(Int32(1)) AS n")
        await warm.close()
        let settled = await ProcessResources.settleDescriptors(to: 0, seconds: 0.3)
        let fdBefore = try XCTUnwrap(settled)
        let rssBefore = try XCTUnwrap(ProcessResources.status("VmRSS"))
        // The kernel's table counts every client of the server's port: only pysqlbridge's port is ours alone.
        let serverPort = LiveServer.isPysqlbridge ? LiveServer.port : nil
        if let serverPort { XCTAssertEqual(Self.establishedConnections(toPort: serverPort), 0, "no connection before") }

        let sampler = serverPort.map { ConnectionSampler(port: $0) }
        let started = ContinuousClock.now
        let (good, metrics) = try await Self.round(tasks: 64, queries: 50)
        let elapsed = ContinuousClock.now - started
        let mostSeen = sampler?.stop()
        let fdAfter = await ProcessResources.settleDescriptors(to: fdBefore) ?? -1
        let rssAfter = try XCTUnwrap(ProcessResources.status("VmRSS"))
        print("LOAD: 64 tasks x 50 queries through a pool of 8: \(elapsed); server saw at most \(mostSeen.map(String.init) ?? "?") "
              + "connections; fds \(fdBefore) -> \(fdAfter); VmRSS \(rssBefore >> 10) KiB -> \(rssAfter >> 10) KiB; pool \(metrics)")
        XCTAssertEqual(good, 3_200, "every query returned its own value")
        if let mostSeen {
            XCTAssertLessThanOrEqual(mostSeen, 8, "the server never saw more than 8 connections")
            XCTAssertGreaterThan(mostSeen, 0, "the sampler saw the connections")
        }
        XCTAssertLessThanOrEqual(metrics.created, 8)
        XCTAssertEqual(metrics.discarded, 0)
        XCTAssertEqual(metrics.leases, 3_200)
        XCTAssertLessThanOrEqual(fdAfter, fdBefore, "file descriptors leaked")
        XCTAssertLessThan(rssAfter - rssBefore, LoadTests.allowedGrowth, "resident memory grew by \(rssAfter - rssBefore) bytes")

        // A second, shorter round through a new pool: descriptors and memory stay where the first left them.
        let (again, _) = try await Self.round(tasks: 64, queries: 10)
        let fdFinal = await ProcessResources.settleDescriptors(to: fdBefore) ?? -1
        let rssFinal = try XCTUnwrap(ProcessResources.status("VmRSS"))
        print("LOAD: then 64 tasks x 10 queries through a new pool of 8: fds \(fdAfter) -> \(fdFinal); "
              + "VmRSS \(rssAfter >> 10) KiB -> \(rssFinal >> 10) KiB")
        XCTAssertEqual(again, 640)
        XCTAssertLessThanOrEqual(fdFinal, fdBefore, "file descriptors leaked")
        XCTAssertLessThan(rssFinal - rssAfter, LoadTests.allowedGrowth / 3, "resident memory grew by \(rssFinal - rssAfter) bytes")
        if let serverPort { XCTAssertEqual(Self.establishedConnections(toPort: serverPort), 0, "every connection closed") }
    }

    /// `tasks` tasks each running `queries` parameterized queries through a new pool of 8, which
    /// is closed after; the queries that returned their own value, and the pool's last metrics.
    static func round(tasks: Int, queries: Int) async throws -> (Int, SQLConnectionPool.Metrics) {
        let pool = try SQLConnectionPool(configuration: LiveServer.configuration(), maximumConnections: 8)
        let good = try await withThrowingTaskGroup(of: Int.self) { group in
            for task in 0 ..< tasks {
                group.addTask {
                    var good = 0
                    for q in 0 ..< queries {
                        let value = Int32(task * 1000 + q)
                        let result = try await pool.execute("SELECT \(value) AS n")
                        if result.resultSets.first?.rows.first?["n"] == .int(value) { good += 1 }
                    }
                    return good
                }
            }
            var total = 0
            for try await n in group { total += n }
            return total
        }
        let metrics = pool.metrics
        await pool.close()
        return (good, metrics)
    }

    /// Established TCP sockets (IPv4 and IPv6) whose remote port is `port`: the client ends of
    /// connections to a server on that port, as the kernel lists them. nil off Linux.
    static func establishedConnections(toPort port: Int) -> Int? {
        #if os(Linux)
        var count = 0
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            // Read to the end: procfs reports a size of 0, and a read of one page would cut the table.
            guard let handle = FileHandle(forReadingAtPath: table) else { continue }
            let text = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
            handle.closeFile()
            for line in text.split(separator: "\n").dropFirst() {
                // sl local_address rem_address st …; addresses are HEX_IP:HEX_PORT, st 01 = ESTABLISHED.
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count > 3, fields[3] == "01", let remote = fields[2].split(separator: ":").last,
                      Int(remote, radix: 16) == port else { continue }
                count += 1
            }
        }
        return count
        #else
        return nil
        #endif
    }
}

/// Samples ``SQLConnectionPoolLiveTests/establishedConnections(toPort:)`` every 5 ms on a thread
/// of its own until ``stop()``, which returns the most seen.
final class ConnectionSampler: @unchecked Sendable {
    private let lock = NSLock()
    private var running = true
    private var most = 0
    private let done = DispatchSemaphore(value: 0)

    init(port: Int) {
        Thread { [self] in
            while lock.withLock({ running }) {
                let now = SQLConnectionPoolLiveTests.establishedConnections(toPort: port) ?? 0
                lock.withLock { most = max(most, now) }
                usleep(5_000)
            }
            done.signal()
        }.start()
    }

    func stop() -> Int {
        lock.withLock { running = false }
        done.wait()
        return lock.withLock { most }
    }
}
