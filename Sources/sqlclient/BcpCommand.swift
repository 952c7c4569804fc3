import Foundation
import SQLClient
import TDS

/// Runs `sqlclient bcp …` and returns the exit status.
func runBcpCommand(_ arguments: [String]) -> Int32 {
    let outcome = ExitBox()
    let done = DispatchSemaphore(value: 0)
    // Unstructured: the synchronous entry point (main) waits for the command on a semaphore.
    Task {
        outcome.set(await BcpCommand.run(arguments))
        done.signal()
    }
    done.wait()
    return outcome.value
}

/// `sqlclient bcp TABLE in FILE …`: loads a character-format data file into a table with
/// `bulkInsert` (INSERT BULK + BULKLOAD, [MS-TDS] 2.2.6.1), with the options bcp users know.
///
/// Each line (row terminator `-r`, default `\n`; a `\r` before it is dropped) holds the fields of
/// one row separated by `-t` (default `\t`), in the table's column order (identity columns only
/// with `-E`). An empty field is NULL; other text is read as the column's type in its canonical
/// form (`2024-02-29`, `13:14:15.1234567`, `2024-02-29 13:14:15 +02:00`, `0xDEAD` or `DEAD` for
/// binary, `1`/`0`/`true`/`false` for bit). A row that cannot be read, or whose value does not fit
/// its column, is reported with its line number on standard error and skipped; after `-m`
/// errors (default 10) the load stops. Exit status 0 when every row was copied, 1 when rows were
/// skipped or the load failed, 2 for usage errors.
enum BcpCommand {
    static let usage = """
    usage: sqlclient bcp TABLE in FILE -S server -U user [-P password] [-d database] [-c]
                         [-t field_term] [-r row_term] [-F first_row] [-L last_row] [-b batch_size]
                         [-h "TABLOCK, ORDER(col ASC), CHECK_CONSTRAINTS, FIRE_TRIGGERS, ROWS_PER_BATCH = n, KILOBYTES_PER_BATCH = n"]
                         [-k] [-E] [-m max_errors] [-a packet_size] [-N on|required|off|notsupported] [-u]
      -c  character format (the only format); -k keep NULLs; -E keep identity values; -u trust the server certificate
    """

    struct Options {
        var table = ""
        var file = ""
        var query = QueryOptions()
        var fieldTerminator = "\t"
        var rowTerminator = "\n"
        var firstRow = 1
        var lastRow: Int?
        var maxErrors = 10
        var copy = SQLBulkCopyOptions()
    }

    static func run(_ arguments: [String]) async -> Int32 {
        let options: Options
        do {
            options = try parse(arguments)
        } catch let e as UsageError {
            FileHandle.standardError.write(Data(((e.message.isEmpty ? "" : e.message + "\n") + usage + "\n").utf8))
            return 2
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            return 2
        }
        let config: SQLConnectionConfiguration
        do {
            config = try QueryCommand.configuration(options.query, environment: ProcessInfo.processInfo.environment)
        } catch let e as UsageError {
            FileHandle.standardError.write(Data((e.message + "\n").utf8))
            return 2
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            return 2
        }
        guard let file = FileHandle(forReadingAtPath: options.file) else {
            FileHandle.standardError.write(Data("cannot open \(options.file)\n".utf8))
            return 1
        }
        defer { try? file.close() }
        print("Starting copy...")
        let started = DispatchTime.now().uptimeNanoseconds
        do {
            let connection = try await SQLConnection.connect(config)
            // Unstructured: a defer cannot await; the process exits after the command anyway.
            defer { Task { await connection.close() } }
            let columns = try await connection.bulkCopyColumns(for: options.table, keepIdentity: options.copy.keepIdentity)
            let rows = DataFileRows(file: file, columns: columns, options: options)
            let result = try await connection.bulkInsert(into: options.table, columns: columns, rows: rows, options: options.copy)
            let ms = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6
            print("\(result.rowsCopied) rows copied.")
            print("Network packet size (bytes): \(await connection.session.packetSize)")
            print(String(format: "Clock Time (ms.) Total     : %.0f  Average : (%.2f rows per sec.)", ms,
                         ms > 0 ? Double(result.rowsCopied) * 1000 / ms : 0))
            if rows.errors > 0 {
                FileHandle.standardError.write(Data("\(rows.errors) row(s) skipped\n".utf8))
                return 1
            }
            return 0
        } catch let e as SQLBulkCopyError {
            var text = "\(e.rowsCommitted) rows copied before the error.\n"
            if let row = e.row { text += "line \(options.firstRow - 1 + row): " }
            text += e.error.message
            if let m = e.error.serverMessage { text += "\n" + ServerMessageFormatter.format(m) }
            FileHandle.standardError.write(Data((text + "\n").utf8))
            return 1
        } catch let e as SQLClientError {
            FileHandle.standardError.write(Data("\(e.message)\(e.serverMessage.map { "\n" + ServerMessageFormatter.format($0) } ?? "")\n".utf8))
            return 1
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            return 1
        }
    }

