#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import SQLClient
import Synchronization
import TDS

/// `sqlclient -S server -U user [-P password] [-d database] [-Q sql | -q sql | -i file…] …`: runs
/// batches against a server the way sqlcmd does and prints their results as they arrive.
/// Returns the process exit status (see ``QueryCommand/usage``).
func runQueryCommand(_ arguments: [String]) -> Int32 {
    let outcome = ExitBox()
    let done = DispatchSemaphore(value: 0)
    // Unstructured: the synchronous entry point (main) waits for the command on a semaphore.
    Task {
        outcome.set(await QueryCommand.run(arguments))
        done.signal()
    }
    done.wait()
    return outcome.value
}

final class ExitBox: Sendable {
    private let status = Atomic<Int32>(0)
    func set(_ v: Int32) { status.store(v, ordering: .sequentiallyConsistent) }
    var value: Int32 { status.load(ordering: .sequentiallyConsistent) }
}

enum QueryCommand {
    static let usage = """
    usage: sqlclient -S server -U user [-P password] [-d database] [-Q sql | -q sql | -i file…] [options]
           sqlclient --connection-string "Server=…;User ID=…;Password=…" [-Q sql | -i file…] [options]
           sqlclient … --exec PROCEDURE [--param @name[:type]=value]… [--output @name:type]…
                     [--inout @name[:type]=value]… [--default @name]…
           sqlclient decode FILE [--port N] [--tokens] [--tds-version 7.1|7.2|7.3|7.4] [--format text|json] [--json-numbers]
                     [--to-session FILE.tdssession]   (a capture's conversations as replay sessions)
           sqlclient record --upstream SERVER (--out FILE.tdssession | --out-dir DIR) [--listen HOST:PORT] …
                     (a recording proxy; sqlclient record --help)
           sqlclient replay SESSION.tdssession [--host H] [--port P] [--tls] [--strict] …
                     (serve a recorded session until stdin closes; sqlclient replay --help)

    Connection
      -S server             host, host,port, host:port, host\\instance[,port|:port], [IPv6]:port
      -U user  -P password  (-Ppassword works too; else SQLCMDPASSWORD; else asked for on a terminal)
      -d database           -l seconds (login timeout, 0: none)  -a packet-size  -H workstation
      -N [mode]             on (also true, mandatory; the default), required, strict (TDS 8.0: TLS
                            first, certificate always verified), off (optional), notsupported (disable);
                            --encrypt mode is the same
      -C                    trust the server certificate without verifying it (--trust-server-certificate)
      --ca-file PEM  -F name (--host-name-in-certificate)  --tds-version 7.1|7.2|7.3|7.4 (or TDSVER)
      --text-size N  --app-name NAME
      --column-master-key-folder DIR
                            Always Encrypted: encrypted columns decrypted and parameters encrypted, the
                            column master keys (certificate and private key files) read from DIR
      -U DOMAIN\\user       Windows authentication (NTLM) with -P's password
      -E                    trusted connection: Kerberos with the default ticket cache (kinit); no -P
                            (--trusted-connection; with -U DOMAIN\\user -P password, NTLM when Kerberos cannot start)
      --server-spn SPN      the server's Kerberos SPN (default MSSQLSvc/<fqdn>:<port>)
      --access-token-file F an Entra ID access token from file F (Azure SQL, Fabric); no -U or -P
      -G                    Microsoft Entra ID sign-in; ActiveDirectoryDefault unless --authentication-method says
      --authentication-method NAME
                            ActiveDirectoryDefault (environment, workload identity, managed identity, az, azd),
                            ActiveDirectoryServicePrincipal (-U client id, -P secret), ActiveDirectoryManagedIdentity
                            (-U user-assigned client id), ActiveDirectoryWorkloadIdentity, ActiveDirectoryDeviceCodeFlow
                            (prints the sign-in message; login timeout 5 minutes unless -l); endpoints from
                            AZURE_AUTHORITY_HOST, IDENTITY_ENDPOINT, AZURE_POD_IDENTITY_AUTHORITY_HOST
      -K ReadOnly           application intent (--application-intent ReadOnly|ReadWrite)
      -M                    multi-subnet failover: every address of the host at once (--multi-subnet-failover)
      --json-support on|off  --vector-support off|float32|float16
                            SQL Server 2025 json and vector types asked for at login (default on, float32)
    Input
      -Q sql                run the batches of sql, then exit      -q sql  run them, then read stdin
      -i file…              run script files (UTF-8, or UTF-16 with a byte order mark)
      (none)                read standard input; on a terminal with a "1>" prompt
      -t seconds            query timeout of every batch, 0: none (--query-timeout)
      -v name=value…        scripting variables for $(name); -x leaves $(name) as written
      -b                    stop at the first error, exit status 1 (as ":on error exit")
      -e                    print each batch before running it
    Script lines (case-insensitive, outside strings and comments; a trailing -- comment is allowed)
      GO [n]                run the batch (n times, 1 to 2147483647)
      :setvar name [value]  :r file   :on error exit|ignore   :reset   :listvar
      :out file|STDOUT|STDERR   results from now on to a file (created or truncated) or stream
      :error file|STDOUT|STDERR messages and errors from now on likewise
      :connect server [-l seconds] [-U user [-P password]]   a new session (without -U: the same login)
      exit | exit() | exit(query)   quit     (exit(query): the status is its first column)
    Output
      --format table|csv|json|jsonl   table: sqlcmd's columns, sized from the declared types
                            csv: RFC 4180; json: JSON Lines, one object per result set, rows
                            streamed into it; jsonl: one object per row, keyed by column name
                            JSON numbers (the rule of decode --format json too): exact for any
                            reader: integers as numbers, beyond ±(2^53-1) as strings of their
                            digits; decimal, numeric, money as strings of their digits; float and
                            real as numbers; NULL as null; other types as their text
      --json-numbers        big integers, decimal, numeric and money as JSON numbers (for readers
                            that keep a number's digits; also for decode)
      -h rows               print headers every N rows; -1: none (table and csv)
      -s sep                column separator (table: " ", csv: ",")
      -W                    no padding or truncation, trailing spaces removed
      -w width              wrap table lines at width (9–65535)
      -y width              table width of the max types, text, ntext, image, xml, sql_variant
                            (0–8000; default 256; 0: whole values)
      -Y width              table width limit of char, varchar(n), nchar, nvarchar(n), binary(n),
                            varbinary(n) (0–8000; default 0: their declared size)
      -k[1|2]               control characters in table and csv values: -k removes them, -k1
                            replaces each with a space, -k2 replaces each run with one space
      --null text           NULL in table and csv output (default NULL)
      -o file               results to file (messages stay on standard error)
      -m level              hide messages below this severity (-1, 0: show all)
    Servers
      -L  -Lc               list the SQL Server instances SQL Server Browsers announce (UDP 1434
                            broadcast; -l seconds to wait, default 1); -Lc: names only
      --browser HOST[:PORT] -L asks that host's Browser instead of broadcasting
    -? --help               this text            --version  the version

    Server messages go to standard error as "Msg N, Level L, State S, Line X" and the text;
    PRINT text alone.
    Exit status: 0 success; 1 an error was reported (server error, query timeout, script error)
    unless ":on error ignore"; 2 a usage error; 3 the connection or login failed (or was lost);
    exit(query): the query's first column.
    """

