#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import XCTest

/// Running the built `sqlclient` in tests: with pipes, against the live test server, or on a
/// pseudo-terminal (through Python's `pty`, to see what a user at a terminal sees).
enum CLI {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static func binary() throws -> String {
        guard let url = CLIComparisonTests.sqlclientBinary() else {
            XCTFail("the sqlclient executable was not built next to the tests")
            throw XCTSkip("no sqlclient binary")
        }
        return url.path
    }

    /// The environment of a run: this process's, without the variables that would change the
    /// CLI's behaviour behind a test's back (SQLCMDPASSWORD, TDSVER), plus `extra`.
    static func environment(_ extra: [String: String]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["SQLCMDPASSWORD"] = nil
        env["TDSVER"] = nil
        for (k, v) in extra { env[k] = v }
        return env
    }

    /// Runs sqlclient with `arguments`, `stdin` written then closed (a pipe, not a terminal).
    static func run(_ arguments: [String], environment extra: [String: String] = [:], stdin: String? = nil,
                    directory: URL? = nil) throws -> Result {
        try execute(try binary(), arguments, environment: environment(extra), stdin: stdin, directory: directory)
    }

    /// Runs `executable` with exactly `environment`, `stdin` written then closed; both output
    /// pipes are drained at once, the child waited for with a bound.
    static func execute(_ executable: String, _ arguments: [String], environment: [String: String],
                        stdin: String? = nil, directory: URL? = nil) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        if let directory { process.currentDirectoryURL = directory }
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        let done = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in done.signal() }
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        // Both pipes drained at once (a full stderr pipe must not block the child).
        let errBox = DataBox()
        let errThread = Thread { errBox.set(err.fileHandleForReading.readDataToEndOfFile()) }
        errThread.start()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let status = try process.waitForExit(done, timeout: 120)
        let errData = errBox.wait()
        return Result(status: status, stdout: String(decoding: outData, as: UTF8.self),
                      stderr: String(decoding: errData, as: UTF8.self))
    }

    /// The connection arguments of the live test server (trusting pysqlbridge's self-signed certificate).
    static var liveArguments: [String] { LiveServer.cliArguments }

    /// Runs sqlclient against the live test server (the password through SQLCMDPASSWORD).
    static func live(_ arguments: [String], stdin: String? = nil, environment extra: [String: String] = [:]) throws -> Result {
        try LiveServer.require()
        var env = extra
        env["SQLCMDPASSWORD"] = env["SQLCMDPASSWORD"] ?? LiveServer.password
        return try run(liveArguments + arguments, environment: env, stdin: stdin)
    }

    /// Connection arguments for a plaintext loopback server (replay or endless-rows).
    static func loopbackArguments(port: Int) -> [String] {
        ["-S", "127.0.0.1,\(port)", "-U", "u", "-P", "p", "-N", "notsupported"]
    }

    /// Runs sqlclient on a pseudo-terminal: for each step, waits until the terminal shows
    /// `expect`, then types `send`. Returns what the terminal showed (stdout and stderr
    /// together, with the terminal's own echo of typed text) and the exit status.
    static func onTerminal(_ arguments: [String], environment extra: [String: String] = [:],
                           steps: [(expect: String, send: String)]) throws -> (status: Int32, screen: String) {
        guard let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first(where: {
            FileManager.default.isExecutableFile(atPath: $0)
        }) else { throw XCTSkip("python3 is needed to drive a pseudo-terminal") }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sqlclient-pty-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let spec: [String: Any] = [
            "argv": [try binary()] + arguments,
            "env": environment(extra),
            "steps": steps.map { ["expect": $0.expect, "send": $0.send] },
        ]
        try JSONSerialization.data(withJSONObject: spec).write(to: dir.appendingPathComponent("spec.json"))
        try Data(ptyDriver.utf8).write(to: dir.appendingPathComponent("sqlclient_pty_driver.py"))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [dir.appendingPathComponent("sqlclient_pty_driver.py").path, dir.appendingPathComponent("spec.json").path,
                             dir.appendingPathComponent("result.json").path]
        process.standardInput = FileHandle.nullDevice
        let done = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in done.signal() }
        try process.run()
        _ = try process.waitForExit(done, timeout: 120)
        let data = try Data(contentsOf: dir.appendingPathComponent("result.json"))
        let result = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let screen = try XCTUnwrap(result["screen"] as? String)
        let status = Int32(try XCTUnwrap(result["status"] as? Int))
        if let missing = result["missing"] as? String { XCTFail("the terminal never showed \(missing.debugDescription): \(screen.debugDescription)") }
        return (status, screen)
    }

    private static let ptyDriver = #"""
    import json, os, pty, select, signal, sys, time
    spec = json.load(open(sys.argv[1]))
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(spec["argv"][0], spec["argv"], spec["env"])
    screen = b""
    def pump(until=None, seconds=30.0):
        global screen
        end = time.time() + seconds
        while time.time() < end:
            if until is not None and until.encode() in screen:
                return True
            r, _, _ = select.select([fd], [], [], 0.05)
            if r:
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    return until is None
                if not data:
                    return until is None
                screen += data
        return until is None or until.encode() in screen
    missing = None
    for step in spec["steps"]:
        seen = len(screen)
        if not pump(step["expect"]):
            missing = step["expect"]
            break
        os.write(fd, step["send"].encode())
    pump(None, 30.0)
    try:
        os.kill(pid, signal.SIGKILL) if missing else None
    except OSError:
        pass
    _, status = os.waitpid(pid, 0)
    result = {"screen": screen.decode("utf-8", "replace"), "status": os.waitstatus_to_exitcode(status)}
    if missing is not None:
        result["missing"] = missing
    json.dump(result, open(sys.argv[2], "w"))
    """#
}

final class DataBox: @unchecked Sendable {
    private let lock = NSLock()
    private let ready = DispatchSemaphore(value: 0)
    private var data = Data()
    func set(_ d: Data) {
        lock.withLock { data = d }
        ready.signal()
    }
    func wait() -> Data {
        ready.wait()
        return lock.withLock { data }
    }
}

/// A field of /proc/PID/status in bytes (VmRSS…), or nil.
func processStatusField(pid: Int32, _ field: String) -> Int? {
    #if os(Linux)
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
        return line.split(separator: " ").compactMap { Int($0) }.first.map { $0 * 1024 }
    }
    #endif
    return nil
}
