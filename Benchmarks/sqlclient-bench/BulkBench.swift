import Foundation
import SQLClient
import SQLClientTesting
import TDS

/// `sqlclient-bench bulk`: rows/s of bulk loads into a server that only counts
/// (SQLClientTesting.BulkLoadServer, rows decoded and counted, none kept), for the `narrow` and
/// `wide` workloads' rows: SQLClient's `bulkInsert` (rows generated as they are taken), `sqlclient
/// bcp` and FreeTDS's `freebcp` on the same character file, and mssql-python's `cursor.bulkcopy()`
/// (Microsoft's Rust core) on the same rows read from that file into Python values beforehand.
/// See Benchmarks/README.md, "Bulk load".
enum BulkBench {
    static let usage = """
    usage: sqlclient-bench bulk [--rows N] [--workload narrow|wide]... [--repeat N] [--no-freetds] [--no-mssql-python]
                                [--no-bcp] [--json]
    """

    struct Options {
        var rows = 1_000_000
        var workloads: [String] = []
        var repeats = 3
        var freetds = true
        var mssqlPython = true
        var bcp = true
        var json = false
        var port = 0
    }

    static func parse(_ args: ArraySlice<String>) -> Options {
        var o = Options()
        var it = args.makeIterator()
        func int(_ flag: String) -> Int {
            guard let v = it.next(), let n = Int(v.replacingOccurrences(of: "_", with: "")), n > 0 else {
                note("sqlclient-bench bulk: \(flag) needs a positive number\n\(usage)"); exit(2)
            }
            return n
        }
        while let a = it.next() {
            switch a {
            case "--rows": o.rows = int(a)
            case "--repeat": o.repeats = int(a)
            case "--port": o.port = int(a)
            case "--workload":
                guard let v = it.next(), ["narrow", "wide"].contains(v) else { note(usage); exit(2) }
                o.workloads.append(v)
            case "--no-freetds": o.freetds = false
            case "--no-mssql-python": o.mssqlPython = false
            case "--no-bcp": o.bcp = false
            case "--json": o.json = true
            default: note("sqlclient-bench bulk: unknown argument \(a)\n\(usage)"); exit(2)
            }
        }
        if o.workloads.isEmpty { o.workloads = ["narrow", "wide"] }
        return o
    }

    static func workload(_ name: String, rows: Int) -> Workload {
        name == "narrow" ? Workload.narrow(rows: rows) : Workload.wide(rows: rows)
    }

    /// `bulk`, `bulk-client` (a child: one bulkInsert, prints a Sample line).
    static func main(_ subcommand: String, _ args: ArraySlice<String>) async throws {
        let o = parse(args)
        switch subcommand {
        case "bulk-client":
            print(try await client(workload(o.workloads[0], rows: o.rows), port: o.port).jsonLine())
        default:
            try await driver(o)
        }
    }

    // MARK: The child: SQLClient's bulkInsert

    static func client(_ w: Workload, port: Int) async throws -> Sample {
        let connection = try await SQLConnection.connect(SQLConnectionConfiguration(
            address: SQLServerAddress(host: "127.0.0.1", port: port), user: "bench", password: "bench",
            encryption: .notSupported, packetSize: 32_767))
        let rows = (0 ..< w.rows).lazy.map { w.makeRow($0 % w.blockSize) }
        Measure.resetPeakRSS()
        let start = Measure.now()
        let result = try await connection.bulkInsert(into: "dbo." + w.name, rows: rows)
        let seconds = Measure.now() - start
        await connection.close()
        return Sample(rows: result.rowsCopied, bytes: 0, seconds: seconds, checksum: "", allocations: nil,
                      peakRSS: Measure.peakRSS, packetSize: 32_767)
    }

    // MARK: The driver

    struct Result: Codable {
        var workload: String
        var client: String
        var rowsPerSecond: Double
        var seconds: Double
        var peakRSS: Int?
        var rowsCounted: Int
    }

