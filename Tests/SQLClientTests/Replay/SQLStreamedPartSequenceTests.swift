import Foundation
import XCTest
import SQLClient
import SQLClientTesting
import TDS

/// ``SQLConnection/streamingValues(_:timeout:)`` (an ``SQLStreamedPartSequence``) against the
/// buffered reads, end to end, for every large type — varbinary(max), varchar(max) in two code
/// pages, nvarchar(max), xml, text, ntext, image and a CLR UDT — with the socket delivering the
/// response as it comes (64 KB writes of 4,096-byte packets), byte by byte, in seeded random
/// pieces, and in packets of one byte of payload: the chunks of each value concatenate to exactly
/// the value's bytes on the wire, decode to the value ``SQLConnection/query(_:timeout:)`` and
/// ``SQLConnection/execute(_:timeout:)`` read buffered, which is the value encoded; every
/// column gives one part (a value, or chunks then its end) in column order, and the connection
/// goes on; from a task and from the main actor. (The token decoder alone, split anywhere:
/// TokenStreamDecoderTests.)
final class SQLStreamedPartSequenceTests: XCTestCase {
    static let sql = "SELECT * FROM large"
    static let cyrillic = Collation(lcid: 0x0419, flags: [.ignoreCase, .ignoreKana, .ignoreWidth])
    static let udt = TypeInfo(type: .udt, length: 0xFFFF, isPLP: true,
                              udt: UDTInfo(maxByteSize: 0xFFFF, databaseName: "db", schemaName: "sys", typeName: "geography",
                                           assemblyQualifiedName: "Microsoft.SqlServer.Types.SqlGeography, Microsoft.SqlServer.Types"))

    static let columns: [ColumnMetadata] = [
        ColumnMetadata(flags: [], typeInfo: .int, name: "id"),
        ColumnMetadata(typeInfo: .varbinary(nil), name: "vb"),
        ColumnMetadata(typeInfo: .varchar(nil), name: "vc"),
        ColumnMetadata(typeInfo: .varchar(nil, collation: cyrillic), name: "vcy"),
        ColumnMetadata(typeInfo: .nvarchar(nil), name: "nv"),
        ColumnMetadata(typeInfo: .xml, name: "x"),
        ColumnMetadata(typeInfo: .nvarchar(20), name: "small"),
        ColumnMetadata(typeInfo: .text(), name: "t"),
        ColumnMetadata(typeInfo: .ntext(), name: "nt"),
        ColumnMetadata(typeInfo: .image, name: "im"),
        ColumnMetadata(typeInfo: udt, name: "u"),
    ]

    /// Whether a column's values come as chunks.
    static func isLarge(_ t: TypeInfo) -> Bool { t.isPLP || t.type == .text || t.type == .ntext || t.type == .image }

