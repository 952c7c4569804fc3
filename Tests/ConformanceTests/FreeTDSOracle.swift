import Foundation
import SQLClientTesting
import TDS
import XCTest

/// Runs `freetds/oracle.c` (compiled at test time against freetds-dev) against a replay server
/// and parses what it prints.
enum FreeTDSOracle {
    /// One result set as FreeTDS decoded it.
    struct ResultSet: Equatable {
        var columns: [String] = []
        var columnTypes: [Int] = []
        var rows: [[String?]] = []
        /// FreeTDS's own dbconvert text per row and column (money), for the record.
        var notes: [[Int: String]] = []
    }

    /// The value text standing for "db-lib cannot convert this type" (`VAL i UNSUPPORTED t`).
    static func unsupported(_ type: String) -> String { "<FreeTDS db-lib: no conversion of type \(type)>" }

    /// One batch's output.
    struct Batch {
        var results: [ResultSet] = []
        var counts: [Int] = []
        var returnStatus: [Int] = []
        /// Output parameters (RET lines): name and canonical text (nil = NULL), in order.
        var returnValues: [(name: String, value: String?)] = []
        var messages: [String] = []
        var failures: [String] = []
        /// `--bench`: rows and values converted to native C values, and the seconds it took.
        var benchRows = 0, benchValues = 0, benchSeconds = 0.0
    }

    struct Output {
        var batches: [Batch] = []
        var raw: String = ""
        var ended = false
    }

