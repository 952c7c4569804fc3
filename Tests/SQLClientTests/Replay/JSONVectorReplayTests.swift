import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient
import TDS

/// SQL Server 2025's json and vector end to end, with the replay server as the server (it decodes
/// each RPC with the TDS decoders and answers only when the parameters' values match): LOGIN7
/// FeatureExt and the FEATUREEXTACK rules on the bytes, parameters out and values back (NULLs
/// included), OUTPUT parameters, and the nvarchar/varchar text a server sends when the features
/// are not acknowledged.
final class JSONVectorReplayTests: XCTestCase {
    // MARK: LOGIN7 FeatureExt and FEATUREEXTACK

    func testLogin7FeatureExtBytes() throws {
        var w = ByteWriter()
        Login7Feature.encodeList(SQLTypeSupport().login7Features, into: &w)
        XCTAssertEqual(w.bytes, [0x0D, 0x01, 0x00, 0x00, 0x00, 0x01,    // JSONSUPPORT, length 1, version 1
                                 0x0E, 0x01, 0x00, 0x00, 0x00, 0x01,    // VECTORSUPPORT, length 1, version 1 (float32)
                                 0xFF])
        w = ByteWriter()
        Login7Feature.encodeList(SQLTypeSupport(json: false, vector: .float16).login7Features, into: &w)
        XCTAssertEqual(w.bytes, [0x0E, 0x01, 0x00, 0x00, 0x00, 0x02, 0xFF])
        XCTAssertTrue(SQLTypeSupport(json: false, vector: .off).login7Features.isEmpty)

        // In the whole LOGIN7 the client builds: after UTF8_SUPPORT, decoded back from the message.
        let config = SQLConnectionConfiguration(address: SQLServerAddress(host: "h", port: 1), user: "u", password: "p")
        var login = config.login7(hostName: "ws", clientPID: 1)
        config.typeSupport.request(in: &login)
        var auth = LoginAuthentication(.sqlPassword)
        auth.apply(to: &login, serverPrelogin: nil)
        XCTAssertEqual(auth.requestedFeatures, [.jsonSupport, .vectorSupport, .utf8Support])
        let bytes = login.encode()
        let tail: [UInt8] = [0x0D, 1, 0, 0, 0, 1, 0x0E, 1, 0, 0, 0, 1, 0x0A, 0, 0, 0, 0, 0xFF]
        XCTAssertEqual(Array(bytes.suffix(tail.count)), tail, "FeatureExt ends the message")
        let decoded = try Login7.decode(from: bytes)
        XCTAssertEqual(decoded.featureExt?.map(\.id), [0x0D, 0x0E, 0x0A])
        XCTAssertEqual(decoded.featureExt?.map(\.description), ["JSONSUPPORT(1 bytes)", "VECTORSUPPORT(1 bytes)", "UTF8_SUPPORT(0 bytes)"])
        // TDS 7.3 has no FeatureExt: nothing is asked.
        var old = SQLConnectionConfiguration(address: SQLServerAddress(host: "h", port: 1), user: "u", password: "p", tdsVersion: .v7_3B)
        old.typeSupport = SQLTypeSupport()
        var login73 = old.login7(hostName: "ws", clientPID: 1)
        old.typeSupport.request(in: &login73)
        XCTAssertNil(login73.featureExt)
    }

