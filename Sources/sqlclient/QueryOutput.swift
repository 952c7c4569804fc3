import Foundation
import SQLClient
import TDSCapture

/// Prints the events of a batch in the chosen format: results on standard output, server
/// messages on standard error (in order with the results: standard output is flushed first).
final class ResultPrinter {
    let format: OutputFormat
    private var columns: SQLColumns?
    private var rows: [[String?]] = []
    private var out = FileHandle.standardOutput
    private var pending = ""
    private var resultSetsPrinted = 0

    init(format: OutputFormat) {
        self.format = format
    }

    func handle(_ event: SQLResponseEvent) {
        switch event {
        case .columns(let cols):
            if columns != nil { finishResultSet(rowsAffected: nil) }
            columns = cols
            rows = []
        case .row(let row):
            rows.append(row.values.map { $0.canonicalText })
        case .statementDone(let count):
            if columns != nil {
                finishResultSet(rowsAffected: count)
            } else if let count {
                switch format {
                case .table: write("\n(\(count) row\(count == 1 ? "" : "s") affected)\n")
                case .json: write("{\"rowsAffected\":\(count)}\n")
                case .csv: break
                }
            }
        case .message(let message):
            flush()
            FileHandle.standardError.write(Data(ServerMessageFormatter.format(message).utf8))
        case .returnStatus:
            break
        }
    }

    /// Ends an open result set (a batch that failed mid-result) and writes what is pending.
    func flush() {
        if columns != nil { finishResultSet(rowsAffected: nil) }
        if !pending.isEmpty {
            out.write(Data(pending.utf8))
            pending = ""
        }
    }

    private func write(_ text: String) {
        pending += text
        if pending.utf8.count > 65_536 {
            out.write(Data(pending.utf8))
            pending = ""
        }
    }

    private func finishResultSet(rowsAffected: Int?) {
        guard let cols = columns else { return }
        switch format {
        case .table: writeTable(cols, rowsAffected: rowsAffected)
        case .csv: writeCSV(cols)
        case .json: writeJSON(cols, rowsAffected: rowsAffected)
        }
        columns = nil
        rows = []
        resultSetsPrinted += 1
    }

    // MARK: table (sqlcmd-like)

    private static func isNumeric(_ c: SQLColumn) -> Bool {
        switch c.typeInfo.type.name.uppercased() {
        case "INT1", "INT2", "INT4", "INT8", "INTN", "FLT4", "FLT8", "FLTN", "BIT", "BITN", "DECIMAL", "DECIMALN",
             "NUMERIC", "NUMERICN", "MONEY", "MONEY4", "MONEYN":
            return true
        default:
            return false
        }
    }

    private func writeTable(_ cols: SQLColumns, rowsAffected: Int?) {
        let texts = rows.map { $0.map { ($0 ?? "NULL").replacingOccurrences(of: "\n", with: " ") } }
        var widths = cols.map { $0.name.count }
        for row in texts {
            for (i, v) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], v.count) }
        }
        let numeric = cols.map(Self.isNumeric)
        func pad(_ s: String, _ i: Int, right: Bool) -> String {
            let fill = String(repeating: " ", count: max(0, widths[i] - s.count))
            return right ? fill + s : s + fill
        }
        var text = resultSetsPrinted > 0 ? "\n" : ""
        text += cols.enumerated().map { pad($1.name, $0, right: false) }.joined(separator: " ") + "\n"
        text += widths.map { String(repeating: "-", count: $0) }.joined(separator: " ") + "\n"
        for row in texts {
            text += row.enumerated().map { i, v in
                i < widths.count ? pad(v, i, right: numeric[i] && v != "NULL") : v
            }.joined(separator: " ") + "\n"
        }
        let count = rowsAffected ?? rows.count
        text += "\n(\(count) row\(count == 1 ? "" : "s") affected)\n"
        write(text)
    }

    // MARK: csv (RFC 4180; NULL is an empty field)

    private static func csvField(_ s: String?) -> String {
        guard let s else { return "" }
        if s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) {
            return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
        return s
    }

    private func writeCSV(_ cols: SQLColumns) {
        var text = resultSetsPrinted > 0 ? "\n" : ""
        text += cols.map { Self.csvField($0.name) }.joined(separator: ",") + "\r\n"
        for row in rows { text += row.map(Self.csvField).joined(separator: ",") + "\r\n" }
        write(text)
    }

    // MARK: json (one object per result set, one per line)

    /// `s` as a JSON string literal (the same escaping as `sqlclient decode --format json`).
    static func jsonString(_ s: String) -> String { JSONValue.string(s).serialized() }

    private func writeJSON(_ cols: SQLColumns, rowsAffected: Int?) {
        var text = "{\"columns\":["
        text += cols.map { "{\"name\":\(Self.jsonString($0.name)),\"type\":\(Self.jsonString($0.typeName))}" }
            .joined(separator: ",")
        text += "],\"rows\":["
        text += rows.map { row in
            "[" + row.map { $0.map(Self.jsonString) ?? "null" }.joined(separator: ",") + "]"
        }.joined(separator: ",")
        text += "],\"rowsAffected\":" + (rowsAffected.map(String.init) ?? "null") + "}\n"
        write(text)
    }
}