    static let packageRoot = SharedCaptures.packageRoot(from: #filePath)
    static let source = packageRoot.appendingPathComponent("Tests/ConformanceTests/freetds/oracle.c")

    private static let compileLock = NSLock()
    nonisolated(unsafe) private static var compiled: Result<URL, Error>?

    struct Unavailable: Error, CustomStringConvertible { var description: String }

    /// Compiles the oracle once per test run; throws ``Unavailable`` (tests skip) when the
    /// compiler or freetds-dev is missing.
    static func executable() throws -> URL {
        try compileLock.withLock {
            if let compiled { return try compiled.get() }
            let result: Result<URL, Error> = Result {
                guard FileManager.default.fileExists(atPath: "/usr/include/sybdb.h") else {
                    throw Unavailable(description: "freetds-dev is not installed (no sybdb.h): apt-get install freetds-dev")
                }
                let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sqlclient-oracle-\(getpid())")
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
                let out = dir.appendingPathComponent("oracle")
                let (status, text) = try run("/usr/bin/env", ["cc", "-O1", "-o", out.path, source.path, "-lsybdb"])
                guard status == 0 else { throw Unavailable(description: "cannot compile oracle.c: \(text)") }
                return out
            }
            compiled = result
            return try result.get()
        }
    }

    /// Runs a program and returns its status and combined output.
    static func run(_ path: String, _ arguments: [String], environment: [String: String]? = nil) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// Runs the batches through FreeTDS against `port` at `version` ("7.1" … "7.4").
    static func query(port: UInt16, version: String, batches: [String], bench: Bool = false) throws -> Output {
        let exe = try executable()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("oracle-batches-\(UUID().uuidString).sql")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(batches.map { "-- @@batch\n" + $0 }.joined(separator: "\n").utf8).write(to: file)
        var env = ProcessInfo.processInfo.environment
        // Keep the machine's freetds.conf out of the way: only what the program sets applies.
        let conf = FileManager.default.temporaryDirectory.appendingPathComponent("oracle-freetds.conf")
        if !FileManager.default.fileExists(atPath: conf.path) {
            try Data("[global]\n\tclient charset = UTF-8\n".utf8).write(to: conf)
        }
        env["FREETDSCONF"] = conf.path
        env["FREETDS"] = conf.path
        let (_, text) = try run(exe.path, (bench ? ["--bench"] : []) + ["127.0.0.1:\(port)", version, file.path], environment: env)
        return parse(text)
    }

    static func parse(_ text: String) -> Output {
        var out = Output(raw: text)
        var batch: Batch?
        func finishBatch() { if let b = batch { out.batches.append(b) }; batch = nil }
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            let key = parts[0]
            let rest = parts.count > 1 ? parts[1] : ""
            switch key {
            case "BATCH":
                finishBatch(); batch = Batch()
            case "RESULT":
                batch?.results.append(ResultSet())
            case "COL":
                let f = rest.split(separator: " ", maxSplits: 2).map(String.init)
                guard f.count == 3, var b = batch, !b.results.isEmpty else { continue }
                b.results[b.results.count - 1].columns.append(JSONString.unquote(f[2]) ?? f[2])
                b.results[b.results.count - 1].columnTypes.append(Int(f[1]) ?? -1)
                batch = b
            case "ROW":
                guard var b = batch, !b.results.isEmpty else { continue }
                b.results[b.results.count - 1].rows.append([])
                b.results[b.results.count - 1].notes.append([:])
                batch = b
            case "VAL":
                let f = rest.split(separator: " ", maxSplits: 1).map(String.init)
                guard f.count == 2, var b = batch, let r = b.results.indices.last, !b.results[r].rows.isEmpty else { continue }
                let v: String? = f[1] == "NULL" ? nil
                    : f[1].hasPrefix("UNSUPPORTED ") ? unsupported(String(f[1].dropFirst(12)))
                    : (JSONString.unquote(f[1]) ?? f[1])
                b.results[r].rows[b.results[r].rows.count - 1].append(v)
                batch = b
            case "NOTE":
                let f = rest.split(separator: " ", maxSplits: 2).map(String.init)
                guard f.count == 3, let col = Int(f[0]), var b = batch, let r = b.results.indices.last,
                      !b.results[r].notes.isEmpty else { continue }
                b.results[r].notes[b.results[r].notes.count - 1][col] = JSONString.unquote(f[2]) ?? f[2]
                batch = b
            case "RET":
                let f = rest.split(separator: " ", maxSplits: 1).map(String.init)
                guard f.count == 2 else { continue }
                // <name as JSON> then NULL / UNSUPPORTED t / <JSON>
                let tail = f[1]
                guard let close = JSONString.endOfQuoted(tail) else { continue }
                let name = JSONString.unquote(String(tail[..<close])) ?? ""
                let valueText = tail[close...].trimmingCharacters(in: .whitespaces)
                let v: String? = valueText == "NULL" ? nil
                    : valueText.hasPrefix("UNSUPPORTED ") ? unsupported(String(valueText.dropFirst(12)))
                    : (JSONString.unquote(valueText) ?? valueText)
                batch?.returnValues.append((name, v))
            case "BENCH":
                let f = rest.split(separator: " ").map(String.init)
                if f.count == 4 {
                    batch?.benchRows = Int(f[0]) ?? -1
                    batch?.benchValues = Int(f[1]) ?? -1
                    batch?.benchSeconds = Double(f[3]) ?? -1
                }
            case "COUNT": batch?.counts.append(Int(rest) ?? -99)
            case "RETSTATUS": batch?.returnStatus.append(Int(rest) ?? -99)
            case "MSG", "ERR": batch?.messages.append(key + " " + rest)
            case "FAIL": if batch != nil { batch?.failures.append(rest) } else { out.batches.append(Batch(failures: [rest])) }
            case "END": finishBatch(); out.ended = true
            default: break
            }
        }
        finishBatch()
        return out
    }
}

/// JSON string unquoting for the oracle's output (UTF-8 text, `\uXXXX` escapes).
enum JSONString {
    /// The index just past the closing quote of the JSON string that starts `s`.
    static func endOfQuoted(_ s: String) -> String.Index? {
        guard s.first == "\"" else { return nil }
        var escaped = false
        var i = s.index(after: s.startIndex)
        while i < s.endIndex {
            let c = s[i]
            if escaped { escaped = false } else if c == "\\" { escaped = true } else if c == "\"" { return s.index(after: i) }
            i = s.index(after: i)
        }
        return nil
    }

    static func unquote(_ s: String) -> String? {
        guard let data = "[\(s)]".data(using: .utf8),
              let array = try? JSONSerialization.jsonObject(with: data) as? [String], let first = array.first else { return nil }
        return first
    }
}
