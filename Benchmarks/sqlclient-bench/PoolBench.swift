import Foundation
import SQLClient
import SQLClientTesting
import TDS

/// `sqlclient-bench pool`: queries per second of `SELECT 1` (one int row) for 1, 8 and 64
/// concurrent tasks through a `SQLConnectionPool` of 8, beside one new connection per query
/// (connect, log in, query, close) and beside each task on a connection of its own without a
/// pool, against the replay server in a process of its own
/// (`sqlclient-bench pool-serve`, plaintext over loopback). See Benchmarks/README.md, "Connection pool".
enum PoolBench {
    static let usage = """
    usage: sqlclient-bench pool [--queries N] [--connect-queries N] [--tasks N]... [--repeat N] [--json]
      --queries N          queries per pooled run (default 20000)
      --connect-queries N  queries per one-connection-per-query run (default 2000)
      --tasks N            concurrent tasks (repeatable; default 1, 8, 64)
      --repeat N           runs per case, the median is kept (default 3)
    """

    struct Options {
        var queries = 20_000
        var connectQueries = 2_000
        var tasks: [Int] = []
        var repeats = 3
        var json = false
    }

    static func parse(_ args: ArraySlice<String>) -> Options {
        var o = Options()
        var it = args.makeIterator()
        func int(_ flag: String) -> Int {
            guard let v = it.next(), let n = Int(v.replacingOccurrences(of: "_", with: "")), n > 0 else {
                note("sqlclient-bench pool: \(flag) needs a positive number\n\(usage)"); exit(2)
            }
            return n
        }
        while let a = it.next() {
            switch a {
            case "--queries": o.queries = int(a)
            case "--connect-queries": o.connectQueries = int(a)
            case "--tasks": o.tasks.append(int(a))
            case "--repeat": o.repeats = int(a)
            case "--json": o.json = true
            case "-h", "--help": print(usage); exit(0)
            default: note("sqlclient-bench pool: unknown argument \(a)\n\(usage)"); exit(2)
            }
        }
        if o.tasks.isEmpty { o.tasks = [1, 8, 64] }
        return o
    }

    static let sql = "SELECT 1"
    static let poolSize = 8

    /// `pool` (the driver) or `pool-serve` (the replay server: prints `PORT n`, serves until stdin closes).
    static func main(_ subcommand: String, _ args: ArraySlice<String>) async throws {
        if subcommand == "pool-serve" { return try serve() }
        try await driver(parse(args))
    }

    static func serve() throws {
        let columns = [ColumnMetadata(typeInfo: .int, name: "n")]
        var w = ByteWriter()
        ColMetadata(columns: columns).encode(into: &w, version: .v7_4)
        try Row(values: [.int(1)]).encode(into: &w, columns: columns)
        Done(status: [.count], currentCommand: 0xC1, rowCount: 1).encode(into: &w, version: .v7_4)
        let session = ReplaySession(name: "pool-bench", version: .v7_4, exchanges: [
            ReplaySession.Exchange(request: .sqlBatch(sql), response: [ReplaySession.Segment(bytes: w.bytes)]),
        ])
        let server = ReplayServer(session: session)
        let port = try server.start()
        FileHandle.standardOutput.write(Data("PORT \(port)\n".utf8))
        while !FileHandle.standardInput.availableData.isEmpty {}
        server.stop()
    }

    struct Result: Codable {
        var mode: String
        var tasks: Int
        var queries: Int
        var seconds: Double
        var queriesPerSecond: Double
        var connectionsOpened: Int
    }

    /// The replay server of `pool-serve` in a process of its own (it serves until its standard
    /// input closes: `stop` closes it and waits), and a configuration for it.
    struct ServerProcess {
        let process: Process
        let input: Pipe
        let configuration: SQLConnectionConfiguration

        static func start() throws -> ServerProcess {
            let server = Process()
            server.executableURL = URL(fileURLWithPath: Driver.selfExecutable)
            server.arguments = ["pool-serve"]
            let serverIn = Pipe(), serverOut = Pipe()
            server.standardInput = serverIn
            server.standardOutput = serverOut
            try server.run()
            var text = ""
            while !text.contains("\n") {
                let data = serverOut.fileHandleForReading.availableData
                if data.isEmpty { throw Sink.Failure(description: "the replay server exited before it was ready") }
                text += String(decoding: data, as: UTF8.self)
            }
            guard let port = Int(text.split(separator: "\n")[0].dropFirst("PORT ".count)) else {
                try? serverIn.fileHandleForWriting.close()
                throw Sink.Failure(description: "the replay server printed no port")
            }
            note("sqlclient-bench pool: replay server on 127.0.0.1:\(port)")
            return ServerProcess(process: server, input: serverIn, configuration: configuration(port: port))
        }

