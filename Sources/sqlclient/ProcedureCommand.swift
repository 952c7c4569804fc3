import Foundation
import SQLClient
import TDS

/// `sqlclient -S … -U … --exec dbo.proc [--param @a=1] [--param @s:varchar(10)=abc] [--output @b:int]
/// [--inout @c:int=5] [--default @d] [-t S] [--format table|csv|json|jsonl]`: calls a stored
/// procedure by RPC ([MS-TDS] 2.2.6.6) and prints its result sets, OUTPUT values and return status.
///
/// Parameter values are canonical text (the README's type mapping), `NULL` for NULL; types are
/// SQL Server type names. Connection and output options are those of the query command.
enum ProcedureCommand {
    struct Spec {
        var procedure: String
        var parameters: [SQLParameter] = []
    }

    /// Calls the procedure on `connection` and prints what it returns. Exit statuses as the
    /// query command: 0 success, 1 a server error, 3 the connection was lost.
    static func run(_ spec: Spec, on connection: SQLConnection, printer: ResultPrinter) async -> Int32 {
        do {
            // The query timeout (-t, --query-timeout) is the configuration's default for every request.
            let result = try await connection.callProcedure(spec.procedure, parameters: spec.parameters)
            printResult(result, printer: printer)
            return 0
        } catch let error as SQLClientError {
            printer.flush()
            for m in error.serverMessages { printer.printMessage(m) }
            if error.serverMessages.isEmpty { QueryCommand.printError(error) }
            return error.code == .serverError ? 1 : (await connection.isOpen ? 1 : 3)
        } catch {
            printer.flush()
            FileHandle.standardError.write(Data("sqlclient: \(error)\n".utf8))
            return 1
        }
    }

    /// Result sets (as the query command prints them), then the OUTPUT values and the return status:
    /// in table/csv form `@name = value` lines and `Return status: N`; in JSON forms
    /// `{"outputs":{"@name":value,…}}` and `{"returnStatus":N}` lines (values typed as in result sets).
    static func printResult(_ result: SQLResult, printer: ResultPrinter) {
        for m in result.messages { printer.printMessage(m) }
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
        switch printer.options.format {
        case .json, .jsonl:
            if !result.outputs.isEmpty {
                let fields = result.outputs.map { o in
                    ResultPrinter.jsonString(o.name.isEmpty ? "#\(o.ordinal)" : o.name) + ":" + printer.jsonValue(o.value)
                }
                text += "{\"outputs\":{" + fields.joined(separator: ",") + "}}\n"
            }
            if let status = result.returnStatus { text += "{\"returnStatus\":\(status)}\n" }
        case .table, .csv:
            if !result.outputs.isEmpty { text += "\n" }
            for o in result.outputs {
                text += "\(o.name.isEmpty ? "#\(o.ordinal)" : o.name) = \(o.value.canonicalText ?? printer.options.nullText)\n"
            }
            if let status = result.returnStatus { text += "\nReturn status: \(status)\n" }
        }
        printer.out.write(text)
        printer.out.flush()
    }
}