    /// A usage error: the message, then where to find the options.
    static func fail(_ text: String, hint: Bool = true) -> Int32 {
        let tail = hint ? "\nsqlclient: run \"sqlclient --help\" for the options" : ""
        FileHandle.standardError.write(Data(("sqlclient: " + text + tail + "\n").utf8))
        return 2
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
            let user = options.user ?? ""
            let entra = options.entra || options.authenticationMethod != nil
            guard !user.isEmpty || options.accessTokenFile != nil || options.trustedConnection || entra else {
                throw UsageError("-U user is required (or -E for a trusted connection, -G for Entra ID)")
            }
            let password: String
            if options.accessTokenFile != nil || (options.trustedConnection && options.password == nil) {
                password = ""
            } else if entra, options.password == nil,
                      (options.authenticationMethod ?? "").lowercased().replacingOccurrences(of: " ", with: "") != "activedirectoryserviceprincipal" {
                password = ""   // only a service principal has a secret to ask for
            } else if let given = options.password ?? environment["SQLCMDPASSWORD"] {
                password = given
            } else if Terminal.isTerminal(STDIN_FILENO) {
                guard let typed = Terminal.readHiddenLine(prompt: "Password: ") else {
                    throw UsageError("no password was typed")
                }
                password = typed
            } else {
                throw UsageError("no password: give -P, set SQLCMDPASSWORD, or run on a terminal to be asked")
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
        if options.connectionString == nil || options.encryptionGiven { config.encryption = options.encryption }
        if options.trustServerCertificate { config.tls.trustServerCertificate = true }
        if let ca = options.caFile { config.tls.caFile = ca }
        if let name = options.hostNameInCertificate { config.tls.hostNameInCertificate = name }
        if let v = options.tdsVersion { config.tdsVersion = v }
        if let t = options.loginTimeout { config.connectTimeout = t == 0 ? SQLConnectionConfiguration.maximumTimeout : .seconds(t) }
        if let t = options.queryTimeout { config.queryTimeout = t == 0 ? nil : .seconds(t) }
        if let t = options.textSize { config.textSize = t }
        if let p = options.packetSize { config.packetSize = p }
        if let w = options.workstation { config.workstationID = w }
        if let intent = options.applicationIntent { config.applicationIntent = intent }
        if options.multiSubnetFailover { config.multiSubnetFailover = true }
        if let json = options.jsonSupport { config.typeSupport.json = json }
        if let vector = options.vectorSupport { config.typeSupport.vector = vector }
        if let folder = options.columnMasterKeyFolder {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw UsageError("--column-master-key-folder \"\(folder)\" is not a folder")
            }
            config.columnEncryption = .enabled
            config.columnEncryptionKeyStoreProviders = [SQLCertificateFileKeyStoreProvider.providerName: SQLCertificateFileKeyStoreProvider(folder: folder)]
        }
        if let file = options.accessTokenFile {
            // The token is a credential: never echoed, only its file named.
            guard let data = FileManager.default.contents(atPath: file),
                  let text = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines),
                  !text.isEmpty else {
                throw UsageError("cannot read an access token from --access-token-file \"\(file)\"")
            }
            config.authentication = .accessToken(text)
        } else if options.entra || options.authenticationMethod != nil {
            // -G / --authentication-method: Entra ID through the FEDAUTH MSAL workflow; the credentials
            // read this run's environment (AZURE_*, IDENTITY_ENDPOINT, PATH for az and azd).
            let method = options.authenticationMethod ?? "ActiveDirectoryDefault"
            let env = EntraEnvironment(variables: environment, isAzureVM: EntraEnvironment.process.isAzureVM)
            config.authentication = try SQLAuthentication.entra(method: method, user: config.user, password: config.password.reveal(),
                                                                environment: env)
            config.user = ""
            config.password = RedactedPassword("")
            let compact = method.lowercased().replacingOccurrences(of: " ", with: "")
            if compact.hasPrefix("activedirectorydevice"), options.loginTimeout == nil {
                config.connectTimeout = .seconds(300)   // a person signs in meanwhile
            }
        } else if options.trustedConnection {
            // -E: Kerberos; -U DOMAIN\user with a password is the NTLM fallback.
            var kerberos = KerberosCredentials(serverSPN: options.serverSPN)
            if case .kerberos(let fromString) = config.authentication { kerberos = fromString }
            if let spn = options.serverSPN { kerberos.serverSPN = spn }
            if config.user.contains("\\"), !config.password.isEmpty {
                kerberos.ntlmFallback = try NTLMCredentials(qualifiedUser: config.user, password: config.password.reveal())
            }
            config.authentication = .kerberos(kerberos)
        } else if case .kerberos(var kerberos) = config.authentication, let spn = options.serverSPN {
            kerberos.serverSPN = spn
            config.authentication = .kerberos(kerberos)
        } else if case .sqlPassword = config.authentication, config.user.contains("\\") {
            // DOMAIN\user: Windows authentication (NTLM), as in a connection string.
            config.authentication = .ntlm(try NTLMCredentials(qualifiedUser: config.user, password: config.password.reveal()))
        }
        config.applicationName = options.applicationName ?? "sqlclient"
        return config
    }

    static func run(_ arguments: [String]) async -> Int32 {
        let options: QueryOptions
        do {
            options = try QueryArguments.parse(arguments)
        } catch {
            return fail(error.message)
        }
        if options.help {
            FileHandle.standardOutput.write(Data((usage + "\n").utf8))
            return 0
        }
        if options.version {
            FileHandle.standardOutput.write(Data("sqlclient \(sqlclientVersion) (SQLClient: TDS 7.1–7.4 in Swift)\n".utf8))
            return 0
        }

        if let style = options.listServers { return await listServers(style, browser: options.browser, timeout: options.loginTimeout) }

        // -Q, -q and -i are read and checked (GO counts) before connecting: a bad file or count
        // is a usage error, and nothing has run.
        var sources: [ScriptInput.Source] = []
        do {
            if let q = options.query ?? options.initialQuery {
                sources.append(.lines(ScriptText.lines(q), name: "-Q"))
            }
            for file in options.inputFiles {
                sources.append(.lines(ScriptText.lines(try ScriptText.read(file)), name: file))
            }
            for case .lines(let lines, _) in sources { try ScriptRunner.check(lines) }
        } catch {
            return fail(error.message, hint: false)
        }
        let readsStandardInput = options.procedure == nil && options.query == nil && options.inputFiles.isEmpty
        if readsStandardInput { sources.append(.standardInput) }

        let environment = ProcessInfo.processInfo.environment
        let config: SQLConnectionConfiguration
        do {
            config = try configuration(options, environment: environment)
        } catch let error as UsageError {
            return fail(error.message)
        } catch let error as SQLClientError {
            return fail(error.message)
        } catch {
            return fail("\(error)")
        }

        let sink: OutputSink
        do {
            sink = try options.outputFile.map { path throws(UsageError) in try OutputSink.file(path) } ?? OutputSink(fd: STDOUT_FILENO)
        } catch {
            return fail(error.message, hint: false)
        }
        defer { sink.close() }
        let printer = ResultPrinter(options: PrintOptions(format: options.format, headers: options.headers,
                                                          separator: options.separator, trimSpaces: options.trimSpaces,
                                                          screenWidth: options.screenWidth, nullText: options.nullText,
                                                          errorLevel: options.errorLevel,
                                                          jsonNumbers: options.jsonNumbers ? .numbers : .exactForAnyReader,
                                                          variableTypeWidth: options.variableTypeWidth,
                                                          fixedTypeWidth: options.fixedTypeWidth,
                                                          controlCharacters: options.controlCharacters),
                                    out: sink)

        let connection: SQLConnection
        do {
            connection = try await SQLConnection.connect(config)
        } catch let error as SQLClientError {
            printError(error)
            if error.code == .certificateVerificationFailed, config.encryption == .strict {
                FileHandle.standardError.write(Data(("sqlclient: -N strict always verifies the certificate (-C does not apply);"
                    + " give --ca-file with the CA that signed it, or -F with the name it carries\n").utf8))
            } else if error.code == .certificateVerificationFailed {
                FileHandle.standardError.write(Data(("sqlclient: the server's certificate is not trusted here; give --ca-file "
                    + "with the CA that signed it, or -C to skip verification (a test server with a self-signed certificate)\n").utf8))
            }
            return 3
        } catch {
            FileHandle.standardError.write(Data("sqlclient: \(error)\n".utf8))
            return 3
        }

        let status: Int32
        if let spec = options.procedure {
            status = await ProcedureCommand.run(spec, on: connection, printer: printer)
        } else {
            var variables = ScriptVariables()
            variables.environment = environment
            for (name, value) in options.variables { variables.set(name, value) }
            variables.set("SQLCMDSERVER", options.server ?? config.address.host)
            variables.set("SQLCMDUSER", config.user)
            variables.set("SQLCMDDBNAME", config.database)
            let runner = ScriptRunner(connection: connection, printer: printer, options: options, variables: variables,
                                      input: ScriptInput(sources),
                                      prompting: readsStandardInput && Terminal.isTerminal(STDIN_FILENO),
                                      configuration: config)
            status = await runner.run()
            await runner.connection.close()
            printer.closeSinks()
            return status
        }
        await connection.close()
        return status
    }

    /// -L / -Lc: the instances SQL Server Browsers announce ([MC-SQLR] SSRP over UDP 1434), by a
    /// broadcast on the local network (answers gathered for a second, or -l seconds), or asked of
    /// one host with `--browser HOST[:PORT]`. Each is `SERVER` (the default instance) or
    /// `SERVER\INSTANCE`, sorted; -L prints them under `Servers:` as sqlcmd does, -Lc alone.
    static func listServers(_ style: ServerListStyle, browser: String?, timeout: Int?) async -> Int32 {
        var host: String?
        var port = 1434
        if let browser {
            let parts = browser.split(separator: ":", maxSplits: 1).map(String.init)
            host = parts.first
            if parts.count == 2 {
                guard let p = Int(parts[1]), (1...65535).contains(p) else { return fail("--browser needs HOST or HOST:PORT") }
                port = p
            }
        }
        let instances: [[String: String]]
        do {
            instances = try await SQLServerBrowser.listInstances(host: host, browserPort: port,
                                                                 timeout: .seconds(max(timeout ?? 1, 1)))
        } catch let error as SQLClientError {
            printError(error)
            return 3
        } catch {
            FileHandle.standardError.write(Data("sqlclient: \(error)\n".utf8))
            return 3
        }
        let names = Set(instances.compactMap { i -> String? in
            guard let server = i["servername"], !server.isEmpty else { return nil }
            let instance = i["instancename"] ?? ""
            return instance.isEmpty || instance.uppercased() == "MSSQLSERVER" ? server : server + "\\" + instance
        }).sorted()
        let text = style == .clean ? names.map { $0 + "\n" }.joined()
            : "\nServers:\n" + names.map { "    " + $0 + "\n" }.joined()
        FileHandle.standardOutput.write(Data(text.utf8))
        return 0
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
}

