import Foundation
import SQLClient
import TDS

/// `sqlclient-bench decode`: the in-memory decode of a workload's token stream, fed to
/// ``TokenStreamDecoder`` one packet payload at a time, each value read back as its Swift value.
enum DecodeCommand {
    enum API: String { case tokens, reuse }

    static func run(_ w: Workload, packetSize: Int, api: API) throws -> Sample {
        let stream = w.encodeStream()
        let payload = max(packetSize - 8, 1)
        var decoder = TokenStreamDecoder(version: .v7_4)
        var checksum: UInt64 = 0
        var rows = 0
        Measure.resetPeakRSS()
        let a0 = Measure.allocations()
        let t0 = Measure.now()
        var i = 0
        while i < stream.count {
            let end = min(i + payload, stream.count)
            decoder.append(contentsOf: stream[i ..< end])
            i = end
            switch api {
            case .tokens:
                while let token = try decoder.next() {
                    switch token {
                    case .row(let r):
                        rows += 1
                        for v in r.values { checksum = checksum &* Digest.mix &+ Digest.of(v) }
                    case .nbcRow(let r):
                        rows += 1
                        for v in r.values { checksum = checksum &* Digest.mix &+ Digest.of(v) }
                    default: break
                    }
                }
            case .reuse:
                // Rows into WireRowBlocks (the one row path), every value read; other tokens by next().
                reading: while true {
                    if var block = decoder.makeWireRowBlock() {
                        let (n, end) = decoder.appendBufferedRows(to: &block, limit: 4096, byteLimit: 1 << 20)
                        rows += n
                        for r in 0 ..< block.rowCount {
                            for c in 0 ..< block.columnCount {
                                checksum = checksum &* Digest.mix &+ Digest.of(block.value(row: r, column: c))
                            }
                        }
                        if end == .limit { continue reading }
                        if end == .needBytes { break reading }
                    }
                    guard let token = try decoder.next() else { break reading }
                    switch token {
                    case .row(let r):
                        rows += 1
                        for v in r.values { checksum = checksum &* Digest.mix &+ Digest.of(v) }
                    case .nbcRow(let r):
                        rows += 1
                        for v in r.values { checksum = checksum &* Digest.mix &+ Digest.of(v) }
                    default: break
                    }
                }
            }
        }
        try decoder.finish()
        let seconds = Measure.now() - t0
        let a1 = Measure.allocations()
        let allocations = a0.flatMap { a in a1.map { Int($0 &- a) } }
        return Sample(rows: rows, bytes: stream.count, seconds: seconds, checksum: hex(checksum),
                      allocations: allocations, peakRSS: Measure.peakRSS, packetSize: packetSize)
    }
}

/// `sqlclient-bench client`: end to end over loopback, one of SQLClient's read paths streaming
/// the rows from the replay server, each value read back as its Swift value, from a nonisolated
/// task or from the main actor.
enum ClientCommand {
    /// The read path: `rowBlocks` (rows in flat blocks), `query` (one `SQLRow` per row, every
    /// value read), `decodable` (`query` + `row.decode(T.self)` into the workload's struct),
    /// `typed` (`query(_:).decode((A, B).self)`: each row as a tuple of the workload's Swift
    /// types, read straight from the row block), `execute` (the whole result buffered, then every
    /// value read), `chunked` (`streamingValues`: large values as chunks of bytes, never held
    /// whole; binary columns).
    enum API: String, CaseIterable { case blocks, rows, decodable, typed, execute, chunked }
    /// Where the reading loop runs: a nonisolated task (the generic executor) or the main actor
    /// (as top-level code and iOS apps call).
    enum Context: String, CaseIterable { case task, main }

