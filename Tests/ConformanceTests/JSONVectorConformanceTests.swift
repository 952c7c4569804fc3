import Foundation
import SQLClient
import SQLClientTesting
import TDS
import XCTest

/// json and vector against Microsoft's Rust TDS core (mssql-rs, in mssql-python as
/// `mssql_py_core`), which asks for JSONSUPPORT and VECTORSUPPORT: both clients read the same
/// replay session (acknowledging both), and every value must agree — json text exactly, vector
/// elements to the bit (Python gives each float32 element as a double; it converts back exactly).
///
/// mssql-python's own cursor goes through Microsoft ODBC Driver 18.6, which asks for
/// VECTORSUPPORT but not JSONSUPPORT, and whose Python layer (mssql-python 1.16.0) refuses the
/// vector column ("Unsupported data type for column ... Type - -156"): that path cannot be compared.
/// Skipped when `.venv` has no mssql-python (`scripts/msodbc.sh install`).
final class JSONVectorConformanceTests: XCTestCase {
    static let python = FreeTDSOracle.packageRoot.appendingPathComponent(".venv/bin/python")

    static let script = """
        import json, sys
        import mssql_py_core as m
        from mssql_python.connection_string_parser import _ConnectionStringParser
        from mssql_python.helpers import connstr_to_pycore_params
        params = _ConnectionStringParser(validate_keywords=False)._parse("Server=127.0.0.1," + sys.argv[1] + ";UID=u;PWD=p;Encrypt=no")
        conn = m.PyCoreConnection(connstr_to_pycore_params(params))   # kept: its runtime serves the cursor
        cur = conn.cursor()
        cur.execute(sys.argv[2])
        for r in cur.fetchall():
            print(json.dumps([x if x is None or isinstance(x, str) else [repr(f) for f in x] for x in r]))
        """

    static func rows() -> [[SQLValue]] {
        var rows: [[SQLValue]] = [
            [.json(#"{"a":[1,2],"b":"ü 😀"}"#), .vector(SQLVector([1, -2, 0.5])), .vector(SQLVector((0 ..< 1998).map { Float($0) * 0.001 - 1 }))],
            [.null, .null, .null],
            [.json(""), .vector(SQLVector([0.1, 1e-7, 3.4028235e38])), .vector(SQLVector([Float](repeating: -0.0, count: 1998)))],
            [.json(String(repeating: #"{"k":"Zürich"},"#, count: 2000)), .vector(SQLVector([Float.leastNonzeroMagnitude, -1e-30, 7])), .null],
        ]
        for i in 0 ..< 20 {
            rows.append([.json("[\(i)]"), .vector(SQLVector([Float(i) / 3, -Float(i), 1 / Float(i + 1)])),
                         .vector(SQLVector((0 ..< 1998).map { Float(($0 &* 7919 &+ i) % 1000) / 997 }))])
        }
        return rows
    }

    func testMicrosoftsRustDriverReadsTheSameValues() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.python.path) else {
            throw XCTSkip("no .venv/bin/python with mssql-python: scripts/msodbc.sh install")
        }
        let probe = Process()
        probe.executableURL = Self.python
        probe.arguments = ["-c", "import mssql_py_core, mssql_python.helpers"]
        probe.standardError = FileHandle.nullDevice
        try probe.run(); probe.waitUntilExit()
        guard probe.terminationStatus == 0 else { throw XCTSkip("mssql_py_core (mssql-python-rs) is not installed in .venv") }

        let columns = [ColumnMetadata(flags: [.nullable], typeInfo: .json, name: "j"),
                       ColumnMetadata(flags: [.nullable], typeInfo: .vector(dimensions: 3), name: "v"),
                       ColumnMetadata(flags: [.nullable], typeInfo: .vector(dimensions: 1998), name: "w")]
        let rows = Self.rows()
        let sql = "SELECT j, v, w FROM conformance"
        var bytes = ServerTokens.colMetadata(columns, version: .v7_4)
        for (i, r) in rows.enumerated() {
            bytes += i % 2 == 0 ? try ServerTokens.row(r, columns: columns, chunking: [.init(sizes: [7 + i])])
                                : try ServerTokens.nbcRow(r, columns: columns)
        }
        bytes += ServerTokens.done(status: .count, currentCommand: 0xC1, rowCount: UInt64(rows.count), version: .v7_4)
        var session = ReplaySession(name: "json-vector-conformance", version: .v7_4, exchanges: [
            .init(request: .sqlBatch(sql), response: [.init(bytes: bytes)]),
        ])
        session.jsonSupport = 1
        session.vectorSupport = 1
        let server = ReplayServer(session: session)
        let port = try server.start()
        defer { server.stop() }

        // Microsoft's Rust driver.
        let p = Process()
        p.executableURL = Self.python
        p.arguments = ["-c", Self.script, String(port), sql]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(p.terminationStatus, 0, errors)
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n")
        XCTAssertEqual(lines.count, rows.count, errors)

        // SQLClient, over the same server.
        let connection = try await SQLConnection.connect(SQLConnectionConfiguration(
            address: SQLServerAddress(host: "127.0.0.1", port: Int(port)), user: "u", password: "p", encryption: .notSupported))
        let result = try await connection.execute(SQLQuery(unsafeSQL: sql))
        await connection.close()
        XCTAssertEqual(result.rows.map(\.values), rows, "SQLClient reads what was encoded")

        var compared = 0
        for (i, line) in lines.enumerated() where i < rows.count {
            let theirs = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [Any])
            XCTAssertEqual(theirs.count, 3)
            for (c, value) in result.rows[i].values.enumerated() where c < theirs.count {
                switch value {
                case .null: XCTAssertTrue(theirs[c] is NSNull, "row \(i) column \(c): \(theirs[c])")
                case .json(let s): XCTAssertEqual(theirs[c] as? String, s, "row \(i) column \(c)")
                case .vector(let v):
                    let elements = (theirs[c] as? [String] ?? []).compactMap { Double($0).map(Float.init) }
                    XCTAssertEqual(elements.map(\.bitPattern), v.values.map(\.bitPattern), "row \(i) column \(c)")
                default: XCTFail("row \(i) column \(c): \(value.kindName)")
                }
                compared += 1
            }
        }
        XCTAssertEqual(compared, rows.count * 3)
        print("JSONVectorConformanceTests: \(compared) values compared with mssql_py_core, \(rows.count) rows")
    }
}
