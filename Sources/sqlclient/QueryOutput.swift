#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import SQLClient
import TDS
import TDSCapture

/// Buffered output to a file descriptor. Written text is flushed when 64 KiB are pending, when
/// 100 ms have passed since the last flush (so a slow stream of rows shows as it comes), at
/// once on a terminal, and before anything goes to standard error (so the two stay in order).
final class OutputSink {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private let immediate: Bool
    private var lastFlush = DispatchTime.now().uptimeNanoseconds
    private(set) var failed = false

    init(fd: Int32) {
        self.fd = fd
        immediate = isatty(fd) == 1
        buffer.reserveCapacity(1 << 16)
    }

    /// Output to `path` (created or truncated).
    static func file(_ path: String) throws(UsageError) -> OutputSink {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw UsageError("cannot write \"\(path)\": \(String(cString: strerror(errno)))") }
        return OutputSink(fd: fd)
    }

    func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if immediate || buffer.count >= 1 << 16 {
            flush()
        } else {
            let now = DispatchTime.now().uptimeNanoseconds
            if now &- lastFlush >= 100_000_000 { flush() }
        }
    }

    func flush() {
        lastFlush = DispatchTime.now().uptimeNanoseconds
        guard !buffer.isEmpty else { return }
        var offset = 0
        buffer.withUnsafeBytes { raw in
            while offset < raw.count {
                let n = posixWrite(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    failed = true   // a closed pipe (sqlclient … | head): stop writing
                    break
                }
                offset += n
            }
        }
        buffer.removeAll(keepingCapacity: true)
    }

    private var isClosed = false

    /// Flushes, then closes the descriptor unless it is standard input, output or error. Safe to call twice.
    func close() {
        flush()
        if fd > 2, !isClosed { posixClose(fd) }
        isClosed = true
    }

    /// The sink `:out`/`:error` name: `STDOUT`, `STDERR` (any case) or a file (created or truncated).
    static func named(_ target: String) throws(UsageError) -> OutputSink {
        switch target.uppercased() {
        case "STDOUT": return OutputSink(fd: STDOUT_FILENO)
        case "STDERR": return OutputSink(fd: STDERR_FILENO)
        default: return try file(target)
        }
    }
}

/// `-k`: what happens to control characters (U+0000–U+001F, U+007F) in table and csv values, as
/// sqlcmd does it: `-k` removes them, `-k1` replaces each with a space, `-k2` replaces each run
/// of them with one space. Without `-k` a table shows line breaks as spaces and keeps the rest.
enum ControlCharacters: Equatable {
    case keep, remove, replaceEach, replaceRuns

    static func isControl(_ u: Unicode.Scalar) -> Bool { u.value < 0x20 || u.value == 0x7F }

    func apply(_ text: String) -> String {
        guard self != .keep, text.unicodeScalars.contains(where: Self.isControl) else { return text }
        var out = String.UnicodeScalarView()
        var inRun = false
        for u in text.unicodeScalars {
            guard Self.isControl(u) else {
                out.append(u)
                inRun = false
                continue
            }
            switch self {
            case .replaceEach: out.append(" ")
            case .replaceRuns: if !inRun { out.append(" ") }
            case .remove, .keep: break
            }
            inRun = true
        }
        return String(out)
    }
}

