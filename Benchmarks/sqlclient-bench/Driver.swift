import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The default command: builds the C helpers, starts the replay server process, runs every
/// measurement in a child process of its own and prints the table (or JSON).
struct Driver {
    var options: Options

    /// Benchmarks/ in the source tree (the C programs are compiled from there at run time).
    static let benchmarksDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    #if os(Linux)
    static let selfExecutable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
    #else
    static let selfExecutable = Bundle.main.executablePath ?? CommandLine.arguments[0]
    #endif

    struct Result {
        var workload: Workload
        var streamBytes: Int
        var expected: String
        /// The checksum of the `Decodable` path (see ``BenchRow``).
        var expectedDecodable: String = ""
        /// Every SQLClient read path measured end to end, by its `clients` key
        /// (`sqlclient_blocks`, `sqlclient_query_main`, …).
        var paths: [String: Sample] = [:]
        /// ``Driver/pairedRatios(_:)`` of the rounds, by `clients` key.
        var pairedRatios: [String: Double] = [:]
        var serverSeconds: Double?
        var decode: Sample?
        var decodeTokens: Sample?
        /// End to end through `rowBlocks` (the fastest API).
        var sqlclient: Sample?
        /// End to end through `query` (one SQLRow per row).
        var sqlclientRows: Sample?
        var freetds: Sample?
        /// Microsoft ODBC Driver 18 (Benchmarks/msodbc/bench.c).
        var msodbc: Sample?
        /// The same driver keeping every value until the result is read
        /// (`bench.c`'s `keep`), the peer of `execute()`, which keeps every row.
        var msodbcKeep: Sample?
        var sqlclientSmallPackets: Sample?
        var freetdsSmallPackets: Sample?
        /// Large-value workloads (varbinary, vector): one `memcpy` of the stream's bytes on this
        /// machine, MB/s (``Driver/memcpyMBPerSecond(bytes:)``), the limit each figure is a fraction of.
        var memcpyMBPerSecond: Double?
    }

    /// The workloads whose figures are also given as a fraction of ``memcpyMBPerSecond(bytes:)``.
    static let largeValueWorkloads: Set<String> = ["varbinary", "vector"]