    func testFeatureExtAckRulesOnTheBytes() throws {
        func ack(_ bytes: [UInt8]) throws -> FeatureExtAck {
            var r = ByteReader(Array(bytes.dropFirst()))   // after the token byte 0xAE
            return try FeatureExtAck.decode(from: &r)
        }
        let support = SQLTypeSupport()
        // Both acknowledged at version 1.
        var a = try ack([0xAE, 0x0D, 1, 0, 0, 0, 1, 0x0E, 1, 0, 0, 0, 1, 0xFF])
        XCTAssertTrue(try support.negotiated(by: a) == (1, 1))
        // Version 0 is "not supported", accepted; no acknowledgement is the same.
        a = try ack([0xAE, 0x0D, 1, 0, 0, 0, 0, 0x0E, 1, 0, 0, 0, 0, 0xFF])
        XCTAssertTrue(try support.negotiated(by: a) == (0, 0))
        XCTAssertTrue(try support.negotiated(by: nil) == (0, 0))
        // A version above the one asked is a protocol error.
        a = try ack([0xAE, 0x0E, 1, 0, 0, 0, 2, 0xFF])
        XCTAssertThrowsError(try support.negotiated(by: a)) { e in
            XCTAssertEqual((e as? SQLClientError)?.code, .protocolError)
            XCTAssertTrue("\(e)".contains("VECTORSUPPORT version 2"), "\(e)")
        }
        XCTAssertTrue(try SQLTypeSupport(vector: .float16).negotiated(by: a) == (0, 2), "float16 asked: version 2 is fine")
        a = try ack([0xAE, 0x0D, 1, 0, 0, 0, 2, 0xFF])
        XCTAssertThrowsError(try support.negotiated(by: a))
        // Data that is not one byte.
        a = try ack([0xAE, 0x0D, 2, 0, 0, 0, 1, 0, 0xFF])
        XCTAssertThrowsError(try support.negotiated(by: a))
        a = try ack([0xAE, 0x0D, 0, 0, 0, 0, 0xFF])
        XCTAssertThrowsError(try support.negotiated(by: a))
    }

    func testConnectionStringKeysAndSessionShowWhatWasNegotiated() async throws {
        let c = try SQLConnectionConfiguration(connectionString: "Server=h;User ID=u;Password=p;Json Support=false;Vector Support=Float16")
        XCTAssertEqual(c.typeSupport, SQLTypeSupport(json: false, vector: .float16))
        XCTAssertEqual(try SQLConnectionConfiguration(connectionString: "Server=h;VectorSupport=off").typeSupport.vector, .off)
        XCTAssertEqual(try SQLConnectionConfiguration(connectionString: "Server=h").typeSupport, SQLTypeSupport())
        XCTAssertThrowsError(try SQLConnectionConfiguration(connectionString: "Server=h;Vector Support=float64"))
        XCTAssertThrowsError(try SQLConnectionConfiguration(connectionString: "Server=h;Json Support=maybe"))

        // Acknowledged by the replay server (it acknowledges only what LOGIN7 asked for).
        var session = ReplaySession(name: "ack")
        session.jsonSupport = 1
        session.vectorSupport = 1
        var server = try RPCReplay.start(session)
        var connection = try await RPCReplay.connect(server)
        var info = await connection.session
        XCTAssertEqual(info.jsonSupportVersion, 1); XCTAssertEqual(info.vectorSupportVersion, 1)
        XCTAssertEqual(info.serverTypes, .all)
        await connection.close(); server.stop()

        // Switched off: not asked, so not acknowledged.
        server = try RPCReplay.start(session)
        connection = try await RPCReplay.connect(server) { $0.typeSupport = SQLTypeSupport(json: false, vector: .off) }
        info = await connection.session
        XCTAssertEqual(info.serverTypes, [])
        await connection.close(); server.stop()

        // Version 0 accepted as "not supported".
        session.vectorSupport = 0
        server = try RPCReplay.start(session)
        connection = try await RPCReplay.connect(server)
        info = await connection.session
        XCTAssertEqual(info.serverTypes, .json)
        await connection.close(); server.stop()

        // A version above the one asked fails the login.
        session.vectorSupport = 2
        server = try RPCReplay.start(session)
        defer { server.stop() }
        do {
            _ = try await RPCReplay.connect(server)
            XCTFail("VECTORSUPPORT version 2 acknowledged for version 1 must fail the login")
        } catch let error as SQLClientError {
            XCTAssertEqual(error.code, .protocolError, "\(error)")
        }
    }

    func testReplaySessionFilesKeepTheAcknowledgements() throws {
        var session = ReplaySession(name: "acks")
        session.jsonSupport = 1
        session.vectorSupport = 2
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("json-vector-\(getpid()).tdssession")
        defer { try? FileManager.default.removeItem(at: url) }
        try session.write(to: url)
        let text = try String(contentsOf: url, encoding: .utf8)
        XCTAssertTrue(text.contains("@json 1\n@vector 2\n"), text)
        let back = try ReplaySession(contentsOf: url)
        XCTAssertEqual(back.jsonSupport, 1)
        XCTAssertEqual(back.vectorSupport, 2)
    }

    // MARK: Round trips

