import Foundation
import SQLClient
import TDS

extension RecordingProxy {
    static let usage = """
        usage: sqlclient record --upstream SERVER (--out FILE.tdssession | --out-dir DIR)
                                [--listen HOST:PORT] [--certificate PEM --key PEM] [--write-ca PEM]
                                [--trust-upstream-certificate] [--upstream-ca-file PEM]
                                [--upstream-host-name-in-certificate NAME]
        """

    /// The command-line front end (`sqlclient record …`): relays TDS clients that connect to
    /// `--listen` (default 127.0.0.1, an ephemeral port) to `--upstream` (any form `-S`
    /// accepts: `host`, `host,port`, `host:port`, `host\\instance`, `tcp:host,port`) and records
    /// them. Prints `listening on HOST:PORT` (and, with `--write-ca`, where the CA certificate
    /// that clients must trust was written); runs until SIGINT or SIGTERM, or until standard
    /// input closes (in a script: `sleep infinity | sqlclient record …`); then writes the file a
    /// last time and prints what it recorded. Exit status: 0, 1 when it could not start or a
    /// secret was found in the output, 2 for bad usage.
    public static func runCommandLine(arguments: [String]) -> Int32 {
        func fail(_ message: String) -> Int32 {
            FileHandle.standardError.write(Data("sqlclient record: \(message)\n\(usage)\n".utf8))
            return 2
        }
        var listen = "127.0.0.1:0"
        var upstream: String?
        var out: String?
        var outDir: String?
        var certificate: String?
        var key: String?
        var writeCA: String?
        var tls = TLSConfiguration()
        var i = 0
        while i < arguments.count {
            let a = arguments[i]
            let name = a.split(separator: "=", maxSplits: 1).first.map(String.init) ?? a
            func value() -> String? {
                if let eq = a.firstIndex(of: "=") { return String(a[a.index(after: eq)...]) }
                i += 1
                return i < arguments.count ? arguments[i] : nil
            }
            switch name {
            case "--listen": guard let v = value() else { return fail("--listen needs HOST:PORT") }; listen = v
            case "--upstream": guard let v = value() else { return fail("--upstream needs a SERVER") }; upstream = v
            case "--out": guard let v = value() else { return fail("--out needs a FILE") }; out = v
            case "--out-dir": guard let v = value() else { return fail("--out-dir needs a DIR") }; outDir = v
            case "--certificate": guard let v = value() else { return fail("--certificate needs a PEM file") }; certificate = v
            case "--key": guard let v = value() else { return fail("--key needs a PEM file") }; key = v
            case "--write-ca": guard let v = value() else { return fail("--write-ca needs a file") }; writeCA = v
            case "--trust-upstream-certificate": tls.trustServerCertificate = true
            case "--upstream-ca-file": guard let v = value() else { return fail("--upstream-ca-file needs a PEM file") }; tls.caFile = v
            case "--upstream-host-name-in-certificate":
                guard let v = value() else { return fail("--upstream-host-name-in-certificate needs a NAME") }
                tls.hostNameInCertificate = v
            case "-h", "--help":
                print(usage)
                return 0
            default:
                return fail("unexpected argument \(a)")
            }
            i += 1
        }
        guard let upstream else { return fail("--upstream SERVER is required") }
        guard (out == nil) != (outDir == nil) else { return fail("give one of --out FILE or --out-dir DIR") }
        guard (certificate == nil) == (key == nil) else { return fail("--certificate and --key go together") }
        guard let (listenHost, listenPort) = ReplayServer.hostAndPort(listen) else {
            return fail("--listen must be HOST:PORT (an IPv4 address and a port, 0 for any)")
        }
        let address: SQLServerAddress
        do {
            address = try SQLServerAddress(parsing: upstream)
        } catch {
            return fail("--upstream: \(error)")
        }
        let upstreamPort: Int
        if let p = address.port {
            upstreamPort = p
        } else if let instance = address.instance {
            let found = ResultBox<Int>()
            let done = DispatchSemaphore(value: 0)
            // Unstructured: the synchronous command waits for the Browser lookup on a semaphore.
            Task {
                do {
                    found.result = .success(try await SQLServerBrowser.resolvePort(host: address.host, instance: instance, timeout: .seconds(5)))
                } catch {
                    found.result = .failure(error)
                }
                done.signal()
            }
            done.wait()
            switch found.result {
            case .success(let p)?: upstreamPort = p
            case .failure(let e)?: return error("cannot find instance \(instance) on \(address.host): \(e)")
            case nil: return error("cannot find instance \(instance) on \(address.host)")
            }
        } else {
            upstreamPort = SQLServerAddress.defaultPort
        }

        var configuration = Configuration(upstreamHost: address.host, upstreamPort: upstreamPort, upstreamTLS: tls,
                                          output: out.map { .file(URL(fileURLWithPath: $0)) }
                                              ?? .directory(URL(fileURLWithPath: outDir ?? ".")))
        let proxy: RecordingProxy
        do {
            if let certificate, let key {
                configuration.identity = try TLSServerIdentity(certificateFile: certificate, privateKeyFile: key)
            }
            proxy = try RecordingProxy(configuration: configuration)
            if let writeCA { try proxy.identity.writeCACertificate(to: URL(fileURLWithPath: writeCA)) }
        } catch {
            return Self.error("\(error)")
        }
        proxy.onEvent = { line in FileHandle.standardError.write(Data("record: \(line)\n".utf8)) }
        let port: UInt16
        do {
            port = try proxy.start(host: listenHost, port: listenPort)
        } catch {
            return Self.error("\(error)")
        }
        var lines = ["listening on \(listenHost):\(port), recording \(address.host):\(upstreamPort)"]
        if let writeCA { lines.append("CA certificate for clients: \(writeCA)") }
        FileHandle.standardOutput.write(Data((lines.joined(separator: "\n") + "\n").utf8))

        let stopped = DispatchSemaphore(value: 0)
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let sources = [SIGINT, SIGTERM].map { number -> DispatchSourceSignal in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { stopped.signal() }
            source.resume()
            return source
        }
        Thread.detachNewThread {
            _ = FileHandle.standardInput.readDataToEndOfFile()
            stopped.signal()
        }
        stopped.wait()
        proxy.stop()
        for s in sources { s.cancel() }

        let recording = proxy.recording
        let exchanges = recording.sections.reduce(0) { $0 + $1.exchanges.count }
        let target = out ?? outDir ?? ""
        print("recorded \(recording.sections.count) connection\(recording.sections.count == 1 ? "" : "s"), \(exchanges) exchanges, to \(target)")
        for e in proxy.writeErrors { FileHandle.standardError.write(Data("record: \(e)\n".utf8)) }
        let findings = proxy.secretFindings()
        for f in findings { FileHandle.standardError.write(Data("record: WARNING: \(f)\n".utf8)) }
        return proxy.writeErrors.isEmpty && findings.isEmpty ? 0 : 1
    }

