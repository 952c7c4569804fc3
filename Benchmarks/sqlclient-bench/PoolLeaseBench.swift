import Foundation
import SQLClient

/// `sqlclient-bench pool-lease`: the cost of one lease of a healthy pooled connection (issue 44:
/// the socket check at lease). One task, a pool of one connection opened (and used once)
/// beforehand, against the replay server of `pool-serve` in a process of its own:
///
/// - **lease**: `pool.withConnection { _ in }` `--leases` times: the lease, the checks and the
///   return, no request (nothing crosses the network);
/// - **lease + SELECT 1**: `pool.execute("SELECT 1")` `--leases` times (RESETCONNECTION on each).
///
/// Prints nanoseconds per lease (the median of `--repeat` runs). Instruction counts:
/// Benchmarks/callgrind-pool-lease.sh (callgrind at N and 2N leases, the difference; see
/// Benchmarks/README.md, "Issue 44: lease check").
enum PoolLeaseBench {
    static let usage = """
    usage: sqlclient-bench pool-lease [--leases N] [--repeat N] [--only lease|query] [--port N]
      --leases N   leases per run (default 20000)
      --repeat N   runs per case, the median is kept (default 5)
      --only MODE  run one case only (lease: no request; query: SELECT 1 per lease)
      --port N     use the `pool-serve` server already listening on 127.0.0.1:N (under valgrind,
                   which cannot start a child process) instead of starting one
    """

    static func main(_ args: ArraySlice<String>) async throws {
        var leases = 20_000, repeats = 5, port = 0
        var only: String?
        var it = args.makeIterator()
        func int(_ flag: String) -> Int {
            guard let v = it.next(), let n = Int(v.replacingOccurrences(of: "_", with: "")), n > 0 else {
                note("sqlclient-bench pool-lease: \(flag) needs a positive number\n\(usage)"); exit(2)
            }
            return n
        }
        while let a = it.next() {
            switch a {
            case "--leases": leases = int(a)
            case "--repeat": repeats = int(a)
            case "--port": port = int(a)
            case "--only":
                guard let v = it.next(), v == "lease" || v == "query" else { note(usage); exit(2) }
                only = v
            case "-h", "--help": print(usage); exit(0)
            default: note("sqlclient-bench pool-lease: unknown argument \(a)\n\(usage)"); exit(2)
            }
        }
        let server = port == 0 ? try PoolBench.ServerProcess.start() : nil
        defer { server?.stop() }
        let configuration = server?.configuration ?? PoolBench.ServerProcess.configuration(port: port)
        let pool = try SQLConnectionPool(configuration: configuration, maximumConnections: 1, minimumConnections: 1)
        _ = try await pool.execute(SQLQuery(unsafeSQL: PoolBench.sql))   // opened and used once: every lease below is a reuse
        for mode in ["lease", "query"] where only == nil || only == mode {
            var runs: [Double] = []
            for _ in 0 ..< repeats {
                let start = Measure.now()
                if mode == "lease" {
                    for _ in 0 ..< leases { try await pool.withConnection { _ in } }
                } else {
                    for _ in 0 ..< leases {
                        let result = try await pool.execute(SQLQuery(unsafeSQL: PoolBench.sql))
                        guard result.resultSets.first?.rows.first?[0] == .int(1) else {
                            throw Sink.Failure(description: "wrong answer")
                        }
                    }
                }
                runs.append((Measure.now() - start) / Double(leases) * 1e9)
            }
            runs.sort()
            let metrics = pool.metrics
            print("\(mode == "lease" ? "lease" : "lease + SELECT 1"): \(leases) leases x \(repeats) runs, median "
                  + "\(Int(runs[runs.count / 2])) ns per lease (min \(Int(runs[0])), max \(Int(runs[runs.count - 1]))); "
                  + "created \(metrics.created), discarded \(metrics.discarded)")
        }
        await pool.close()
    }
}
