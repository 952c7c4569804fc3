// Foundation's Process: no child processes on iOS (and the other Apple devices), so no ChildProcess.
#if !(os(iOS) || os(tvOS) || os(watchOS) || os(visionOS))
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process for tests that drive command-line tools (`sqlclient record`/`replay`,
/// FreeTDS's `tsql`, Python): standard input, output and error are pipes; output and error
/// are collected as they arrive, so a test can wait for a line (`listening on …`) while the
/// child runs, then close its input, signal it, and wait for it with a bound.
package final class ChildProcess: @unchecked Sendable {
    package struct Outcome: Sendable {
        package var status: Int32
        package var stdout: String
        package var stderr: String
    }

    private let process = Process()
    private let input = Pipe()
    private let lock = NSCondition()
    private var out = Data()
    private var err = Data()
    private var openStreams = 2
    private let exited = DispatchSemaphore(value: 0)

    /// Starts `executable` with `arguments`; `environment` is added to this process's.
    /// - Throws: Foundation's error when it cannot be started.
    package init(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        process.environment = env
        let outPipe = Pipe(), errPipe = Pipe()
        process.standardInput = input
        process.standardOutput = outPipe
        process.standardError = errPipe
        process.terminationHandler = { [exited] _ in exited.signal() }
        try process.run()
        for (pipe, isOut) in [(outPipe, true), (errPipe, false)] {
            Thread.detachNewThread { [self] in
                let handle = pipe.fileHandleForReading
                while true {
                    let chunk = handle.availableData
                    lock.lock()
                    if chunk.isEmpty {
                        openStreams -= 1
                        lock.broadcast()
                        lock.unlock()
                        return
                    }
                    if isOut { out.append(chunk) } else { err.append(chunk) }
                    lock.broadcast()
                    lock.unlock()
                }
            }
        }
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    package var pid: Int32 { process.processIdentifier }

    /// Standard output so far.
    package var stdout: String { lock.lock(); defer { lock.unlock() }; return String(decoding: out, as: UTF8.self) }
    /// Standard error so far.
    package var stderr: String { lock.lock(); defer { lock.unlock() }; return String(decoding: err, as: UTF8.self) }

    /// Waits (up to `timeout` seconds) for a line of standard output containing `text`; returns it.
    package func waitForLine(containing text: String, timeout: Double = 30) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        lock.lock()
        defer { lock.unlock() }
        while true {
            let lines = String(decoding: out, as: UTF8.self).split(separator: "\n")
            if let line = lines.first(where: { $0.contains(text) }) { return String(line) }
            if openStreams == 0 || !lock.wait(until: deadline) { return nil }
        }
    }

    package func write(_ text: String) {
        input.fileHandleForWriting.write(Data(text.utf8))
    }

    /// Closes standard input (a tool that serves until end of input then stops).
    package func closeInput() {
        try? input.fileHandleForWriting.close()
    }

    package func signal(_ number: Int32) {
        kill(process.processIdentifier, number)
    }

    /// Waits for the child to exit (killing it after `timeout` seconds) and returns its status and output.
    /// - Throws: a `CocoaError` when it had to be killed.
    package func wait(timeout: Double = 120) throws -> Outcome {
        let deadline = Date().addingTimeInterval(timeout)
        var status: Int32?
        while status == nil {
            if exited.wait(timeout: .now() + 0.2) == .success { status = process.terminationStatus; break }
            // Foundation has been seen to miss a child's exit: look without reaping (WNOWAIT),
            // so Foundation can still reap it.
            var info = siginfo_t()
            if waitid(P_PID, id_t(process.processIdentifier), &info, WEXITED | WNOHANG | WNOWAIT) == 0 {
                #if os(Linux)
                if info._sifields._sigchld.si_pid == process.processIdentifier { status = info._sifields._sigchld.si_status }
                #else
                if info.si_pid == process.processIdentifier { status = info.si_status }
                #endif
            }
            if status == nil, Date() > deadline {
                kill(process.processIdentifier, SIGKILL)
                throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey:
                    "\(process.executableURL?.lastPathComponent ?? "child") did not exit within \(Int(timeout)) s"])
            }
        }
        lock.lock()
        while openStreams > 0, lock.wait(until: Date().addingTimeInterval(5)) {}
        let outcome = Outcome(status: status ?? -1, stdout: String(decoding: out, as: UTF8.self),
                              stderr: String(decoding: err, as: UTF8.self))
        lock.unlock()
        return outcome
    }

    /// Runs a command to its end with `stdin` as its input.
    package static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                            stdin: String? = nil, timeout: Double = 120) throws -> Outcome {
        let child = try ChildProcess(executable, arguments, environment: environment)
        if let stdin { child.write(stdin) }
        child.closeInput()
        return try child.wait(timeout: timeout)
    }

    /// The built `sqlclient` executable, next to the test bundle (nil when it was not built).
    package static func sqlclientExecutable() -> String? {
        var candidates: [URL] = []
        candidates.append(URL(fileURLWithPath: CommandLine.arguments.first ?? "").deletingLastPathComponent())
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
        candidates.append(Bundle.main.bundleURL)
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            candidates.append(bundle.bundleURL.deletingLastPathComponent())
        }
        return candidates.map { $0.appendingPathComponent("sqlclient").path }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
#endif
