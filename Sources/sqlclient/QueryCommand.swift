import Foundation
import SQLClient

/// `sqlclient -S server -U user [-P password] [-d database] [-Q sql | -i file] [--format table|csv|json] …`:
/// runs batches against a server and prints their results. Returns the process exit status:
/// 0 success, 1 when the server reported an error, 2 for a usage error, 3 when the connection
/// or the login failed.
func runQueryCommand(_ arguments: [String]) -> Int32 {
    let outcome = ExitBox()
    let done = DispatchSemaphore(value: 0)
    Task {
        outcome.set(await QueryCommand.run(arguments))
        done.signal()
    }
    done.wait()
    return outcome.value
}

final class ExitBox: @unchecked Sendable {
    private let lock = NSLock()
    private var status: Int32 = 0
    func set(_ v: Int32) { lock.withLock { status = v } }
    var value: Int32 { lock.withLock { status } }
}

enum OutputFormat: String {
    case table, csv, json
}

struct QueryOptions {
    var server: String?
    var connectionString: String?
    var user: String?
    var password: String?
    var database = ""
    var query: String?
    var inputFile: String?
    var format = OutputFormat.table
    var encryption = SQLEncryption.on
    var trustServerCertificate = false
    var caFile: String?
    var hostNameInCertificate: String?
    var tdsVersion: TDSVersion?
    var loginTimeout: Int?
    var textSize: Int?
    var packetSize: Int?
    var applicationName: String?
}

enum QueryCommand {
    static let usage = """
    usage: sqlclient -S server -U user [-P password] [-d database] [-Q sql | -i file]
                     [--format table|csv|json] [--encrypt on|required|off|notsupported]
                     [--trust-server-certificate | -C] [--ca-file PEM] [--host-name-in-certificate NAME]
                     [--tds-version 7.1|7.2|7.3|7.4] [-l login-timeout-seconds] [--text-size N]
                     [--packet-size N] [--app-name NAME]
           sqlclient --connection-string "Server=…;User ID=…;Password=…" [-Q sql | -i file] [--format …]
           sqlclient … --exec PROCEDURE [--param @name[:type]=value]… [--output @name:type]… [--inout …] [--default @name]
           sqlclient decode FILE [--port N] [--tokens] [--tds-version 7.1|7.2|7.3|7.4] [--format text|json]
           sqlclient replay SESSION.tdssession [--host H] [--port P]   (serve a recorded session until stdin closes)

      server: host, host,port, host:port, host\\instance, host\\instance:port, [IPv6]:port
      The password may come from SQLCMDPASSWORD; the TDS version from TDSVER.
      Without -Q or -i, batches are read from standard input, separated by lines reading GO;
      each runs as its GO line arrives. "GO n" runs a batch n times (1 to 2147483647).
      -i reads UTF-8, or UTF-16 with a byte order mark.
      Server messages go to standard error as "Msg N, Level L, State S, Line X" and the text.
      Exit status: 0 success, 1 a server error, 2 a usage error, 3 a connection or login failure.
    """

    static func fail(_ text: String) -> Int32 {
        FileHandle.standardError.write(Data(("sqlclient: " + text + "\n").utf8))
        return 2
    }

