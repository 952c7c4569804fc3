#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import XCTest
@testable import SQLClient

/// Load against the live test server (pysqlbridge, see LiveServer): 1,000 sequential queries on
/// one connection, and 32 connections at once, each running queries. Resident memory (VmRSS)
/// and open file descriptors are measured before and after; the test fails if descriptors leak
/// or memory grows beyond a bound. Figures of a run are recorded in LOAD.md beside this file;
/// every run prints them (search the log for "LOAD:").
final class LoadTests: XCTestCase {
    /// Memory growth allowed over a whole load test (the first connection's TLS and Foundation
    /// caches are warmed up before the "before" figure).
    /// Under the address or thread sanitizer, freed memory is held in quarantine or shadowed,
    /// so resident memory is not a measure of leaks there: the bound is 512 MiB.
    static let allowedGrowth = underSanitizer ? 512 << 20 : 48 << 20

    static let underSanitizer: Bool = {
        #if canImport(Glibc)
        let handle = dlopen(nil, RTLD_NOW)
        defer { if let handle { dlclose(handle) } }
        return dlsym(handle, "__asan_init") != nil || dlsym(handle, "__tsan_init") != nil
        #else
        return false
        #endif
    }()

    func measure(_ label: String, warmUp: () async throws -> Void, _ body: () async throws -> Void) async throws {
        try await warmUp()
        // Let the warm-up connection's socket close (Dispatch cancels its sources asynchronously).
        let settled = await ProcessResources.settleDescriptors(to: 0, seconds: 0.3)
        let fdBefore = try XCTUnwrap(settled)
        let rssBefore = try XCTUnwrap(ProcessResources.status("VmRSS"))
        let started = ContinuousClock.now
        try await body()
        let elapsed = ContinuousClock.now - started
        let fdAfter = await ProcessResources.settleDescriptors(to: fdBefore) ?? -1
        let rssAfter = try XCTUnwrap(ProcessResources.status("VmRSS"))
        let hwm = ProcessResources.status("VmHWM") ?? -1
        print("LOAD: \(label)\(Self.underSanitizer ? " (sanitizer)" : ""): \(elapsed); fds \(fdBefore) -> \(fdAfter); VmRSS \(rssBefore >> 10) KiB -> \(rssAfter >> 10) KiB (peak \(hwm >> 10) KiB)")
        XCTAssertLessThanOrEqual(fdAfter, fdBefore, "\(label): file descriptors leaked")
        XCTAssertLessThan(rssAfter - rssBefore, Self.allowedGrowth, "\(label): resident memory grew by \(rssAfter - rssBefore) bytes")
    }

    func testThousandSequentialQueriesOnOneConnection() async throws {
        try LiveServer.require()
        try await measure("1000 sequential queries on one connection", warmUp: {
            let c = try await SQLConnection.connect(LiveServer.configuration())
            _ = try await c.execute("SELECT 1 AS n")
            await c.close()
        }) {
            let connection = try await SQLConnection.connect(LiveServer.configuration())
            for i in 0 ..< 1000 {
                let sets = try await connection.execute("SELECT \(unsafeRaw: String(i)) AS n, N'row \(unsafeRaw: String(i))' AS s")
                XCTAssertEqual(sets.resultSets.first?.rows.first?[0], .int(Int32(i)), "query \(i)")
                XCTAssertEqual(sets.resultSets.first?.rows.first?[1], .string("row \(i)"), "query \(i)")
                if sets.resultSets.first?.rows.first?[0] != .int(Int32(i)) { break }
            }
            await connection.close()
        }
    }

    func testThirtyTwoConcurrentConnections() async throws {
        try LiveServer.require()
        try await measure("32 concurrent connections x 20 queries", warmUp: {
            let c = try await SQLConnection.connect(LiveServer.configuration())
            _ = try await c.execute("SELECT 1 AS n")
            await c.close()
        }) {
            let results = try await withThrowingTaskGroup(of: Int.self) { group in
                for worker in 0 ..< 32 {
                    group.addTask {
                        let connection = try await SQLConnection.connect(LiveServer.configuration())
                        var good = 0
                        for q in 0 ..< 20 {
                            let value = worker * 1000 + q
                            let sets = try await connection.execute("SELECT \(unsafeRaw: String(value)) AS n")
                            if sets.resultSets.first?.rows.first?[0] == .int(Int32(value)) { good += 1 }
                        }
                        await connection.close()
                        return good
                    }
                }
                var all: [Int] = []
                for try await n in group { all.append(n) }
                return all
            }
            XCTAssertEqual(results.count, 32)
            XCTAssertEqual(results.reduce(0, +), 32 * 20, "every query of every connection returned its own value")
        }
    }
}
