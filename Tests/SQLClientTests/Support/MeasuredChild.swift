#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Runs a program in a child process of its own and measures it: its exit status, how long it
/// ran, its standard error, and its peak resident set: `VmHWM` of /proc/PID/status (the child's
/// own address space's high-water mark), read every millisecond while it runs. (`ru_maxrss`
/// from `wait4` would not do: posix_spawn's vfork makes the child inherit this large test
/// process's high-water mark across exec.) Standard output goes to /dev/null. A child still
/// running after `timeout` is killed (status then reports the signal).
enum MeasuredChild {
    struct Outcome {
        /// The exit code, or 128 + signal when killed by one.
        var status: Int32
        var seconds: Double
        var peakRSSBytes: Int
        var stderr: String
        var timedOut: Bool
    }

    static func run(_ path: String, _ arguments: [String], timeout: Double) throws -> Outcome {
        let errFile = FileManager.default.temporaryDirectory.appendingPathComponent("measured-\(getpid())-\(UInt32.random(in: 0 ... .max)).err")
        defer { try? FileManager.default.removeItem(at: errFile) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, errFile.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard rc == 0 else { throw POSIXError(POSIXErrorCode(rawValue: rc) ?? .EIO) }
        let started = Date()
        var status: Int32 = 0
        var timedOut = false
        var peak = 0
        while true {
            if let hwm = highWaterMark(pid) { peak = max(peak, hwm) }
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid { break }
            if r < 0 && errno != EINTR { break }
            if Date().timeIntervalSince(started) > timeout, !timedOut {
                timedOut = true
                kill(pid, SIGKILL)
            }
            usleep(1_000)
        }
        let seconds = Date().timeIntervalSince(started)
        let exited = (status & 0x7F) == 0
        let code = exited ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        let stderr = (try? String(contentsOf: errFile, encoding: .utf8)) ?? ""
        return Outcome(status: code, seconds: seconds, peakRSSBytes: peak, stderr: stderr, timedOut: timedOut)
    }

    /// VmHWM of process `pid` in bytes, nil once it has exited (or without /proc).
    static func highWaterMark(_ pid: pid_t) -> Int? {
        #if os(Linux)
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return line.split(separator: " ").compactMap { Int($0) }.first.map { $0 * 1024 }
        }
        return nil
        #else
        return nil
        #endif
    }
}
