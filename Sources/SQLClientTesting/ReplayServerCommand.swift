import Foundation

extension ReplayServer {
    /// A command-line front end, for running the replay server in its own process (for example
    /// from a CLI subcommand or a benchmark harness):
    ///
    ///     <session.tdssession> [--host 127.0.0.1] [--port 0]
    ///
    /// Prints `listening on HOST:PORT` on standard output, serves until standard input reaches
    /// end of file (or the process is killed), then prints one line per connection with the
    /// response bytes sent and the server's own send rate, and returns the exit status.
    public static func runCommandLine(arguments: [String]) -> Int32 {
        var path: String?
        var host = "127.0.0.1"
        var port: UInt16 = 0
        var i = 0
        while i < arguments.count {
            let a = arguments[i]
            if a == "--host", i + 1 < arguments.count { host = arguments[i + 1]; i += 2; continue }
            if a == "--port", i + 1 < arguments.count, let p = UInt16(arguments[i + 1]) { port = p; i += 2; continue }
            if path == nil, !a.hasPrefix("--") { path = a; i += 1; continue }
            FileHandle.standardError.write(Data("replay: unexpected argument \(a)\n".utf8))
            return 2
        }
        guard let path else {
            FileHandle.standardError.write(Data("usage: replay <session.tdssession> [--host H] [--port P]\n".utf8))
            return 2
        }
        let session: ReplaySession
        do {
            session = try ReplaySession(contentsOf: URL(fileURLWithPath: path))
        } catch {
            FileHandle.standardError.write(Data("replay: \(error)\n".utf8))
            return 1
        }
        let server = ReplayServer(session: session)
        do {
            let actual = try server.start(host: host, port: port)
            FileHandle.standardOutput.write(Data("listening on \(host):\(actual)\n".utf8))
        } catch {
            FileHandle.standardError.write(Data("replay: \(error)\n".utf8))
            return 1
        }
        _ = FileHandle.standardInput.readDataToEndOfFile()
        server.stop()
        for (n, c) in server.connections.enumerated() {
            let rate = c.responseSeconds > 0 ? Double(c.responseBytesSent) / c.responseSeconds / 1e6 : 0
            print("connection \(n + 1): \(c.requests.count) requests, \(c.responseBytesSent) response bytes in "
                  + String(format: "%.3f s (%.1f MB/s)", c.responseSeconds, rate))
        }
        for r in server.unmatchedRequests { print("unmatched: \(r)") }
        return 0
    }
}
