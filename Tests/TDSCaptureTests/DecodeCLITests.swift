import XCTest
import Foundation
import SQLClientTesting
import TDS

/// Runs the built `sqlclient` binary (when the build produced it next to the test bundle).
final class DecodeCLITests: XCTestCase {
    func binary() throws -> URL {
        var candidates = [Bundle.main.bundleURL, Bundle.main.bundleURL.deletingLastPathComponent()]
        for b in Bundle.allBundles { candidates.append(b.bundleURL.deletingLastPathComponent()) }
        for dir in candidates {
            let url = dir.appendingPathComponent("sqlclient")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw XCTSkip("the sqlclient binary is not built next to the tests")
    }

    func run(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
        let p = Process()
        p.executableURL = try binary()
        p.arguments = arguments
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    func captures() throws -> URL {
        guard let dir = SharedCaptures.directory(packageRoot: SharedCaptures.packageRoot(from: #filePath)) else {
            throw XCTSkip("../shared/captures is absent")
        }
        return dir
    }

    func testNDPIJSONLines() throws {
        let dir = try captures()
        let r = try run(["decode", dir.appendingPathComponent("ndpi_mssql_tds.pcap").path, "--format", "json"])
        XCTAssertEqual(r.status, 0, r.err)
        let lines = r.out.split(separator: "\n")
        XCTAssertEqual(lines.count, 29)
        let objects = try lines.map { try XCTUnwrap(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        let rpcs = objects.filter { $0["type"] as? String == "RPC" }
        XCTAssertEqual(rpcs.count, 16) // tshark: 16 TDS RPC messages (6666 spans 6 segments)
        XCTAssertTrue(rpcs.allSatisfy { $0["procedure"] is String && $0["parameters"] is [Any] })
        let tokens = objects.compactMap { $0["tokens"] as? [[String: Any]] }.flatMap { $0 }
        XCTAssertTrue(tokens.contains { $0["token"] as? String == "RETURNSTATUS" })
        XCTAssertTrue(tokens.contains { $0["token"] as? String == "RETURNVALUE" && $0["type"] as? String == "int" })
    }

    func testErrorsExitNonZeroAndNameMessageTokenOffset() throws {
        let dir = try captures()
        let r = try run(["decode", dir.appendingPathComponent("ms-tds-spec/17-featureextack-sessionrecovery.hex").path])
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.err.contains("TABULAR_RESULT message"), r.err)
        XCTAssertTrue(r.err.contains("at byte offset 132"), r.err)
        XCTAssertTrue(r.err.contains("after ENVCHANGE"), r.err)
        let sybase = try run(["decode", dir.appendingPathComponent("arkime_tds5_sybase.pcap").path])
        XCTAssertEqual(sybase.status, 1)
        XCTAssertTrue(sybase.err.contains("Sybase TDS 5.0"), sybase.err)
        let usage = try run(["decode", "--tds-version", "9.9", "x"])
        XCTAssertEqual(usage.status, 2)
    }

    func testTokensFlagAndForcedVersion() throws {
        let dir = try captures()
        let path = dir.appendingPathComponent("r2dbc-mssql/server-tokens/DoneTokenUnitTests_shouldDecodeToken.hex").path
        let ok = try run(["decode", path, "--tokens", "--tds-version", "7.4", "--format", "json"])
        XCTAssertEqual(ok.status, 0, ok.err)
        XCTAssertEqual(ok.out, #"{"direction":"server","type":"TABULAR_RESULT","tokens":[{"token":"DONE","status":["COUNT"],"rowCount":1,"currentCommand":193}]}"# + "\n")
        // As 7.1 the DONE is 9 bytes and the last 4 bytes are left over: an error.
        let old = try run(["decode", path, "--tokens", "--tds-version", "7.1"])
        XCTAssertEqual(old.status, 1)
        XCTAssertTrue(old.err.contains("at byte offset 9"), old.err)
    }
}
