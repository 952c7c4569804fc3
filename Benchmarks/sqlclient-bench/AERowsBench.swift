import Foundation
import SQLClient
import SQLClientTesting
import TDS

/// `sqlclient-bench ae-rows [--rows N] [--runs K]`: the read path's cost of Always Encrypted, in
/// rows/s of a result of an `int` and an `nvarchar(100)` column (100 characters), encrypted
/// (the int deterministic, the nvarchar randomized, as the issue asks) beside the same columns
/// unencrypted, from the loopback ``AlwaysEncryptedTestServer`` (its answer encoded and
/// encrypted once, then sent as it is), through `query` (rows one at a time) and `rowBlocks`.
/// Best of K runs each.
enum AERowsBench {
    struct Keys: SQLColumnEncryptionKeyStoreProvider {
        let key: [UInt8]
        func decryptColumnEncryptionKey(masterKeyPath: String, algorithm: String, encryptedKey: [UInt8]) async throws -> [UInt8] { key }
    }

    static func main(_ args: ArraySlice<String>) async throws {
        var rows = 100_000
        var runs = 3
        var it = args.makeIterator()
        while let a = it.next() {
            if a == "--rows", let v = it.next(), let n = Int(v), n > 0 { rows = n }
            else if a == "--runs", let v = it.next(), let n = Int(v), n > 0 { runs = n }
            else { note("usage: sqlclient-bench ae-rows [--rows N] [--runs K]"); exit(2) }
        }
        let text = String(repeating: "é", count: 100)
        let data: [[SQLValue]] = (0 ..< rows).map { [.int(Int32(truncatingIfNeeded: $0)), .string(text)] }
        let rootKey = (0 ..< 32).map { UInt8($0) }
        let key = AlwaysEncryptedTestServer.Key(rootKey: rootKey, encryptedKey: [1, 2, 3], keyStoreName: "BENCH", keyPath: "bench/cmk")
        for encrypted in [false, true] {
            let columns: [AlwaysEncryptedTestServer.Column] = [.init("id", .int, encrypted ? .deterministic : nil),
                                                              .init("name", .nvarchar(100), encrypted ? .randomized : nil)]
            let server = try AlwaysEncryptedTestServer(key: key, columns: columns, rows: data)
            defer { server.stop() }
            var config = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(server.port)), user: "bench",
                                                    password: "bench", database: "bench", encryption: .notSupported)
            config.columnEncryption = .enabled
            config.columnEncryptionKeyStoreProviders = ["BENCH": Keys(key: rootKey)]
            let connection = try await SQLConnection.connect(config)
            let query = SQLQuery(unsafeSQL: "SELECT id, name FROM t")
            _ = try await connection.execute(query)   // the server encodes its answer once
            for api in ["query", "rowBlocks"] {
                var best = Double.infinity
                for _ in 0 ..< runs {
                    let clock = ContinuousClock()
                    let start = clock.now
                    var count = 0
                    var checksum = 0
                    if api == "query" {
                        for try await row in connection.query(query) {
                            count += 1
                            if case .int(let v) = row.values[0] { checksum &+= Int(v) }
                        }
                    } else {
                        for try await block in connection.rowBlocks(query) {
                            count += block.count
                            for row in block { if case .int(let v) = row.values[0] { checksum &+= Int(v) } }
                        }
                    }
                    let elapsed = clock.now - start
                    guard count == rows, checksum == (0 ..< rows).reduce(0, &+) else { note("ae-rows: wrong rows"); exit(1) }
                    best = min(best, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
                }
                print("ae-rows \(encrypted ? "encrypted" : "plaintext") \(api): \(rows) rows of (int, nvarchar(100)) in"
                      + " \(String(format: "%.3f", best)) s = \(String(format: "%.0f", Double(rows) / best)) rows/s")
            }
            await connection.close()
        }
    }
}