    /// A value as `sqlclient bcp` and `freebcp` read it in character mode (empty = NULL, binary as hex).
    static func fieldText(_ v: SQLValue) -> String {
        switch v {
        case .null: return ""
        case .binary(let b): return String(SQLValue.hexText(b).dropFirst(2))
        default: return v.canonicalText ?? ""
        }
    }

    /// The Python conversion of each column (see `pythonScript`).
    static func pythonKind(_ t: TypeInfo) -> String {
        switch t.type {
        case .int1, .int2, .int4, .int8, .intN: return "int"
        case .bit, .bitN: return "bit"
        case .flt4, .flt8, .fltN: return "float"
        case .decimalN, .numericN, .moneyN, .money: return "dec"
        case .datetimN, .datetime, .datetime2N: return "datetime"
        case .dateN: return "date"
        case .guid: return "uuid"
        case .bigVarBinary, .bigBinary: return "bytes"
        default: return "str"
        }
    }

    static let pythonScript = """
        import datetime, decimal, json, sys, time, uuid
        import mssql_python
        port, table, path, kinds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(",")
        def dt(s):
            head, _, frac = s.partition(".")
            return datetime.datetime.fromisoformat(head + ("." + frac[:6].ljust(6, "0") if frac else ""))
        conv = {"int": int, "bit": lambda s: s == "1", "float": float, "dec": decimal.Decimal, "datetime": dt,
                "date": datetime.date.fromisoformat, "uuid": uuid.UUID, "bytes": bytes.fromhex, "str": str}
        fs = [conv[k] for k in kinds]
        rows = []
        with open(path, encoding="utf-8") as f:
            for line in f:
                parts = line.rstrip("\\n").split("\\t")
                rows.append(tuple(None if p == "" else c(p) for c, p in zip(fs, parts)))
        conn = mssql_python.connect(f"Server=127.0.0.1,{port};UID=bench;PWD=bench;Encrypt=no;Database=master;Packet Size=32767")
        cur = conn.cursor()
        start = time.monotonic()
        result = cur.bulkcopy(table, rows, timeout=0)
        print(json.dumps({"seconds": time.monotonic() - start, "rows": result["rows_copied"]}))
        """

