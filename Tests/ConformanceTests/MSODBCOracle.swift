import Foundation
import SQLClientTesting
import TDS
import XCTest

/// Runs `msodbc/oracle.c` (compiled at test time against unixODBC) with Microsoft ODBC Driver 18
/// (installed from PyPI into the project's `.venv` by `scripts/msodbc.sh install`) against a
/// replay server. The program prints the same lines as the FreeTDS one, so its output is parsed
/// by ``FreeTDSOracle/parse(_:)`` into the same ``FreeTDSOracle/Output``.
enum MSODBCOracle {
    static let source = FreeTDSOracle.packageRoot.appendingPathComponent("Tests/ConformanceTests/msodbc/oracle.c")

    private static let compileLock = NSLock()
    nonisolated(unsafe) private static var compiled: Result<(exe: URL, driver: String), Error>?

    /// The driver library: `SQLCLIENT_MSODBC_DRIVER`, else the one `mssql-python-odbc` put in
    /// the project's `.venv` (the Debian/Ubuntu build).
    static func driverPath() -> String? {
        if let path = ProcessInfo.processInfo.environment["SQLCLIENT_MSODBC_DRIVER"], !path.isEmpty {
            return FileManager.default.fileExists(atPath: path) ? path : nil
        }
        let lib = FreeTDSOracle.packageRoot.appendingPathComponent(".venv/lib")
        guard let pythons = try? FileManager.default.contentsOfDirectory(atPath: lib.path) else { return nil }
        for python in pythons.sorted() where python.hasPrefix("python") {
            let dir = lib.appendingPathComponent("\(python)/site-packages/mssql_python_odbc/libs/linux/debian_ubuntu/x86_64/lib")
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir.path) else { continue }
            if let name = names.sorted().last(where: { $0.hasPrefix("libmsodbcsql-18") }) {
                return dir.appendingPathComponent(name).path
            }
        }
        return nil
    }

    /// Microsoft's Rust TDS core (mssql-python-rs, pulled by mssql-python), which ships an ODBC
    /// driver of its own (`mssql_py_core/.../mssqlodbc.so`): the same program drives it.
    static func rustDriverPath() -> String? {
        let lib = FreeTDSOracle.packageRoot.appendingPathComponent(".venv/lib")
        guard let pythons = try? FileManager.default.contentsOfDirectory(atPath: lib.path) else { return nil }
        for python in pythons.sorted() where python.hasPrefix("python") {
            let path = lib.appendingPathComponent("\(python)/site-packages/mssql_py_core/libs/linux/glibc/x86_64/lib/mssqlodbc.so").path
            if FileManager.default.fileExists(atPath: path) { return path }
        }
        return nil
    }

    /// Compiles the program once per test run; throws ``FreeTDSOracle/Unavailable`` (the
    /// comparison with Microsoft's driver is skipped) when unixodbc-dev or the driver is missing.
    static func executable() throws -> (exe: URL, driver: String) {
        try compileLock.withLock {
            if let compiled { return try compiled.get() }
            let result: Result<(exe: URL, driver: String), Error> = Result {
                guard FileManager.default.fileExists(atPath: "/usr/include/sql.h") else {
                    throw FreeTDSOracle.Unavailable(description: "unixodbc-dev is not installed (no sql.h): scripts/msodbc.sh install")
                }
                guard let driver = driverPath() else {
                    throw FreeTDSOracle.Unavailable(description: "Microsoft ODBC Driver 18 not found in .venv (mssql-python-odbc): scripts/msodbc.sh install")
                }
                let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sqlclient-msodbc-oracle-\(getpid())")
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
                let out = dir.appendingPathComponent("msodbc-oracle")
                let (status, text) = try FreeTDSOracle.run("/usr/bin/env", ["cc", "-O1", "-o", out.path, source.path, "-lodbc"])
                guard status == 0 else { throw FreeTDSOracle.Unavailable(description: "cannot compile msodbc/oracle.c: \(text)") }
                return (out, driver)
            }
            compiled = result
            return try result.get()
        }
    }

    /// Runs the batches through Microsoft's driver against `port` (it logs in at TDS 7.4 and
    /// takes the version the server acknowledges). A batch the driver never finishes (it waits
    /// for bytes a malformed value made it expect) is returned with the failure `timeout`, and
    /// the batches after it run in a new process.
    static func query(port: UInt16, batches: [String], driver: String? = nil) throws -> FreeTDSOracle.Output {
        var combined = FreeTDSOracle.Output()
        var start = 0
        while start < batches.count {
            var part = try run(port: port, batches: Array(batches[start...]), driver: driver)
            combined.raw += part.raw
            guard let last = part.batches.last, last.failures.contains("timeout") else {
                combined.batches += part.batches
                combined.ended = part.ended
                return combined
            }
            part.batches[part.batches.count - 1].failures = ["timeout"]
            combined.batches += part.batches
            start += part.batches.count
        }
        combined.ended = true
        return combined
    }

    private static func run(port: UInt16, batches: [String], driver: String?) throws -> FreeTDSOracle.Output {
        let (exe, msodbc) = try executable()
        let driver = driver ?? msodbc
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("msodbc-batches-\(UUID().uuidString).sql")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(batches.map { "-- @@batch\n" + $0 }.joined(separator: "\n").utf8).write(to: file)
        var env = ProcessInfo.processInfo.environment
        // No DSN or odbcinst.ini of the machine's: the driver is named by its path.
        env["ODBCSYSINI"] = FileManager.default.temporaryDirectory.path
        env["ODBCINI"] = "/dev/null"
        let (_, text) = try FreeTDSOracle.run(exe.path, [driver, "127.0.0.1:\(port)", file.path], environment: env)
        // SQLCLIENT_MSODBC_DUMP=DIR keeps each run's batches and output there, for debugging.
        if let dir = ProcessInfo.processInfo.environment["SQLCLIENT_MSODBC_DUMP"], !dir.isEmpty {
            let name = "msodbc-\(port)-\(UUID().uuidString.prefix(8))"
            try? FileManager.default.copyItem(atPath: file.path, toPath: dir + "/" + name + ".sql")
            try? Data(text.utf8).write(to: URL(fileURLWithPath: dir + "/" + name + ".out"))
        }
        return FreeTDSOracle.parse(text)
    }

    /// The batch text for `expectation`: SQL as is; for output parameters the RPC line and one
    /// `-- @@out SQLTYPE:SIZE:DIGITS` spec per parameter (how the program binds it).
    static func batch(for expectation: OracleFixtures.Expectation) -> String {
        guard expectation.kind == .outputParameters else { return expectation.sql }
        return expectation.sql + "\n-- @@out " + expectation.sentTypes.map(outputSpec).joined(separator: " ")
    }

    /// ODBC SQL type, column size and decimal digits of a parameter of TYPE_INFO `t`.
    static func outputSpec(_ t: TypeInfo) -> String {
        let (sqlType, size, digits): (Int, Int, Int)
        switch t.type {
        case .int1: (sqlType, size, digits) = (-6, 3, 0)
        case .int2: (sqlType, size, digits) = (5, 5, 0)
        case .int4: (sqlType, size, digits) = (4, 10, 0)
        case .int8: (sqlType, size, digits) = (-5, 19, 0)
        case .intN: (sqlType, size, digits) = t.length == 1 ? (-6, 3, 0) : t.length == 2 ? (5, 5, 0) : t.length == 4 ? (4, 10, 0) : (-5, 19, 0)
        case .bit, .bitN: (sqlType, size, digits) = (-7, 1, 0)
        case .flt4: (sqlType, size, digits) = (7, 24, 0)
        case .flt8: (sqlType, size, digits) = (6, 53, 0)
        case .fltN: (sqlType, size, digits) = t.length == 4 ? (7, 24, 0) : (6, 53, 0)
        case .money, .money4, .moneyN: (sqlType, size, digits) = (3, t.length == 4 ? 10 : 19, 4)
        case .decimal, .decimalN: (sqlType, size, digits) = (3, Int(t.precision), Int(t.scale))
        case .numeric, .numericN: (sqlType, size, digits) = (2, Int(t.precision), Int(t.scale))
        case .datetime, .datetim4, .datetimN: (sqlType, size, digits) = t.length == 4 ? (93, 16, 0) : (93, 23, 3)
        case .dateN: (sqlType, size, digits) = (91, 10, 0)
        case .timeN: (sqlType, size, digits) = (-154, 8 + (t.scale == 0 ? 0 : Int(t.scale) + 1), Int(t.scale))
        case .datetime2N: (sqlType, size, digits) = (93, 19 + (t.scale == 0 ? 0 : Int(t.scale) + 1), Int(t.scale))
        case .datetimeOffsetN: (sqlType, size, digits) = (-155, 26 + (t.scale == 0 ? 0 : Int(t.scale) + 1), Int(t.scale))
        case .guid: (sqlType, size, digits) = (-11, 36, 0)
        case .bigBinary, .binary: (sqlType, size, digits) = (-2, t.length, 0)
        case .bigVarBinary, .varbinary: (sqlType, size, digits) = (-3, t.isPLP ? 0 : t.length, 0)
        case .nchar: (sqlType, size, digits) = (-8, t.length / 2, 0)
        case .nvarchar: (sqlType, size, digits) = (-9, t.isPLP ? 0 : t.length / 2, 0)
        case .bigChar, .char: (sqlType, size, digits) = (1, t.length, 0)
        case .bigVarChar, .varchar: (sqlType, size, digits) = (12, t.isPLP ? 0 : t.length, 0)
        case .xml: (sqlType, size, digits) = (-152, 0, 0)
        case .ssVariant: (sqlType, size, digits) = (-150, 8000, 0)
        default: (sqlType, size, digits) = (-9, 4000, 0)
        }
        return "\(sqlType):\(size):\(digits)"
    }
}

