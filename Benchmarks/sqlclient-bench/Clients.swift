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
        var values: [SQLValue] = []
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
                while let item = try decoder.next(rowValues: &values) {
                    if case .row = item {
                        rows += 1
                        for v in values { checksum = checksum &* Digest.mix &+ Digest.of(v) }
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

/// `sqlclient-bench client`: end to end over loopback, SQLConnection.query streaming the rows
/// from the replay server, each value read back as its Swift value.
enum ClientCommand {
    /// `query` (one SQLRow per row) or `rowBlocks` (rows in flat blocks).
    enum API: String { case rows, blocks }

    static func run(_ w: Workload, port: Int, packetSize: Int, api: API) async throws -> Sample {
        let configuration = SQLConnectionConfiguration(
            address: SQLServerAddress(host: "127.0.0.1", port: port), user: "bench", password: "bench",
            encryption: .notSupported, applicationName: "sqlclient-bench", packetSize: packetSize)
        let connection = try await SQLConnection.connect(configuration)
        let negotiated = await connection.session.packetSize
        var checksum: UInt64 = 0
        var rows = 0
        let a0 = Measure.allocations()
        let t0 = Measure.now()
        switch api {
        case .rows:
            for try await row in connection.query(SQLQuery(unsafeSQL: w.sql)) {
                rows += 1
                for v in row.values { checksum = checksum &* Digest.mix &+ Digest.of(v) }
            }
        case .blocks:
            for try await block in connection.rowBlocks(SQLQuery(unsafeSQL: w.sql)) {
                rows += block.count
                for v in block.values { checksum = checksum &* Digest.mix &+ Digest.of(v) }
            }
        }
        let seconds = Measure.now() - t0
        let a1 = Measure.allocations()
        await connection.close()
        let allocations = a0.flatMap { a in a1.map { Int($0 &- a) } }
        return Sample(rows: rows, bytes: 0, seconds: seconds, checksum: hex(checksum),
                      allocations: allocations, peakRSS: Measure.peakRSS, packetSize: negotiated)
    }
}
