import Foundation
import TDS
import TDSCapture

/// `sqlclient decode FILE [--port N] [--tokens] [--tds-version 7.1|7.2|7.3|7.4] [--format text|json] [--json-numbers]`
///
/// Reads a pcap/pcapng capture, a `.hex` file or raw bytes and prints every TDS message: as
/// text for people, or as JSON Lines (one object per message; numbers by the query output's rule,
/// ``JSONNumberRule``: `--json-numbers` as there). Exit status: 0 when everything
/// decoded, 1 on any decoding error (each error is printed on stderr naming the message, token
/// and byte offset), 2 for bad usage or an unreadable file.
func runDecodeCommand(_ arguments: [String]) -> Int32 {
    let usage = "usage: sqlclient decode FILE [--port N] [--tokens] [--tds-version 7.1|7.2|7.3|7.4] [--format text|json] [--json-numbers] [--to-session FILE.tdssession]\n"
        + "  JSON numbers are exact for any reader: integers beyond ±(2^53-1), decimal, numeric and money are strings of their\n"
        + "  digits (as in sqlclient --format json); --json-numbers writes them as JSON numbers"
    var path: String?
    var options = DecodeOptions()
    var json = false
    var numbers = JSONNumberRule.exactForAnyReader
    var toSession: String?   // DecodeToSession.swift
    var i = 0
    func fail(_ message: String) -> Int32 {
        writeStderr("sqlclient decode: \(message)\n\(usage)\n")
        return 2
    }
    while i < arguments.count {
        let a = arguments[i]
        func value() -> String? {
            if let eq = a.firstIndex(of: "=") { return String(a[a.index(after: eq)...]) }
            i += 1
            return i < arguments.count ? arguments[i] : nil
        }
        let name = a.split(separator: "=", maxSplits: 1).first.map(String.init) ?? a
        switch name {
        case "--port":
            guard let v = value(), let port = UInt16(v), port > 0 else { return fail("--port needs a TCP port number") }
            options.port = port
        case "--tokens":
            options.tokensOnly = true
        case "--tds-version":
            guard let v = value(), ["7.1", "7.2", "7.3", "7.4"].contains(v), let version = TDSVersion(string: v) else {
                return fail("--tds-version must be 7.1, 7.2, 7.3 or 7.4")
            }
            options.forcedVersion = version
        case "--format":
            guard let v = value(), v == "text" || v == "json" else { return fail("--format must be text or json") }
            json = v == "json"
        case "--json-numbers":
            numbers = .numbers
        case "--to-session":
            guard let v = value(), !v.isEmpty else { return fail("--to-session needs a FILE.tdssession") }
            toSession = v
        case "-h", "--help":
            print(usage)
            return 0
        default:
            if a.hasPrefix("-") && a != "-" { return fail("unknown option \(a)") }
            guard path == nil else { return fail("only one FILE") }
            path = a
        }
        i += 1
    }
    guard let path else { return fail("FILE is missing") }
    let data: Data
    do {
        data = path == "-" ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: path))
    } catch {
        writeStderr("sqlclient decode: cannot read \(path): \(error.localizedDescription)\n")
        return 2
    }
    if let toSession { return writeCaptureSessions([UInt8](data), fileName: path, options: options, to: toSession) }
    let report = CaptureDecoder.decode(bytes: [UInt8](data), fileName: path, options: options)
    var out = ""
    if json {
        for record in report.records {
            out += record.json.serialized(numbers)
            out += "\n"
        }
    } else {
        out = DecodeTextOutput.render(report)
    }
    FileHandle.standardOutput.write(Data(out.utf8))
    for failure in report.failures {
        writeStderr("error: \(failure)\n")
    }
    return report.isSuccess ? 0 : 1
}

func writeStderr(_ s: String) {
    FileHandle.standardError.write(Data(s.utf8))
}
