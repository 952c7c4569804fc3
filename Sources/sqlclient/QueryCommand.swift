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

      server: host, host,port, host:port, host\\instance, host\\instance:port, [IPv6]:port
      The password may come from SQLCMDPASSWORD; the TDS version from TDSVER.
      Without -Q or -i, batches are read from standard input, separated by lines reading GO.
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

        let batches: [String]
        do {
            batches = try readBatches(options)
        } catch {
            return fail("\(error)")
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
        for batch in batches where !batch.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            do {
                for try await event in connection.events(batch) {
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
                    break
                }
            } catch {
                printer.flush()
                FileHandle.standardError.write(Data("sqlclient: \(error)\n".utf8))
                status = 1
            }
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

    /// The batches to run: -Q text, -i file or standard input, split at lines reading `GO` (`GO n` repeats).
    static func readBatches(_ options: QueryOptions) throws -> [String] {
        let text: String
        if let q = options.query {
            text = q
        } else if let file = options.inputFile {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } else {
            let data = FileHandle.standardInput.readDataToEndOfFile()
            text = String(decoding: data, as: UTF8.self)
        }
        return splitBatches(text)
    }

    static func splitBatches(_ text: String) -> [String] {
        var batches: [String] = []
        var current: [Substring] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\r"))
            let words = trimmed.split(separator: " ", omittingEmptySubsequences: true)
            if let first = words.first, first.uppercased() == "GO", words.count <= 2 {
                let count = words.count == 2 ? Int(words[1]) : 1
                if let count {
                    let batch = current.joined(separator: "\n")
                    for _ in 0 ..< max(count, 1) { batches.append(batch) }
                    current = []
                    continue
                }
            }
            current.append(line)
        }
        let tail = current.joined(separator: "\n")
        if !tail.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { batches.append(tail) }
        return batches
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
