import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// sqlclient-bench: SQLClient's decoder and streaming client against FreeTDS on the same bytes.
// See Benchmarks/README.md. Subcommands `serve`, `decode` and `client` are the child processes
// the driver starts (each measurement runs in a process of its own, for clean memory numbers).
// `sqlclient-bench bulk` measures bulk loads instead (BulkBench.swift), `sqlclient-bench pool`
// a connection pool against one connection per query (PoolBench.swift), `sqlclient-bench pool-lease`
// one lease of a pooled connection (PoolLeaseBench.swift).

let usage = """
usage: sqlclient-bench [--json] [--rows N] [--workload NAME]... [--packet-size N] [--repeat N]
                       [--compare-packet-sizes] [--blob-mb N] [--no-freetds] [--no-odbc] [--no-memory-test] [--smoke]

Generates result streams (narrow, wide, strings, exact: --rows rows each, default 1,000,000;
varbinary: one --blob-mb MB value, default 100), serves them from the replay server in its own
process over loopback, and measures for each: SQLClient's in-memory decode, SQLClient end to
end, FreeTDS (db-lib) and Microsoft ODBC Driver 18 end to end, and the server's own rate. Then streams 1 GiB through
SQLClient to check its resident memory (skip with --no-memory-test).

  --json                   one JSON object instead of the table
  --rows N                 rows per workload (default 1000000)
  --workload NAME          only this workload (repeatable): \(Workload.names.joined(separator: ", ")), stream-1gb
  --packet-size N          packet size both clients ask for (default 32767)
  --compare-packet-sizes   also run both clients end to end at 4096-byte packets
  --blob-mb N              size of the varbinary(max) value in MB (default 100)
  --no-freetds             skip FreeTDS (else a FreeTDS program that cannot be built is an error)
  --no-odbc                skip Microsoft ODBC Driver 18 (else a missing driver is an error;
                           scripts/bench.sh installs it)
  --no-memory-test         skip the 1 GiB streaming memory test
  --repeat N                end-to-end runs per client and workload, the median is kept (default 3;
                           varbinary and vector: 3 N), in rounds of every client once
  --smoke                  a few seconds: --rows 10000 --blob-mb 2 --no-memory-test --repeat 1
  --verify-values          (client) every vector and varbinary value checked byte for byte, exit 3
                           on a wrong one; the driver runs each large-value path once so, untimed
"""

struct Options {
    var json = false
    var rows = 1_000_000
    var workloads: [String] = []
    var packetSize = 32_767
    var comparePacketSizes = false
    var blobMB = 100
    var freetds = true
    var msodbc = true
    var memoryTest = true
    var port = 0
    var api = DecodeCommand.API.reuse
    var clientAPI = ClientCommand.API.blocks
    var context = ClientCommand.Context.task
    var repeats = 3
    /// `client`: check every vector and varbinary value byte for byte (``LargeValueCheck``; exit 3
    /// on a wrong value). The driver runs each large-value path once so before timing it.
    var verifyValues = false
}

func parseOptions(_ args: ArraySlice<String>) -> Options {
    var o = Options()
    var it = args.makeIterator()
    func value(_ flag: String) -> String {
        guard let v = it.next() else { note("sqlclient-bench: \(flag) needs a value\n\(usage)"); exit(2) }
        return v
    }
    func int(_ flag: String) -> Int {
        let v = value(flag)
        guard let n = Int(v.replacingOccurrences(of: "_", with: "")), n >= 0 else {
            note("sqlclient-bench: \(flag) needs a number, got \(v)"); exit(2)
        }
        return n
    }
    while let a = it.next() {
        switch a {
        case "--json": o.json = true
        case "--rows": o.rows = int(a)
        case "--workload": o.workloads += value(a).split(separator: ",").map(String.init)
        case "--packet-size": o.packetSize = int(a)
        case "--compare-packet-sizes": o.comparePacketSizes = true
        case "--blob-mb": o.blobMB = int(a)
        case "--no-freetds": o.freetds = false
        case "--no-odbc": o.msodbc = false
        case "--no-memory-test": o.memoryTest = false
        case "--smoke": o.rows = 10_000; o.blobMB = 2; o.memoryTest = false; o.repeats = 1
        case "--repeat": o.repeats = int(a)
        case "--verify-values": o.verifyValues = true
        case "--port": o.port = int(a)
        case "--api":
            guard let api = DecodeCommand.API(rawValue: value(a)) else { note("--api tokens|reuse"); exit(2) }
            o.api = api
        case "--client-api":
            guard let api = ClientCommand.API(rawValue: value(a)) else {
                note("--client-api \(ClientCommand.API.allCases.map(\.rawValue).joined(separator: "|"))"); exit(2)
            }
            o.clientAPI = api
        case "--context":
            guard let c = ClientCommand.Context(rawValue: value(a)) else { note("--context task|main"); exit(2) }
            o.context = c
        case "-h", "--help": print(usage); exit(0)
        default: note("sqlclient-bench: unknown argument \(a)\n\(usage)"); exit(2)
        }
    }
    for name in o.workloads where Workload.named(name, rows: 1, blobMB: 1) == nil && name != "stream-1gb" {
        note("sqlclient-bench: unknown workload \(name)"); exit(2)
    }
    return o
}