    static func bytes(_ n: Int, seed: Int) -> [UInt8] {
        (0 ..< n).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &+ $0 >> 9) }
    }

    static func text(_ n: Int, _ alphabet: String) -> String {
        let a = Array(alphabet)
        var s = ""
        s.reserveCapacity(n * 2)
        for i in 0 ..< n { s.append(a[(i &* 7 &+ i / 13) % a.count]) }
        return s
    }

    static let cp1252 = "abc é€ÿŒ‰ ß0123 "
    static let russian = "Привет, мир! Ёё "
    static let unicode = "aé€😀Жж日本 𝄞"

    /// Four rows: values of about `size` bytes each, all NULL, all empty, and small values;
    /// with the PLP chunking of each large column.
    static func rows(size: Int) -> (rows: [[SQLValue]], chunking: [[ServerTokens.PLPChunking?]]) {
        let large: [SQLValue] = [
            .int(1), .binary(bytes(size * 3, seed: 1)), .string(text(size, cp1252)), .string(text(size / 2, russian)),
            .string(text(size / 3, unicode)), .xml("<r a=\"1\">" + text(size / 3, unicode) + "</r>"), .string("first"),
            .string(text(size, cp1252)), .string(text(size / 3, unicode)), .binary(bytes(size * 2, seed: 9)),
            .udt(bytes(size, seed: 5)),
        ]
        let nulls: [SQLValue] = [.int(2)] + Array(repeating: .null, count: columns.count - 1)
        let empty: [SQLValue] = [.int(3), .binary([]), .string(""), .string(""), .string(""), .xml(""), .string(""),
                                 .string(""), .string(""), .binary([]), .udt([])]
        let small: [SQLValue] = [.int(4), .binary([0xFF]), .string("é"), .string("Ж"), .string("😀"), .xml("<a/>"), .null,
                                 .string("z"), .string("𝄞"), .binary([0, 1]), .udt([7])]
        let odd: [ServerTokens.PLPChunking?] = [nil, .init(sizes: [8000, 1, 5000]), .init(sizes: [1, 7, 4096]),
                                                .init(sizes: [3000], unknownLength: true), .init(sizes: [8000, 1, 3]),
                                                .init(sizes: [5, 4093]), nil, nil, nil, nil, .init(sizes: [999], unknownLength: true)]
        let ones: [ServerTokens.PLPChunking?] = [nil] + Array(repeating: .init(sizes: [1], unknownLength: true), count: columns.count - 1)
        return ([large, nulls, empty, small], [odd, [], [], ones])
    }

    static func session(size: Int, packetSize: Int? = nil) throws -> ReplaySession {
        let (rows, chunking) = rows(size: size)
        var bytes = ServerTokens.colMetadata(columns, version: .v7_4)
        for (i, row) in rows.enumerated() {
            bytes += i % 2 == 1 ? try ServerTokens.nbcRow(row, columns: columns, chunking: chunking[i])
                                : try ServerTokens.row(row, columns: columns, chunking: chunking[i])
        }
        bytes += ServerTokens.done(status: .count, currentCommand: 0xC1, rowCount: UInt64(rows.count), version: .v7_4)
        let one = [ColumnMetadata(flags: [], typeInfo: .bigint, name: "n")]
        let selectOne = ServerTokens.colMetadata(one, version: .v7_4) + (try ServerTokens.row([.bigint(1)], columns: one))
            + ServerTokens.done(status: .count, currentCommand: 0xC1, rowCount: 1, version: .v7_4)
        return ReplaySession(name: "large values", version: .v7_4, packetSize: packetSize, exchanges: [
            ReplaySession.Exchange(request: .sqlBatch(sql), response: [ReplaySession.Segment(bytes: bytes)]),
            ReplaySession.Exchange(request: .sqlBatch("SELECT 1"), response: [ReplaySession.Segment(bytes: selectOne)]),
        ])
    }

    // MARK: - The value's bytes on the wire, and back

    static func le32(_ b: [UInt8], _ at: Int) -> Int {
        Int(b[at]) | Int(b[at + 1]) << 8 | Int(b[at + 2]) << 16 | Int(b[at + 3]) << 24
    }

    /// The data bytes of `value` as the encoder puts them in a ROW (PLP chunks joined; a text,
    /// ntext or image value after its text pointer, timestamp and length); nil for NULL.
    static func wireData(_ value: SQLValue, _ type: TypeInfo) throws -> [UInt8]? {
        var w = ByteWriter()
        try type.encodeValue(value, into: &w)
        let b = w.bytes
        if type.isPLP {
            if b.count == 8, b.allSatisfy({ $0 == 0xFF }) { return nil }
            var out: [UInt8] = [], i = 8
            while true {
                let n = le32(b, i)
                i += 4
                if n == 0 { return out }
                out += b[i ..< i + n]
                i += n
            }
        }
        guard b[0] != 0 else { return nil }
        let at = 1 + Int(b[0]) + 8
        return Array(b[at + 4 ..< at + 4 + le32(b, at)])
    }

    /// The value of a large column's chunks concatenated, decoded as its type (text, ntext and
    /// image as their PLP kin: the same bytes, the same value).
    static func decodeChunks(_ bytes: [UInt8], _ type: TypeInfo) throws -> SQLValue {
        let plp: TypeInfo
        switch type.type {
        case .text: plp = .varchar(nil, collation: type.collation ?? .sqlLatin1GeneralCP1CIAS)
        case .ntext: plp = .nvarchar(nil, collation: type.collation ?? .sqlLatin1GeneralCP1CIAS)
        case .image: plp = .varbinary(nil)
        default: plp = type
        }
        return try plp.decodePLPValue(bytes)
    }

    /// A value's kind, size and first characters (a failure must not print a megabyte).
    static func show(_ v: SQLValue) -> String {
        let kind = Mirror(reflecting: v).children.first?.label ?? "null"
        guard let t = v.canonicalText else { return "NULL" }
        return "\(kind) of \(t.count) characters \"" + (t.count > 40 ? String(t.prefix(37)) + "..." : t) + "\""
    }

    // MARK: - Reading

    /// One row as the parts gave it: per column, a whole value or the chunks of a large one.
    struct PartsRow {
        var values: [Int: SQLValue] = [:]
        var chunks: [Int: [[UInt8]]] = [:]
        var ended: Set<Int> = []
        /// Columns in the order their part completed.
        var order: [Int] = []
    }

    static func collect(_ parts: SQLStreamedPartSequence, _ place: String,
                        isolation: isolated (any Actor)? = #isolation) async throws -> (rows: [PartsRow], events: [String], largest: Int) {
        var rows: [PartsRow] = [], events: [String] = []
        var row = PartsRow()
        var open: Int?
        var largest = 0
        for try await part in parts {
            isolation?.assertIsolated("parts are read in the caller's isolation")
            switch part {
            case .event(let e):
                switch e {
                case .columns(let c):
                    events.append("columns")
                    XCTAssertEqual(c.map(\.name), columns.map(\.name), place)
                    XCTAssertEqual(c.map(\.typeName), columns.map(\.typeInfo.sqlTypeName), place)
                case .statementDone(let n): events.append("done \(n.map { String($0) } ?? "nil")")
                case .row: events.append("row")
                default: events.append("other")
                }
            case .value(let c, let v):
                XCTAssertNil(open, "\(place): a value of column \(c) inside the large value of column \(open ?? -1)")
                XCTAssertNil(row.values[c], "\(place): two values for column \(c)")
                row.values[c] = v
                row.order.append(c)
            case .chunk(let c, let b):
                XCTAssertFalse(b.isEmpty, "\(place): an empty chunk")
                XCTAssertTrue(open == nil || open == c, "\(place): a chunk of column \(c) inside the large value of column \(open ?? -1)")
                XCTAssertFalse(row.ended.contains(c), "\(place): a chunk of column \(c) after its end")
                open = c
                largest = max(largest, b.count)
                row.chunks[c, default: []].append(b)
            case .valueEnd(let c):
                XCTAssertTrue(open == nil || open == c, "\(place): column \(c) ended inside the large value of column \(open ?? -1)")
                XCTAssertFalse(row.ended.contains(c), "\(place): column \(c) ended twice")
                open = nil
                row.ended.insert(c)
                row.order.append(c)
            case .rowEnd:
                XCTAssertNil(open, "\(place): the row ended inside the large value of column \(open ?? -1)")
                rows.append(row)
                row = PartsRow()
            }
        }
        XCTAssertTrue(row.order.isEmpty && row.chunks.isEmpty, "\(place): parts after the last row's end")
        return (rows, events, largest)
    }

    /// Reads the response buffered (``SQLConnection/query(_:timeout:)``, ``SQLConnection/execute(_:timeout:)``)
    /// and in parts, and compares them with each other and with the rows encoded.
    func readAndCompare(size: Int, packetSize: Int? = nil, schedule: SplitByteStream.Schedule?,
                        file: StaticString = #filePath, line: UInt = #line,
                        isolation: isolated (any Actor)? = #isolation) async throws {
        let server = ReplayServer(session: try Self.session(size: size, packetSize: packetSize))
        let port = try server.start()
        defer { server.stop() }
        let configuration = SQLConnectionConfiguration(address: SQLServerAddress(host: "127.0.0.1", port: Int(port)), user: "u",
                                                       password: "p", encryption: .notSupported, connectTimeout: .seconds(60))
        let place = "values of \(size) bytes, packets of \(packetSize ?? 4096), " + (schedule.map { "\($0)" } ?? "socket reads as they come")
        let stream: SplitByteStream?
        let connection: SQLConnection
        if let schedule {
            let s = try await SplitByteStream.connect(port: port, schedule: schedule)
            stream = s
            connection = try await SQLConnection.connect(configuration, port: Int(port), over: s)
        } else {
            stream = nil
            connection = try await SQLConnection.connect(configuration)
        }
        let expected = Self.rows(size: size).rows

        var queried: [[SQLValue]] = []
        for try await row in connection.query(SQLQuery(unsafeSQL: Self.sql)) { queried.append(row.values) }
        let executed = try await connection.execute(SQLQuery(unsafeSQL: Self.sql)).rows.map(\.values)
        let parts = try await Self.collect(connection.streamingValues(SQLQuery(unsafeSQL: Self.sql)), place)
        var chunksOfVB: [UInt8] = []
        for try await chunk in connection.streamingValues(SQLQuery(unsafeSQL: Self.sql)).chunks(ofColumn: 1) { chunksOfVB += chunk }
        var one: [SQLValue] = []
        for try await row in connection.query("SELECT 1") { one += row.values }
        XCTAssertEqual(one, [.bigint(1)], "\(place): the connection goes on", file: file, line: line)
        await connection.close()
        server.stop()   // waits for the connection's thread, which logs it
        XCTAssertEqual(server.connections.first?.packetSize, packetSize ?? 4096, "\(place): the server's packets", file: file, line: line)

        XCTAssertEqual(queried.count, expected.count, place, file: file, line: line)
        XCTAssertEqual(executed.count, expected.count, place, file: file, line: line)
        XCTAssertEqual(parts.rows.count, expected.count, place, file: file, line: line)
        XCTAssertEqual(parts.events, ["columns", "done \(expected.count)"], place, file: file, line: line)
        XCTAssertLessThanOrEqual(parts.largest, 65_536, "\(place): a chunk is at most what one read brought", file: file, line: line)
        XCTAssertGreaterThan(parts.rows.first?.chunks[1]?.count ?? 0, 1, "\(place): a large value comes in several chunks", file: file, line: line)
        if let stream, case .bytes(1)? = schedule {
            XCTAssertEqual(stream.pieces, stream.delivered, "\(place): every read handed one byte", file: file, line: line)
            XCTAssertLessThanOrEqual(parts.largest, 4096, "\(place): a chunk is at most one packet", file: file, line: line)
        }
        var allVB: [UInt8] = []
        for (r, expectedRow) in expected.enumerated() where r < queried.count && r < executed.count && r < parts.rows.count {
            let got = parts.rows[r]
            XCTAssertEqual(got.order, Array(0 ..< Self.columns.count), "\(place) row \(r + 1): one part per column, in column order",
                           file: file, line: line)
            for (c, value) in expectedRow.enumerated() {
                let type = Self.columns[c].typeInfo
                let name = "\(place) row \(r + 1) column \(Self.columns[c].name) (\(type.sqlTypeName))"
                XCTAssertTrue(queried[r][c] == value, "\(name): query() read \(Self.show(queried[r][c])), expected \(Self.show(value))",
                              file: file, line: line)
                XCTAssertTrue(executed[r][c] == value, "\(name): execute() read \(Self.show(executed[r][c])), expected \(Self.show(value))",
                              file: file, line: line)
                if Self.isLarge(type) && !value.isNull {
                    XCTAssertNil(got.values[c], "\(name): a large value came whole", file: file, line: line)
                    XCTAssertTrue(got.ended.contains(c), "\(name): no valueEnd", file: file, line: line)
                    let bytes = (got.chunks[c] ?? []).flatMap { $0 }
                    let wire = try XCTUnwrap(try Self.wireData(value, type), name, file: file, line: line)
                    XCTAssertEqual(bytes.count, wire.count, "\(name): bytes", file: file, line: line)
                    XCTAssertTrue(bytes == wire, "\(name): the chunks differ from the value's bytes on the wire", file: file, line: line)
                    let joined = try Self.decodeChunks(bytes, type)
                    XCTAssertTrue(joined == queried[r][c], "\(name): the chunks decode to \(Self.show(joined)), query() read \(Self.show(queried[r][c]))",
                                  file: file, line: line)
                    XCTAssertEqual(wire.isEmpty, got.chunks[c] == nil, "\(name): an empty value has no chunks", file: file, line: line)
                    if c == 1 { allVB += bytes }
                } else {
                    XCTAssertNil(got.chunks[c], "\(name): chunks of a small or NULL value", file: file, line: line)
                    XCTAssertTrue(got.values[c] == value, "\(name): the part's value \(got.values[c].map(Self.show) ?? "missing"), expected \(Self.show(value))",
                                  file: file, line: line)
                }
            }
        }
        XCTAssertTrue(chunksOfVB == allVB && !allVB.isEmpty, "\(place): chunks(ofColumn: 1) differs from its chunks in the parts",
                      file: file, line: line)
    }

    // MARK: - Tests

    /// Values of up to 300 KB (a megabyte in all), the socket read as it comes.
    func testChunksEqualTheBufferedValuesOfEveryLargeType() async throws {
        try await readAndCompare(size: 100_000, schedule: nil)
    }

    /// The same response handed over one byte per read.
    func testChunksEqualTheBufferedValuesWhenTheSocketGivesOneByteAtATime() async throws {
        try await readAndCompare(size: 6_000, schedule: .bytes(1))
    }

    /// Seeded random pieces of 1 to 9,000 bytes, three seeds, and packets of one byte of payload
    /// (the server's packet size 9) read in random pieces.
    func testChunksEqualTheBufferedValuesWhenTheSocketGivesRandomPiecesAndTinyPackets() async throws {
        for seed in [UInt64(1), 2, 3] {
            try await readAndCompare(size: 60_000, schedule: .random(seed: seed, max: 9_000))
        }
        try await readAndCompare(size: 3_000, packetSize: 9, schedule: .random(seed: 4, max: 50))
    }

    /// Read from the main actor, the socket as it comes and in random pieces.
    @MainActor
    func testChunksEqualTheBufferedValuesReadFromTheMainActor() async throws {
        try await readAndCompare(size: 100_000, schedule: nil)
        try await readAndCompare(size: 30_000, schedule: .random(seed: 5, max: 5_000))
    }
}