    /// `\t`, `\n`, `\r`, `\0` and `\\` in a terminator argument.
    static func unescape(_ s: String) -> String {
        var out = ""
        var escaped = false
        for c in s {
            if escaped {
                switch c {
                case "t": out.append("\t")
                case "n": out.append("\n")
                case "r": out.append("\r")
                case "0": out.append("\0")
                default: out.append(c)
                }
                escaped = false
            } else if c == "\\" {
                escaped = true
            } else {
                out.append(c)
            }
        }
        if escaped { out.append("\\") }
        return out
    }

    static func parse(_ arguments: [String]) throws -> Options {
        var o = Options()
        guard arguments.count >= 3 else { throw UsageError(arguments.isEmpty ? "" : "expected TABLE in FILE") }
        o.table = arguments[0]
        guard arguments[1].lowercased() == "in" else {
            throw UsageError("only \"in\" is supported (sqlclient bcp TABLE in FILE …), not \"\(arguments[1])\"")
        }
        o.file = arguments[2]
        var i = 3
        func value(_ flag: String) throws -> String {
            i += 1
            guard i < arguments.count else { throw UsageError("\(flag) needs a value") }
            return arguments[i]
        }
        func number(_ flag: String, _ range: ClosedRange<Int>) throws -> Int {
            let v = try value(flag)
            guard let n = Int(v), range.contains(n) else { throw UsageError("invalid \(flag) value \"\(v)\"") }
            return n
        }
        while i < arguments.count {
            let arg = arguments[i]
            switch arg {
            case "-S": o.query.server = try value(arg)
            case "-U": o.query.user = try value(arg)
            case "-P": o.query.password = try value(arg)
            case "-d": o.query.database = try value(arg)
            case "-c": break
            case "-t": o.fieldTerminator = unescape(try value(arg))
            case "-r": o.rowTerminator = unescape(try value(arg))
            case "-F": o.firstRow = try number(arg, 1 ... Int(Int32.max))
            case "-L": o.lastRow = try number(arg, 1 ... Int(Int32.max))
            case "-b": o.copy.batchSize = try number(arg, 1 ... Int(Int32.max))
            case "-m": o.maxErrors = try number(arg, 0 ... Int(Int32.max))
            case "-a": o.query.packetSize = try number(arg, 512 ... 32767)
            case "-k": o.copy.keepNulls = true
            case "-E": o.copy.keepIdentity = true
            case "-u": o.query.trustServerCertificate = true
            case "-N":
                switch try value(arg).lowercased() {
                case "on", "mandatory": o.query.encryption = .on
                case "required": o.query.encryption = .required
                case "off", "optional": o.query.encryption = .off
                case "notsupported": o.query.encryption = .notSupported
                case let v: throw UsageError("unknown -N value \"\(v)\"")
                }
            case "-h": try hints(try value(arg), into: &o.copy)
            case "--help", "-?": throw UsageError("")
            default: throw UsageError("unknown argument \"\(arg)\"")
            }
            i += 1
        }
        guard !o.fieldTerminator.isEmpty, !o.rowTerminator.isEmpty else { throw UsageError("terminators cannot be empty") }
        if let last = o.lastRow, last < o.firstRow { throw UsageError("-L \(last) is before -F \(o.firstRow)") }
        return o
    }