    static func parse(_ arguments: [String]) throws -> QueryOptions {
        var options = QueryOptions()
        var i = 0
        func value(_ flag: String) throws -> String {
            i += 1
            guard i < arguments.count else { throw UsageError("\(flag) needs a value") }
            return arguments[i]
        }
        while i < arguments.count {
            let arg = arguments[i]
            switch arg {
            case "-S", "--server": options.server = try value(arg)
            case "-U", "--user": options.user = try value(arg)
            case "-P", "--password": options.password = try value(arg)
            case "-d", "--database": options.database = try value(arg)
            case "-Q", "-q", "--query": options.query = try value(arg)
            case "-i", "--input": options.inputFile = try value(arg)
            case "--connection-string": options.connectionString = try value(arg)
            case "--format", "-f":
                let v = try value(arg)
                guard let f = OutputFormat(rawValue: v.lowercased()) else { throw UsageError("unknown format \"\(v)\"") }
                options.format = f
            case "--encrypt", "-N":
                let v = try value(arg).lowercased()
                switch v {
                case "on", "true", "yes", "mandatory", "m": options.encryption = .on
                case "required", "require": options.encryption = .required
                case "off", "false", "no", "optional", "o": options.encryption = .off
                case "notsupported", "not-supported", "none": options.encryption = .notSupported
                default: throw UsageError("unknown --encrypt value \"\(v)\" (on, required, off, notsupported)")
                }
            case "--trust-server-certificate", "-C": options.trustServerCertificate = true
            case "--ca-file": options.caFile = try value(arg)
            case "--host-name-in-certificate": options.hostNameInCertificate = try value(arg)
            case "--tds-version":
                let v = try value(arg)
                guard let version = TDSVersion(string: v), version >= .v7_1 else {
                    throw UsageError("unsupported TDS version \"\(v)\" (7.1, 7.2, 7.3, 7.4)")
                }
                options.tdsVersion = version
            case "-l", "--login-timeout":
                let v = try value(arg)
                guard let s = Int(v), s >= 0 else { throw UsageError("invalid login timeout \"\(v)\"") }
                options.loginTimeout = s
            case "--text-size":
                let v = try value(arg)
                guard let s = Int(v), s >= -1 else { throw UsageError("invalid text size \"\(v)\"") }
                options.textSize = s
            case "--packet-size", "-a":
                let v = try value(arg)
                guard let s = Int(v), (512...32767).contains(s) else { throw UsageError("invalid packet size \"\(v)\"") }
                options.packetSize = s
            case "--app-name":
                options.applicationName = try value(arg)
            case "-h", "--help", "-?":
                throw UsageError("")
            default:
                throw UsageError("unknown argument \"\(arg)\"")
            }
            i += 1
        }
        return options
    }

    static func configuration(_ options: QueryOptions, environment: [String: String]) throws -> SQLConnectionConfiguration {
        var config: SQLConnectionConfiguration
        if let cs = options.connectionString {
            config = try SQLConnectionConfiguration(connectionString: cs)
            if let user = options.user { config.user = user }
            if let password = options.password ?? (config.password.isEmpty ? environment["SQLCMDPASSWORD"] : nil) {
                config.password = RedactedPassword(password)
            }
        } else {
            guard let server = options.server else { throw UsageError("-S server is required") }
            guard let user = options.user else { throw UsageError("-U user is required") }
            guard let password = options.password ?? environment["SQLCMDPASSWORD"] else {
                throw UsageError("no password: give -P or set SQLCMDPASSWORD")
            }
            config = SQLConnectionConfiguration(address: try SQLServerAddress(parsing: server), user: user,
                                                password: password, database: options.database,
                                                encryption: options.encryption)
            if let env = environment["TDSVER"], !env.isEmpty, env.lowercased() != "auto" {
                guard let version = TDSVersion(string: env), version >= .v7_1 else {
                    throw UsageError("unsupported TDSVER \"\(env)\" (7.1, 7.2, 7.3, 7.4)")
                }
                config.tdsVersion = version
            }
        }
        if !options.database.isEmpty { config.database = options.database }
        if options.connectionString == nil || options.encryption != .on { config.encryption = options.encryption }
        if options.trustServerCertificate { config.tls.trustServerCertificate = true }
        if let ca = options.caFile { config.tls.caFile = ca }
        if let name = options.hostNameInCertificate { config.tls.hostNameInCertificate = name }
        if let v = options.tdsVersion { config.tdsVersion = v }
        if let t = options.loginTimeout { config.connectTimeout = .seconds(t == 0 ? 86_400 : t) }
        if let t = options.textSize { config.textSize = t }
        if let p = options.packetSize { config.packetSize = p }
        config.applicationName = options.applicationName ?? "sqlclient"
        return config
    }