/// Runs a script line by line as sqlcmd does: SQL lines gather into a batch (with `$(name)`
/// replaced), commands (GO, :setvar, :r, :on error, exit, quit, …) act as they are read.
final class ScriptRunner {
    /// The session the batches run on (`:connect` replaces it).
    private(set) var connection: SQLConnection
    let printer: ResultPrinter
    let options: QueryOptions
    var variables: ScriptVariables
    let input: ScriptInput
    let prompting: Bool
    /// The command line's connection settings, which `:connect` starts from.
    let configuration: SQLConnectionConfiguration
    private var exitOnError: Bool
    private var ignoreErrors = false
    private var status: Int32 = 0

    init(connection: SQLConnection, printer: ResultPrinter, options: QueryOptions, variables: ScriptVariables,
         input: ScriptInput, prompting: Bool, configuration: SQLConnectionConfiguration) {
        self.connection = connection
        self.configuration = configuration
        self.printer = printer
        self.options = options
        self.variables = variables
        self.input = input
        self.prompting = prompting
        exitOnError = options.exitOnError
    }

    /// What to do after a batch or command.
    private enum Flow { case goOn, stop(Int32) }

    /// Checks the GO counts of `lines` that need no variable (a usage error before connecting).
    static func check(_ lines: [String]) throws(UsageError) {
        var lex = SQLLexState()
        for line in lines {
            if lex.isNeutral, let command = ScriptCommand.parse(line) {
                if case .go(let count) = command, !(count?.contains("$(") ?? false) {
                    _ = try ScriptCommand.repeatCount(count)
                }
                if case .go = command { lex = SQLLexState() }
                continue
            }
            lex.scan(line)
        }
    }