    /// bcp's `-h` load hints: TABLOCK, ORDER(col [ASC|DESC], …), CHECK_CONSTRAINTS, FIRE_TRIGGERS,
    /// ROWS_PER_BATCH = n, KILOBYTES_PER_BATCH = n (commas inside ORDER(…) belong to it).
    static func hints(_ text: String, into copy: inout SQLBulkCopyOptions) throws {
        var parts: [String] = []
        var current = ""
        var depth = 0
        for c in text {
            if c == "(" { depth += 1 } else if c == ")" { depth -= 1 }
            if c == ",", depth == 0 { parts.append(current); current = "" } else { current.append(c) }
        }
        parts.append(current)
        for raw in parts {
            let hint = raw.trimmingCharacters(in: .whitespaces)
            if hint.isEmpty { continue }
            let upper = hint.uppercased()
            if upper == "TABLOCK" { copy.tableLock = true; continue }
            if upper == "CHECK_CONSTRAINTS" { copy.checkConstraints = true; continue }
            if upper == "FIRE_TRIGGERS" { copy.fireTriggers = true; continue }
            if upper.hasPrefix("ORDER"), let open = hint.firstIndex(of: "("), hint.hasSuffix(")") {
                let inner = hint[hint.index(after: open) ..< hint.index(before: hint.endIndex)]
                for item in inner.split(separator: ",") {
                    var words = item.split(separator: " ").map(String.init)
                    var descending = false
                    if let last = words.last?.uppercased(), last == "ASC" || last == "DESC" {
                        descending = last == "DESC"
                        words.removeLast()
                    }
                    let name = words.joined(separator: " ")
                    guard !name.isEmpty else { throw UsageError("empty column in \(hint)") }
                    let column = (try? SQLIdentifier.parts(of: name))?.last ?? name
                    copy.order.append((column: column, descending: descending))
                }
                continue
            }
            let kv = hint.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces).uppercased() }
            if kv.count == 2, let n = Int(kv[1]), n > 0 {
                if kv[0] == "ROWS_PER_BATCH" { copy.rowsPerBatch = n; continue }
                if kv[0] == "KILOBYTES_PER_BATCH" { copy.kilobytesPerBatch = n; continue }
            }
            throw UsageError("unknown hint \"\(hint)\"")
        }
    }
}

/// The rows of a character-format data file, read as they are consumed (64 KiB at a time).
/// Lines that cannot be read, or whose values do not fit their columns, are reported on
/// standard error with their line number and skipped (counted in ``errors``).
final class DataFileRows: Sequence, IteratorProtocol, @unchecked Sendable {   // used by one task at a time
    let file: FileHandle
    let columns: [SQLBulkColumn]
    let options: BcpCommand.Options
    let field: [UInt8]
    let row: [UInt8]
    var buffer: [UInt8] = []
    var start = 0
    var eof = false
    var line = 0
    private(set) var errors = 0
    var checker: BulkLoadEncoder
    var scratch = ByteWriter(capacity: 4096)
    let parsers: [FieldParser]

    init(file: FileHandle, columns: [SQLBulkColumn], options: BcpCommand.Options) {
        self.file = file
        self.columns = columns
        self.options = options
        field = Array(options.fieldTerminator.utf8)
        row = Array(options.rowTerminator.utf8)
        parsers = columns.map { FieldParser($0.type ?? .nvarchar(nil)) }
        checker = BulkLoadEncoder(columns: columns.map { BulkLoadColumn(name: $0.name, type: $0.type ?? .int, nullable: $0.isNullable) },
                                  version: .v7_4)
    }

    func makeIterator() -> DataFileRows { self }

    /// The next line's bytes, without its terminator (and a `\r` before a `\n` terminator).
    func nextLine() -> ArraySlice<UInt8>? {
        while true {
            if let end = find(row, in: buffer, from: start) {
                var slice = buffer[start ..< end]
                if row == [0x0A], slice.last == 0x0D { slice = slice.dropLast() }
                start = end + row.count
                return slice
            }
            if eof {
                guard start < buffer.count else { return nil }
                let slice = buffer[start...]
                start = buffer.count
                return slice
            }
            if start > 0 { buffer.removeFirst(start); start = 0 }
            let chunk = file.readData(ofLength: 65_536)
            if chunk.isEmpty { eof = true } else { buffer.append(contentsOf: chunk) }
        }
    }

    func find(_ needle: [UInt8], in hay: [UInt8], from: Int) -> Int? {
        guard let first = needle.first, hay.count - from >= needle.count else { return nil }
        var i = from
        let last = hay.count - needle.count
        while i <= last {
            if hay[i] == first, needle.count == 1 || hay[i ..< i + needle.count].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }

    /// The line's fields, cut at each field terminator (UTF-8 bytes).
    func split(_ line: ArraySlice<UInt8>) -> [String] {
        var fields: [String] = []
        fields.reserveCapacity(columns.count)
        var from = line.startIndex
        var i = line.startIndex
        let first = field[0]
        while i <= line.endIndex - field.count {
            if line[i] == first, field.count == 1 || line[i ..< i + field.count].elementsEqual(field) {
                fields.append(String(decoding: line[from ..< i], as: UTF8.self))
                i += field.count
                from = i
            } else {
                i += 1
            }
        }
        fields.append(String(decoding: line[from...], as: UTF8.self))
        return fields
    }

    func report(_ text: String) {
        errors += 1
        FileHandle.standardError.write(Data("line \(line): \(text)\n".utf8))
    }

    func next() -> [SQLValue]? {
        while let bytes = nextLine() {
            line += 1
            if line < options.firstRow { continue }
            if let last = options.lastRow, line > last { return nil }
            if errors > options.maxErrors { return nil }
            let fields = split(bytes)
            guard fields.count == columns.count else {
                report("\(fields.count) field(s) for \(columns.count) column(s)")
                continue
            }
            var values: [SQLValue] = []
            values.reserveCapacity(columns.count)
            var bad: String?
            for (i, f) in fields.enumerated() {
                if f.isEmpty { values.append(.null); continue }
                guard let v = parsers[i].parse(f) else {
                    let type = columns[i].type ?? .nvarchar(nil)
                    do {
                        values.append(try ProcedureArguments.value(f, as: type))
                        continue
                    } catch {
                        bad = "column \(i + 1) [\(columns[i].name)]: \(error)"
                        break
                    }
                }
                values.append(v)
            }
            if let bad { report(bad); continue }
            scratch.bytes.removeAll(keepingCapacity: true)
            checker.nextRowNumber = line
            do {
                try checker.encodeRow(values, into: &scratch)
            } catch {
                report("column \((error.columnIndex ?? 0) + 1) [\(error.columnName ?? "?")]: \(error.detail)")
                continue
            }
            return values
        }
        return nil
    }
}

/// A column's reading of a character field, chosen once per column: the common types directly,
/// the rest (and any text these cannot read, for its error message) by `ProcedureArguments.value`.
enum FieldParser {
    case text, int32, int64, int16, uint8, bit, float, real, decimal(UInt8, UInt8), money, date, datetime2(UInt8), datetime, uuid
    case binary, other