    static func run(_ arguments: [String]) async -> Int32 {
        if let status = await ProcedureCommand.runIfRequested(arguments) { return status }   // --exec PROCEDURE
        let options: QueryOptions
        let config: SQLConnectionConfiguration
        do {
            options = try parse(arguments)
            config = try configuration(options, environment: ProcessInfo.processInfo.environment)
        } catch let error as UsageError {
            if !error.message.isEmpty { _ = fail(error.message) }
            FileHandle.standardError.write(Data((usage + "\n").utf8))
            return 2
        } catch let error as SQLClientError {
            return fail(error.message)
        } catch {
            return fail("\(error)")
        }

        // -Q and -i are read and split before connecting (a bad file or GO count is a usage
        // error); standard input is read line by line, each batch run as its GO line arrives.
        var prepared: [Batch]?
        if options.query != nil || options.inputFile != nil {
            do {
                prepared = try readBatches(options)
            } catch {
                return fail(error.message)
            }
        }

        let connection: SQLConnection
        do {
            connection = try await SQLConnection.connect(config)
        } catch let error as SQLClientError {
            printError(error)
            return 3
        } catch {
            FileHandle.standardError.write(Data("sqlclient: \(error)\n".utf8))
            return 3
        }

        var status: Int32 = 0
        let printer = ResultPrinter(format: options.format)
        /// Runs `batch` `count` times; false when the connection is gone.
        func run(_ batch: Batch) async -> Bool {
            guard !batch.text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return true }
            for _ in 0 ..< batch.count {
                do {
                    for try await event in connection.events(batch.text) {
                        printer.handle(event)
                    }
                    printer.flush()
                } catch let error as SQLClientError {
                    printer.flush()
                    if error.code != .serverError {
                        // Server errors were printed as messages; anything else is printed here.
                        printError(error)
                    }
                    status = 1
                    if !(await connection.isOpen) {
                        status = error.code == .serverError ? 1 : 3
                        return false
                    }
                } catch {
                    printer.flush()
                    FileHandle.standardError.write(Data("sqlclient: \(error)\n".utf8))
                    status = 1
                }
            }
            return true
        }
        if let prepared {
            for batch in prepared where !(await run(batch)) { break }
        } else {
            var splitter = BatchSplitter()
            var open = true
            for await line in standardInputLines() {
                let batch: Batch?
                do {
                    batch = try splitter.feed(line)
                } catch {
                    await connection.close()
                    return fail(error.message)
                }
                if let batch, !(await run(batch)) { open = false; break }
            }
            if open, let tail = splitter.finish() { _ = await run(tail) }
        }
        await connection.close()
        return status
    }

    static func printError(_ error: SQLClientError) {
        var text = ""
        if let m = error.serverMessage {
            text = ServerMessageFormatter.format(m)
        } else {
            text = "sqlclient: \(error.message)\n"
        }
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// The batches of -Q text or an -i file, split at lines reading `GO` (`GO n` repeats).
    /// - Throws: ``UsageError`` for an unreadable file or a bad `GO n` count.
    static func readBatches(_ options: QueryOptions) throws(UsageError) -> [Batch] {
        let text: String
        if let q = options.query {
            text = q
        } else if let file = options.inputFile {
            text = try readScript(file)
        } else {
            return []
        }
        return try splitBatches(text)
    }

    /// The text of a script file: UTF-8 (a byte order mark is skipped), or UTF-16 with a byte
    /// order mark (FF FE little-endian, FE FF big-endian).
    static func readScript(_ path: String) throws(UsageError) -> String {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw UsageError("cannot read \"\(path)\": no such file")
        }
        guard !isDirectory.boolValue else { throw UsageError("cannot read \"\(path)\": it is a directory") }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError("cannot read \"\(path)\": permission denied or unreadable")
        }
        let bytes = [UInt8](data)
        let text: String?
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            text = String(bytes: bytes.dropFirst(3), encoding: .utf8)
        } else if bytes.starts(with: [0xFF, 0xFE]) {
            text = String(bytes: bytes.dropFirst(2), encoding: .utf16LittleEndian)
        } else if bytes.starts(with: [0xFE, 0xFF]) {
            text = String(bytes: bytes.dropFirst(2), encoding: .utf16BigEndian)
        } else {
            text = String(bytes: bytes, encoding: .utf8)
        }
        guard let text else {
            throw UsageError("cannot read \"\(path)\": not UTF-8 text (UTF-16 needs a byte order mark)")
        }
        return text
    }

    /// Splits `text` at lines reading `GO` or `GO n`; any line break (LF, CRLF, CR) ends a line.
    static func splitBatches(_ text: String) throws(UsageError) -> [Batch] {
        var splitter = BatchSplitter()
        var batches: [Batch] = []
        for line in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            if let batch = try splitter.feed(String(line)) { batches.append(batch) }
        }
        if let tail = splitter.finish() { batches.append(tail) }
        return batches
    }

    /// The lines of standard input as they arrive (without their line breaks; a leading UTF-8
    /// byte order mark is dropped), read on a thread of their own.
    static func standardInputLines() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .unbounded)
        let thread = Thread {
            var first = true
            while let line = readLine(strippingNewline: true) {
                var text = line
                if first, text.hasPrefix("\u{FEFF}") { text.removeFirst() }
                first = false
                // readLine strips "\n" and "\r\n"; a lone trailing "\r" (old Mac files) too.
                if text.hasSuffix("\r") { text.removeLast() }
                continuation.yield(text)
            }
            continuation.finish()
        }
        thread.start()
        return stream
    }
}

