import Foundation

/// A test CA and a server certificate it signed (SAN: DNS localhost, IP 127.0.0.1, IP ::1),
/// made at test time with the `openssl` command into a temporary folder.
struct TestCertificates {
    let directory: URL
    var caCertificate: String { directory.appendingPathComponent("ca.pem").path }
    var serverCertificate: String { directory.appendingPathComponent("server.pem").path }
    var serverKey: String { directory.appendingPathComponent("server.key").path }
    /// A certificate from the same CA naming DNS localhost only (no IP address): valid for
    /// "localhost", refused for "127.0.0.1".
    var localhostOnlyCertificate: String { directory.appendingPathComponent("localhost-only.pem").path }
    var localhostOnlyKey: String { directory.appendingPathComponent("localhost-only.key").path }
    /// A second, unrelated CA (for "wrong CA" cases).
    var otherCACertificate: String { directory.appendingPathComponent("other-ca.pem").path }

    /// Makes (once per process) the certificates, or throws XCTSkip-worthy errors when `openssl` is missing.
    static func make() throws -> TestCertificates {
        try lock.withLock {
            if let made = cached { return made }
            let dir = FileManager.default.temporaryDirectory
                .appendingPathComponent("sqlclient-test-certs-\(ProcessInfo.processInfo.processIdentifier)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            let ext = dir.appendingPathComponent("san.ext")
            try "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nbasicConstraints=CA:FALSE\n"
                .write(to: ext, atomically: true, encoding: .utf8)
            try "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n"
                .write(to: dir.appendingPathComponent("localhost-only.ext"), atomically: true, encoding: .utf8)
            let steps: [[String]] = [
                ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
                 "-days", "2", "-subj", "/CN=SQLClient Test CA"],
                ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "other-ca.key", "-out", "other-ca.pem",
                 "-days", "2", "-subj", "/CN=Some Other CA"],
                ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
                 "-subj", "/CN=localhost"],
                ["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", "server.pem", "-days", "2", "-extfile", "san.ext"],
                ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "localhost-only.key", "-out", "localhost-only.csr",
                 "-subj", "/CN=localhost"],
                ["x509", "-req", "-in", "localhost-only.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", "localhost-only.pem", "-days", "2", "-extfile", "localhost-only.ext"],
            ]
            for args in steps {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                process.arguments = ["openssl"] + args
                process.currentDirectoryURL = dir
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                let done = DispatchSemaphore(value: 0)
                process.terminationHandler = { _ in done.signal() }
                try process.run()
                guard try process.waitForExit(done, timeout: 120) == 0 else {
                    throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "openssl \(args[0]) failed"])
                }
            }
            let made = TestCertificates(directory: dir)
            cached = made
            return made
        }
    }

    nonisolated(unsafe) private static var cached: TestCertificates?
    private static let lock = NSLock()
}

extension Process {
    /// Waits for `signalled` (set from `terminationHandler`), checking the child itself every
    /// 200 ms: Foundation has been seen to miss a child's exit (the child left a zombie and the
    /// handler never ran), which hung a test run. Returns the exit status; throws after `timeout`.
    func waitForExit(_ signalled: DispatchSemaphore, timeout: TimeInterval) throws -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        while signalled.wait(timeout: .now() + 0.2) == .timedOut {
            var info = siginfo_t()
            // WNOWAIT: look without reaping, so Foundation can still reap the child.
            #if os(Linux)
            if waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOHANG | WNOWAIT) == 0,
               info._sifields._sigchld.si_pid == processIdentifier {
                return info._sifields._sigchld.si_status
            }
            #else
            if waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOHANG | WNOWAIT) == 0,
               info.si_pid == processIdentifier {
                return info.si_status
            }
            #endif
            if Date() > deadline {
                kill(processIdentifier, SIGKILL)
                throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "\(executableURL?.path ?? "process") did not exit within \(Int(timeout)) s"])
            }
        }
        return terminationStatus
    }
}