    static let doc = #"{"name":"Zürich","tags":["a","b"],"n":1.5}"#
    static let columns = [
        ColumnMetadata(flags: [.nullable], typeInfo: .json, name: "j"),
        ColumnMetadata(flags: [.nullable], typeInfo: .vector(dimensions: 3), name: "v"),
        ColumnMetadata(flags: [.nullable], typeInfo: .vector(dimensions: 3), name: "nv"),
        ColumnMetadata(flags: [.nullable], typeInfo: .json, name: "nj"),
    ]

    struct Item: Decodable, Equatable {
        let j: String
        let v: [Float]
        let nv: [Float]?
        let nj: String?
    }

    func testParametersOutValuesBackWithNulls() async throws {
        let vector = SQLVector([0.25, -1, 3.5])
        let q: SQLQuery = "SELECT \(.json(Self.doc)) AS j, \(vector) AS v, \(.vector(nil, dimensions: 3)) AS nv, \(.json(nil)) AS nj"
        // The replay server decodes SQLClient's RPC: the declaration names the new types, the
        // values are what was sent (canonical text: json its text, a vector its JSON array).
        let exchange = RPCTokens.rpc("sp_executesql", [
            ("", q.sql), ("", "@P1 json, @P2 vector(3), @P3 vector(3), @P4 json"),
            ("@P1", Self.doc), ("@P2", "[0.25,-1.0,3.5]"), ("@P3", nil), ("@P4", nil),
        ], [RPCTokens.colMetadata(Self.columns),
            try RPCTokens.row([.json(Self.doc), .vector(vector), .null, .null], Self.columns),
            try ServerTokens.nbcRow([.json("[1,2]"), .vector(SQLVector([1, 2, 3])), .null, .null], columns: Self.columns),
            RPCTokens.done([.count], count: 2)])
        var session = ReplaySession(name: "json-vector", exchanges: [exchange])
        session.jsonSupport = 1
        session.vectorSupport = 1
        let server = try RPCReplay.start(session)
        defer { server.stop() }
        let connection = try await RPCReplay.connect(server)
        defer { Task { await connection.close() } }
        let result = try await connection.execute(q)
        XCTAssertEqual(server.unmatchedRequests.count, 0, String(server.unmatchedRequests.first?.description.prefix(400) ?? ""))
        XCTAssertEqual(result.rows.count, 2)
        let row = try XCTUnwrap(result.rows.first)
        XCTAssertEqual(row["j"], .json(Self.doc))
        XCTAssertEqual(row["v"], .vector(vector))
        XCTAssertEqual(row["nv"], .null); XCTAssertEqual(row["nj"], .null)
        XCTAssertEqual(result.resultSets.first?.columns.map(\.typeName), ["json", "vector(3)", "vector(3)", "json"])
        // Typed decode and Decodable: [Float], String, Data, SQLVector.
        XCTAssertEqual(try row.decode(Item.self), Item(j: Self.doc, v: [0.25, -1, 3.5], nv: nil, nj: nil))
        struct Raw: Decodable { let j: Data; let v: Data; let vv: SQLVector?; enum CodingKeys: String, CodingKey { case j, v, vv = "v2" } }
        struct AsVector: Decodable { let v: SQLVector; let j: String }
        XCTAssertEqual(try row.decode(AsVector.self).v, vector)
        XCTAssertEqual(try row.decode(Raw.self).j, Data(Self.doc.utf8))
        XCTAssertEqual(try row.decode(Raw.self).v, Data(try vector.wireBytes()))
        XCTAssertEqual(result.rows[1]["j"]?.floatsValue, [1, 2])
        // Typed tuples: [Float] and [Float]? beside String and SQLVector (one Array conformance
        // over SQLCellArrayElement serves [UInt8] and [Float]).
        typealias VectorTuple = (String, [Float], [Float]?, String?)
        let (tj, tv, tnv, tnj) = try row.decode(VectorTuple.self)
        XCTAssertEqual(tj, Self.doc); XCTAssertEqual(tv, [0.25, -1, 3.5]); XCTAssertNil(tnv); XCTAssertNil(tnj)
        typealias NullVector = (String, [Float], [Float])
        XCTAssertThrowsError(try row.decode(NullVector.self)) { error in   // "nv" is NULL
            let failure = (error as? SQLClientError)?.decodingFailure
            XCTAssertEqual(failure?.columnIndex, 2); XCTAssertEqual(failure?.columnName, "nv")
            XCTAssertEqual(failure?.sqlType, "vector(3)"); XCTAssertEqual(failure?.reason, .null)
        }

        // Streamed rows read the same values.
        server.stop()
    }