func workload(_ name: String, _ o: Options) -> Workload {
    guard let w = Workload.named(name, rows: o.rows, blobMB: o.blobMB) else {
        note("sqlclient-bench: unknown workload \(name)"); exit(2)
    }
    return w
}

let arguments = CommandLine.arguments
if arguments.count > 1, arguments[1] == "bulk" || arguments[1] == "bulk-client" {   // BulkBench.swift
    do { try await BulkBench.main(arguments[1], arguments.dropFirst(2)) } catch { note("sqlclient-bench: \(error)"); exit(1) }
    exit(0)
}
if arguments.count > 1, arguments[1] == "pool-lease" {   // PoolLeaseBench.swift
    do { try await PoolLeaseBench.main(arguments.dropFirst(2)) } catch { note("sqlclient-bench: \(error)"); exit(1) }
    exit(0)
}
if arguments.count > 1, arguments[1] == "pool" || arguments[1] == "pool-serve" {   // PoolBench.swift
    do { try await PoolBench.main(arguments[1], arguments.dropFirst(2)) } catch { note("sqlclient-bench: \(error)"); exit(1) }
    exit(0)
}
if arguments.count > 1, arguments[1] == "ae-rows" {   // AERowsBench.swift: Always Encrypted on the read path
    do { try await AERowsBench.main(arguments.dropFirst(2)) } catch { note("sqlclient-bench: \(error)"); exit(1) }
    exit(0)
}
if arguments.count > 1, arguments[1] == "tls" {   // TLSBench.swift: the TLS read path alone
    do { try await TLSBench.main(arguments.dropFirst(2)) } catch { note("sqlclient-bench: \(error)"); exit(1) }
    exit(0)
}
if arguments.count > 1, arguments[1] == "aead" {   // AEADBench.swift: Always Encrypted cell decryption
    do { try AEADBench.main(arguments.dropFirst(2)) } catch { note("sqlclient-bench: \(error)"); exit(1) }
    exit(0)
}
let subcommand = arguments.count > 1 && !arguments[1].hasPrefix("-") ? arguments[1] : nil
let options = parseOptions(arguments.dropFirst(subcommand == nil ? 1 : 2))

do {
    switch subcommand {
    case "serve":
        try ServeCommand.run(workloads: options.workloads.map { workload($0, options) })
    case "decode":
        guard let name = options.workloads.first else { note("decode needs --workload"); exit(2) }
        print(try DecodeCommand.run(workload(name, options), packetSize: options.packetSize, api: options.api).jsonLine())
    case "client":
        guard let name = options.workloads.first else { note("client needs --workload"); exit(2) }
        print(try await ClientCommand.run(workload(name, options), port: options.port, packetSize: options.packetSize,
                                          api: options.clientAPI, context: options.context,
                                          verifyValues: options.verifyValues).jsonLine())
    case "trace":
        // Every value's digest, as Benchmarks/freetds/bench.c prints them with BENCH_TRACE=1.
        guard let name = options.workloads.first else { note("trace needs --workload"); exit(2) }
        let w = workload(name, options)
        for r in 0 ..< w.rows {
            for (c, v) in w.makeRow(r % w.blockSize).enumerated() { print("\(r + 1) \(c + 1) \(hex(Digest.of(v)))") }
        }
    case nil:
        try await Driver(options: options).run()
    default:
        note("sqlclient-bench: unknown subcommand \(subcommand ?? "")\n\(usage)")
        exit(2)
    }
} catch {
    note("sqlclient-bench: \(error)")
    exit(1)
}
