import Foundation

extension ReplayServer {
    static let usage = """
        usage: sqlclient replay FILE.tdssession [--host 127.0.0.1] [--port P]
                                [--tls [--certificate PEM --key PEM] [--write-ca PEM]] [--strict]
        """

    /// A command-line front end, for running the replay server in its own process (for example
    /// from a CLI subcommand or a benchmark harness):
    ///
    ///     FILE.tdssession [--host 127.0.0.1] [--port 0] [--tls [--certificate PEM --key PEM] [--write-ca PEM]] [--strict]
    ///
    /// `--tls` offers TLS inside PRELOGIN with a generated certificate (its CA written to
    /// `--write-ca`, for clients to trust) or the PEM files given; `--strict` refuses requests out
    /// of the recorded order (see ``Options/strict``). Prints `listening on HOST:PORT` on standard
    /// output, serves until standard input reaches end of file (or the process is killed), then
    /// prints one line per connection with the response bytes sent and the server's own send
    /// rate, the requests that had no recording or were refused, and the recorded exchanges never
    /// replayed; returns the exit status (0; 1 when the file cannot be read or the server cannot
    /// start; 2 for bad usage).
    public static func runCommandLine(arguments: [String]) -> Int32 {
        func fail(_ message: String) -> Int32 {
            FileHandle.standardError.write(Data("replay: \(message)\n\(usage)\n".utf8))
            return 2
        }
        var path: String?
        var host = "127.0.0.1"
        var port: UInt16 = 0
        var tls = false
        var certificate: String?
        var key: String?
        var writeCA: String?
        var strict = false
        var i = 0
        while i < arguments.count {
            let a = arguments[i]
            func value() -> String? {
                i += 1
                return i < arguments.count ? arguments[i] : nil
            }
            switch a {
            case "--host": guard let v = value() else { return fail("--host needs an address") }; host = v
            case "--port": guard let v = value(), let p = UInt16(v) else { return fail("--port needs a port number") }; port = p
            case "--tls": tls = true
            case "--certificate": guard let v = value() else { return fail("--certificate needs a PEM file") }; certificate = v
            case "--key": guard let v = value() else { return fail("--key needs a PEM file") }; key = v
            case "--write-ca": guard let v = value() else { return fail("--write-ca needs a file") }; writeCA = v
            case "--strict": strict = true
            case "-h", "--help":
                print(usage)
                return 0
            default:
                guard path == nil, !a.hasPrefix("--") else { return fail("unexpected argument \(a)") }
                path = a
            }
            i += 1
        }
        guard let path else { return fail("FILE.tdssession is missing") }
        guard (certificate == nil) == (key == nil) else { return fail("--certificate and --key go together") }
        guard tls || (certificate == nil && writeCA == nil) else { return fail("--certificate, --key and --write-ca need --tls") }
        var options = Options(strict: strict)
        let recording: ReplayRecording
        do {
            recording = try ReplayRecording(contentsOf: URL(fileURLWithPath: path))
            if tls {
                if let certificate, let key {
                    options.tls = try TLSServerIdentity(certificateFile: certificate, privateKeyFile: key)
                } else {
                    options.tls = try TLSServerIdentity.generated()
                }
                if let writeCA { try options.tls?.writeCACertificate(to: URL(fileURLWithPath: writeCA)) }
            }
        } catch {
            FileHandle.standardError.write(Data("replay: \(error)\n".utf8))
            return 1
        }
        let server = ReplayServer(recording: recording, options: options)
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
        for m in server.mismatches { print(m.description) }
        let unreplayed = server.unreplayedExchanges
        if !unreplayed.isEmpty, !server.connections.isEmpty {
            print("never replayed: \(unreplayed.count) recorded exchange\(unreplayed.count == 1 ? "" : "s")")
            for e in unreplayed { print("  \(e)") }
        }
        return 0
    }
}
