import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient

/// `sqlclient --exec`: a stored procedure with named input and OUTPUT parameters, its result
/// sets, OUTPUT values and return status, against Fixtures/sessions/rpc-transfer.tdssession on
/// the replay server (which answers only when the procedure and parameter values match).
final class RPCCLITests: XCTestCase {
    private func run(_ extra: [String]) throws -> (status: Int32, stdout: String, stderr: String, server: ReplayServer) {
        guard let binary = CLIComparisonTests.sqlclientBinary() else {
            XCTFail("the sqlclient executable was not built next to the tests")
            throw XCTSkip("no sqlclient binary")
        }
        let server = try RPCReplay.start(try RPCReplay.fixture("rpc-transfer.tdssession"))
        let args = ["-S", "127.0.0.1,\(server.port)", "-U", "u", "-P", "p", "--encrypt", "notsupported",
                    "--exec", "dbo.transfer", "--param", "@from=1", "--param", "@amount:decimal(10,2)=12.50",
                    "--output", "@balance:money"] + extra
        let r = try CLIComparisonTests.run(binary.path, args)
        server.stop()
        return (r.status, r.stdout, r.stderr, server)
    }

    func testExecPrintsResultSetsOutputValuesAndReturnStatus() throws {
        let r = try run([])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.server.unmatchedRequests.count, 0, "the RPC did not match the recording")
        let lines = r.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        XCTAssertEqual(lines.first, "id")
        XCTAssertTrue(lines.contains("7"), r.stdout)
        XCTAssertTrue(lines.contains("(1 row affected)"), r.stdout)
        XCTAssertTrue(lines.contains("(3 rows affected)"), r.stdout)
        XCTAssertTrue(lines.contains("@balance = 87.5000"), r.stdout)
        XCTAssertEqual(lines.last, "Return status: 0")
    }

    func testExecJSONOutput() throws {
        let r = try run(["--format", "json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines, [
            #"{"columns":[{"name":"id","type":"int"}],"rows":[[7]],"rowsAffected":1}"#,
            #"{"rowsAffected":3}"#,
            #"{"outputs":{"@balance":"87.5000"}}"#,
            #"{"returnStatus":0}"#,
        ])
    }

    func testExecUsageErrors() throws {
        guard let binary = CLIComparisonTests.sqlclientBinary() else { return XCTFail("no sqlclient binary") }
        for (args, text) in [
            (["--exec", "p", "--param", "@a:int=x"], "is not a valid int"),
            (["--exec", "p", "--output", "@b"], "needs a type"),
            (["--exec", "p", "--param", "@a:nosuchtype=1"], "unknown type"),
            (["--exec", "p", "-Q", "SELECT 1"], "cannot be combined"),
            (["--exec", "p", "--param", "@x:datetimeoffset(0)=2024-01-01 00:00:00 +99:00"], "is not a valid"),
            (["--exec", "p", "--param", "@t:time="], "is not a valid"),
            (["--exec", "p", "--param", "@d:datetime2="], "is not a valid"),
            (["--exec", "p", "--param", "@m:money=1e5"], "is not a valid"),
        ] {
            let r = try CLIComparisonTests.run(binary.path, ["-S", "127.0.0.1,1", "-U", "u", "-P", "p"] + args)
            XCTAssertEqual(r.status, 2, "\(args)")
            XCTAssertTrue(r.stderr.contains(text), "\(args): \(r.stderr.prefix(200))")
        }
    }

    /// Parameter text in each type's canonical form: the replay server answers only when the
    /// values it decodes from the CLI's RPC are the expected ones.
    func testParameterTextOfEveryTypeTravels() throws {
        guard let binary = CLIComparisonTests.sqlclientBinary() else { return XCTFail("no sqlclient binary") }
        let cases: [(String, String, String)] = [
            ("@d:date", "2024-02-29", "2024-02-29"),
            ("@t:time(3)", "13:14:15.1239", "13:14:15.123"),
            ("@dt2:datetime2(7)", "2024-02-29 13:14:15.1234567", "2024-02-29 13:14:15.1234567"),
            ("@dto:datetimeoffset(2)", "2024-02-29 15:14:15.12 +02:00", "2024-02-29 15:14:15.12 +02:00"),
            ("@dec:decimal(10,3)", "-1.5", "-1.500"),
            ("@m:money", "922337203685477.5807", "922337203685477.5807"),
            ("@u:uniqueidentifier", "6f9619ff-8b86-d011-b42d-00c04fc964ff", "6F9619FF-8B86-D011-B42D-00C04FC964FF"),
            ("@vb:varbinary(max)", "0xDEADbeef", "0xDEADBEEF"),
            ("@bit:bit", "true", "1"),
            ("@s:nvarchar(max)", "x'; DROP TABLE y; --", "x'; DROP TABLE y; --"),
            ("@v:varchar(20)", "abc", "abc"),
            ("@dt:datetime", "2024-02-29 13:14:15.123", "2024-02-29 13:14:15.123"),
            ("@n:int", "NULL", ""),
            ("@big", "9000000000", "9000000000"),
        ]
        let params = cases.map { c -> ReplaySession.Parameter in
            let name = String(c.0.split(separator: ":")[0])
            return .init(name: name, value: c.2.isEmpty ? nil : c.2)
        } + [.init(name: "@io", value: "5"), .init(name: "@def", value: nil), .init(name: "@out", value: nil)]
        let session = ReplaySession(name: "rpc-cli-types", exchanges: [
            ReplaySession.Exchange(request: .rpc(procedure: "dbo.types", parameters: params),
                                   response: [.init(bytes: RPCTokens.returnStatus(5) + RPCTokens.doneProc())]),
        ])
        let server = try RPCReplay.start(session)
        defer { server.stop() }
        var args = ["-S", "127.0.0.1,\(server.port)", "-U", "u", "-P", "p", "--encrypt", "notsupported", "--exec", "dbo.types"]
        for c in cases { args += ["--param", "\(c.0)=\(c.1)"] }
        args += ["--inout", "@io:smallint=5", "--default", "@def", "--output", "@out:datetime2(3)"]
        let r = try CLIComparisonTests.run(binary.path, args)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(server.unmatchedRequests.count, 0, String(server.unmatchedRequests.first?.description.prefix(600) ?? ""))
        XCTAssertEqual(r.stdout.split(separator: "\n").last.map(String.init), "Return status: 5")
    }
}