    func testOutputParametersOfBothTypes() async throws {
        let response: [[UInt8]] = [
            RPCTokens.returnStatus(0),
            try RPCTokens.returnValue(ordinal: 1, name: "@j", .json, .json(Self.doc)),
            try RPCTokens.returnValue(ordinal: 2, name: "@v", .vector(dimensions: 3), .vector(SQLVector([1, 2, 3]))),
            try RPCTokens.returnValue(ordinal: 3, name: "@w", .vector(dimensions: 2, elementType: .float16),
                                      .vector(SQLVector([0.5, -0.5], elementType: .float16))),
            try RPCTokens.returnValue(ordinal: 4, name: "@n", .vector(dimensions: 3), .null),
            RPCTokens.doneProc(),
        ]
        var session = ReplaySession(name: "json-vector-out", exchanges: [
            RPCTokens.rpc("dbo.embed", [("@j", nil), ("@v", nil), ("@w", "[1.0,2.0]"), ("@n", nil)], response),
        ])
        session.jsonSupport = 1
        session.vectorSupport = 2
        let server = try RPCReplay.start(session)
        defer { server.stop() }
        let connection = try await RPCReplay.connect(server) { $0.typeSupport.vector = .float16 }
        defer { Task { await connection.close() } }
        let result = try await connection.callProcedure("dbo.embed", parameters: [
            .output("@j", type: .json), .output("@v", type: .vector(dimensions: 3)),
            .inputOutput("@w", .vector([1, 2], elementType: .float16)), .output("@n", type: .vector(dimensions: 3)),
        ])
        XCTAssertEqual(server.unmatchedRequests.count, 0, String(server.unmatchedRequests.first?.description.prefix(400) ?? ""))
        XCTAssertEqual(result.output("@j"), .json(Self.doc))
        XCTAssertEqual(result.output("@v")?.floatsValue, [1, 2, 3])
        XCTAssertEqual(result.output("@w"), .vector(SQLVector([0.5, -0.5], elementType: .float16)))
        XCTAssertEqual(result.output("@n"), .null)
        XCTAssertEqual(result.outputs.map(\.typeInfo.sqlTypeName), ["json", "vector(3)", "vector(2, float16)", "vector(3)"])
    }

    /// Without the acknowledgements: parameters go as nvarchar(max) text, and the server's
    /// nvarchar(max) json and varchar(max) vector text decode to String and [Float].
    func testWithoutAcknowledgementTextTravels() async throws {
        let q: SQLQuery = "SELECT \(.json(Self.doc)) AS j, \(SQLVector([1, 2, 3])) AS v"
        let columns = [ColumnMetadata(flags: [.nullable], typeInfo: .nvarchar(nil), name: "j"),
                       ColumnMetadata(flags: [.nullable], typeInfo: .varchar(nil), name: "v"),
                       ColumnMetadata(flags: [.nullable], typeInfo: .varchar(nil), name: "nv"),
                       ColumnMetadata(flags: [.nullable], typeInfo: .nvarchar(nil), name: "nj")]
        let session = ReplaySession(name: "json-vector-text", exchanges: [
            RPCTokens.rpc("sp_executesql", [("", q.sql), ("", "@P1 nvarchar(max), @P2 nvarchar(max)"),
                                            ("@P1", Self.doc), ("@P2", "[1.0,2.0,3.0]")],
                          [RPCTokens.colMetadata(columns),
                           try RPCTokens.row([.string(Self.doc), .string("[1.0000000e+000,2.0000000e+000,3.0000000e+000]"), .null, .null], columns),
                           RPCTokens.done([.count], count: 1)]),
        ])
        let server = try RPCReplay.start(session)
        defer { server.stop() }
        let connection = try await RPCReplay.connect(server)
        defer { Task { await connection.close() } }
        let result = try await connection.execute(q)
        XCTAssertEqual(server.unmatchedRequests.count, 0, String(server.unmatchedRequests.first?.description.prefix(400) ?? ""))
        let row = try XCTUnwrap(result.rows.first)
        XCTAssertEqual(try row.decode(Item.self), Item(j: Self.doc, v: [1, 2, 3], nv: nil, nj: nil))
        XCTAssertEqual(row["v"]?.floatsValue, [1, 2, 3])
        typealias TextVector = (String, [Float])   // vector as varchar(max) JSON text, read as [Float]
        let (textJSON, textVector) = try row.decode(TextVector.self)
        XCTAssertEqual(textJSON, Self.doc); XCTAssertEqual(textVector, [1, 2, 3])
    }