    private static func error(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("sqlclient record: \(message)\n".utf8))
        return 1
    }

    /// Where a login's password still shows in the written output (see ``SecretRedaction/findings(inFileText:)``); empty when clean.
    public func secretFindings() -> [String] {
        let redaction = writer.redaction()
        guard !redaction.isEmpty else { return [] }
        var texts: [String] = []
        switch configuration.output {
        case .none: texts = [recording.text]
        case .file(let url): texts = [(try? String(contentsOf: url, encoding: .utf8)) ?? ""]
        case .directory(let dir):
            let files = (try? FileManager.default.contentsOfDirectory(at: dir, includingPropertiesForKeys: nil)) ?? []
            texts = files.filter { $0.pathExtension == "tdssession" }.compactMap { try? String(contentsOf: $0, encoding: .utf8) }
        }
        return texts.flatMap { redaction.findings(inFileText: $0) }
    }
}

/// A result handed from a task to a waiting thread.
final class ResultBox<T: Sendable>: @unchecked Sendable {
    var result: Result<T, Error>?
}

extension RecordingWriter {
    /// Every secret of every connection recorded.
    func redaction() -> SecretRedaction {
        SecretRedaction(secrets: secrets())
    }
}

extension ReplayServer {
    /// `HOST:PORT` (IPv4 and a port 0...65535) split, or nil.
    static func hostAndPort(_ text: String) -> (String, UInt16)? {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else { return nil }
        let host = String(text[..<colon])
        var addr = in_addr()
        guard inet_pton(AF_INET, host, &addr) == 1 else { return nil }
        return (host, port)
    }
}