    static func driver(_ o: Options) async throws {
        let exe = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        let sqlclient = exe.deletingLastPathComponent().appendingPathComponent("sqlclient").path
        let root = SharedCaptures.packageRoot(from: #filePath)
        let python = root.appendingPathComponent(".venv/bin/python").path
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sqlclient-bench-bulk-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let script = dir.appendingPathComponent("bulkcopy.py")
        try Data(pythonScript.utf8).write(to: script)

        let workloads = o.workloads.map { workload($0, rows: o.rows) }
        var tables: [String: [ColumnMetadata]] = [:]
        for w in workloads { tables[w.name] = w.columns }
        let server = BulkLoadServer(tables: tables, recordsRows: false)
        let port = try server.start()
        defer { server.stop() }
        let conf = dir.appendingPathComponent("freetds.conf")
        try Data("[bulk]\n\thost = 127.0.0.1\n\tport = \(port)\n\ttds version = 7.4\n\tencryption = off\n\tclient charset = UTF-8\n"
            .utf8).write(to: conf)
        let freebcp = o.freetds ? Driver.which("freebcp") : nil
        if o.freetds, freebcp == nil { note("sqlclient-bench bulk: no freebcp (apt-get install freetds-bin): skipped") }
        var hasPython = false
        if o.mssqlPython {
            hasPython = FileManager.default.isExecutableFile(atPath: python)
                && Driver.run(python, ["-c", "import mssql_python, mssql_py_core"]).0 == 0
            if !hasPython { note("sqlclient-bench bulk: mssql-python not in .venv (pip install mssql-python): skipped") }
        }

        var results: [Result] = []
        for w in workloads {
            // The character file for bcp, freebcp and the Python rows.
            let file = dir.appendingPathComponent("\(w.name).tsv")
            FileManager.default.createFile(atPath: file.path, contents: nil)
            let handle = try FileHandle(forWritingTo: file)
            var chunk = ""
            for i in 0 ..< w.rows {
                chunk += w.makeRow(i % w.blockSize).map(fieldText).joined(separator: "\t") + "\n"
                if chunk.utf8.count > 1 << 20 { handle.write(Data(chunk.utf8)); chunk = "" }
            }
            handle.write(Data(chunk.utf8))
            try handle.close()
            note("sqlclient-bench bulk: \(w.name): \(w.rows) rows")

            var clients: [(String, () -> (Double, Int?)?)] = []
            clients.append(("SQLClient bulkInsert", {
                let (status, out, err) = Driver.run(exe.path, ["bulk-client", "--workload", w.name, "--rows", String(o.rows),
                                                               "--port", String(port)])
                guard status == 0, let line = out.split(separator: "\n").last, let s = Sample.parse(line) else {
                    note("bulk-client failed: \(err)"); return nil
                }
                return (s.seconds, s.peakRSS)
            }))
            if o.bcp { clients.append(("sqlclient bcp", {
                let start = Measure.now()
                let (status, out, err) = Driver.run(sqlclient, ["bcp", "dbo." + w.name, "in", file.path, "-S", "127.0.0.1,\(port)",
                                                                "-U", "bench", "-P", "bench", "-N", "notsupported", "-c", "-a", "32767"])
                guard status == 0 else { note("sqlclient bcp failed: \(out) \(err)"); return nil }
                return (Measure.now() - start, nil)
            })) }
            if let freebcp {
                clients.append(("freebcp (FreeTDS)", {
                    let start = Measure.now()
                    let (status, out, err) = Driver.run(freebcp, ["dbo." + w.name, "in", file.path, "-S", "bulk", "-U", "bench",
                                                                  "-P", "bench", "-c", "-A", "32767"],
                                                        environment: ["FREETDSCONF": conf.path, "FREETDS": conf.path])
                    guard status == 0 else { note("freebcp failed: \(out) \(err)"); return nil }
                    return (Measure.now() - start, nil)
                }))
            }
            if hasPython {
                let kinds = w.columns.map { pythonKind($0.typeInfo) }.joined(separator: ",")
                clients.append(("mssql-python bulkcopy", {
                    let (status, out, err) = Driver.run(python, [script.path, String(port), "dbo." + w.name, file.path, kinds])
                    guard status == 0, let line = out.split(separator: "\n").last,
                          let json = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                          let seconds = json["seconds"] as? Double else {
                        note("mssql-python failed: \(out) \(err.suffix(2000))"); return nil
                    }
                    return (seconds, nil)
                }))
            }
            for (name, measure) in clients {
                var times: [Double] = []
                var rss: Int?
                var counted = 0
                for _ in 0 ..< o.repeats {
                    let before = server.loads.count
                    guard let (seconds, peak) = measure() else { break }
                    counted = server.loads.dropFirst(before).reduce(0) { $0 + $1.rowCount }
                    if counted != w.rows { note("\(name): the server counted \(counted) rows, not \(w.rows)") }
                    times.append(seconds)
                    rss = peak ?? rss
                }
                guard !times.isEmpty else { continue }
                let median = times.sorted()[times.count / 2]
                results.append(Result(workload: w.name, client: name, rowsPerSecond: Double(w.rows) / median, seconds: median,
                                      peakRSS: rss, rowsCounted: counted))
                note("  \(name): \(Int(Double(w.rows) / median)) rows/s (\(String(format: "%.2f", median)) s)")
            }
            try? FileManager.default.removeItem(at: file)
        }
        if o.json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(results), as: UTF8.self))
        } else {
            print("| workload | client | rows/s | seconds (median of \(o.repeats)) | peak RSS |")
            print("|---|---|---:|---:|---:|")
            for r in results {
                let rss = r.peakRSS.map { "\($0 / (1 << 20)) MiB" } ?? "–"
                print("| \(r.workload) | \(r.client) | \(Int(r.rowsPerSecond)) | \(String(format: "%.2f", r.seconds)) | \(rss) |")
            }
        }
    }
}
