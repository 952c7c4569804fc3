import Foundation
import SQLClient
import TDSCapture

/// `sqlclient -S … -U … --exec dbo.proc [--param @a=1] [--param @s:varchar(10)=abc] [--output @b:int]
/// [--inout @c:int=5] [--default @d] [--query-timeout S] [--format table|csv|json]`: calls a stored
/// procedure by RPC ([MS-TDS] 2.2.6.6) and prints its result sets, OUTPUT values and return status.
///
/// Parameter values are canonical text (DESIGN.md), `NULL` for NULL; types are SQL Server type
/// names. Connection options are those of the query command.
enum ProcedureCommand {
    static let usage = """
           sqlclient -S server -U user --exec PROCEDURE [--param @name[:type]=value]… [--output @name:type]…
                     [--inout @name[:type]=value]… [--default @name]… [--query-timeout seconds] [--format …]
    """

    struct Spec {
        var procedure: String
        var parameters: [SQLParameter] = []
        var queryTimeout: Duration?
    }

    /// Splits the procedure arguments from the connection arguments; nil when there is no `--exec`.
    static func extract(_ arguments: [String]) throws -> (spec: Spec, rest: [String])? {
        guard arguments.contains("--exec") else { return nil }
        var spec = Spec(procedure: "")
        var rest: [String] = []
        var i = 0
        func value(_ flag: String) throws -> String {
            i += 1
            guard i < arguments.count else { throw UsageError("\(flag) needs a value") }
            return arguments[i]
        }
        do {
            while i < arguments.count {
                let arg = arguments[i]
                switch arg {
                case "--exec": spec.procedure = try value(arg)
                case "--param": spec.parameters.append(try ProcedureArguments.parameter(try value(arg), direction: .input))
                case "--output": spec.parameters.append(try ProcedureArguments.parameter(try value(arg), direction: .output))
                case "--inout": spec.parameters.append(try ProcedureArguments.parameter(try value(arg), direction: .inputOutput))
                case "--default": spec.parameters.append(.useDefault(try value(arg)))
                case "--query-timeout":
                    guard let s = Int(try value(arg)), s >= 0 else { throw UsageError("--query-timeout needs seconds") }
                    spec.queryTimeout = s == 0 ? nil : .seconds(s)
                case "-Q", "-q", "--query", "-i", "--input":
                    throw UsageError("--exec cannot be combined with \(arg)")
                default: rest.append(arg)
                }
                i += 1
            }
        } catch let error as ProcedureArguments.ParseError {
            throw UsageError(error.description)
        }
        guard !spec.procedure.isEmpty else { throw UsageError("--exec needs a procedure name") }
        return (spec, rest)
    }

    /// Runs `--exec` when present (the exit status), nil otherwise. Exit statuses as the query
    /// command: 0 success, 1 a server error, 2 a usage error, 3 a connection or login failure.
    static func runIfRequested(_ arguments: [String]) async -> Int32? {
        let extracted: (spec: Spec, rest: [String])?
        do {
            extracted = try extract(arguments)
        } catch let error as UsageError {
            _ = QueryCommand.fail(error.message)
            FileHandle.standardError.write(Data((QueryCommand.usage + "\n" + usage + "\n").utf8))
            return 2
        } catch {
            return QueryCommand.fail("\(error)")
        }
        guard let (spec, rest) = extracted else { return nil }
        let options: QueryOptions
        var config: SQLConnectionConfiguration
        do {
            options = try QueryCommand.parse(rest)
            config = try QueryCommand.configuration(options, environment: ProcessInfo.processInfo.environment)
        } catch let error as UsageError {
            if !error.message.isEmpty { _ = QueryCommand.fail(error.message) }
            FileHandle.standardError.write(Data((QueryCommand.usage + "\n" + usage + "\n").utf8))
            return 2
        } catch let error as SQLClientError {
            return QueryCommand.fail(error.message)
        } catch {
            return QueryCommand.fail("\(error)")
        }
        if let t = spec.queryTimeout { config.queryTimeout = t }

        let connection: SQLConnection
        do {
            connection = try await SQLConnection.connect(config)
        } catch let error as SQLClientError {
            QueryCommand.printError(error)
            return 3
        } catch {
            FileHandle.standardError.write(Data("sqlclient: \(error)\n".utf8))
            return 3
        }
        defer { Task { await connection.close() } }
        do {
            let result = try await connection.callProcedure(spec.procedure, parameters: spec.parameters)
            printResult(result, format: options.format)
            return 0
        } catch let error as SQLClientError {
            for m in error.serverMessages { FileHandle.standardError.write(Data(ServerMessageFormatter.format(m).utf8)) }
            if error.serverMessages.isEmpty { QueryCommand.printError(error) }
            return error.code == .serverError ? 1 : (await connection.isOpen ? 1 : 3)
        } catch {
            FileHandle.standardError.write(Data("sqlclient: \(error)\n".utf8))
            return 1
        }
    }

    /// Result sets (as the query command prints them), then the OUTPUT values and the return status:
    /// in table/csv form `@name = value` lines and `Return status: N`; in JSON form
    /// `{"outputs":{"@name":"value",…}}` and `{"returnStatus":N}` lines (values as canonical text, NULL as null).
    static func printResult(_ result: SQLProcedureResult, format: OutputFormat) {
        for m in result.messages { FileHandle.standardError.write(Data(ServerMessageFormatter.format(m).utf8)) }
        let printer = ResultPrinter(format: format)
        for statement in result.statements {
            switch statement {
            case .resultSet(let r):
                printer.handle(.columns(r.columns))
                for row in r.rows { printer.handle(.row(row)) }
                printer.handle(.statementDone(rowsAffected: r.rowsAffected))
            case .rowsAffected(let n):
                printer.handle(.statementDone(rowsAffected: n))
            }
        }
        printer.flush()
        var text = ""
        switch format {
        case .json:
            if !result.outputs.isEmpty {
                let fields = result.outputs.map { o in
                    jsonString(o.name.isEmpty ? "#\(o.ordinal)" : o.name) + ":" + (o.value.canonicalText.map(jsonString) ?? "null")
                }
                text += "{\"outputs\":{" + fields.joined(separator: ",") + "}}\n"
            }
            if let status = result.returnStatus { text += "{\"returnStatus\":\(status)}\n" }
        case .table, .csv:
            if !result.outputs.isEmpty { text += "\n" }
            for o in result.outputs {
                text += "\(o.name.isEmpty ? "#\(o.ordinal)" : o.name) = \(o.value.canonicalText ?? "NULL")\n"
            }
            if let status = result.returnStatus { text += "\nReturn status: \(status)\n" }
        }
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    /// `s` as a JSON string literal (the same escaping as `sqlclient decode --format json`).
    static func jsonString(_ s: String) -> String { JSONValue.string(s).serialized() }
}
