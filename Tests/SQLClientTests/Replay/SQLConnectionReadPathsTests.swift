import Foundation
import XCTest
import SQLClient
import SQLClientTesting
import TDS

/// ``SQLConnection``'s read paths over the conformance oracle's sessions (every SQL Server type,
/// TDS 7.1 to 7.4, ROW and NBCROW; ``OracleFixtures``) and a UDT session the oracle lacks: each
/// result set is read through ``SQLConnection/query(_:timeout:)`` (every value, by index, by
/// iteration, by name, as ``SQLRow/values`` and ``SQLRow/dictionary``),
/// ``SQLConnection/execute(_:timeout:)`` (the buffered ``SQLResult``),
/// ``SQLConnection/rowBlocks(_:timeout:)`` and ``SQLConnection/events(_:timeout:)``, and
/// each row through ``SQLRow/decode(_:)`` into `Decodable` structs of the Swift type the
/// documentation gives for the value's SQL type (README "Type mapping"). Every value must be
/// identical on every path (floats to the bit) and equal to the value the generator encoded; rows
/// kept from a stream must still read the same after the request and the later requests are over
/// (a row is a view of a shared block). The other tests do it again with the socket handing
/// the client random pieces and single bytes, and from the main actor.
final class SQLConnectionReadPathsTests: XCTestCase {
    // MARK: - What must be read

    /// One result set and the values it holds.
    struct ReadCase {
        /// The oracle type case ("datetime2(3)"), "all types" for the wide result, or "udt".
        var name: String
        var sql: String
        var columnNames: [String]
        /// Per column, the SQL type sent at the session's version (`sqlTypeName`).
        var sentTypeNames: [String]
        var userTypes: [UInt32]
        /// The values the generator encoded, row by row.
        var rows: [[SQLValue]]
        /// Per row, the value case's label.
        var labels: [String]
        var rowCount: Int
    }

    /// A session the replay server plays and the result sets it answers.
    struct ReadSession {
        var name: String
        var version: TDSVersion
        var session: ReplaySession
        var cases: [ReadCase]
        /// The oracle's own expectations (canonical text), nil for sessions built here.
        var fixture: OracleFixtures.Fixture?
    }

    /// Every oracle fixture, its result sets rebuilt as values (the fixture's expectations hold
    /// only canonical text): the same type cases through ``OracleFixtures/adapt(_:version:utf8Acknowledged:)``,
    /// and the wide result of the first and last non-NULL value of every type and a row of NULLs.
    static func oracleSessions() throws -> [ReadSession] {
        try OracleFixtures.fixtures().map { fixture in
            var cases: [ReadCase] = []
            var wide = ReadCase(name: "all types", sql: OracleFixtures.wideSQL, columnNames: ["id"], sentTypeNames: ["int"],
                                userTypes: [0], rows: [[.int(1)], [.int(2)], [.int(3)]],
                                labels: ["first values", "last values", "all NULL"], rowCount: 3)
            for c in OracleFixtures.typeCases() {
                let (type, values) = OracleFixtures.adapt(c, version: fixture.version,
                                                          utf8Acknowledged: fixture.version.generation >= 0x74)
                cases.append(ReadCase(name: c.name, sql: OracleFixtures.sql(for: c), columnNames: ["id", "v"],
                                      sentTypeNames: ["int", type.sqlTypeName], userTypes: [0, c.userType],
                                      rows: values.enumerated().map { [.int(Int32($0.offset + 1)), $0.element.value] },
                                      labels: values.map(\.label), rowCount: values.count))
                let nonNull = values.filter { !$0.value.isNull }
                if let first = nonNull.first, let last = nonNull.last {
                    wide.columnNames.append("c\(wide.columnNames.count)")
                    wide.sentTypeNames.append(type.sqlTypeName)
                    wide.userTypes.append(c.userType)
                    wide.rows[0].append(first.value); wide.rows[1].append(last.value); wide.rows[2].append(.null)
                }
            }
            cases.append(wide)
            return ReadSession(name: fixture.fileName, version: fixture.version, session: fixture.session, cases: cases,
                               fixture: fixture)
        }
    }