    /// One `memcpy` of `bytes` bytes between two buffers of this process (pages touched first),
    /// the fastest of 5, in MB/s (10^6 bytes): the machine's memory bandwidth for a copy of the
    /// same bytes a large-value read moves.
    static func memcpyMBPerSecond(bytes: Int) -> Double? {
        guard bytes > 0 else { return nil }
        let src = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64)
        let dst = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64)
        defer { src.deallocate(); dst.deallocate() }
        memset(src, 0x5A, bytes)
        memset(dst, 0, bytes)
        // Called through a pointer from dlsym: the optimizer cannot drop a copy nobody reads.
        typealias Copy = @convention(c) (UnsafeMutableRawPointer?, UnsafeRawPointer?, Int) -> UnsafeMutableRawPointer?
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "memcpy") else { return nil }
        let copy = unsafeBitCast(symbol, to: Copy.self)
        var best = Double.infinity
        for _ in 0 ..< 5 {
            let t0 = Measure.now()
            _ = copy(dst, src, bytes)
            best = min(best, Measure.now() - t0)
        }
        return best > 0 ? Double(bytes) / 1e6 / best : nil
    }

    // MARK: Helpers

    /// Runs a command, returning (status, stdout, stderr).
    @discardableResult
    static func run(_ path: String, _ args: [String], environment: [String: String] = [:]) -> (Int32, String, String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = args
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        p.environment = env
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        do { try p.run() } catch { return (-1, "", "\(error)") }
        // Read both pipes while the child runs (a full pipe would block it).
        final class Box: @unchecked Sendable { var data = Data() }
        let errBox = Box()
        let done = DispatchSemaphore(value: 0)
        let errHandle = err.fileHandleForReading
        Thread.detachNewThread {
            errBox.data = errHandle.readDataToEndOfFile()
            done.signal()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        done.wait()
        return (p.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errBox.data, as: UTF8.self))
    }

    static func which(_ tool: String) -> String? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(dir)/\(tool)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// The Microsoft ODBC Driver 18 library: `SQLCLIENT_MSODBC_DRIVER`, else the one
    /// `scripts/msodbc.sh install` put in the project's `.venv`.
    static func msodbcDriver() -> String? {
        if let path = ProcessInfo.processInfo.environment["SQLCLIENT_MSODBC_DRIVER"], !path.isEmpty {
            return FileManager.default.fileExists(atPath: path) ? path : nil
        }
        let lib = benchmarksDirectory.deletingLastPathComponent().appendingPathComponent(".venv/lib")
        for python in ((try? FileManager.default.contentsOfDirectory(atPath: lib.path)) ?? []).sorted() where python.hasPrefix("python") {
            let dir = lib.appendingPathComponent("\(python)/site-packages/mssql_python_odbc/libs/linux/debian_ubuntu/x86_64/lib")
            if let name = ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).sorted().last(where: { $0.hasPrefix("libmsodbcsql-18") }) {
                return dir.appendingPathComponent(name).path
            }
        }
        return nil
    }

    /// A peer that was asked for (no `--no-freetds` / `--no-odbc`) and cannot be built: the
    /// bench stops with an error naming it rather than print a column of nulls.
    static func peerMissing(_ what: String, _ detail: String) -> Never {
        note("sqlclient-bench: \(what) cannot be built: \(detail)")
        exit(3)
    }

    /// Compiles the malloc counter and the peers' programs into a scratch directory.
    func buildHelpers() -> (counter: String?, freetds: String?, msodbc: (exe: String, driver: String)?) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sqlclient-bench-\(getuid())")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        guard let cc = Driver.which("cc") else {
            if options.freetds || options.msodbc { Driver.peerMissing("the peers (FreeTDS, Microsoft ODBC)", "no C compiler (cc)") }
            note("sqlclient-bench: no C compiler (cc): no allocation counts")
            return (nil, nil, nil)
        }
        let src = Driver.benchmarksDirectory
        let counter = dir.appendingPathComponent("libmalloc_counter.so").path
        let (s1, _, e1) = Driver.run(cc, ["-O2", "-shared", "-fPIC", "-o", counter,
                                          src.appendingPathComponent("malloc-counter/malloc_counter.c").path])
        if s1 != 0 { note("sqlclient-bench: building the malloc counter failed:\n\(e1)") }
        var freetds: String?
        if options.freetds {
            let exe = dir.appendingPathComponent("freetds-bench").path
            let (s2, _, e2) = Driver.run(cc, ["-O2", "-o", exe, src.appendingPathComponent("freetds/bench.c").path, "-lsybdb", "-ldl"])
            if s2 == 0 { freetds = exe } else { Driver.peerMissing("FreeTDS (Benchmarks/freetds/bench.c)", "freetds-dev missing? (--no-freetds skips it)\n\(e2)") }
        }
        var msodbc: (exe: String, driver: String)?
        if options.msodbc {
            guard let driver = Driver.msodbcDriver() else {
                Driver.peerMissing("Microsoft ODBC Driver 18", "libmsodbcsql-18 not found in .venv: scripts/msodbc.sh install (--no-odbc skips it)")
            }
            let exe = dir.appendingPathComponent("msodbc-bench").path
            let (s3, _, e3) = Driver.run(cc, ["-O2", "-o", exe, src.appendingPathComponent("msodbc/bench.c").path, "-lodbc", "-ldl"])
            if s3 == 0 { msodbc = (exe, driver) } else {
                Driver.peerMissing("Microsoft ODBC Driver 18 (Benchmarks/msodbc/bench.c)", "unixodbc-dev missing? (--no-odbc skips it)\n\(e3)")
            }
        }
        return (s1 == 0 ? counter : nil, freetds, msodbc)
    }

    /// Runs `sqlclient-bench <args>` (or another program) as a child and parses its JSON line.
    func child(_ path: String, _ args: [String], counter: String?) -> Sample? {
        let env = counter.map { ["LD_PRELOAD": $0] } ?? [:]
        let (status, out, err) = Driver.run(path, args, environment: env)
        if status == 3 {
            // LargeValueCheck: a client read a wrong value. The run stops: no figure of a wrong read.
            note("sqlclient-bench: \((path as NSString).lastPathComponent) \(args.joined(separator: " ")) read a wrong value:\n\(err)")
            exit(1)
        }
        guard status == 0, let line = out.split(separator: "\n").last else {
            note("sqlclient-bench: \((path as NSString).lastPathComponent) \(args.joined(separator: " ")) failed (\(status)):\n\(err)")
            return nil
        }
        if let s = Sample.parse(line) { return s }
        // The FreeTDS program's line.
        guard let obj = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let rows = obj["rows"] as? Int, let seconds = obj["seconds"] as? Double,
              let checksum = obj["checksum"] as? String else {
            note("sqlclient-bench: unreadable output of \(path): \(line)")
            return nil
        }
        let allocations = (obj["allocations"] as? Int).flatMap { $0 >= 0 ? $0 : nil }
        var sample = Sample(rows: rows, bytes: 0, seconds: seconds, checksum: checksum, allocations: allocations,
                            peakRSS: (obj["maxrss_kb"] as? Int).map { $0 * 1024 }, packetSize: obj["packet_size"] as? Int)
        sample.cpuSeconds = obj["cpu_seconds"] as? Double
        sample.pageFaults = obj["page_faults"] as? Int
        return sample
    }

    /// The run of `options.repeats` runs with the median time (a wrong checksum wins, to be seen).
    func median(_ make: () -> Sample?) -> Sample? {
        Driver.median((0 ..< max(options.repeats, 1)).compactMap { _ in make() })
    }

    /// For each SQLClient path, the median over rounds of the better streaming peer's time in the
    /// round over the path's time in the same round (`execute()` paths: over `msodbc_keep`'s,
    /// which also keeps every row): a ratio of runs made seconds apart, so that a slow spell of
    /// the machine moves both sides of it.
    static func pairedRatios(_ rounds: [[String: Sample]]) -> [String: Double] {
        var ratios: [String: [Double]] = [:]
        for round in rounds {
            let streaming = ["msodbc", "freetds"].compactMap { round[$0]?.seconds }.min()
            for (key, s) in round where key.hasPrefix("sqlclient") && s.seconds > 0 {
                guard let peer = key.contains("execute") ? round["msodbc_keep"]?.seconds ?? streaming : streaming else { continue }
                ratios[key, default: []].append(peer / s.seconds)
            }
        }
        return ratios.mapValues { list in
            let sorted = list.sorted()
            return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        }
    }

    /// The sample with the median time of `samples` (a wrong checksum wins, to be seen).
    static func median(_ samples: [Sample]) -> Sample? {
        if let wrong = samples.first(where: { $0.checksum != samples.first?.checksum }) { return wrong }
        let sorted = samples.sorted { $0.seconds < $1.seconds }
        return sorted.isEmpty ? nil : sorted[sorted.count / 2]
    }

    // MARK: Run

    func run() async throws {
        var names = options.workloads.isEmpty ? Workload.names : options.workloads
        if options.memoryTest && options.workloads.isEmpty { names.append("stream-1gb") }
        let workloads = names.map { workload($0, options) }
        let (counter, freetds, msodbc) = buildHelpers()
        let load0 = Driver.loadAverage()

        // The replay server, in its own process.
        let server = Process()
        server.executableURL = URL(fileURLWithPath: Driver.selfExecutable)
        server.arguments = ["serve", "--rows", String(options.rows), "--blob-mb", String(options.blobMB),
                            "--workload", names.joined(separator: ",")]
        let serverIn = Pipe(), serverOut = Pipe()
        server.standardInput = serverIn
        server.standardOutput = serverOut
        try server.run()
        defer {
            try? serverIn.fileHandleForWriting.close()
            server.waitUntilExit()
        }
        var port: UInt16 = 0
        var sizes: [String: Int] = [:]
        var pending = ""
        readLoop: while true {
            let data = serverOut.fileHandleForReading.availableData
            if data.isEmpty { throw Sink.Failure(description: "the replay server exited before it was ready") }
            pending += String(decoding: data, as: UTF8.self)
            while let nl = pending.firstIndex(of: "\n") {
                let line = pending[..<nl].split(separator: " ")
                pending = String(pending[pending.index(after: nl)...])
                if line.first == "PORT", line.count == 2 { port = UInt16(line[1]) ?? 0 }
                if line.first == "STREAM", line.count == 3 { sizes[String(line[1])] = Int(line[2]) }
                if line.first == "READY" { break readLoop }
            }
        }
        note("sqlclient-bench: replay server on 127.0.0.1:\(port); counter \(counter == nil ? "absent" : "loaded"), FreeTDS \(freetds == nil ? "absent" : "built"), Microsoft ODBC \(msodbc == nil ? "absent" : "built")")

        let me = Driver.selfExecutable
        var results: [Result] = []
        for w in workloads {
            var r = Result(workload: w, streamBytes: sizes[w.name] ?? 0, expected: hex(w.expectedChecksum()))
            r.expectedDecodable = (try? w.expectedDecodableChecksum()).map(hex) ?? "?"
            if Driver.largeValueWorkloads.contains(w.name) { r.memcpyMBPerSecond = Driver.memcpyMBPerSecond(bytes: r.streamBytes) }
            note("sqlclient-bench: \(w.name): \(w.rows) rows, \(r.streamBytes) bytes")
            let common = ["--workload", w.name, "--rows", String(options.rows), "--blob-mb", String(options.blobMB)]
            // The server's own rate: a raw reader that only cuts packets.
            if let (n, s) = try? Sink.measure(port: port, sql: w.sql, packetSize: options.packetSize), n == r.streamBytes {
                r.serverSeconds = s
            }
            let ps = ["--packet-size", String(options.packetSize)]
            if w.name != "stream-1gb" {
                r.decode = child(me, ["decode"] + common + ps + ["--api", "reuse"], counter: counter)
                r.decodeTokens = child(me, ["decode"] + common + ps + ["--api", "tokens"], counter: counter)
            }
            let repeatable = w.name != "stream-1gb"
            let portText = String(port)
            // Every client measured, keyed by its `clients` key. Their repeats run in rounds, each
            // round every client once in the same order, so that a machine that slows down or
            // speeds up during the workload moves every client's median alike (run client by
            // client, a drift of the VM's speed over the workload's seconds moved the ratio to the
            // peer by up to 0.3 from one run to the next).
            var clients: [(key: String, run: () -> Sample?)] = []
            for (key, api, context) in Driver.paths(for: w.name) {
                let args = ["client"] + common + ps + ["--port", portText, "--client-api", api.rawValue, "--context", context.rawValue]
                if Driver.largeValueWorkloads.contains(w.name) {
                    // Every vector/varbinary value checked byte for byte, in a run not timed (a wrong value stops the run).
                    _ = child(me, args + ["--verify-values"], counter: nil)
                }
                clients.append((key, { child(me, args, counter: counter) }))
            }
            // FreeTDS has no vector type (0xF5); see the README for Microsoft's ODBC driver.
            if let freetds, w.name != "vector" {
                clients.append(("freetds", { child(freetds, ["127.0.0.1:\(port)", w.sql, String(options.packetSize)], counter: counter) }))
            }
            if let msodbc {
                // ODBC environment of the bench's own: no DSN or odbcinst.ini of the machine's.
                let args = [msodbc.driver, "127.0.0.1:\(port)", w.sql, String(options.packetSize)]
                clients.append(("msodbc", { child(msodbc.exe, args, counter: counter) }))
                if repeatable {   // not the 1 GiB memory test, which has no execute() path
                    clients.append(("msodbc_keep", { child(msodbc.exe, args + ["keep"], counter: counter) }))
                }
            }
            // A large value's run is short (tens of milliseconds) and its time varies by up to a
            // quarter from one run to the next on a VM: three times the rounds.
            let rounds = repeatable ? max(options.repeats, 1) * (Driver.largeValueWorkloads.contains(w.name) ? 3 : 1) : 1
            var samples: [String: [Sample]] = [:]
            var byRound: [[String: Sample]] = []
            for _ in 0 ..< rounds {
                var round: [String: Sample] = [:]
                for c in clients { if let s = c.run() { samples[c.key, default: []].append(s); round[c.key] = s } }
                byRound.append(round)
            }
            r.pairedRatios = Driver.pairedRatios(byRound)
            for (key, list) in samples {
                guard let m = Driver.median(list) else { continue }
                switch key {
                case "freetds": r.freetds = m
                case "msodbc": r.msodbc = m
                case "msodbc_keep": r.msodbcKeep = m
                default: r.paths[key] = m
                }
            }
            r.sqlclient = r.paths["sqlclient_blocks"]
            r.sqlclientRows = r.paths["sqlclient_query"]
            if options.comparePacketSizes && w.name != "stream-1gb" {
                r.sqlclientSmallPackets = median { child(me, ["client"] + common + ["--packet-size", "4096", "--port", portText, "--client-api", "blocks"], counter: counter) }
                if let freetds {
                    r.freetdsSmallPackets = median { child(freetds, ["127.0.0.1:\(port)", w.sql, "4096"], counter: counter) }
                }
            }
            for (label, s) in [("decode", r.decode), ("decode(tokens)", r.decodeTokens),
                               ("freetds", r.freetds), ("msodbc", r.msodbc), ("msodbc_keep", r.msodbcKeep),
                               ("sqlclient@4096", r.sqlclientSmallPackets), ("freetds@4096", r.freetdsSmallPackets)]
                + r.paths.sorted(by: { $0.key < $1.key }).map({ ($0.key, Optional($0.value)) }) {
                let expected = r.expected(for: label)
                if let s, s.checksum != expected || s.rows != w.rows {
                    note("sqlclient-bench: \(w.name) \(label): checksum \(s.checksum) rows \(s.rows), expected \(expected) rows \(w.rows)")
                }
            }
            results.append(r)
        }
        let load1 = Driver.loadAverage()
        if options.json {
            print(json(results, load: (load0, load1)))
        } else {
            print(table(results, load: (load0, load1)))
        }
    }

    /// The SQLClient read paths measured for a workload: (`clients` key, API, context). Every
    /// API from both contexts for the row workloads; the varbinary value and the 1 GiB memory
    /// test through `rowBlocks` and `query` from a task.
    static func paths(for workload: String) -> [(String, ClientCommand.API, ClientCommand.Context)] {
        let names: [ClientCommand.API: String] = [.blocks: "blocks", .rows: "query", .decodable: "decodable", .typed: "typed", .execute: "execute"]
        if workload == "stream-1gb" {
            return [("sqlclient_blocks", .blocks, .task), ("sqlclient_query", .rows, .task)]
        }
        if workload == "varbinary" {
            // The one large value: buffered (each API, typed as Data) and in chunks, for RSS growth.
            return [("sqlclient_blocks", .blocks, .task), ("sqlclient_query", .rows, .task),
                    ("sqlclient_typed", .typed, .task), ("sqlclient_execute", .execute, .task),
                    ("sqlclient_chunked", .chunked, .task)]
        }
        var out: [(String, ClientCommand.API, ClientCommand.Context)] = []
        for context in ClientCommand.Context.allCases {
            for api in ClientCommand.API.allCases where api != .chunked {
                out.append(("sqlclient_" + names[api]! + (context == .main ? "_main" : ""), api, context))
            }
        }
        return out
    }

    /// The `clients` keys of the SQLClient paths, in table order.
    static let pathKeys = ["sqlclient_blocks", "sqlclient_query", "sqlclient_decodable", "sqlclient_typed", "sqlclient_execute",
                           "sqlclient_blocks_main", "sqlclient_query_main", "sqlclient_decodable_main", "sqlclient_typed_main",
                           "sqlclient_execute_main"]

    static func loadAverage() -> Double {
        var l = [Double](repeating: 0, count: 3)
        return getloadavg(&l, 3) > 0 ? l[0] : -1
    }

    // MARK: Output

    static func rate(_ x: Double) -> String {
        if x >= 1e6 { return String(format: "%.2fM", x / 1e6) }
        if x >= 1e3 { return String(format: "%.0fk", x / 1e3) }
        return String(format: "%.1f", x)
    }
    static func mb(_ bytes: Int?) -> String { bytes.map { String(format: "%.0f", Double($0) / 1_048_576) } ?? "–" }
    static func num(_ x: Double?, _ f: String = "%.2f") -> String { x.map { String(format: f, $0) } ?? "–" }

    func ok(_ s: Sample?, _ r: Result, key: String = "") -> String {
        guard let s else { return "–" }
        return s.checksum == r.expected(for: key) && s.rows == r.workload.rows ? "" : " (WRONG)"
    }

    /// Every read path's rows/s beside the peers', then allocations per row and peak RSS.
    func pathsTable(_ results: [Result]) -> String {
        let heads = ["FreeTDS", "MSODBC", "MSODBC (keep)", "blocks", "query", "Decodable", "typed", "execute",
                     "blocks (main)", "query (main)", "Decodable (main)", "typed (main)", "execute (main)"]
        func cells(_ r: Result, _ f: (Sample, String) -> String) -> String {
            let samples: [(String, Sample?)] = [("freetds", r.freetds), ("msodbc", r.msodbc), ("msodbc_keep", r.msodbcKeep)]
                + Driver.pathKeys.map { ($0, r.paths[$0]) }
            return samples.map { key, s in s.map { f($0, key) } ?? "–" }.joined(separator: " | ")
        }
        var t = "\nEvery read path end to end, rows/s (SQLClient from a nonisolated task, then from the main actor; "
            + "MSODBC (keep): the driver keeping every value until the result is read, the peer of `execute()`):\n\n"
        t += "| workload | " + heads.joined(separator: " | ") + " |\n|---|" + String(repeating: "---:|", count: heads.count) + "\n"
        for r in results where !r.paths.isEmpty {
            t += "| \(r.workload.name) | " + cells(r) { s, key in Driver.rate(s.rowsPerSecond) + ok(s, r, key: key) } + " |\n"
        }
        t += "\nAllocations per row, same runs:\n\n| workload | " + heads.joined(separator: " | ") + " |\n|---|" + String(repeating: "---:|", count: heads.count) + "\n"
        for r in results where !r.paths.isEmpty {
            t += "| \(r.workload.name) | " + cells(r) { s, _ in Driver.num(s.allocationsPerRow, "%.3f") } + " |\n"
        }
        t += "\nPeak RSS (MB), same runs:\n\n| workload | " + heads.joined(separator: " | ") + " |\n|---|" + String(repeating: "---:|", count: heads.count) + "\n"
        for r in results where !r.paths.isEmpty {
            t += "| \(r.workload.name) | " + cells(r) { s, _ in Driver.mb(s.peakRSS) } + " |\n"
        }
        let large = results.filter { $0.memcpyMBPerSecond != nil }
        if !large.isEmpty {
            t += "\nLarge values against the machine's memory bandwidth (one `memcpy` of the stream's bytes, MB/s), each path's MB/s and its fraction of it:\n\n"
            t += "| workload | memcpy MB/s | path | MB/s | fraction of memcpy |\n|---|---:|---|---:|---:|\n"
            for r in large {
                let clients = [("freetds", r.freetds), ("msodbc", r.msodbc), ("msodbc_keep", r.msodbcKeep)]
                    + r.paths.sorted(by: { $0.key < $1.key }).map { ($0.key, Optional($0.value)) }
                for (key, sample) in clients {
                    guard let s = sample, s.seconds > 0, let copy = r.memcpyMBPerSecond else { continue }
                    let mbps = Double(r.streamBytes) / 1e6 / s.seconds
                    t += "| \(r.workload.name) | \(Driver.num(copy, "%.0f")) | \(key)\(ok(s, r, key: key)) | \(Driver.num(mbps, "%.0f")) | \(Driver.num(mbps / copy, "%.3f")) |\n"
                }
            }
        }
        if let r = results.first(where: { $0.paths["sqlclient_chunked"] != nil }) {
            t += "\nOne large value (\(r.workload.name), \(String(format: "%.0f", Double(r.streamBytes) / 1_048_576)) MB): resident memory growth during the read (peak over the RSS just before it), MB:\n\n"
            t += "| path | rows/s | MB/s | RSS growth MB | growth / value size |\n|---|---:|---:|---:|---:|\n"
            for key in ["sqlclient_chunked", "sqlclient_blocks", "sqlclient_query", "sqlclient_execute"] {
                guard let s = r.paths[key] else { continue }
                let mbps = s.seconds > 0 ? Double(r.streamBytes) / 1e6 / s.seconds : nil
                let ratio = s.rssGrowth.map { Double($0) / Double(max(r.streamBytes, 1)) }
                t += "| \(key)\(ok(s, r, key: key)) | \(Driver.rate(s.rowsPerSecond)) | \(Driver.num(mbps, "%.0f")) | \(Driver.mb(s.rssGrowth)) | \(Driver.num(ratio)) |\n"
            }
        }
        return t
    }

    func table(_ results: [Result], load: (Double, Double)) -> String {
        var t = "| workload | rows | stream MB | server MB/s | decode rows/s | decode MB/s | decode allocs/row | SQLClient rows/s | SQLClient MB/s | SQLClient allocs/row | SQLClient peak RSS MB | FreeTDS rows/s | FreeTDS MB/s | FreeTDS allocs/row | FreeTDS peak RSS MB | MSODBC rows/s | MSODBC allocs/row | MSODBC peak RSS MB | ratio |\n"
        t += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        for r in results {
            let mbytes = Double(r.streamBytes) / 1e6
            let server = r.serverSeconds.map { mbytes / $0 }
            func mbps(_ s: Sample?) -> Double? { s.map { $0.seconds > 0 ? mbytes / $0.seconds : 0 } }
            let ratio = r.sqlclient.flatMap { a in r.freetds.map { b in b.rowsPerSecond > 0 ? a.rowsPerSecond / b.rowsPerSecond : 0 } }
            t += "| \(r.workload.name) | \(r.workload.rows) | \(String(format: "%.1f", mbytes)) | \(Driver.num(server, "%.0f")) "
            t += "| \(r.decode.map { Driver.rate($0.rowsPerSecond) } ?? "–")\(r.decode == nil ? "" : ok(r.decode, r)) | \(Driver.num(mbps(r.decode), "%.0f")) | \(Driver.num(r.decode?.allocationsPerRow, "%.3f")) "
            t += "| \(r.sqlclient.map { Driver.rate($0.rowsPerSecond) } ?? "–")\(ok(r.sqlclient, r)) | \(Driver.num(mbps(r.sqlclient), "%.0f")) | \(Driver.num(r.sqlclient?.allocationsPerRow, "%.3f")) | \(Driver.mb(r.sqlclient?.peakRSS)) "
            t += "| \(r.freetds.map { Driver.rate($0.rowsPerSecond) } ?? "–")\(r.freetds == nil ? "" : ok(r.freetds, r)) | \(Driver.num(mbps(r.freetds), "%.0f")) | \(Driver.num(r.freetds?.allocationsPerRow, "%.3f")) | \(Driver.mb(r.freetds?.peakRSS)) "
            t += "| \(r.msodbc.map { Driver.rate($0.rowsPerSecond) } ?? "–")\(r.msodbc == nil ? "" : ok(r.msodbc, r)) | \(Driver.num(r.msodbc?.allocationsPerRow, "%.3f")) | \(Driver.mb(r.msodbc?.peakRSS)) "
            t += "| \(Driver.num(ratio)) |\n"
        }
        t += pathsTable(results)
        if results.contains(where: { $0.sqlclientRows != nil }) {
            t += "\nEnd to end through `query()` (one `SQLRow` per row) instead of `rowBlocks()`:\n\n| workload | rows/s | MB/s | allocs/row | peak RSS MB | ratio to FreeTDS |\n|---|---:|---:|---:|---:|---:|\n"
            for r in results {
                guard let s = r.sqlclientRows else { continue }
                let ratio = r.freetds.map { s.rowsPerSecond / max($0.rowsPerSecond, 1e-9) }
                t += "| \(r.workload.name) | \(Driver.rate(s.rowsPerSecond))\(ok(s, r)) | \(Driver.num(s.seconds > 0 ? Double(r.streamBytes) / 1e6 / s.seconds : nil, "%.0f")) | \(Driver.num(s.allocationsPerRow, "%.3f")) | \(Driver.mb(s.peakRSS)) | \(Driver.num(ratio)) |\n"
            }
        }
        if results.contains(where: { $0.decodeTokens != nil }) {
            t += "\nIn-memory decode through `next()` (one `Token` per row) instead of row blocks (`appendBufferedRows(to:limit:byteLimit:)`):\n\n| workload | rows/s | allocs/row |\n|---|---:|---:|\n"
            for r in results { if let s = r.decodeTokens { t += "| \(r.workload.name) | \(Driver.rate(s.rowsPerSecond))\(ok(s, r)) | \(Driver.num(s.allocationsPerRow, "%.3f")) |\n" } }
        }
        if results.contains(where: { $0.sqlclientSmallPackets != nil }) {
            t += "\nEnd to end at 4096-byte packets (rows/s) against \(options.packetSize):\n\n| workload | SQLClient @4096 | SQLClient @\(options.packetSize) | FreeTDS @4096 | FreeTDS @\(options.packetSize) | ratio @4096 |\n|---|---:|---:|---:|---:|---:|\n"
            for r in results where r.sqlclientSmallPackets != nil {
                let ratio = r.sqlclientSmallPackets.flatMap { a in r.freetdsSmallPackets.map { b in a.rowsPerSecond / max(b.rowsPerSecond, 1e-9) } }
                t += "| \(r.workload.name) | \(r.sqlclientSmallPackets.map { Driver.rate($0.rowsPerSecond) } ?? "–") | \(r.sqlclient.map { Driver.rate($0.rowsPerSecond) } ?? "–") "
                t += "| \(r.freetdsSmallPackets.map { Driver.rate($0.rowsPerSecond) } ?? "–") | \(r.freetds.map { Driver.rate($0.rowsPerSecond) } ?? "–") | \(Driver.num(ratio)) |\n"
            }
        }
        t += "\nPacket size \(options.packetSize) asked by both clients (negotiated: SQLClient \(results.compactMap { $0.sqlclient?.packetSize }.first.map(String.init) ?? "?"), FreeTDS \(results.compactMap { $0.freetds?.packetSize }.first.map(String.init) ?? "?")); "
        t += String(format: "load average %.2f before, %.2f after; %d CPUs.\n", load.0, load.1, ProcessInfo.processInfo.activeProcessorCount)
        t += "End-to-end SQLClient (rowBlocks) and FreeTDS rates, at both packet sizes: the median of \(max(options.repeats, 1)) runs each (other columns: one run).\n"
        t += "Command: sqlclient-bench " + CommandLine.arguments.dropFirst().joined(separator: " ") + "\n"
        return t
    }

    func json(_ results: [Result], load: (Double, Double)) -> String {
        func sampleObject(_ s: Sample?, _ r: Result, key: String = "") -> Any {
            guard let s else { return NSNull() }
            let mbps = s.seconds > 0 ? Double(r.streamBytes) / 1e6 / s.seconds : 0
            return ["rows_per_s": s.rowsPerSecond, "mb_per_s": mbps,
                    "fraction_of_memcpy": r.memcpyMBPerSecond.map { mbps / $0 } as Any? ?? NSNull(),
                    "seconds": s.seconds, "allocations_per_row": s.allocationsPerRow as Any? ?? NSNull(),
                    "peak_rss_bytes": s.peakRSS as Any? ?? NSNull(), "rss_growth_bytes": s.rssGrowth as Any? ?? NSNull(), "checksum_ok": s.checksum == r.expected(for: key) && s.rows == r.workload.rows,
                    "packet_size": s.packetSize as Any? ?? NSNull(), "cpu_seconds": s.cpuSeconds as Any? ?? NSNull(),
                    "page_faults": s.pageFaults as Any? ?? NSNull()] as [String: Any]
        }
        var list: [[String: Any]] = []
        for r in results {
            let sql = r.sqlclient?.rowsPerSecond, ft = r.freetds?.rowsPerSecond
            var o: [String: Any] = [
                "name": r.workload.name,
                "rows": r.workload.rows,
                "stream_bytes": r.streamBytes,
                "sqlclient_rows_per_s": sql as Any? ?? NSNull(),
                "freetds_rows_per_s": ft as Any? ?? NSNull(),
                "ratio": (sql != nil && ft != nil && ft! > 0) ? sql! / ft! : NSNull(),
                "allocations_per_row": (r.decode ?? r.sqlclient)?.allocationsPerRow as Any? ?? NSNull(),
                "peak_rss_bytes": r.sqlclient?.peakRSS as Any? ?? NSNull(),
                "server_mb_per_s": r.serverSeconds.map { Double(r.streamBytes) / 1e6 / $0 } as Any? ?? NSNull(),
                "memcpy_mb_per_s": r.memcpyMBPerSecond as Any? ?? NSNull(),
                "decode": sampleObject(r.decode, r),
                "decode_tokens": sampleObject(r.decodeTokens, r),
                "sqlclient": sampleObject(r.sqlclient, r),
                "sqlclient_query": sampleObject(r.sqlclientRows, r),
                "sqlclient_query_rows_per_s": r.sqlclientRows?.rowsPerSecond as Any? ?? NSNull(),
                "freetds": sampleObject(r.freetds, r),
                "msodbc": sampleObject(r.msodbc, r),
            ]
            // Every client's figures by name; a new read path adds one pair here.
            let clients: [(String, Sample?)] = [("freetds", r.freetds), ("msodbc", r.msodbc), ("msodbc_keep", r.msodbcKeep)]
                + r.paths.map { ($0.key, Optional($0.value)) }
            o["clients"] = Dictionary(uniqueKeysWithValues: clients.map { c -> (String, Any) in
                var object = sampleObject(c.1, r, key: c.0)
                if var d = object as? [String: Any], let ratio = r.pairedRatios[c.0] {
                    d["paired_ratio_to_peer"] = ratio
                    object = d
                }
                return (c.0, object)
            })
            if options.comparePacketSizes {
                o["sqlclient_4096"] = sampleObject(r.sqlclientSmallPackets, r)
                o["freetds_4096"] = sampleObject(r.freetdsSmallPackets, r)
            }
            list.append(o)
        }
        let top: [String: Any] = ["workloads": list, "packet_size": options.packetSize, "repeats": max(options.repeats, 1),
                                  "load_average": [load.0, load.1], "cpus": ProcessInfo.processInfo.activeProcessorCount]
        guard let data = try? JSONSerialization.data(withJSONObject: top, options: [.sortedKeys]) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}

extension Driver.Result {
    /// The checksum a client's sample must match: the `Decodable` and typed paths fold the
    /// decoded Swift values (``BenchRow``, ``TypedRows``), every other client the values (``Digest``).
    func expected(for key: String) -> String {
        key.hasPrefix("sqlclient_decodable") || key.hasPrefix("sqlclient_typed") ? expectedDecodable : expected
    }
}