    static func run(_ w: Workload, port: Int, packetSize: Int, api: API, context: Context,
                    verifyValues: Bool = false) async throws -> Sample {
        let configuration = SQLConnectionConfiguration(
            address: SQLServerAddress(host: "127.0.0.1", port: port), user: "bench", password: "bench",
            encryption: .notSupported, applicationName: "sqlclient-bench", packetSize: packetSize)
        let connection = try await SQLConnection.connect(configuration)
        let negotiated = await connection.session.packetSize
        let m: Measured
        let vectors = w.name == "vector" && [.rows, .blocks, .execute].contains(api)
        switch context {
        case .task where vectors: m = try await measureVectors(w, connection, api, verifyValues: verifyValues, isolation: nil)
        case .main where vectors: m = try await measureVectors(w, connection, api, verifyValues: verifyValues, isolation: MainActor.shared)
        case .task: m = try await measure(w, connection, api, verifyValues: verifyValues, isolation: nil)
        case .main: m = try await measure(w, connection, api, verifyValues: verifyValues, isolation: MainActor.shared)
        }
        await connection.close()
        var sample = Sample(rows: m.rows, bytes: 0, seconds: m.seconds, checksum: hex(m.checksum),
                            allocations: m.allocations, peakRSS: Measure.peakRSS, packetSize: negotiated)
        sample.rssGrowth = m.rssGrowth
        sample.cpuSeconds = m.cpuSeconds
        sample.pageFaults = m.pageFaults
        return sample
    }

    struct Measured: Sendable {
        var rows = 0
        var checksum: UInt64 = 0
        var seconds = 0.0
        var allocations: Int?
        /// Peak resident memory during the read over the resident memory just before it, bytes.
        var rssGrowth: Int?
        /// The process's CPU time over the read, seconds.
        var cpuSeconds = 0.0
        /// The process's minor page faults over the read.
        var pageFaults = 0
    }

    /// Reads the workload's result through `api`, running in `isolation` (nil: nonisolated).
    static func measure(_ w: Workload, _ connection: SQLConnection, _ api: API, verifyValues: Bool,
                        isolation: isolated (any Actor)?) async throws -> Measured {
        var m = Measured()
        // Off in a timed run: the driver runs each large-value path once with it first.
        var check = LargeValueCheck(w, on: verifyValues)
        Measure.resetPeakRSS()
        let rss0 = Measure.currentRSS
        let a0 = Measure.allocations()
        let t0 = Measure.now(), c0 = Measure.cpuNow(), f0 = Measure.faultsNow()
        switch api {
        case .rows:
            for try await row in connection.query(SQLQuery(unsafeSQL: w.sql)) {
                m.rows += 1
                for v in row { m.checksum = m.checksum &* Digest.mix &+ Digest.of(v); check.add(v) }
            }
        case .blocks:
            for try await block in connection.rowBlocks(SQLQuery(unsafeSQL: w.sql)) {
                m.rows += block.count
                for v in block.values { m.checksum = m.checksum &* Digest.mix &+ Digest.of(v); check.add(v) }
            }
        case .decodable:
            (m.rows, m.checksum) = try await decodeAll(w.rowType, w, connection, &check)
        case .typed:
            (m.rows, m.checksum) = try await TypedRows.readAll(w, connection, &check)
        case .chunked:
            // Each row's values folded as the other paths fold them, a large binary value's
            // digest (`Digest.bytes(_:stride: 997)`) computed over its chunks as they arrive.
            var large: (count: Int, sum: UInt64)?
            var hasher: ByteHasher?
            for try await part in connection.streamingValues(SQLQuery(unsafeSQL: w.sql)) {
                switch part {
                case .value(_, let v): m.checksum = m.checksum &* Digest.mix &+ Digest.of(v); check.add(v)
                case .chunk(_, let bytes):
                    var l = large ?? (0, 0)
                    var i = (997 - l.count % 997) % 997
                    while i < bytes.count { l.sum &+= UInt64(bytes[i]); i += 997 }
                    l.count += bytes.count
                    large = l
                    if check.isOn {
                        check.time {
                            var h = hasher ?? ByteHasher()
                            bytes.withUnsafeBytes { h.update($0) }
                            hasher = h
                        }
                    }
                case .valueEnd:
                    let l = large ?? (0, 0)
                    m.checksum = m.checksum &* Digest.mix &+ (UInt64(l.count) &+ l.sum)
                    large = nil
                    if check.isOn { check.add(chunks: hasher ?? ByteHasher()) }
                    hasher = nil
                case .rowEnd: m.rows += 1
                case .event: break
                }
            }
        case .execute:
            for set in try await connection.execute(SQLQuery(unsafeSQL: w.sql)).resultSets {
                for row in set.rows {
                    m.rows += 1
                    for v in row { m.checksum = m.checksum &* Digest.mix &+ Digest.of(v); check.add(v) }
                }
            }
        }
        // The byte-for-byte check's own time is not the read's.
        m.seconds = Measure.now() - t0 - check.seconds
        m.cpuSeconds = Measure.cpuNow() - c0
        m.pageFaults = Measure.faultsNow() - f0
        if let rss0, let peak = Measure.peakRSS { m.rssGrowth = peak - rss0 }
        let a1 = Measure.allocations()
        m.allocations = a0.flatMap { a in a1.map { Int($0 &- a) } }
        check.verify("\(w.name) \(api.rawValue)")
        return m
    }

