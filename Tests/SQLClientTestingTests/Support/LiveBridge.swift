import Foundation
import SQLClientTesting
import XCTest

/// The live test server (pysqlbridge, `scripts/pysqlbridge.sh`) and the clients these tests
/// drive besides `sqlclient`: FreeTDS's `tsql` (Debian freetds-bin) and Microsoft's driver
/// through mssql-python (PyPI, in the project's `.venv`). A missing server fails the test when
/// SQLCLIENT_REQUIRE_LIVE=1 (scripts/test.sh, CI) and skips it otherwise; a missing client skips.
enum LiveBridge {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static var port: Int { Int(ProcessInfo.processInfo.environment["SQLCLIENT_TEST_PORT"] ?? "") ?? 14333 }
    static let user = "demo"
    static var password: String { ProcessInfo.processInfo.environment["SQLCLIENT_DEMO_PASSWORD"] ?? "demo-Passw0rd" }
    static var python: String { packageRoot.appendingPathComponent(".venv/bin/python").path }

    private static let lock = NSLock()
    nonisolated(unsafe) private static var started: Result<Void, Error>?
    nonisolated(unsafe) private static var driver: Result<Void, Error>?

    /// Starts pysqlbridge through its script (a no-op when it already runs).
    static func require() throws {
        let outcome: Result<Void, Error> = lock.withLock {
            if let started { return started }
            let r = Result {
                let run = try ChildProcess.run("/bin/bash", [packageRoot.appendingPathComponent("scripts/pysqlbridge.sh").path, "start"],
                                               environment: ["SQLCLIENT_TEST_PORT": String(port), "SQLCLIENT_DEMO_PASSWORD": password],
                                               timeout: 300)
                guard run.status == 0 else {
                    throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "scripts/pysqlbridge.sh start: \(run.stderr)"])
                }
            }
            started = r
            return r
        }
        if case .failure(let error) = outcome {
            if ProcessInfo.processInfo.environment["SQLCLIENT_REQUIRE_LIVE"] == "1" {
                XCTFail("the live test server is required but not available: \(error)")
                throw error
            }
            throw XCTSkip("the live test server (pysqlbridge) is not available: \(error)")
        }
    }

    static func sqlclient() throws -> String {
        guard let path = ChildProcess.sqlclientExecutable() else { throw XCTSkip("the sqlclient binary is not built next to the tests") }
        return path
    }

    static func tsql() throws -> String {
        guard let path = ["/usr/bin/tsql", "/usr/local/bin/tsql"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw XCTSkip("FreeTDS tsql is not installed (apt-get install freetds-bin)")
        }
        return path
    }

    /// mssql-python in `.venv`, installed by `scripts/msodbc.sh install` when that script exists.
    static func requireMicrosoftDriver() throws {
        let outcome: Result<Void, Error> = lock.withLock {
            if let driver { return driver }
            func available() -> Bool {
                (try? ChildProcess.run(python, ["-c", "import mssql_python"], timeout: 60).status) == 0
            }
            var r: Result<Void, Error> = .success(())
            if !available() {
                let script = packageRoot.appendingPathComponent("scripts/msodbc.sh").path
                if FileManager.default.isExecutableFile(atPath: script) {
                    _ = try? ChildProcess.run("/bin/bash", [script, "install"], timeout: 600)
                }
                if !available() {
                    r = .failure(XCTSkip("mssql-python (Microsoft's ODBC driver) is not installed in .venv: .venv/bin/python -m pip install mssql-python"))
                }
            }
            driver = r
            return r
        }
        try outcome.get()
    }

    /// Runs `script` with mssql-python; its arguments follow.
    static func microsoftDriver(_ script: String, _ arguments: [String]) throws -> ChildProcess.Outcome {
        try requireMicrosoftDriver()
        return try ChildProcess.run(python, ["-c", script] + arguments, timeout: 120)
    }
}