    /// A CLR UDT column (the oracle has none): NULL, empty, one byte, 20,000 bytes in 8,000-byte
    /// PLP chunks, 300 bytes in 1-byte chunks, and a value of unknown length; ROW or NBCROW at 7.4.
    static func udtSession(nbcrow: Bool) throws -> ReadSession {
        let type = TypeInfo(type: .udt, length: 0xFFFF, isPLP: true,
                            udt: UDTInfo(maxByteSize: 0xFFFF, databaseName: "oracle", schemaName: "sys", typeName: "hierarchyid",
                                         assemblyQualifiedName: "Microsoft.SqlServer.Types.SqlHierarchyId, Microsoft.SqlServer.Types"))
        let values: [(String, SQLValue, ServerTokens.PLPChunking?)] = [
            ("NULL", .null, nil), ("empty", .udt([]), nil), ("one byte", .udt([0x58]), nil),
            ("20000 bytes", .udt((0 ..< 20_000).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }), nil),
            ("300 bytes in 1-byte chunks", .udt((0 ..< 300).map { UInt8(truncatingIfNeeded: $0 &* 5) }), .init(sizes: [1])),
            ("unknown length", .udt([0xDE, 0xAD, 0xBE, 0xEF, 0x00]), .init(sizes: [2], unknownLength: true)),
        ]
        let columns = [ColumnMetadata(flags: [], typeInfo: .int, name: "id"), ColumnMetadata(flags: [.nullable], typeInfo: type, name: "v")]
        let sql = "SELECT id, v FROM oracle.[udt] ORDER BY id"
        var bytes = ServerTokens.colMetadata(columns, version: .v7_4)
        for (i, v) in values.enumerated() {
            let row: [SQLValue] = [.int(Int32(i + 1)), v.1]
            bytes += nbcrow ? try ServerTokens.nbcRow(row, columns: columns, chunking: [nil, v.2])
                            : try ServerTokens.row(row, columns: columns, chunking: [nil, v.2])
        }
        bytes += ServerTokens.done(status: .count, currentCommand: 0xC1, rowCount: UInt64(values.count), version: .v7_4)
        let session = ReplaySession(name: "udt-\(nbcrow ? "nbcrow" : "row")", version: .v7_4, exchanges: [
            ReplaySession.Exchange(request: .sqlBatch(sql), response: [ReplaySession.Segment(bytes: bytes)]),
        ])
        let c = ReadCase(name: "udt", sql: sql, columnNames: ["id", "v"], sentTypeNames: ["int", type.sqlTypeName], userTypes: [0, 0],
                         rows: values.enumerated().map { [.int(Int32($0.offset + 1)), $0.element.1] },
                         labels: values.map(\.0), rowCount: values.count)
        return ReadSession(name: session.name, version: .v7_4, session: session, cases: [c], fixture: nil)
    }

    // MARK: - Decodable probes

    /// Decoded through the synthesized keys (the key plan of a result set).
    struct Probe<T: Decodable>: Decodable {
        let id: Int32
        let v: T?
    }

    /// The column ``Cell`` and ``Required`` read (a task-local: a `Decoder` over a row takes no user info).
    enum Column {
        @TaskLocal static var name = "v"
    }

    struct NameKey: CodingKey {
        var stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { return nil }
    }

    /// One column, by a key built per call (the decoder's lookup by name), NULL as nil.
    struct Cell<T: Decodable>: Decodable {
        let value: T?
        init(from decoder: any Decoder) throws {
            value = try decoder.container(keyedBy: NameKey.self).decodeIfPresent(T.self, forKey: NameKey(stringValue: Column.name))
        }
    }

    /// One column that must not be NULL.
    struct Required<T: Decodable>: Decodable {
        let value: T
        init(from decoder: any Decoder) throws {
            value = try decoder.container(keyedBy: NameKey.self).decode(T.self, forKey: NameKey(stringValue: Column.name))
        }
    }

    /// One Swift type a value must decode to, and how.
    struct SwiftCheck {
        let type: String
        /// Decodes column `column` of the row; nil when every way gave the expected value, else what went wrong.
        let run: (_ row: SQLRow, _ column: String, _ synthesized: Bool) -> String?
    }

    static func check<T: Decodable>(_ type: T.Type, _ expected: T?, _ same: @escaping (T, T) -> Bool) -> SwiftCheck {
        SwiftCheck(type: "\(T.self)") { row, column, synthesized in
            func matches(_ got: T?) -> Bool {
                switch (got, expected) {
                case (nil, nil): return true
                case (let g?, let e?): return same(g, e)
                default: return false
                }
            }
            func show(_ v: T?) -> String { v.map { String(String(reflecting: $0).prefix(80)) } ?? "nil" }
            var problems: [String] = []
            if synthesized {
                do {
                    let p = try row.decode(Probe<T>.self)
                    if !matches(p.v) { problems.append("synthesized keys gave \(show(p.v)), expected \(show(expected))") }
                    if case .int(let id) = row[0], p.id != id { problems.append("synthesized keys gave id \(p.id), expected \(id)") }
                } catch {
                    problems.append("synthesized keys threw \(error)")
                }
            }
            do {
                let got = try Column.$name.withValue(column) { try row.decode(Cell<T>.self).value }
                if !matches(got) { problems.append("decodeIfPresent gave \(show(got)), expected \(show(expected))") }
            } catch {
                problems.append("decodeIfPresent threw \(error)")
            }
            // Not optional: NULL fails with .decodingFailed, a value decodes the same.
            do {
                let got = try Column.$name.withValue(column) { try row.decode(Required<T>.self).value }
                if expected == nil { problems.append("NULL decoded as a non-optional \(T.self): \(show(got))") }
                else if !matches(got) { problems.append("decode gave \(show(got)), expected \(show(expected))") }
            } catch let error as SQLClientError where expected == nil && error.code == .decodingFailed {
                // NULL into a non-optional: the documented failure.
            } catch {
                problems.append("decode threw \(error)")
            }
            return problems.isEmpty ? nil : problems.joined(separator: "; ")
        }
    }

    static func check<T: Decodable & Equatable>(_ type: T.Type, _ expected: T?) -> SwiftCheck { check(type, expected, ==) }

    static let utc = TimeZone(secondsFromGMT: 0) ?? .current
    static let posix = Locale(identifier: "en_US_POSIX")

    /// The Swift types of `value` as the README's type mapping gives them (a sql_variant as its
    /// base value; time, which has no Swift type there, as its canonical text through `String`),
    /// with the value each must decode to, computed from the generator's value (decimal and money
    /// from their exact text). NULL: nil for every type, and a failure into a non-optional.
    static func swiftChecks(_ value: SQLValue) -> [SwiftCheck] {
        let base = value.baseValue
        switch base {
        case .null:
            return [check(String.self, nil), check(Int64.self, nil), check(Double.self, nil), check(Decimal.self, nil),
                    check(Date.self, nil), check([UInt8].self, nil), check(UUID.self, nil), check(Bool.self, nil)]
        case .bit(let b): return [check(Bool.self, b)]
        case .tinyint(let v): return [check(UInt8.self, v), check(Int.self, Int(v))]
        case .smallint(let v): return [check(Int16.self, v), check(Int.self, Int(v))]
        case .int(let v): return [check(Int32.self, v), check(Int.self, Int(v))]
        case .bigint(let v): return [check(Int64.self, v), check(Int.self, Int(v))]
        case .real(let f):
            return [check(Float.self, f) { $0.bitPattern == $1.bitPattern }, check(Double.self, Double(f)) { $0.bitPattern == $1.bitPattern }]
        case .float(let d): return [check(Double.self, d) { $0.bitPattern == $1.bitPattern }]
        case .decimal, .money, .smallMoney:
            return [check(Decimal.self, base.canonicalText.flatMap { Decimal(string: $0, locale: posix) })]
        case .date, .datetime2, .datetimeOffset, .datetime, .smallDateTime:
            return [check(Date.self, base.dateValue(in: utc))]
        case .time: return [check(String.self, base.canonicalText)]
        case .uniqueIdentifier(let u): return [check(UUID.self, u)]
        case .string(let s), .xml(let s): return [check(String.self, s)]
        case .binary(let b), .udt(let b): return [check([UInt8].self, b), check(Data.self, Data(b))]
        case .json(let s): return [check(String.self, s), check(Data.self, Data(s.utf8))]
        case .vector(let v): return [check([Float].self, v.values), check(String.self, v.jsonText)]
        case .variant: return []   // baseValue never is one
        }
    }

    // MARK: - Comparing

    /// Equal, and floats the same to the bit (`-0.0` is not `0.0`), inside a sql_variant too.
    static func same(_ a: SQLValue, _ b: SQLValue) -> Bool {
        guard a == b else { return false }
        switch (a.baseValue, b.baseValue) {
        case (.real(let x), .real(let y)): return x.bitPattern == y.bitPattern
        case (.float(let x), .float(let y)): return x.bitPattern == y.bitPattern
        default: return true
        }
    }

    static func same(_ a: [SQLValue], _ b: [SQLValue]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { same($0, $1) }
    }

    static func show(_ v: SQLValue) -> String {
        let kind = Mirror(reflecting: v).children.first?.label ?? "null"
        var text = "NULL"
        if let t = v.canonicalText { text = "\"" + (t.count > 60 ? String(t.prefix(57)) + "..." : t) + "\"" }
        if case .variant(let x) = v { return "variant(\(x.baseType.sqlTypeName)) " + show(x.value) }
        return "\(kind) \(text)"
    }

    /// Failures and counts over a run.
    struct Report {
        var failures: [String] = []
        var valuesCompared = 0
        var decodes = 0
        var typesSeen: Set<String> = []
        var sessions = 0

        mutating func fail(_ s: String) { failures.append(s) }
    }

    /// A row kept after its request, and what it read when it came.
    struct HeldRow {
        var row: SQLRow
        var values: [SQLValue]
        var place: String
    }

    /// Every way a row gives its values (``SQLRow/values``, `row[i]`, iteration, `row[name]` for
    /// the first column of each name, ``SQLRow/dictionary``), which must agree; returns the values.
    static func everyValue(_ row: SQLRow, _ place: String, _ report: inout Report) -> [SQLValue] {
        let values = row.values
        guard values.count == row.count, row.count == row.columns.count else {
            report.fail("\(place): \(values.count) values, row.count \(row.count), \(row.columns.count) columns")
            return values
        }
        let iterated = Array(row)
        let dictionary = row.dictionary
        for i in 0 ..< row.count {
            let v = values[i]
            if !same(row[i], v) { report.fail("\(place) column \(i): row[\(i)] is \(show(row[i])), values[\(i)] \(show(v))") }
            if !same(iterated[i], v) { report.fail("\(place) column \(i): iterating gave \(show(iterated[i])), values[\(i)] \(show(v))") }
            let name = row.columns[i].name
            if row.columns.index(of: name) == i {
                if let byName = row[name] {
                    if !same(byName, v) { report.fail("\(place) column \(i): row[\"\(name)\"] is \(show(byName)), values[\(i)] \(show(v))") }
                } else {
                    report.fail("\(place) column \(i): row[\"\(name)\"] is nil")
                }
            }
            let key = row.columns.dictionaryKeys[i]
            if let d = dictionary[key] {
                if !same(d, v) { report.fail("\(place) column \(i): dictionary[\"\(key)\"] is \(show(d)), values[\(i)] \(show(v))") }
            } else {
                report.fail("\(place) column \(i): dictionary has no \"\(key)\"")
            }
        }
        return values
    }

    /// Decodes every column but `id` of `row` into each Swift type of its expected value.
    static func decodeChecks(_ row: SQLRow, _ c: ReadCase, rowIndex: Int, _ place: String, _ report: inout Report) {
        guard rowIndex < c.rows.count else { return }
        let synthesized = c.columnNames == ["id", "v"]
        for column in 1 ..< c.columnNames.count where column < row.count {
            let expected = c.rows[rowIndex][column]
            for check in swiftChecks(expected) {
                report.decodes += 1
                if let problem = check.run(row, c.columnNames[column], synthesized) {
                    report.fail("\(place): row.decode of \(c.columnNames[column]) as \(check.type), expected \(show(expected)): \(problem)")
                }
            }
        }
    }

    /// What one path read.
    struct PathRead {
        var path: String
        var columns: [SQLColumn] = []
        var rows: [[SQLValue]] = []
        /// The count DONE reported, where the path shows it.
        var count: Int??
    }

    static func query(_ connection: SQLConnection, _ c: ReadCase, _ place: String,
                      _ held: inout [HeldRow], _ report: inout Report,
                      isolation: isolated (any Actor)? = #isolation) async throws -> PathRead {
        var read = PathRead(path: "query()")
        for try await row in connection.query(SQLQuery(unsafeSQL: c.sql)) {
            isolation?.assertIsolated("query() rows are read in the caller's isolation")
            if read.columns.isEmpty { read.columns = row.columns.columns }
            take(row, into: &read, c, place, &held, &report)
        }
        return read
    }

    /// Reads every value of the next row of `read` (``everyValue(_:_:_:)``), decodes it
    /// (``decodeChecks(_:_:rowIndex:_:_:)``) and keeps it to be read again at the end.
    @discardableResult
    static func take(_ row: SQLRow, into read: inout PathRead, _ c: ReadCase, _ place: String,
                     _ held: inout [HeldRow], _ report: inout Report) -> [SQLValue] {
        let here = "\(place) \(read.path) row \(read.rows.count + 1)"
        let values = everyValue(row, here, &report)
        decodeChecks(row, c, rowIndex: read.rows.count, here, &report)
        read.rows.append(values)
        held.append(HeldRow(row: row, values: values, place: here))
        return values
    }

    static func execute(_ connection: SQLConnection, _ c: ReadCase, _ place: String,
                        _ held: inout [HeldRow], _ report: inout Report,
                        isolation: isolated (any Actor)? = #isolation) async throws -> PathRead {
        var read = PathRead(path: "execute()")
        let result = try await connection.execute(SQLQuery(unsafeSQL: c.sql))
        guard result.resultSets.count == 1, result.statements.count == 1, let set = result.resultSets.first else {
            report.fail("\(place) execute(): \(result), expected one result set")
            return read
        }
        if !result.messages.isEmpty { report.fail("\(place) execute(): messages \(result.messages)") }
        if result.rows.count != set.rows.count { report.fail("\(place) execute(): rows \(result.rows.count), the result set's \(set.rows.count)") }
        read.columns = set.columns.columns
        read.count = .some(set.rowsAffected)
        for row in set.rows { take(row, into: &read, c, place, &held, &report) }
        return read
    }

    static func rowBlocks(_ connection: SQLConnection, _ c: ReadCase, _ place: String,
                          _ held: inout [HeldRow], _ report: inout Report,
                          isolation: isolated (any Actor)? = #isolation) async throws -> PathRead {
        var read = PathRead(path: "rowBlocks()")
        var blocks = 0
        for try await block in connection.rowBlocks(SQLQuery(unsafeSQL: c.sql)) {
            blocks += 1
            if read.columns.isEmpty { read.columns = block.columns.columns }
            if block.isEmpty { report.fail("\(place) rowBlocks(): an empty block") }
            let flat = block.values
            if flat.count != block.count * block.columns.count {
                report.fail("\(place) rowBlocks(): block.values has \(flat.count) values for \(block.count) rows of \(block.columns.count)")
            }
            for (i, row) in block.enumerated() {
                let values = take(row, into: &read, c, place, &held, &report)
                let here = "\(place) rowBlocks() row \(read.rows.count)"
                let w = block.columns.count
                if flat.count >= (i + 1) * w, !same(Array(flat[i * w ..< (i + 1) * w]), values) {
                    report.fail("\(here): block.values differs from the row's values")
                }
                if !same(block.row(i).values, values) { report.fail("\(here): block.row(\(i)) differs from block[\(i)]") }
            }
        }
        if c.rowCount > 0, blocks == 0 { report.fail("\(place) rowBlocks(): no block") }
        return read
    }

    static func events(_ connection: SQLConnection, _ c: ReadCase, _ place: String, _ report: inout Report,
                       isolation: isolated (any Actor)? = #isolation) async throws -> PathRead {
        var read = PathRead(path: "events()")
        var folded = SQLResult()
        var kinds: [String] = []
        for try await event in connection.events(SQLQuery(unsafeSQL: c.sql)) {
            folded.append(event)
            switch event {
            case .columns(let columns): kinds.append("columns"); read.columns = columns.columns
            case .row(let row):
                if kinds.last != "row" { kinds.append("row") }
                read.rows.append(everyValue(row, "\(place) events() row \(read.rows.count + 1)", &report))
            case .statementDone(let n): kinds.append("done"); read.count = .some(n)
            default: kinds.append("other")
            }
        }
        folded.finish()
        let expectedKinds = c.rowCount > 0 ? ["columns", "row", "done"] : ["columns", "done"]
        if kinds != expectedKinds { report.fail("\(place) events(): \(kinds), expected \(expectedKinds)") }
        if !same(folded.rows.flatMap(\.values), read.rows.flatMap { $0 }) { report.fail("\(place) events(): the fold's rows differ from the rows") }
        return read
    }

    /// Reads every result set of `s` through every path over one connection (a plain socket, or
    /// one whose bytes come as `schedule` says) and compares.
    /// The streams are iterated in the caller's isolation (the main actor's rows come in batches).
    static func readEverything(_ s: ReadSession, schedule: SplitByteStream.Schedule?, _ report: inout Report,
                               isolation: isolated (any Actor)? = #isolation) async throws {
        let server = ReplayServer(session: s.session)
        let port = try server.start()
        defer { server.stop() }
        let configuration = SQLConnectionConfiguration(
            address: SQLServerAddress(host: "127.0.0.1", port: Int(port)), user: "u", password: "p",
            encryption: .notSupported, connectTimeout: .seconds(30), applicationName: "sqlclient-read-paths", tdsVersion: s.version)
        let connection: SQLConnection
        let label: String
        let stream: SplitByteStream?
        if let schedule {
            let split = try await SplitByteStream.connect(port: port, schedule: schedule)
            stream = split
            connection = try await SQLConnection.connect(configuration, port: Int(port), over: split)
            label = "\(s.name), \(schedule)"
        } else {
            stream = nil
            connection = try await SQLConnection.connect(configuration)
            label = s.name
        }
        report.sessions += 1
        var held: [HeldRow] = []
        for c in s.cases {
            report.typesSeen.insert(c.name)
            let place = "\(label) [\(c.name)]"
            let streamed = try await query(connection, c, place, &held, &report)
            let buffered = try await execute(connection, c, place, &held, &report)
            let blocks = try await rowBlocks(connection, c, place, &held, &report)
            let folded = try await events(connection, c, place, &report)
            let reads = [streamed, buffered, blocks, folded]
            for read in reads {
                // The columns: names, the type sent, UserType; the same on every path.
                if read.columns.map(\.name) != c.columnNames {
                    report.fail("\(place) \(read.path): columns \(read.columns.map(\.name)), expected \(c.columnNames)")
                }
                if read.columns.map(\.typeName) != c.sentTypeNames {
                    report.fail("\(place) \(read.path): types \(read.columns.map(\.typeName)), expected \(c.sentTypeNames)")
                }
                if read.columns.map(\.userType) != c.userTypes {
                    report.fail("\(place) \(read.path): UserTypes \(read.columns.map(\.userType)), expected \(c.userTypes)")
                }
                if read.columns != reads[0].columns { report.fail("\(place) \(read.path): columns differ from query()'s") }
                if let count = read.count, count != c.rowCount {
                    report.fail("\(place) \(read.path): DONE count \(String(describing: count)), expected \(c.rowCount)")
                }
                if read.rows.count != c.rows.count {
                    report.fail("\(place) \(read.path): \(read.rows.count) rows, expected \(c.rows.count)")
                }
                for (r, expectedRow) in c.rows.enumerated() where r < read.rows.count {
                    let label = r < c.labels.count ? c.labels[r] : "row \(r + 1)"
                    for (col, expected) in expectedRow.enumerated() {
                        report.valuesCompared += 1
                        guard col < read.rows[r].count else { report.fail("\(place) \(read.path) '\(label)': no column \(col)"); continue }
                        let got = read.rows[r][col]
                        if !same(got, expected) {
                            report.fail("\(place) \(read.path) '\(label)' column \(c.columnNames[col]): \(show(got)), expected \(show(expected))")
                        }
                        if read.path != reads[0].path, r < reads[0].rows.count, col < reads[0].rows[r].count, !same(got, reads[0].rows[r][col]) {
                            report.fail("\(place) \(read.path) '\(label)' column \(c.columnNames[col]): \(show(got)), query() read \(show(reads[0].rows[r][col]))")
                        }
                    }
                }
            }
        }
        // Rows kept from every request still read what they read when they came.
        for h in held {
            let now = h.row.values
            if !same(now, h.values) { report.fail("\(h.place), read again after the session's last request: \(now.map(show)), then \(h.values.map(show))") }
        }
        await connection.close()
        XCTAssertEqual(server.unmatchedRequests, [], label)
        if let stream {
            // The socket's bytes really came in the schedule's pieces.
            switch stream.schedule {
            case .bytes(1): XCTAssertEqual(stream.pieces, stream.delivered, label)
            case .random(_, let top): XCTAssertGreaterThanOrEqual(stream.pieces, stream.delivered / top, label)
            default: break
            }
            XCTAssertGreaterThan(stream.delivered, 10_000, label)
        }
    }

    static func finish(_ report: Report, minimumValues: Int, file: StaticString = #filePath, line: UInt = #line) {
        print("SQLConnectionReadPathsTests: \(report.sessions) sessions, \(report.typesSeen.count) result sets, "
              + "\(report.valuesCompared) values compared, \(report.decodes) decodes, \(report.failures.count) failures")
        for f in report.failures.prefix(100) { XCTFail(f, file: file, line: line) }
        if report.failures.count > 100 { XCTFail("\(report.failures.count - 100) more failures", file: file, line: line) }
        XCTAssertGreaterThanOrEqual(report.valuesCompared, minimumValues, "values compared", file: file, line: line)
    }

    // MARK: - Tests

    /// Every oracle session (every type, TDS 7.1–7.4, ROW and NBCROW) and the UDT session over a
    /// plain socket: the same values on every path and in every Swift type.
    func testEveryTypeReadsTheSameThroughQueryExecuteRowBlocksEventsAndDecodable() async throws {
        let sessions = try Self.oracleSessions() + [try Self.udtSession(nbcrow: false), try Self.udtSession(nbcrow: true)]
        var report = Report()
        for s in sessions {
            // The values rebuilt here are the fixture's: the same canonical text, types and counts.
            if let fixture = s.fixture {
                for c in s.cases {
                    guard let e = fixture.expectations.first(where: { $0.kind == .resultSet && $0.sql == c.sql }) else {
                        XCTFail("\(s.name): no expectation for \(c.sql)"); continue
                    }
                    XCTAssertEqual(c.rows.map { $0.map(\.canonicalText) }, e.rows, "\(s.name) \(c.name)")
                    XCTAssertEqual(c.sentTypeNames, e.sentTypes.map(\.sqlTypeName), "\(s.name) \(c.name)")
                    XCTAssertEqual(c.rowCount, e.rowCount, "\(s.name) \(c.name)")
                }
            }
            try await Self.readEverything(s, schedule: nil, &report)
        }
        XCTAssertEqual(report.sessions, 8)
        let names = Set(OracleFixtures.typeCases().map(\.name) + ["all types", "udt"])
        XCTAssertEqual(report.typesSeen, names)
        Self.finish(report, minimumValues: 20_000)
    }

    /// The 7.1 and 7.4 sessions and the UDT read from the main actor (where rows are handed
    /// over from batches without a hop per row), over a plain socket and in random pieces.
    @MainActor
    func testEveryTypeReadsTheSameFromTheMainActor() async throws {
        let sessions = try Self.oracleSessions().filter { $0.version == .v7_1_1 || $0.version == .v7_4 } + [try Self.udtSession(nbcrow: true)]
        XCTAssertEqual(sessions.count, 4)
        var report = Report()
        for s in sessions {
            try await Self.readEverything(s, schedule: nil, &report)
            try await Self.readEverything(s, schedule: .random(seed: 0xA11, max: 3000), &report)
        }
        XCTAssertEqual(report.sessions, 8)
        Self.finish(report, minimumValues: 10_000)
    }

    /// The same over a socket that hands the client random pieces (1 to 700 bytes, seeded) and,
    /// for the 7.4 NBCROW session and the UDT, single bytes: rows, PLP chunks and packet headers
    /// cut anywhere read the same.
    func testEveryTypeReadsTheSameWhenTheSocketGivesSingleBytesOrRandomPieces() async throws {
        let oracle = try Self.oracleSessions()
        var report = Report()
        for (i, s) in oracle.enumerated() {
            try await Self.readEverything(s, schedule: .random(seed: 0x5EED + UInt64(i), max: 700), &report)
        }
        let byteByByte = oracle.filter { $0.version == .v7_4 && $0.name.contains("nbcrow") } + [try Self.udtSession(nbcrow: true)]
        XCTAssertEqual(byteByByte.count, 2)
        for s in byteByByte {
            try await Self.readEverything(s, schedule: .bytes(1), &report)
        }
        XCTAssertEqual(report.sessions, 8)
        Self.finish(report, minimumValues: 20_000)
    }
}
