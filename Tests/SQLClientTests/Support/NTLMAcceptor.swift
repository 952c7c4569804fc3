#if canImport(Glibc)
import Glibc
#endif
import Foundation
import XCTest

/// pyspnego's NTLM acceptor (server side) through scripts/pysqlbridge_ntlm.py: an acceptor nobody
/// here wrote, in the project's venv (scripts/pysqlbridge.sh install puts pyspnego 0.12.4 there).
/// Tests skip with a message when the venv or pyspnego is missing.
enum NTLMAcceptor {
    static let script = LiveServer.packageRoot.appendingPathComponent("scripts/pysqlbridge_ntlm.py").path

    /// The venv's python, when pyspnego and pysqlbridge import.
    static func python() throws -> URL {
        let python = LiveServer.packageRoot.appendingPathComponent(".venv/bin/python")
        guard FileManager.default.isExecutableFile(atPath: python.path) else {
            throw XCTSkip("the project's venv is missing (scripts/pysqlbridge.sh install)")
        }
        let check = Process()
        check.executableURL = python
        check.arguments = ["-c", "import spnego, pysqlbridge"]
        check.standardOutput = FileHandle.nullDevice
        check.standardError = FileHandle.nullDevice
        let done = DispatchSemaphore(value: 0)
        check.terminationHandler = { _ in done.signal() }
        try check.run()
        guard try check.waitForExit(done, timeout: 60) == 0 else {
            throw XCTSkip("pyspnego is not installed in .venv (scripts/pysqlbridge.sh install)")
        }
        return python
    }

    /// An NTLM_USER_FILE with `DOMAIN:USER:PASSWORD` lines, in a temporary folder.
    static func userFile(_ lines: [String]) throws -> String {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("sqlclient-ntlm-users-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString)")
        try (lines.joined(separator: "\n") + "\n").write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    /// A running `pysqlbridge_ntlm.py` (serve or step mode), killed by `stop()`.
    final class Process_: @unchecked Sendable {
        let process = Process()
        private let input = Pipe()
        private let output = Pipe()
        private let exited = DispatchSemaphore(value: 0)
        private var buffer: [UInt8] = []

        init(arguments: [String], userFile: String) throws {
            process.executableURL = try NTLMAcceptor.python()
            process.arguments = [NTLMAcceptor.script] + arguments
            var env = ProcessInfo.processInfo.environment
            env["NTLM_USER_FILE"] = userFile
            process.environment = env
            process.standardInput = input
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            process.terminationHandler = { [exited] _ in exited.signal() }
            try process.run()
        }

        /// Writes one line to the script's stdin.
        func send(_ line: String) {
            input.fileHandleForWriting.write(Data((line + "\n").utf8))
        }

        /// The next line the script prints (nil at its end).
        func readLine() -> String? {
            while true {
                if let nl = buffer.firstIndex(of: 0x0A) {
                    let line = String(decoding: buffer[..<nl], as: UTF8.self)
                    buffer.removeSubrange(...nl)
                    return line
                }
                let data = output.fileHandleForReading.availableData
                if data.isEmpty { return nil }
                buffer += data
            }
        }

        func stop() {
            // SIGKILL: a child spawned from a Dispatch thread inherits its blocked signals.
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            exited.wait()
        }
    }

    /// Starts the NTLM-authenticating pysqlbridge (serve mode) and returns it with its port.
    static func startServer(userFile: String, spnego: Bool = false) throws -> (Process_, Int) {
        let config = LiveServer.packageRoot.appendingPathComponent("Fixtures/demo/config.json").path
        let server = try Process_(arguments: ["serve", config] + (spnego ? ["--spnego"] : []), userFile: userFile)
        guard let line = server.readLine(), line.hasPrefix("listening "), let port = Int(line.dropFirst(10)) else {
            server.stop()
            throw XCTSkip("the NTLM test server did not start")
        }
        return (server, port)
    }
}