/// A batch of SQL text and how many times to run it (`GO n`).
struct Batch: Equatable {
    var text: String
    var count: Int
}

/// Splits a script into batches at lines reading `GO` or `GO n`, line by line, so that standard
/// input runs each batch as soon as its `GO` line arrives. A batch to repeat is kept once.
struct BatchSplitter {
    /// The largest `GO n` count (sqlcmd's is an int).
    static let maxRepeat = Int(Int32.max)
    private var current: [String] = []

    /// Takes one line (without its line break); returns the finished batch when it is a `GO` line.
    /// - Throws: ``UsageError`` for `GO 0`, a negative count or one above ``maxRepeat``.
    mutating func feed(_ line: String) throws(UsageError) -> Batch? {
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard let first = words.first, first.uppercased() == "GO", words.count <= 2 else {
            current.append(line)
            return nil
        }
        var count = 1
        if words.count == 2 {
            let word = words[1]
            let digits = word.hasPrefix("-") || word.hasPrefix("+") ? word.dropFirst() : word
            guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else {
                current.append(line)   // "GO something": not a separator
                return nil
            }
            guard !word.hasPrefix("-"), let n = Int(digits), n >= 1, n <= Self.maxRepeat else {
                throw UsageError("invalid batch count \"\(word)\" after GO (1 to \(Self.maxRepeat))")
            }
            count = n
        }
        let text = current.joined(separator: "\n")
        current = []
        return Batch(text: text, count: count)
    }

    /// The text after the last `GO` line, if any is not blank.
    mutating func finish() -> Batch? {
        let text = current.joined(separator: "\n")
        current = []
        guard !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return nil }
        return Batch(text: text, count: 1)
    }
}

struct UsageError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

enum ServerMessageFormatter {
    /// `Msg N, Level L, State S, [Procedure P, ]Line X` then the text; PRINT output (number 0,
    /// not an error) is the text alone, as sqlcmd prints it.
    static func format(_ m: SQLServerMessage) -> String {
        if !m.isError && m.number == 0 { return m.message + "\n" }
        return m.description + "\n"
    }
}
