import Foundation
import SQLClient
import TDS

/// The version `sqlclient --version` prints.
let sqlclientVersion = "0.1.0"

enum OutputFormat: String {
    /// sqlcmd's aligned columns.
    case table
    /// RFC 4180, NULL as ``QueryOptions/nullText``.
    case csv
    /// JSON Lines: one object per result set (its rows streamed into it) or count.
    case json
    /// JSON Lines: one object per row, keyed by column name.
    case jsonl
}

/// Everything the query command line says, parsed (sqlcmd's flags and this client's own).
struct QueryOptions {
    var server: String?
    var connectionString: String?
    var user: String?
    var password: String?
    var database = ""
    /// -Q: run and exit.
    var query: String?
    /// -q: run, then read standard input.
    var initialQuery: String?
    /// -i, in order (sqlcmd allows several).
    var inputFiles: [String] = []
    /// -o: results go to this file instead of standard output.
    var outputFile: String?
    var format = OutputFormat.table
    /// -h: 0 prints the header once per result set, N repeats it every N rows, -1 never.
    var headers = 0
    /// -s: between columns (table) or fields (csv); nil: a space (table) or a comma (csv).
    var separator: String?
    /// -W: no padding, no truncation, trailing spaces of values removed.
    var trimSpaces = false
    /// -w: table lines are wrapped at this many characters (9...65535).
    var screenWidth: Int?
    /// -b: stop at the first error, exit status 1.
    var exitOnError = false
    /// -t / --query-timeout: seconds per batch (0: none).
    var queryTimeout: Int?
    /// -l / --login-timeout: seconds (0: none).
    var loginTimeout: Int?
    /// -v name=value, in order.
    var variables: [(name: String, value: String)] = []
    /// -x: $(name) is left as written.
    var disableVariables = false
    /// -e: each batch is printed before it runs.
    var echo = false
    /// -m: messages below this severity are not printed (0: all; -1: all, as sqlcmd).
    var errorLevel = 0
    /// --null: the text of NULL in table and csv output.
    var nullText = "NULL"
    var encryption = SQLEncryption.on
    var encryptionGiven = false
    var trustServerCertificate = false
    var caFile: String?
    var hostNameInCertificate: String?
    var tdsVersion: TDSVersion?
    var textSize: Int?
    var packetSize: Int?
    var applicationName: String?
    var workstation: String?
    /// --access-token-file: an Entra ID access token, read from the file (whitespace trimmed).
    var accessTokenFile: String?
    /// --column-master-key-folder: Always Encrypted on, column master keys (certificates with
    /// their private keys) read from this folder by the certificate-file key store provider.
    var columnMasterKeyFolder: String?
    /// -G: Microsoft Entra ID sign-in (ActiveDirectoryDefault unless --authentication-method names another).
    var entra = false
    /// --authentication-method NAME: an `Authentication=` name (ActiveDirectoryDefault, …DeviceCodeFlow, …).
    var authenticationMethod: String?
    /// -E / --trusted-connection: Kerberos (integrated security) with the default credential cache.
    var trustedConnection = false
    /// --server-spn: the Kerberos service principal name (nil: MSSQLSvc/<fqdn>:<port>).
    var serverSPN: String?
    /// -K / --application-intent ReadOnly|ReadWrite.
    var applicationIntent: SQLApplicationIntent?
    /// -M / --multi-subnet-failover.
    var multiSubnetFailover = false
    /// --json-support on|off (nil: the default, on).
    var jsonSupport: Bool?
    /// --vector-support off|float32|float16 (nil: the default, float32).
    var vectorSupport: SQLTypeSupport.Vector?
    /// --json-numbers: bigint beyond ±(2^53 - 1), decimal, numeric and money as JSON numbers.
    var jsonNumbers = false
    /// -y: table width of the large types (0: whole values); sqlcmd's default 256.
    var variableTypeWidth = 256
    /// -Y: table width limit of sized character and binary types (0: their declared size).
    var fixedTypeWidth = 0
    /// -k, -k1, -k2: control characters in table and csv values.
    var controlCharacters = ControlCharacters.keep
    /// -L (a "Servers:" list) or -Lc (names only): the SQL Server instances Browsers announce.
    var listServers: ServerListStyle?
    /// --browser HOST[:PORT]: -L asks this host's Browser (CLNT_UCAST_EX) instead of broadcasting.
    var browser: String?
    /// --exec PROCEDURE and its parameters.
    var procedure: ProcedureCommand.Spec?
    var help = false
    var version = false
}

/// How -L prints the servers: sqlcmd's `Servers:` list, or (-Lc) one name a line.
enum ServerListStyle { case list, clean }