    init(_ t: TypeInfo) {
        switch t.type {
        case .bigChar, .bigVarChar, .nchar, .nvarchar, .text, .ntext, .char, .varchar: self = .text
        case .intN, .int1, .int2, .int4, .int8:
            switch t.length { case 1: self = .uint8; case 2: self = .int16; case 8: self = .int64; default: self = .int32 }
        case .bitN, .bit: self = .bit
        case .fltN, .flt4, .flt8: self = t.length == 4 ? .real : .float
        case .decimalN, .numericN: self = .decimal(t.precision, t.scale)
        case .moneyN, .money: self = t.length == 4 ? .other : .money
        case .dateN: self = .date
        case .datetime2N: self = .datetime2(t.scale)
        case .datetimN, .datetime: self = t.length == 4 ? .other : .datetime
        case .guid: self = .uuid
        case .bigVarBinary, .bigBinary: self = .binary
        default: self = .other
        }
    }

    /// 1900-01-01 in days since 0001-01-01 (datetime's epoch).
    static let datetimeEpoch = SQLDate(year: 1900, month: 1, day: 1)?.days ?? 693_595

    /// The value, or nil when this reading does not apply (the caller then uses the general one).
    func parse(_ f: String) -> SQLValue? {
        switch self {
        case .text: return .string(f)
        case .int32: return Int32(f).map(SQLValue.int)
        case .int64: return Int64(f).map(SQLValue.bigint)
        case .int16: return Int16(f).map(SQLValue.smallint)
        case .uint8: return UInt8(f).map(SQLValue.tinyint)
        case .bit: return f == "1" ? .bit(true) : f == "0" ? .bit(false) : nil
        case .float: return Double(f).map(SQLValue.float)
        case .real: return Float(f).map(SQLValue.real)
        case .decimal(let p, let s):
            guard let d = SQLDecimal(f), let r = d.rescaled(to: s) else { return nil }
            return .decimal(SQLDecimal(isNegative: r.isNegative, precision: p, scale: s, magnitude: r.magnitude))
        case .money:
            guard let d = SQLDecimal(f), let r = d.rescaled(to: 4),
                  let units = Int64(exactly: r.isNegative ? -Int128(r.magnitude) : Int128(r.magnitude)) else { return nil }
            return .money(SQLMoney(units: units))
        case .date: return ProcedureArguments.date(f).map(SQLValue.date)
        case .datetime2(let s): return ProcedureArguments.dateTime2(f, scale: s).map(SQLValue.datetime2)
        case .datetime:
            // 1/300 s ticks since 1900-01-01, rounded as SQL Server rounds text.
            guard let d = ProcedureArguments.dateTime2(f, scale: 7) else { return nil }
            var days = Int64(d.date.days) - Int64(FieldParser.datetimeEpoch)
            var ticks = (Int64(d.time.ticks) * 3 + 50_000) / 100_000
            if ticks >= 300 * 86_400 { ticks -= 300 * 86_400; days += 1 }
            guard let dd = Int32(exactly: days) else { return nil }
            let v = SQLDateTime(days: dd, ticks: UInt32(ticks))
            return v.isValid ? .datetime(v) : nil
        case .uuid: return UUID(uuidString: f).map(SQLValue.uniqueIdentifier)
        case .binary: return ProcedureArguments.hex(f).map(SQLValue.binary)
        case .other: return nil
        }
    }
}
