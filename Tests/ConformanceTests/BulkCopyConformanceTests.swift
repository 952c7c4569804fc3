import Foundation
import SQLClient
import SQLClientTesting
import TDS
import XCTest

/// Our bulk load beside Microsoft's: `mssql-python`'s `cursor.bulkcopy()` (run by the Rust core
/// `mssql_py_core` of `mssql-python-rs`, from PyPI) loads rows into the recording bulk-load
/// server; `bulkInsert` loads the same rows into the same table; the two BULKLOAD messages
/// carry the same column metadata and values ([MS-TDS] 2.2.6.1).
final class BulkCopyConformanceTests: XCTestCase {
    static let columns = ["tiny", "small", "i", "big", "flag", "r", "f", "dec", "num", "m", "sm", "d", "t0", "t7", "dt2", "dto",
                          "dt", "sdt", "g", "c", "vc", "vcmax", "nc", "nvc", "nvcmax", "txt", "ntxt", "bin", "vb", "vbmax",
                          "img", "x", "h", "v"]

    /// The fixture table's columns, one row of every type and one of NULLs, as Python values.
    static let script = """
        import datetime, decimal, json, sys, uuid
        import mssql_python
        D = decimal.Decimal
        tz = datetime.timezone(datetime.timedelta(minutes=120))
        row = (7, -300, 42, 9000000000, True, 1.5, -2.25, D("12345.6789"), D("12345678901234567890123456789012345678"),
               D("123.4567"), D("-5"), datetime.date(2024, 2, 29), datetime.time(23, 59, 59), datetime.time(12, 34, 56, 123456),
               datetime.datetime(1999, 12, 31, 23, 59, 59, 999000), datetime.datetime(2020, 6, 1, 8, 0, 0, 1, tzinfo=tz),
               datetime.datetime(2023, 3, 4, 5, 6, 7), datetime.datetime(2009, 7, 8, 10, 0),
               uuid.UUID("6F9619FF-8B86-D011-B42D-00C04FC964FF"), "fixed", "café", "L" * 9000, "ñandú", "snowman ☃ 𝄞",
               "Ω" * 5000, "old text", "old ntext ü", b"\\xde\\xad\\xbe\\xef", b"\\x01\\x02\\x03", b"\\xab" * 10000, b"\\x00\\x01",
               "<doc a=\\"1\\">x</doc>", b"\\x58", 99)
        nulls = tuple(0 if i == 2 else None for i in range(len(row)))
        port, columns = sys.argv[1], sys.argv[2].split(",")
        conn = mssql_python.connect(f"Server=127.0.0.1,{port};UID=u;PWD=p;Encrypt=no;Database=master")
        result = conn.cursor().bulkcopy("dbo.everything", [row, nulls], column_mappings=columns)
        print(json.dumps({"rows_copied": result["rows_copied"]}))
        """