/// A usage error: the message says what is wrong without echoing argument text that could be a
/// password (see ``QueryArguments``).
struct UsageError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// Parses the query command line the way sqlcmd does: short flags take their value separately
/// or glued (`-PAt1secret`, `-h-1`, `-s,`, `-w200`), `-?`/`--help`/a bare `-h` ask for help, `-N`
/// takes an optional value. Long forms (`--server`, `--password`, …) take the next argument.
///
/// Secrets: the value of `-P`/`--password` and every argument after it or after
/// `--connection-string` are never shown in an error (a password with spaces left unquoted
/// splits into several arguments); such an argument is named by its position instead.
enum QueryArguments {
    /// Flags taking a value, by their short and long names.
    private static let valueFlags: [String: String] = [
        "-S": "server", "--server": "server", "-U": "user", "--user": "user", "--user-name": "user",
        "-P": "password", "--password": "password", "-d": "database", "--database": "database",
        "--database-name": "database", "-Q": "query", "--query": "query", "-q": "initialQuery",
        "--initial-query": "initialQuery", "-i": "input", "--input": "input", "--input-file": "input",
        "-o": "output", "--output-file": "output", "--connection-string": "connectionString",
        "-f": "format", "--format": "format", "-h": "headers", "--headers": "headers",
        "-s": "separator", "--column-separator": "separator", "-w": "screenWidth", "--screen-width": "screenWidth",
        "-t": "queryTimeout", "--query-timeout": "queryTimeout", "-l": "loginTimeout", "--login-timeout": "loginTimeout",
        "-v": "variable", "--variables": "variable", "-m": "errorLevel", "--error-level": "errorLevel",
        "--null": "null", "--encrypt": "encrypt", "--ca-file": "caFile", "-F": "hostNameInCertificate",
        "--host-name-in-certificate": "hostNameInCertificate", "--tds-version": "tdsVersion",
        "--text-size": "textSize", "-a": "packetSize", "--packet-size": "packetSize", "--app-name": "appName",
        "-H": "workstation", "--workstation-name": "workstation", "--access-token-file": "accessTokenFile",
        "--column-master-key-folder": "columnMasterKeyFolder",
        "--server-spn": "serverSPN", "--authentication-method": "authenticationMethod",
        "-K": "applicationIntent", "--application-intent": "applicationIntent",
        "--json-support": "jsonSupport", "--vector-support": "vectorSupport",
        "--exec": "exec", "--param": "param", "--output": "outputParam", "--inout": "inout", "--default": "default",
        "-y": "variableTypeWidth", "--variable-type-width": "variableTypeWidth",
        "-Y": "fixedTypeWidth", "--fixed-type-width": "fixedTypeWidth", "--browser": "browser",
    ]
    /// Flags without a value.
    private static let switches: [String: String] = [
        "-?": "help", "--help": "help", "-help": "help", "--version": "version", "-C": "trust",
        "--trust-server-certificate": "trust", "-W": "trim", "--trim-spaces": "trim", "-b": "exitOnError",
        "--exit-on-error": "exitOnError", "-e": "echo", "--echo-input": "echo", "-x": "noVariables",
        "--disable-variable-substitution": "noVariables", "-M": "multiSubnetFailover",
        "--multi-subnet-failover": "multiSubnetFailover", "--json-numbers": "jsonNumbers",
        "-L": "listServers", "--list-servers": "listServers", "-Lc": "listServersClean",
        "-E": "trusted", "--trusted-connection": "trusted", "-G": "entra",
        // Accepted for compatibility, with nothing to do: quoted identifiers are always on (-I),
        // regional settings are not used (-R), and server messages always go to standard error (-r).
        "-I": "none", "-R": "none", "-r": "none", "-r0": "none", "-r1": "none",
    ]
    /// The values `-N` takes (anything else after a bare `-N` is the next argument).
    private static let encryptionValues: [String: SQLEncryption] = [
        "on": .on, "true": .on, "t": .on, "yes": .on, "1": .on, "mandatory": .on, "m": .on,
        "required": .required, "require": .required, "strict": .strict, "s": .strict,
        "off": .off, "false": .off, "f": .off, "no": .off, "0": .off, "optional": .off, "o": .off,
        "notsupported": .notSupported, "not-supported": .notSupported, "none": .notSupported, "disable": .notSupported,
    ]