/// Known differences between Microsoft ODBC Driver 18's decoding and the correct value (see
/// Fixtures/oracle/README.md); anything else it does differently fails the oracle.
enum MSODBCDeviations {
    static let all: [PeerDeviation] = [
        .bomDropped(reason: "a leading U+FEFF (ZERO WIDTH NO-BREAK SPACE) of an nvarchar value is dropped when read as SQL_C_WCHAR, as FreeTDS drops it; it is data in SQL Server and SQLClient keeps it"),
    ]

    /// The driver logs in at TDS 7.4 and accepts a LOGINACK of 7.2, 7.3 or 7.4; a 7.1 LOGINACK
    /// fails the login with "Protocol error in TDS stream" (MSODBCOracleTests reports whether it still does).
    static func speaks(_ version: TDSVersion) -> Bool { version.generation >= 0x72 }

    static let rules = PeerRules(peer: "MSODBC", deviations: all, observedOn: [.client])
}

/// Known differences of Microsoft's Rust TDS core (mssql-python-rs 0.3.0, its `mssqlodbc.so`)
/// from the correct value, driven by the same program as Microsoft ODBC Driver 18.
enum MSRustDeviations {
    static let all: [PeerDeviation] = [
        PeerDeviation(
            id: "variant-unsupported",
            reason: "sql_variant values cannot be read: SQLColAttribute(SQL_CA_SS_VARIANT_SQL_TYPE) fails with HY091 (invalid descriptor field identifier), so the base type is unknown",
            explains: { type, _, _, expected, value in type == "sql_variant" && expected != nil && value == "REFUSED" }),
        .bomDropped(reason: "a leading U+FEFF of an nvarchar value is dropped when read as SQL_C_WCHAR, as Microsoft ODBC Driver 18 and FreeTDS drop it"),
        PeerDeviation(
            id: "empty-image-is-null",
            reason: "an empty image value (TextPtr present, length 0) is read as NULL",
            explains: { type, _, _, expected, value in type == "image" && expected == "0x" && value == nil }),
    ]

    static let rules = PeerRules(peer: "MSRust", deviations: all, reportsRowCounts: false, observedOn: [.client],
                                 outputParametersShifted: true)
}