/// write(2) and close(2), named apart from the methods of the same names.
func posixWrite(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int { write(fd, bytes, count) }
func posixClose(_ fd: Int32) { _ = close(fd) }

/// How results are printed (from the command line).
struct PrintOptions {
    var format = OutputFormat.table
    var headers = 0
    var separator: String?
    var trimSpaces = false
    var screenWidth: Int?
    var nullText = "NULL"
    /// Messages below this severity are not printed (0 or -1: all).
    var errorLevel = 0
    /// How JSON numbers are written (`--json-numbers`: ``JSONNumberRule/numbers``).
    var jsonNumbers = JSONNumberRule.exactForAnyReader
    /// -y: table width of the large types (the `max` types, text, ntext, image, xml, sql_variant,
    /// CLR types), 256 as sqlcmd; 0: values are printed whole.
    var variableTypeWidth = 256
    /// -Y: table width limit of char, varchar(n), nchar, nvarchar(n), binary(n), varbinary(n); 0: their declared size.
    var fixedTypeWidth = 0
    /// -k: control characters in table and csv values.
    var controlCharacters = ControlCharacters.keep
}

/// Prints the events of a batch as they arrive: results on ``OutputSink`` (standard output or
/// -o), server messages on standard error. Nothing is kept per row: table columns take their
/// widths from the declared types (as sqlcmd sizes them), so memory stays flat however many rows
/// a result set has.
final class ResultPrinter {
    let options: PrintOptions
    /// Results: standard output, -o, or what `:out` named last.
    private(set) var out: OutputSink
    /// Server messages and errors: standard error, or what `:error` named last.
    private(set) var err: OutputSink
    private var current: ResultSetState?
    private var resultSetsPrinted = 0
    /// The first column of the last row seen (for `exit(query)`).
    private(set) var lastFirstValue: SQLValue?

    private struct ResultSetState {
        var columns: SQLColumns
        var widths: [Int]
        var rightAligned: [Bool]
        var jsonKeys: [String]
        /// Per column: whether a longer value is cut to its width (not for -y 0's whole values).
        var cuts: [Bool] = []
        var rows = 0
    }

    func resetLastValue() { lastFirstValue = nil }

    init(options: PrintOptions, out: OutputSink, err: OutputSink = OutputSink(fd: STDERR_FILENO)) {
        self.options = options
        self.out = out
        self.err = err
    }

    /// `:out`: results go to `sink` from now on (the previous file, if any, is closed).
    func redirectOutput(to sink: OutputSink) {
        flush()
        let old = out
        out = sink
        old.close()
    }

    /// `:error`: messages and errors go to `sink` from now on (the previous file, if any, is closed).
    func redirectErrors(to sink: OutputSink) {
        let old = err
        err = sink
        old.close()
    }

    /// Writes `text` where errors go, after the results so far.
    func writeError(_ text: String) {
        out.flush()
        err.write(text)
        err.flush()
    }

    /// A client error (not a server message) as `sqlclient: …`, or a server message's text.
    func printError(_ error: SQLClientError) {
        writeError(error.serverMessage.map(ServerMessageFormatter.format) ?? "sqlclient: \(error.message)\n")
    }

    /// Flushes and closes the output and error sinks (files; standard streams are only flushed).
    func closeSinks() {
        flush()
        out.close()
        err.close()
    }

    func handle(_ event: SQLResponseEvent) {
        switch event {
        case .columns(let cols):
            if current != nil { endResultSet(rowsAffected: nil) }
            begin(cols)
        case .row(let row):
            lastFirstValue = row.values.first
            writeRow(row.values)
        case .statementDone(let count):
            if current != nil {
                endResultSet(rowsAffected: count)
            } else if let count {
                switch options.format {
                case .table: writeCount(count)
                case .json: out.write("{\"rowsAffected\":\(count)}\n")
                case .csv, .jsonl: break
                }
            }
        case .message(let message):
            printMessage(message)
        case .returnStatus, .outputValue:
            break
        }
    }

    /// A server message on standard error, after the results so far (unless -m hides it).
    func printMessage(_ message: SQLServerMessage) {
        if options.errorLevel > 0, Int(message.severity) < options.errorLevel { return }
        writeError(ServerMessageFormatter.format(message))
    }

    /// Ends a result set left open (a batch that failed mid-result) and writes what is pending.
    func flush() {
        if current != nil { endResultSet(rowsAffected: nil) }
        out.flush()
    }

    // MARK: Result sets

    private func begin(_ cols: SQLColumns) {
        var widths: [Int] = []
        var cuts: [Bool] = []
        if options.format == .table {
            let limits = cols.map { columnLimit($0.typeInfo) }
            widths = zip(cols, limits).map { options.trimSpaces ? $0.name.count : max($1 ?? 0, $0.name.count) }
            cuts = limits.map { $0 != nil }
        }
        // jsonl: the keys of SQLRow.dictionary (column<n> for an empty name, <name>_<k> for a repeat).
        let keys = options.format == .jsonl ? cols.dictionaryKeys.map(Self.jsonString) : []
        current = ResultSetState(columns: cols, widths: widths, rightAligned: cols.map { Self.isNumeric($0.typeInfo) },
                                 jsonKeys: keys, cuts: cuts)
        switch options.format {
        case .table:
            if resultSetsPrinted > 0 { out.write("\n") }
            if options.headers >= 0 { writeTableHeader() }
        case .csv:
            if resultSetsPrinted > 0 { out.write("\r\n") }
            if options.headers >= 0 {
                out.write(cols.map { csvField($0.name) }.joined(separator: csvSeparator) + "\r\n")
            }
        case .json:
            let columns = cols.map { "{\"name\":\(Self.jsonString($0.name)),\"type\":\(Self.jsonString($0.typeName))}" }
            out.write("{\"columns\":[" + columns.joined(separator: ",") + "],\"rows\":[")
        case .jsonl:
            break
        }
    }

    private func writeRow(_ values: [SQLValue]) {
        guard var state = current else { return }
        switch options.format {
        case .table:
            if options.headers > 0, state.rows > 0, state.rows % options.headers == 0 {
                out.write("\n")
                writeTableHeader()
            }
            var cells: [String] = []
            cells.reserveCapacity(values.count)
            for (i, value) in values.enumerated() {
                var text = (value.canonicalText ?? options.nullText)
                if options.controlCharacters != .keep {
                    text = options.controlCharacters.apply(text)
                } else if text.contains(where: { $0 == "\n" || $0 == "\r" || $0 == "\r\n" }) {
                    text = String(text.map { $0 == "\n" || $0 == "\r" || $0 == "\r\n" ? " " : $0 })
                }
                guard i < state.widths.count else { cells.append(text); continue }
                if options.trimSpaces {
                    while text.last == " " { text.removeLast() }
                    cells.append(text)
                } else if i < state.cuts.count, !state.cuts[i], text.count > state.widths[i] {
                    cells.append(text)   // -y 0: a large value whole
                } else {
                    cells.append(Self.fit(text, state.widths[i], right: state.rightAligned[i]))
                }
            }
            writeTableLine(cells.joined(separator: tableSeparator))
        case .csv:
            out.write(values.map { v in v.canonicalText.map { csvField(options.controlCharacters.apply($0)) } ?? options.nullText }
                .joined(separator: csvSeparator) + "\r\n")
        case .json:
            out.write((state.rows > 0 ? ",[" : "[") + values.map(jsonValue).joined(separator: ",") + "]")
        case .jsonl:
            var fields: [String] = []
            fields.reserveCapacity(values.count)
            for (i, v) in values.enumerated() {
                let key = i < state.jsonKeys.count ? state.jsonKeys[i] : Self.jsonString("column\(i + 1)")
                fields.append(key + ":" + jsonValue(v))
            }
            out.write("{" + fields.joined(separator: ",") + "}\n")
        }
        state.rows += 1
        current = state
    }

    private func endResultSet(rowsAffected: Int?) {
        guard let state = current else { return }
        current = nil
        resultSetsPrinted += 1
        switch options.format {
        case .table:
            writeCount(rowsAffected ?? state.rows)
        case .csv, .jsonl:
            break
        case .json:
            out.write("],\"rowsAffected\":" + (rowsAffected.map(String.init) ?? "null") + "}\n")
        }
    }

    // MARK: Table (sqlcmd's layout)

    private var tableSeparator: String { options.separator ?? " " }

    private func writeTableHeader() {
        guard let state = current else { return }
        var names: [String] = []
        var dashes: [String] = []
        for (i, column) in state.columns.enumerated() {
            let width = state.widths[i]
            names.append(options.trimSpaces ? column.name : Self.fit(column.name, width, right: false))
            dashes.append(String(repeating: "-", count: options.trimSpaces ? max(column.name.count, 1) : width))
        }
        writeTableLine(names.joined(separator: tableSeparator))
        writeTableLine(dashes.joined(separator: tableSeparator))
    }

    /// sqlcmd's "(N rows affected)" after a blank line.
    private func writeCount(_ count: Int) {
        out.write("\n")
        writeTableLine("(\(count) row\(count == 1 ? "" : "s") affected)")
    }

    /// One line of table output, wrapped every `-w` characters.
    private func writeTableLine(_ line: String) {
        var text = line
        if options.trimSpaces { while text.last == " " { text.removeLast() } }
        guard let width = options.screenWidth, text.count > width else {
            out.write(text + "\n")
            return
        }
        var rest = Substring(text)
        while !rest.isEmpty {
            let piece = rest.prefix(width)
            out.write(piece + "\n")
            rest = rest.dropFirst(piece.count)
        }
    }

    /// `text` padded (or cut) to `width` characters.
    static func fit(_ text: String, _ width: Int, right: Bool) -> String {
        let count = text.count
        if count == width { return text }
        if count > width { return String(text.prefix(width)) }
        let fill = String(repeating: " ", count: width - count)
        return right ? fill + text : text + fill
    }

    /// The width sqlcmd gives a column of this type (before the name is considered): numbers as
    /// their widest text, dates and times by their format, character and binary types by their
    /// declared size (binary as 0x and two digits a byte), and 256 for the large types
    /// (`max`, text, ntext, image, xml, sql_variant, CLR types), whose longer values are cut.
    static func displayWidth(_ info: TypeInfo) -> Int {
        let large = 256
        let fraction = info.scale > 0 ? Int(info.scale) + 1 : 0
        switch info.type {
        case .bit, .bitN: return 1
        case .int1: return 3
        case .int2: return 6
        case .int4: return 11
        case .int8: return 20
        case .intN:
            switch info.length {
            case 1: return 3
            case 2: return 6
            case 8: return 20
            default: return 11
            }
        case .flt4: return 14
        case .flt8: return 24
        case .fltN: return info.length == 4 ? 14 : 24
        case .money4: return 12
        case .money: return 21
        case .moneyN: return info.length == 4 ? 12 : 21
        case .decimal, .decimalN, .numeric, .numericN: return Int(info.precision) + 2
        case .dateN: return 10
        case .timeN: return 8 + fraction
        case .datetime: return 23
        case .datetim4: return 19
        case .datetimN: return info.length == 4 ? 19 : 23
        case .datetime2N: return 19 + fraction
        case .datetimeOffsetN: return 26 + fraction
        case .guid: return 36
        case .char, .varchar, .bigChar, .bigVarChar:
            return info.isPLP || info.length > 8000 ? large : max(info.length, 1)
        case .nchar, .nvarchar:
            return info.isPLP || info.length > 8000 ? large : max(info.length / 2, 1)
        case .binary, .varbinary, .bigBinary, .bigVarBinary:
            return info.isPLP || info.length > 8000 ? large : 2 + 2 * max(info.length, 1)
        case .vector:   // "[" + up to 13 characters a float32 element ("-1.2345678e-05") + "," … + "]"
            return min(large, 2 + 15 * (info.vectorDimensions ?? 1))
        default:
            return large
        }
    }

    /// The table width of a column of `info` under -y and -Y: the large types take -y (nil for
    /// -y 0: values whole), character and binary types of a declared size at most -Y (when not 0),
    /// the rest ``displayWidth(_:)``.
    func columnLimit(_ info: TypeInfo) -> Int? {
        if Self.isLarge(info) { return options.variableTypeWidth == 0 ? nil : options.variableTypeWidth }
        let width = Self.displayWidth(info)
        if options.fixedTypeWidth > 0, Self.isSized(info) { return min(width, options.fixedTypeWidth) }
        return width
    }

    /// Character and binary types (their width is their declared size, unless `max`).
    static func isSized(_ info: TypeInfo) -> Bool {
        switch info.type {
        case .char, .varchar, .bigChar, .bigVarChar, .nchar, .nvarchar, .binary, .varbinary, .bigBinary, .bigVarBinary: return true
        default: return false
        }
    }

    /// The types sqlcmd's -y sizes: `max` and longer than 8,000 bytes, text, ntext, image, xml,
    /// sql_variant, CLR types (those ``displayWidth(_:)`` gives 256).
    static func isLarge(_ info: TypeInfo) -> Bool {
        isSized(info) ? info.isPLP || info.length > 8000 : displayWidth(info) == 256
    }

    static func isNumeric(_ info: TypeInfo) -> Bool {
        switch info.type {
        case .int1, .int2, .int4, .int8, .intN, .flt4, .flt8, .fltN, .bit, .bitN, .decimal, .decimalN,
             .numeric, .numericN, .money, .money4, .moneyN:
            return true
        default:
            return false
        }
    }

    // MARK: CSV (RFC 4180)

    private var csvSeparator: String { options.separator ?? "," }

    /// A field, quoted when it holds the separator, a quote or a line break, or when it reads
    /// like the NULL text (so `"NULL"` is the string and `NULL` is NULL; with `--null ''`,
    /// `""` is the empty string and an empty field is NULL).
    private func csvField(_ s: String) -> String {
        if s == options.nullText || s.contains(where: { $0 == "\"" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" })
            || s.contains(csvSeparator) {
            return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
        return s
    }

    // MARK: JSON

    /// `s` as a JSON string literal (the same escaping as `sqlclient decode --format json`).
    static func jsonString(_ s: String) -> String { JSONValue.string(s).serialized() }

    /// A value as JSON, by the one rule `sqlclient decode --format json` shares
    /// (``JSONValue/sqlValue(_:)`` and ``JSONNumberRule``): integers and bits as numbers (beyond
    /// ±(2^53 - 1) as strings of their digits), finite floats as numbers (their shortest text
    /// that reads back as the same binary value), decimals and money as strings of their exact
    /// digits (numbers with `--json-numbers`), NULL as `null`, everything else as its canonical
    /// text in a string.
    static func jsonValue(_ value: SQLValue, _ rule: JSONNumberRule = .exactForAnyReader) -> String {
        JSONValue.sqlValue(value).serialized(rule)
    }

    /// A value as JSON by this printer's number rule.
    func jsonValue(_ value: SQLValue) -> String { Self.jsonValue(value, options.jsonNumbers) }
}

enum ServerMessageFormatter {
    /// `Msg N, Level L, State S, [Procedure P, ]Line X` then the text; PRINT output (number 0,
    /// not an error) is the text alone, as sqlcmd prints it.
    static func format(_ m: SQLServerMessage) -> String {
        if !m.isError && m.number == 0 { return m.message + "\n" }
        return m.description + "\n"
    }
}