    static func python() throws -> String {
        let python = FreeTDSOracle.packageRoot.appendingPathComponent(".venv/bin/python").path
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw XCTSkip("no .venv/bin/python: install mssql-python into the project's .venv (pip install mssql-python)")
        }
        let (status, text) = try FreeTDSOracle.run(python, ["-c", "import mssql_python, mssql_py_core"])
        guard status == 0 else {
            throw XCTSkip("mssql-python (with its Rust core mssql_py_core) is not installed in .venv: \(text.suffix(200))")
        }
        return python
    }

    func testMicrosoftsBulkCopyAndOursSendTheSameMetadataAndValues() async throws {
        let python = try Self.python()
        let server = BulkLoadServer(tables: ["everything": BulkLoadFixtures.tableColumns.map(\.metadata)])
        defer { server.stop() }
        let port = try server.start()
        let script = FileManager.default.temporaryDirectory.appendingPathComponent("bulkcopy-\(UUID().uuidString).py")
        try Data(Self.script.utf8).write(to: script)
        defer { try? FileManager.default.removeItem(at: script) }
        let (status, output) = try FreeTDSOracle.run(python, [script.path, String(port), Self.columns.joined(separator: ",")])
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.contains("\"rows_copied\": 2"), output)
        let theirs = try XCTUnwrap(server.loads.first, "mssql-python sent no bulk load: \(server.requests)")
        XCTAssertNil(theirs.error)
        XCTAssertEqual(theirs.rows.count, 2)
        // What Microsoft's client sent, checked against the Python values.
        let byName = Dictionary(uniqueKeysWithValues: zip(theirs.columns.map(\.name), theirs.rows[0]))
        XCTAssertEqual(byName["i"], .int(42))
        XCTAssertEqual(byName["dec"]?.canonicalText, "12345.6789")
        XCTAssertEqual(byName["num"]?.canonicalText, "12345678901234567890123456789012345678")
        XCTAssertEqual(byName["t7"]?.canonicalText, "12:34:56.1234560")
        // Python's 08:00:00.000001+02:00 arrives as 10:00 local: mssql_py_core writes the local time
        // where [MS-TDS] 2.2.5.5.1.8 puts UTC (ours writes 06:00 UTC, offset +120).
        XCTAssertEqual(byName["dto"]?.canonicalText, "2020-06-01 10:00:00.0000010 +02:00")
        XCTAssertEqual(byName["nvc"], .string("snowman ☃ 𝄞"))
        XCTAssertEqual(byName["vbmax"], .binary([UInt8](repeating: 0xAB, count: 10_000)))
        XCTAssertEqual(byName["x"], .string("\u{FEFF}<doc a=\"1\">x</doc>"), "mssql-python sends xml text with a byte order mark")
        XCTAssertEqual(byName["v"]?.baseValue.intValue, 99, "\(byName["v"].map { "\($0)" } ?? "nil")")
        if case .variant(let v)? = byName["v"] { print("mssql-python sql_variant base type: \(v.baseType)") }

        // Ours, for the same rows into the same table.
        let connection = try await SQLConnection.connect(SQLConnectionConfiguration(
            address: SQLServerAddress(host: "127.0.0.1", port: Int(port)), user: "u", password: "p",
            encryption: .notSupported, connectTimeout: .seconds(10)))
        let result = try await connection.bulkInsert(into: "dbo.everything", columns: Self.columns.map { SQLBulkColumn($0) },
                                                     rows: theirs.rows)
        await connection.close()
        XCTAssertEqual(result.rowsCopied, 2)
        let ours = try XCTUnwrap(server.loads.last)
        XCTAssertEqual(server.loads.count, 2)
        XCTAssertEqual(ours.quirks, [], "ours follows [MS-TDS] 2.2.6.1 to the byte")
        XCTAssertEqual(ours.columns.map(\.name), theirs.columns.map(\.name))
        XCTAssertEqual(ours.columns.map(\.isNullable), theirs.columns.map(\.isNullable))
        XCTAssertEqual(ours.rows, theirs.rows, "the same values")
        var differences: [String] = []
        func name(_ t: TDSDataType) -> String { t.name }
        for (a, b) in zip(theirs.columns, ours.columns) where a.typeInfo != b.typeInfo {
            var a = a.typeInfo, b = b.typeInfo
            let text = "\(name(a.type)): mssql-python \(a.sqlTypeName) length \(a.length), ours \(b.sqlTypeName) length \(b.length)"
            a.length = 0; b.length = 0; a.isPLP = false; b.isPLP = false
            differences.append(a == b ? text : text + " and more")
        }
        XCTAssertEqual(differences, Self.knownTypeDifferences, differences.joined(separator: "\n"))
        print("mssql-python bulk load quirks: \(theirs.quirks)")
    }

    /// Where the TYPE_INFOs differ (only in the declared length), each side valid for the column:
    /// text and image declared 2^31-2 (SQL Server reports 2^31-1, which we send back), and a UDT
    /// (here hierarchyid, max 892 bytes) sent as varbinary(max) where we send varbinary(892).
    static let knownTypeDifferences: [String] = [
        "TEXT: mssql-python text length 2147483646, ours text length 2147483647",
        "IMAGE: mssql-python image length 2147483646, ours image length 2147483647",
        "BIGVARBINARY: mssql-python varbinary(max) length 65535, ours varbinary(892) length 892",
    ]
}