    /// As ``measure(_:_:_:verifyValues:isolation:)`` for the vector workload through `query`,
    /// `rowBlocks` or `execute`: each vector's elements read into one buffer kept from row to row
    /// (`SQLVector.copyElements(into:)`), as an application binds one buffer for a column (the
    /// ODBC peers do), then summed as an array (``Digest/floats(_:)``): no array per value. A
    /// function of its own: the other workloads' loops compile exactly as they did (a change to
    /// `measure`'s body moved their instruction counts by up to 20 %).
    static func measureVectors(_ w: Workload, _ connection: SQLConnection, _ api: API, verifyValues: Bool,
                               isolation: isolated (any Actor)?) async throws -> Measured {
        var m = Measured()
        var check = LargeValueCheck(w, on: verifyValues)
        var scratch: [Float] = []
        func fold(_ v: SQLValue) -> UInt64 {
            guard case .vector(let x) = v else { return Digest.of(v) }
            x.copyElements(into: &scratch)
            return Digest.floats(scratch)
        }
        let query = SQLQuery(unsafeSQL: w.sql)
        Measure.resetPeakRSS()
        let rss0 = Measure.currentRSS
        let a0 = Measure.allocations()
        let t0 = Measure.now(), c0 = Measure.cpuNow(), f0 = Measure.faultsNow()
        switch api {
        case .blocks:
            for try await block in connection.rowBlocks(query) {
                m.rows += block.count
                for v in block.values { m.checksum = m.checksum &* Digest.mix &+ fold(v); check.add(v) }
            }
        case .execute:
            for set in try await connection.execute(query).resultSets {
                for row in set.rows {
                    m.rows += 1
                    for v in row { m.checksum = m.checksum &* Digest.mix &+ fold(v); check.add(v) }
                }
            }
        default:
            for try await row in connection.query(query) {
                m.rows += 1
                for v in row { m.checksum = m.checksum &* Digest.mix &+ fold(v); check.add(v) }
            }
        }
        m.seconds = Measure.now() - t0 - check.seconds
        m.cpuSeconds = Measure.cpuNow() - c0
        m.pageFaults = Measure.faultsNow() - f0
        if let rss0, let peak = Measure.peakRSS { m.rssGrowth = peak - rss0 }
        let a1 = Measure.allocations()
        m.allocations = a0.flatMap { a in a1.map { Int($0 &- a) } }
        check.verify("\(w.name) \(api.rawValue)")
        return m
    }

    static func decodeAll<T: BenchRow>(_ type: T.Type, _ w: Workload, _ connection: SQLConnection, _ check: inout LargeValueCheck,
                                       isolation: isolated (any Actor)? = #isolation) async throws -> (Int, UInt64) {
        var rows = 0
        var checksum: UInt64 = 0
        for try await row in connection.query(SQLQuery(unsafeSQL: w.sql)) {
            rows += 1
            let r = try row.decode(T.self)
            r.fold(into: &checksum)
            r.check(into: &check)
        }
        return (rows, checksum)
    }
}