    // MARK: Every read path

    /// A json and a vector(4) column (the float16 one too), NULLs, a 20,000-byte json document in
    /// 8,000-byte chunks, one in 1-byte chunks of unknown length, vectors of 1,998 dimensions; as
    /// ROW or NBCROW, read by SQLConnectionReadPathsTests' harness through query, execute,
    /// rowBlocks, events and Decodable ([Float], String, Data).
    static func readSession(nbcrow: Bool) throws -> SQLConnectionReadPathsTests.ReadSession {
        let big = String(repeating: #"{"k":"Zürich 😀"},"#, count: 1000)
        let values: [(String, SQLValue, ServerTokens.PLPChunking?)] = [
            ("NULL", .null, nil), ("empty json", .json(""), nil), ("json", .json(#"{"a":1}"#), nil),
            ("20000-byte json", .json("[" + big + "1]"), nil),
            ("json in 1-byte chunks", .json(#"["ü",2]"#), .init(sizes: [1], unknownLength: true)),
        ]
        let vectors: [SQLValue] = [.vector(SQLVector([1, 2, 3, 4])), .null, .vector(SQLVector([-0.5, 0, 1e-7, 3.4e38])),
                                   .vector(SQLVector([0.1, 0.2, 0.3, 0.4])), .null]
        let halves: [SQLValue] = [.null, .vector(SQLVector([1, -2], elementType: .float16)), .null,
                                  .vector(SQLVector([65504, 0x1p-24], elementType: .float16)), .vector(SQLVector([0.5, 0.25], elementType: .float16))]
        let wide: [SQLValue] = [.vector(SQLVector((0 ..< 1998).map { Float($0) / 8 })), .null, .null, .null,
                                .vector(SQLVector([Float](repeating: -1, count: 1998)))]
        let columns = [ColumnMetadata(flags: [], typeInfo: .int, name: "id"), ColumnMetadata(flags: [.nullable], typeInfo: .json, name: "j"),
                       ColumnMetadata(flags: [.nullable], typeInfo: .vector(dimensions: 4), name: "v"),
                       ColumnMetadata(flags: [.nullable], typeInfo: .vector(dimensions: 2, elementType: .float16), name: "h"),
                       ColumnMetadata(flags: [.nullable], typeInfo: .vector(dimensions: 1998), name: "w")]
        let sql = "SELECT id, j, v, h, w FROM docs ORDER BY id"
        var bytes = ServerTokens.colMetadata(columns, version: .v7_4)
        var rows: [[SQLValue]] = []
        for (i, v) in values.enumerated() {
            let row: [SQLValue] = [.int(Int32(i + 1)), v.1, vectors[i], halves[i], wide[i]]
            rows.append(row)
            bytes += nbcrow ? try ServerTokens.nbcRow(row, columns: columns, chunking: [nil, v.2])
                            : try ServerTokens.row(row, columns: columns, chunking: [nil, v.2])
        }
        bytes += ServerTokens.done(status: .count, currentCommand: 0xC1, rowCount: UInt64(values.count), version: .v7_4)
        var session = ReplaySession(name: "json-vector-\(nbcrow ? "nbcrow" : "row")", version: .v7_4, exchanges: [
            ReplaySession.Exchange(request: .sqlBatch(sql), response: [ReplaySession.Segment(bytes: bytes)]),
        ])
        session.jsonSupport = 1
        session.vectorSupport = 1   // what the harness's configuration asks (float16 columns decode all the same)
        let c = SQLConnectionReadPathsTests.ReadCase(
            name: "json-vector", sql: sql, columnNames: ["id", "j", "v", "h", "w"],
            sentTypeNames: ["int", "json", "vector(4)", "vector(2, float16)", "vector(1998)"], userTypes: [0, 0, 0, 0, 0],
            rows: rows, labels: values.map(\.0), rowCount: values.count)
        return SQLConnectionReadPathsTests.ReadSession(name: session.name, version: .v7_4, session: session, cases: [c], fixture: nil)
    }

    func testEveryReadPathWholeRandomPiecesAndSingleBytes() async throws {
        var report = SQLConnectionReadPathsTests.Report()
        for nbcrow in [false, true] {
            let s = try Self.readSession(nbcrow: nbcrow)
            try await SQLConnectionReadPathsTests.readEverything(s, schedule: nil, &report)
            try await SQLConnectionReadPathsTests.readEverything(s, schedule: .random(seed: 0x30, max: 700), &report)
        }
        try await SQLConnectionReadPathsTests.readEverything(try Self.readSession(nbcrow: true), schedule: .bytes(1), &report)
        XCTAssertEqual(report.typesSeen, ["json-vector"])
        SQLConnectionReadPathsTests.finish(report, minimumValues: 100)
    }

    func testInvalidVectorParametersFailBeforeSending() throws {
        for p in [SQLParameter.vector([]), .vector([1, .nan]), .vector([Float](repeating: 1, count: 1999)),
                  .vector([70000], elementType: .float16)] {
            XCTAssertThrowsError(try p.rpcParameter(version: .v7_4)) { e in
                XCTAssertEqual((e as? SQLClientError)?.code, .invalidParameter, "\(e)")
            }
        }
        // TVPs and bulk copy never carry 0xF4 in their metadata.
        let tvp = SQLParameter.table("dbo.Docs", columns: [.json, .vector(dimensions: 2)], rows: [[.json("{}"), .vector(SQLVector([1, 2]))]])
        XCTAssertEqual(tvp.table?.columns?.map(\.typeInfo.sqlTypeName), ["nvarchar(max)", "nvarchar(max)"])
        XCTAssertNoThrow(try tvp.rpcParameter(version: .v7_4))
        XCTAssertEqual(BulkLoadColumn(name: "j", type: .json).typeInfo.sqlTypeName, "nvarchar(max)")
        XCTAssertEqual(BulkLoadColumn(name: "v", type: .vector(dimensions: 2)).declaration, "vector(2)")
    }
}

/// `sqlclient` over the replay server: json as its text and a vector as a JSON array in the
/// table, CSV and JSON formats; `--exec` with a vector parameter and json/vector OUTPUT values.
final class JSONVectorCLITests: XCTestCase {
    func testOutputFormatsAndExecParameters() throws {
        guard let binary = CLIComparisonTests.sqlclientBinary() else { return XCTFail("no sqlclient binary") }
        let columns = [ColumnMetadata(flags: [.nullable], typeInfo: .json, name: "j"),
                       ColumnMetadata(flags: [.nullable], typeInfo: .vector(dimensions: 2), name: "v")]
        let select: [[UInt8]] = [RPCTokens.colMetadata(columns),
                                 try RPCTokens.row([.json(#"{"a":1}"#), .vector(SQLVector([0.5, -2]))], columns),
                                 try RPCTokens.row([.null, .null], columns), RPCTokens.done([.count], count: 2)]
        let exec: [[UInt8]] = [RPCTokens.returnStatus(0),
                               try RPCTokens.returnValue(ordinal: 1, name: "@v", .vector(dimensions: 2), .vector(SQLVector([1, 2]))),
                               try RPCTokens.returnValue(ordinal: 2, name: "@j", .json, .json("[3]")), RPCTokens.doneProc()]
        var session = ReplaySession(name: "cli-json-vector", exchanges: [
            RPCTokens.batch("SELECT j, v FROM t", select), RPCTokens.batch("SELECT j, v FROM t", select),
            RPCTokens.batch("SELECT j, v FROM t", select),
            RPCTokens.rpc("dbo.p", [("@v", "[1.0,2.0]"), ("@j", nil)], exec),
        ])
        session.jsonSupport = 1
        session.vectorSupport = 1
        let server = try RPCReplay.start(session)
        defer { server.stop() }
        let connect = ["-S", "127.0.0.1,\(server.port)", "-U", "u", "-P", "p", "--encrypt", "notsupported"]
        let json = try CLIComparisonTests.run(binary.path, connect + ["--format", "json", "-Q", "SELECT j, v FROM t"])
        XCTAssertEqual(json.status, 0, json.stderr)
        XCTAssertEqual(json.stdout.split(separator: "\n").first.map(String.init),
                       #"{"columns":[{"name":"j","type":"json"},{"name":"v","type":"vector(2)"}],"rows":[["{\"a\":1}",[0.5,-2.0]],[null,null]],"rowsAffected":2}"#)
        let csv = try CLIComparisonTests.run(binary.path, connect + ["--format", "csv", "-Q", "SELECT j, v FROM t"])
        XCTAssertTrue(csv.stdout.contains(#""{""a"":1}","[0.5,-2.0]""#), csv.stdout)
        let table = try CLIComparisonTests.run(binary.path, connect + ["-W", "-Q", "SELECT j, v FROM t"])
        XCTAssertTrue(table.stdout.contains(#"{"a":1} [0.5,-2.0]"#), table.stdout)
        let rpc = try CLIComparisonTests.run(binary.path, connect + ["--exec", "dbo.p", "--inout", "@v:vector(2)=[1,2]", "--output", "@j:json"])
        XCTAssertEqual(rpc.status, 0, rpc.stderr)
        XCTAssertTrue(rpc.stdout.contains("@v = [1.0,2.0]"), rpc.stdout)
        XCTAssertTrue(rpc.stdout.contains("@j = [3]"), rpc.stdout)
        XCTAssertEqual(server.unmatchedRequests.count, 0, String(server.unmatchedRequests.first?.description.prefix(300) ?? ""))
    }
}

/// Bulk copy into a table with json and vector columns, against the recording bulk-load server:
/// COLMETADATA carries nvarchar(max) for json (never 0xF4) and VECTORTYPE for the vector, as
/// Microsoft.Data.SqlClient sends it; the INSERT BULK statement declares them so.
final class JSONVectorBulkCopyTests: XCTestCase {
    func testJSONGoesAsNVarcharMaxAndVectorAsItself() async throws {
        let table = [ColumnMetadata(flags: [.updateable], typeInfo: TypeInfo(type: .int4, length: 4), name: "id"),
                     ColumnMetadata(flags: [.nullable, .updateable], typeInfo: .json, name: "doc"),
                     ColumnMetadata(flags: [.nullable, .updateable], typeInfo: .vector(dimensions: 3), name: "embedding")]
        let server = BulkLoadServer(tables: ["docs": table])
        defer { server.stop() }
        let port = try server.start()
        let connection = try await SQLConnection.connect(SQLConnectionConfiguration(
            address: SQLServerAddress(host: "127.0.0.1", port: Int(port)), user: "u", password: "p",
            encryption: .notSupported, connectTimeout: .seconds(10), packetSize: 512))
        let rows: [[SQLValue]] = [
            [.int(1), .json(#"{"a":"ü"}"#), .vector(SQLVector([1, 2, 3]))],
            [.int(2), .null, .null],
            [.int(3), .json("[" + String(repeating: "1,", count: 3000) + "1]"), .vector(SQLVector([-0.5, 0, 0.25]))],
        ]
        let result = try await connection.bulkInsert(into: "dbo.docs", rows: rows)
        await connection.close()
        XCTAssertEqual(result.rowsCopied, 3)
        let load = try XCTUnwrap(server.loads.first)
        XCTAssertEqual(load.columns.map(\.typeInfo.type), [.intN, .nvarchar, .vector])
        XCTAssertFalse(load.columns.contains { $0.typeInfo.type == .json }, "0xF4 never in BULKLOAD COLMETADATA")
        let statement = try XCTUnwrap(load.statement)
        XCTAssertTrue(statement.contains("[doc] nvarchar(max)"), statement)
        XCTAssertTrue(statement.contains("[embedding] vector(3)"), statement)
        XCTAssertEqual(load.rows, [
            [.int(1), .string(#"{"a":"ü"}"#), .vector(SQLVector([1, 2, 3]))],
            [.int(2), .null, .null],
            [.int(3), .string("[" + String(repeating: "1,", count: 3000) + "1]"), .vector(SQLVector([-0.5, 0, 0.25]))],
        ])
    }
}