    static func parse(_ arguments: [String]) throws(UsageError) -> QueryOptions {
        var options = QueryOptions()
        /// The index of the first argument that may hold a secret (a password value, or anything after one).
        var secretFrom = Int.max
        var i = 0
        /// A flag's bad value, quoted (a password is not a flag's value, except -P's, never checked).
        func bad(_ what: String, _ index: Int) -> UsageError {
            UsageError("\(what) \"\(arguments[index])\"")
        }
        /// An argument that is no flag: quoted, or named by position when it follows a password
        /// (the rest of a password holding spaces, given unquoted).
        func unknown(_ index: Int) -> UsageError {
            UsageError(index >= secretFrom ? "unknown argument #\(index + 1) (not shown: it may be part of a password)"
                                           : "unknown argument \"\(arguments[index])\"")
        }
        while i < arguments.count {
            let arg = arguments[i]
            var name: String
            var value: String?
            var valueIndex = i
            if let n = switches[arg] {
                try apply(switch: n, to: &options)
                i += 1
                continue
            }
            if arg == "-N" || arg == "--encrypt" || (arg.hasPrefix("-N") && !arg.hasPrefix("--")) {
                // -N alone means on; -N VALUE or -NVALUE names the mode.
                var text: String?
                if arg.count > 2, arg.hasPrefix("-N") {
                    text = String(arg.dropFirst(2))
                } else if i + 1 < arguments.count, encryptionValues[arguments[i + 1].lowercased()] != nil {
                    i += 1
                    text = arguments[i]
                } else if arg == "--encrypt" {
                    throw UsageError("--encrypt needs a value (on, required, strict, off, notsupported)")
                }
                if let text {
                    guard let mode = encryptionValues[text.lowercased()] else {
                        throw bad("unknown encryption mode (on, required, strict, off, notsupported):", i)
                    }
                    options.encryption = mode
                } else {
                    options.encryption = .on
                }
                options.encryptionGiven = true
                i += 1
                continue
            }
            if arg == "-k" || arg == "-k1" || arg == "-k2" {
                // sqlcmd: -k removes control characters, -k1 replaces each with a space, -k2 each run.
                var level = arg.dropFirst(2)
                if level.isEmpty, i + 1 < arguments.count, arguments[i + 1] == "1" || arguments[i + 1] == "2" {
                    i += 1
                    level = Substring(arguments[i])
                }
                options.controlCharacters = level == "1" ? .replaceEach : level == "2" ? .replaceRuns : .remove
                i += 1
                continue
            }
            if arg == "-h", i + 1 == arguments.count || Int(arguments[i + 1]) == nil {
                options.help = true   // sqlcmd: -h without a number is help
                i += 1
                continue
            }
            if let n = valueFlags[arg] {
                name = n
                if name == "password" { secretFrom = min(secretFrom, i + 1) }
                guard i + 1 < arguments.count else { throw UsageError("\(arg) needs a value") }
                i += 1
                value = arguments[i]
                valueIndex = i
            } else if arg.count > 2, !arg.hasPrefix("--"), let n = valueFlags[String(arg.prefix(2))] {
                // A glued short flag: -PAt1secret, -h-1, -s, (comma), -w200.
                name = n
                if name == "password" { secretFrom = min(secretFrom, i) }
                value = String(arg.dropFirst(2))
                valueIndex = i
            } else {
                throw unknown(i)
            }
            if name == "connectionString" { secretFrom = min(secretFrom, i) }
            guard let v = value else { continue }
            func number(_ range: ClosedRange<Int>, _ what: String) throws(UsageError) -> Int {
                guard let n = Int(v), range.contains(n) else {
                    let bounds = range.upperBound == Int.max ? "\(range.lowerBound) or more" : "\(range.lowerBound)–\(range.upperBound)"
                    throw bad("\(what) (\(bounds)):", valueIndex)
                }
                return n
            }
            switch name {
            case "server": options.server = v
            case "user": options.user = v
            case "password": options.password = v
            case "database": options.database = v
            case "query": options.query = v
            case "initialQuery": options.initialQuery = v
            case "input":
                options.inputFiles.append(v)
                // sqlcmd: -i a.sql b.sql (names that do not start with '-' keep coming).
                while i + 1 < arguments.count, !arguments[i + 1].hasPrefix("-") { i += 1; options.inputFiles.append(arguments[i]) }
            case "output": options.outputFile = v
            case "connectionString": options.connectionString = v
            case "format":
                guard let f = OutputFormat(rawValue: v.lowercased()) else { throw bad("unknown format (table, csv, json, jsonl):", valueIndex) }
                options.format = f
            case "headers":
                guard let n = Int(v), n >= -1, n <= Int(Int32.max) else {
                    throw bad("invalid -h (-1 for none, or rows between headers up to 2147483647):", valueIndex)
                }
                options.headers = n
            case "separator":
                guard !v.isEmpty else { throw UsageError("-s needs a separator") }
                options.separator = v
            case "screenWidth": options.screenWidth = try number(9...65535, "invalid screen width")
            case "variableTypeWidth": options.variableTypeWidth = try number(0...8000, "invalid -y display width")
            case "fixedTypeWidth": options.fixedTypeWidth = try number(0...8000, "invalid -Y display width")
            case "browser": options.browser = v
            // Any whole number of seconds (the configuration clamps what is too large to wait for).
            case "queryTimeout": options.queryTimeout = try number(0...Int.max, "invalid query timeout in seconds")
            case "loginTimeout": options.loginTimeout = try number(0...Int.max, "invalid login timeout in seconds")
            case "errorLevel": options.errorLevel = try number(-1...25, "invalid error level")
            case "variable":
                var index = valueIndex
                var text = v
                while true {
                    guard let eq = text.firstIndex(of: "="), ScriptVariables.isValidName(String(text[..<eq])) else {
                        throw bad("-v needs name=value with a name of letters, digits, _ or -:", index)
                    }
                    options.variables.append((String(text[..<eq]), ScriptVariables.unquote(String(text[text.index(after: eq)...]))))
                    // sqlcmd: -v a=1 b=2 (more name=value pairs keep coming).
                    guard i + 1 < arguments.count, !arguments[i + 1].hasPrefix("-"), arguments[i + 1].contains("=") else { break }
                    i += 1
                    index = i
                    text = arguments[i]
                }
            case "null": options.nullText = v
            case "caFile": options.caFile = v
            case "hostNameInCertificate": options.hostNameInCertificate = v
            case "tdsVersion":
                guard let version = TDSVersion(string: v), version >= .v7_1 else {
                    throw bad("unsupported TDS version (7.1, 7.2, 7.3, 7.4):", valueIndex)
                }
                options.tdsVersion = version
            case "textSize":
                guard let s = Int(v), SQLConnectionConfiguration.textSizeRange.contains(s) else {
                    throw bad("invalid text size (-1 to 2147483647):", valueIndex)
                }
                options.textSize = s
            case "packetSize": options.packetSize = try number(512...32767, "invalid packet size")
            case "appName": options.applicationName = v
            case "workstation": options.workstation = v
            case "accessTokenFile": options.accessTokenFile = v
            case "columnMasterKeyFolder": options.columnMasterKeyFolder = v
            case "authenticationMethod": options.authenticationMethod = v
            case "serverSPN": options.serverSPN = v
            case "applicationIntent":
                switch v.lowercased() {
                case "readonly": options.applicationIntent = .readOnly
                case "readwrite": options.applicationIntent = .readWrite
                default: throw bad("unknown application intent (ReadOnly, ReadWrite):", valueIndex)
                }
            case "jsonSupport":
                switch v.lowercased() {
                case "on", "true", "yes", "1": options.jsonSupport = true
                case "off", "false", "no", "0": options.jsonSupport = false
                default: throw bad("invalid --json-support (on, off):", valueIndex)
                }
            case "vectorSupport":
                guard let vector = SQLTypeSupport.Vector(text: v) else { throw bad("invalid --vector-support (off, float32, float16):", valueIndex) }
                options.vectorSupport = vector
            case "exec", "param", "outputParam", "inout", "default":
                var spec = options.procedure ?? ProcedureCommand.Spec(procedure: "")
                do {
                    switch name {
                    case "exec": spec.procedure = v
                    case "param": spec.parameters.append(try ProcedureArguments.parameter(v, direction: .input))
                    case "outputParam": spec.parameters.append(try ProcedureArguments.parameter(v, direction: .output))
                    case "inout": spec.parameters.append(try ProcedureArguments.parameter(v, direction: .inputOutput))
                    default: spec.parameters.append(.useDefault(v))
                    }
                } catch let error as ProcedureArguments.ParseError {
                    throw UsageError(error.description)
                } catch {
                    throw bad("invalid procedure parameter", valueIndex)
                }
                options.procedure = spec
            default:
                throw unknown(i)
            }
            i += 1
        }
        if let spec = options.procedure {
            guard !spec.procedure.isEmpty else { throw UsageError("--param, --output, --inout and --default need --exec PROCEDURE") }
            if options.query != nil || options.initialQuery != nil || !options.inputFiles.isEmpty {
                throw UsageError("--exec cannot be combined with -Q, -q or -i")
            }
        }
        if options.query != nil, options.initialQuery != nil { throw UsageError("-Q and -q cannot be combined") }
        if !options.inputFiles.isEmpty, options.query != nil || options.initialQuery != nil {
            throw UsageError("-i cannot be combined with -Q or -q")
        }
        return options
    }

    private static func apply(switch name: String, to options: inout QueryOptions) throws(UsageError) {
        switch name {
        case "help": options.help = true
        case "version": options.version = true
        case "trust": options.trustServerCertificate = true
        case "trim": options.trimSpaces = true
        case "exitOnError": options.exitOnError = true
        case "echo": options.echo = true
        case "noVariables": options.disableVariables = true
        case "multiSubnetFailover": options.multiSubnetFailover = true
        case "jsonNumbers": options.jsonNumbers = true
        case "listServers": options.listServers = .list
        case "listServersClean": options.listServers = .clean
        case "trusted": options.trustedConnection = true
        case "entra": options.entra = true
        default: break
        }
    }
}