    /// Runs the whole script; returns the exit status.
    func run() async -> Int32 {
        var batch: [String] = []
        var lex = SQLLexState()
        var batchBroken = false
        while true {
            if prompting, input.depth == 0 {
                printer.out.flush()
                Terminal.write("\(batch.count + 1)> ")
            }
            guard let line = await input.next() else { break }
            if lex.isNeutral, let command = ScriptCommand.parse(line) {
                let flow: Flow
                switch command {
                case .go(let countText):
                    let text = batch.joined(separator: "\n")
                    let broken = batchBroken
                    batch = []
                    lex = SQLLexState()
                    batchBroken = false
                    if broken {
                        flow = failed()
                    } else {
                        do {
                            let count = try ScriptCommand.repeatCount(try countText.map { text throws in try substitute(text) })
                            flow = await run(text, count: count)
                        } catch let error as UsageError {
                            flow = scriptError(error.message)
                        } catch let error as ScriptVariables.Undefined {
                            flow = scriptError(error.description)
                        } catch {
                            flow = failed()
                        }
                    }
                case .setvar(let name, let value):
                    guard ScriptVariables.isValidName(name) else {
                        flow = scriptError(":setvar: invalid variable name \"\(name)\" (letters, digits, _ or -)")
                        break
                    }
                    if let value { variables.set(name, ScriptVariables.unquote(value)) } else { variables.unset(name) }
                    flow = .goOn
                case .read(let file):
                    do {
                        try input.include(try substitute(file))
                        flow = .goOn
                    } catch let error as UsageError {
                        flow = scriptError(":r: " + error.message)
                    } catch let error as ScriptVariables.Undefined {
                        flow = scriptError(error.description)
                    } catch {
                        flow = failed()
                    }
                case .onError(let exit):
                    exitOnError = exit
                    ignoreErrors = !exit
                    flow = .goOn
                case .exit(let query):
                    guard let query else { return status }   // exit: the batch is not run
                    var text = batch.joined(separator: "\n")
                    if !query.isEmpty {
                        do {
                            text += "\n" + (try substitute(query))
                        } catch {
                            if case .stop(let code) = scriptError(error.description) { return code }
                            return status
                        }
                    }
                    printer.resetLastValue()
                    let result = batchBroken ? failed() : await run(text, count: 1)
                    if case .stop(let code) = result { return code }
                    if query.isEmpty { return status }
                    return Self.exitStatus(printer.lastFirstValue) ?? status
                case .quit:
                    return status
                case .reset:
                    batch = []
                    lex = SQLLexState()
                    batchBroken = false
                    flow = .goOn
                case .out(let target), .error(let target):
                    do {
                        let sink = try OutputSink.named(try substitute(target))
                        if case .out = command { printer.redirectOutput(to: sink) } else { printer.redirectErrors(to: sink) }
                        flow = .goOn
                    } catch let error as UsageError {
                        flow = scriptError(error.message)
                    } catch let error as ScriptVariables.Undefined {
                        flow = scriptError(error.description)
                    } catch {
                        flow = failed()
                    }
                case .connect(let text):
                    do {
                        flow = await connect(try substitute(text))
                    } catch {
                        flow = scriptError(error.description)
                    }
                case .listVariables:
                    for (name, value) in variables.values.sorted(by: { $0.key < $1.key }) {
                        printer.out.write("\(name) = \"\(value)\"\n")
                    }
                    flow = .goOn
                case .unknown(let text):
                    flow = scriptError("unknown command \"\(text.prefix(60))\"")
                }
                if case .stop(let code) = flow { return code }
                continue
            }
            lex.scan(line)
            if options.disableVariables {
                batch.append(line)
            } else {
                do {
                    batch.append(try variables.substitute(line))
                } catch {
                    printer.writeError("sqlclient: \(error.description)\n")
                    batch.append(line)
                    batchBroken = true
                }
            }
        }
        if prompting { Terminal.write("\n") }
        // The text after the last GO runs too (as sqlcmd does for files and piped input).
        if batchBroken {
            if case .stop(let code) = failed() { return code }
        } else if case .stop(let code) = await run(batch.joined(separator: "\n"), count: 1) {
            return code
        }
        return status
    }