        /// The configuration for a `pool-serve` server on 127.0.0.1:`port` (plaintext).
        static func configuration(port: Int) -> SQLConnectionConfiguration {
            SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: port),
                                       user: "bench", password: "bench", encryption: .notSupported)
        }

        func stop() {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }
    }

    static func driver(_ o: Options) async throws {
        let server = try ServerProcess.start()
        defer { server.stop() }
        let configuration = server.configuration
        var results: [Result] = []
        for tasks in o.tasks {
            // Context for the pool's own cost: each task on a connection of its own, no pool.
            results.append(median(try await (0 ..< o.repeats).asyncMap { _ in
                try await ownConnections(configuration, tasks: tasks, queries: o.queries)
            }))
            results.append(median(try await (0 ..< o.repeats).asyncMap { _ in
                try await pooled(configuration, tasks: tasks, queries: o.queries)
            }))
            results.append(median(try await (0 ..< o.repeats).asyncMap { _ in
                try await connectionPerQuery(configuration, tasks: tasks, queries: o.connectQueries)
            }))
            note("sqlclient-bench pool: \(tasks) tasks done")
        }
        if o.json {
            let data = try JSONEncoder().encode(results)
            print(String(decoding: data, as: UTF8.self))
            return
        }
        print("| tasks | pool of \(poolSize): queries/s | one new connection per query: queries/s | pool / new connection | each task on its own connection, no pool: queries/s |")
        print("|---:|---:|---:|---:|---:|")
        for tasks in o.tasks {
            guard let p = results.first(where: { $0.mode == "pool" && $0.tasks == tasks }),
                  let c = results.first(where: { $0.mode == "connection per query" && $0.tasks == tasks }),
                  let own = results.first(where: { $0.mode == "own connections" && $0.tasks == tasks }) else { continue }
            print("| \(tasks) | \(Int(p.queriesPerSecond)) | \(Int(c.queriesPerSecond)) | "
                  + "\(String(format: "%.1f", p.queriesPerSecond / c.queriesPerSecond)) | \(Int(own.queriesPerSecond)) |")
        }
    }

    static func median(_ runs: [Result]) -> Result {
        runs.sorted { $0.queriesPerSecond < $1.queriesPerSecond }[runs.count / 2]
    }

    /// `queries` queries shared out among `tasks` tasks (each takes the next until none is left)
    /// through a pool of 8 opened beforehand (not timed).
    static func pooled(_ configuration: SQLConnectionConfiguration, tasks: Int, queries: Int) async throws -> Result {
        let pool = try SQLConnectionPool(configuration: configuration, maximumConnections: poolSize,
                                         minimumConnections: poolSize)
        while pool.metrics.open < poolSize { try await Task.sleep(for: .milliseconds(5)) }
        let counter = Counter(queries)
        let start = Measure.now()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0 ..< tasks {
                group.addTask {
                    while counter.take() {
                        let result = try await pool.execute(SQLQuery(unsafeSQL: sql))
                        guard result.resultSets.first?.rows.first?[0] == .int(1) else {
                            throw Sink.Failure(description: "wrong answer")
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let seconds = Measure.now() - start
        let opened = pool.metrics.created
        await pool.close()
        return Result(mode: "pool", tasks: tasks, queries: queries, seconds: seconds,
                      queriesPerSecond: Double(queries) / seconds, connectionsOpened: opened)
    }

    /// `queries` queries shared out among `tasks` tasks, each task on a connection of its own
    /// (opened beforehand, not timed), without a pool.
    static func ownConnections(_ configuration: SQLConnectionConfiguration, tasks: Int, queries: Int) async throws -> Result {
        var connections: [SQLConnection] = []
        for _ in 0 ..< tasks { connections.append(try await SQLConnection.connect(configuration)) }
        let counter = Counter(queries)
        let start = Measure.now()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for connection in connections {
                group.addTask {
                    while counter.take() {
                        let result = try await connection.execute(SQLQuery(unsafeSQL: sql))
                        guard result.resultSets.first?.rows.first?[0] == .int(1) else {
                            throw Sink.Failure(description: "wrong answer")
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let seconds = Measure.now() - start
        for connection in connections { await connection.close() }
        return Result(mode: "own connections", tasks: tasks, queries: queries, seconds: seconds,
                      queriesPerSecond: Double(queries) / seconds, connectionsOpened: tasks)
    }

    /// `queries` queries shared out among `tasks` tasks, each on a connection of its own.
    static func connectionPerQuery(_ configuration: SQLConnectionConfiguration, tasks: Int, queries: Int) async throws -> Result {
        let counter = Counter(queries)
        let start = Measure.now()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0 ..< tasks {
                group.addTask {
                    while counter.take() {
                        let connection = try await SQLConnection.connect(configuration)
                        let result = try await connection.execute(SQLQuery(unsafeSQL: sql))
                        await connection.close()
                        guard result.resultSets.first?.rows.first?[0] == .int(1) else {
                            throw Sink.Failure(description: "wrong answer")
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let seconds = Measure.now() - start
        return Result(mode: "connection per query", tasks: tasks, queries: queries, seconds: seconds,
                      queriesPerSecond: Double(queries) / seconds, connectionsOpened: queries)
    }

    /// Hands out `total` turns, one at a time, to any number of tasks.
    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var left: Int
        init(_ total: Int) { left = total }
        func take() -> Bool {
            lock.withLock {
                guard left > 0 else { return false }
                left -= 1
                return true
            }
        }
    }
}

extension Range where Bound == Int {
    /// `map` with an async transform, in order.
    func asyncMap<T>(_ transform: (Int) async throws -> T) async throws -> [T] {
        var out: [T] = []
        for i in self { out.append(try await transform(i)) }
        return out
    }
}
