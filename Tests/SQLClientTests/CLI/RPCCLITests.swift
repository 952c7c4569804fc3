import Foundation
import XCTest
import SQLClientTesting
@testable import SQLClient
import TDS

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
    /// Issue 26 item 2: typed character parameters take the session collation as
    /// ``SQLParameter/varchar(_:length:collation:)`` does. On a session whose login set
    /// Cyrillic_General_CI_AS, `--param @s:varchar(20)=Привет` goes as 6 cp1251 bytes declared
    /// with that collation (it failed with "text not representable in code page 1252"), and an
    /// output varchar is declared with it too.
    func testTypedCharacterParametersTakeTheSessionCollation() throws {
        let cyrillic: [UInt8] = [0x19, 0x04, 0xD0, 0x00, 0x00]
        let privetCP1251: [UInt8] = [0xCF, 0xF0, 0xE8, 0xE2, 0xE5, 0xF2]
        let server = try LoginScenarioServer(behaviour: .init(collation: cyrillic))
        defer { server.stop() }
        let r = try CLI.run(CLI.loopbackArguments(port: Int(server.port))
                            + ["--exec", "dbo.greet", "--param", "@s:varchar(20)=Привет", "--param", "@c:char(6)=Привет",
                               "--param", "@n=Привет", "--output", "@o:varchar(10)"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertFalse(r.stderr.contains("code page"), r.stderr)
        let rpc = try XCTUnwrap(server.records(atLeast: 1).first?.requests.first { $0.type == .rpc })
        XCTAssertNotNil(rpc.payload.firstRange(of: [0x06, 0x00] + privetCP1251), "the varchar value is not 6 cp1251 bytes")
        let request = try RPCRequest.decode(from: rpc.payload, version: .v7_4)
        let parameters = try XCTUnwrap(request.calls.first?.parameters)
        XCTAssertEqual(parameters.map(\.name), ["@s", "@c", "@n", "@o"])
        let session = Collation(bytes: cyrillic)
        for p in parameters { XCTAssertEqual(p.typeInfo.collation, session, p.name) }
        XCTAssertEqual(parameters.map(\.typeInfo.sqlTypeName), ["varchar(20)", "char(6)", "nvarchar(4000)", "varchar(10)"])
        XCTAssertEqual(parameters[0].value.stringValue, "Привет")
        XCTAssertEqual(parameters[1].value.stringValue, "Привет")
        XCTAssertEqual(parameters[2].value.stringValue, "Привет")
        XCTAssertTrue(parameters[3].value.isNull)
    }
}