    private func substitute(_ text: String) throws(ScriptVariables.Undefined) -> String {
        options.disableVariables ? text : try variables.substitute(text)
    }

    /// The integer of `exit(query)`'s first column (0 when it is NULL or not a number).
    static func exitStatus(_ value: SQLValue?) -> Int32? {
        guard let value else { return nil }
        guard let n = value.intValue else { return 0 }
        return Int32(truncatingIfNeeded: n)
    }

    /// An error counts (status 1) unless `:on error ignore`; with -b or `:on error exit` it stops the script.
    private func failed() -> Flow {
        if ignoreErrors { return .goOn }
        status = 1
        return exitOnError ? .stop(1) : .goOn
    }

    private func scriptError(_ message: String) -> Flow {
        printer.writeError("sqlclient: \(message)\n")
        return failed()
    }

    /// `:connect server [-l timeout] [-U user [-P password]]`: a new session with the command
    /// line's settings, to `server`; without -U the user and password stay, -U without -P takes
    /// SQLCMDPASSWORD. The old session is closed once the new one is in; when the new one
    /// fails, the error is reported and the old one stays.
    private func connect(_ text: String) async -> Flow {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map { ScriptVariables.unquote(String($0)) }
        guard let server = words.first else { return scriptError(":connect needs a server") }
        var config = configuration
        var user: String?
        var password: String?
        var i = 1
        while i < words.count {
            let flag = words[i]
            guard i + 1 < words.count else { return scriptError(":connect: \(flag == "-P" ? "-P" : "argument #\(i + 1)") needs a value") }
            let value = words[i + 1]
            switch flag {
            case "-l":
                guard let seconds = Int(value), seconds >= 0 else { return scriptError(":connect: invalid -l login timeout") }
                config.connectTimeout = seconds == 0 ? SQLConnectionConfiguration.maximumTimeout : .seconds(seconds)
            case "-U": user = value
            case "-P": password = value
            default: return scriptError(":connect: unknown argument #\(i + 1) (-l, -U and -P are known)")
            }
            i += 2
        }
        do {
            config.address = try SQLServerAddress(parsing: server)
            if let user {
                let secret = password ?? variables.environment["SQLCMDPASSWORD"] ?? ""
                config.user = user
                config.password = RedactedPassword(secret)
                config.authentication = user.contains("\\") ? .ntlm(try NTLMCredentials(qualifiedUser: user, password: secret)) : .sqlPassword
            }
            let newConnection = try await SQLConnection.connect(config)
            await connection.close()
            connection = newConnection
            variables.set("SQLCMDSERVER", server)
            variables.set("SQLCMDUSER", config.user)
            return .goOn
        } catch let error as SQLClientError {
            printer.printError(error)
            return failed()
        } catch {
            return scriptError(":connect: \(error)")
        }
    }

    /// Runs `text` `count` times, printing as events arrive.
    private func run(_ text: String, count: Int) async -> Flow {
        guard !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return .goOn }
        if options.echo { printer.out.write(text + "\n") }
        var flow = Flow.goOn
        for _ in 0 ..< count {
            do {
                // The script is SQL text the user typed: sent as written.
                for try await event in connection.events(SQLQuery(unsafeSQL: text)) {
                    printer.handle(event)
                    if printer.out.failed { break }   // standard output was closed (… | head)
                }
                printer.flush()
                if printer.out.failed { return .stop(status) }
            } catch let error as SQLClientError {
                printer.flush()
                if error.code != .serverError {
                    // Server errors were printed as messages; anything else is printed here.
                    printer.printError(error)
                }
                if !(await connection.isOpen) {
                    return .stop(error.code == .serverError ? 1 : 3)
                }
                flow = failed()
                if case .stop = flow { return flow }
            } catch {
                printer.flush()
                printer.writeError("sqlclient: \(error)\n")
                flow = failed()
                if case .stop = flow { return flow }
            }
        }
        return flow
    }
}
