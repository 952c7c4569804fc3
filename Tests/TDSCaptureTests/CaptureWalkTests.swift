import XCTest
import Foundation
import TDS
import SQLClientTesting
@testable import TDSCapture

/// Walks the whole of ../shared/captures (a file added later is covered) and decodes every
/// file. Fragments get their context from Fixtures/captures-manifest.json; files the README
/// documents as inconsistent or not TDS 7.x must fail with the clear error the manifest names.
final class CaptureWalkTests: XCTestCase {
    struct Entry {
        var hint: DecodeHint?
        var expect: String
        var errorOffset: Int?
        var errorCode: String?
        var pending: String?
        var why: String
    }

    static func hexBytes(_ text: String) throws -> [UInt8] {
        try HexCapture.parse(Array(text.utf8)).bytes
    }

    func capturesDirectory() throws -> URL {
        let root = SharedCaptures.packageRoot(from: #filePath)
        guard let dir = SharedCaptures.directory(packageRoot: root) else {
            throw XCTSkip("../shared/captures is absent: the walk over real captures is skipped")
        }
        return dir
    }

    func loadManifest(captures: URL) throws -> [String: Entry] {
        let root = SharedCaptures.packageRoot(from: #filePath)
        let data = try Data(contentsOf: root.appendingPathComponent("Fixtures/captures-manifest.json"))
        guard let top = try JSONSerialization.jsonObject(with: data) as? [String: Any],
              let files = top["files"] as? [String: [String: Any]] else {
            XCTFail("Fixtures/captures-manifest.json has no \"files\" object")
            return [:]
        }
        var out: [String: Entry] = [:]
        for (path, f) in files {
            var hint: DecodeHint?
            if let kindName = f["kind"] as? String {
                let kind = try XCTUnwrap(DecodeHint.Kind(rawValue: kindName), "\(path): kind \(kindName)")
                var h = DecodeHint(kind: kind)
                if let t = f["messageType"] as? String {
                    h.messageType = try XCTUnwrap(Self.packetType(named: t), "\(path): messageType \(t)")
                }
                if let p = f["prefix"] as? String { h.prefix = try Self.hexBytes(p) }
                if let c = f["context"] as? String {
                    let file = try CaptureFile(bytes: [UInt8](Data(contentsOf: captures.appendingPathComponent(c))), fileName: c)
                    h.context = try Self.hexBytes(f["contextPrefix"] as? String ?? "") + file.bytes
                }
                if let c = f["contextHex"] as? String { h.context = try Self.hexBytes(c) }
                h.columnEncryption = f["columnEncryption"] as? Bool ?? false
                h.allHeaders = f["allHeaders"] as? Bool
                if let v = f["tdsVersion"] as? String { h.version = TDSVersion(string: v) }
                hint = h
            }
            out[path] = Entry(hint: hint, expect: f["expect"] as? String ?? "ok", errorOffset: f["errorOffset"] as? Int,
                              errorCode: f["errorCode"] as? String, pending: f["pending"] as? String, why: f["why"] as? String ?? "")
        }
        return out
    }

    static func packetType(named name: String) -> PacketType? {
        (0...0x12).map { PacketType(rawValue: UInt8($0)) }.first { $0.name == name }
    }

    func allCaptureFiles(_ dir: URL) -> [String] {
        guard let e = FileManager.default.enumerator(at: dir, includingPropertiesForKeys: nil) else { return [] }
        var out: [String] = []
        for case let url as URL in e {
            let ext = url.pathExtension.lowercased()
            guard ["hex", "pcap", "pcapng", "bin", "raw"].contains(ext) else { continue }
            out.append(String(url.standardizedFileURL.path.dropFirst(dir.standardizedFileURL.path.count + 1)))
        }
        return out.sorted()
    }

    func testEveryCaptureDecodes() throws {
        let dir = try capturesDirectory()
        let manifest = try loadManifest(captures: dir)
        let files = allCaptureFiles(dir)
        XCTAssertGreaterThan(files.count, 80, "the captures folder looks incomplete")
        for key in manifest.keys {
            XCTAssertTrue(files.contains(key), "manifest names \(key), which is not in the captures folder")
        }
        var decoded = 0
        for path in files {
            let bytes = [UInt8](try Data(contentsOf: dir.appendingPathComponent(path)))
            let entry = manifest[path]
            let report = CaptureDecoder.decode(bytes: bytes, fileName: path, options: DecodeOptions(hint: entry?.hint))
            if let pending = entry?.pending {
                print("PENDING \(path): \(pending)")
                XCTAssertFalse(report.isSuccess, "\(path) decodes now: remove its pending mark (\(pending))")
                continue
            }
            switch entry?.expect ?? "ok" {
            case "ok":
                XCTAssertEqual(report.failures.map(\.description), [], path)
                XCTAssertFalse(report.records.isEmpty, "\(path): nothing decoded")
                for r in report.records {
                    XCTAssertNotEqual(r.type, "UNDECODED", "\(path): \(r.fields.map { "\($0.0)=\($0.1.serialized())" })")
                    XCTAssertFalse(r.type.hasPrefix("UNKNOWN"), path)
                }
                checkAgainstComment(path: path, bytes: bytes, report: report)
                decoded += 1
            case "error", "refused":
                let e = entry
                XCTAssertFalse(report.isSuccess, "\(path) must fail: \(e?.why ?? "")")
                let first = report.failures.first
                if let code = e?.errorCode { XCTAssertEqual(first?.code, code, "\(path): \(String(describing: first))") }
                if let offset = e?.errorOffset { XCTAssertEqual(first?.offset, offset, "\(path): \(String(describing: first))") }
                if e?.expect == "refused" {
                    XCTAssertTrue(first?.detail.contains("not TDS 7.x") ?? false, "\(path): \(String(describing: first))")
                }
            default:
                XCTFail("\(path): unknown expect \(entry?.expect ?? "")")
            }
        }
        XCTAssertGreaterThan(decoded, 70)
    }

    /// The `.hex` comments of packetbeat name the direction (c2s / s2c); the decoder must agree.
    func checkAgainstComment(path: String, bytes: [UInt8], report: DecodeReport) {
        guard path.hasSuffix(".hex"), let file = try? CaptureFile(bytes: bytes, fileName: path),
              let comment = file.comments.first else { return }
        let expected: TDSDirection? = comment.contains("direction c2s") ? .client : (comment.contains("direction s2c") ? .server : nil)
        if let expected {
            for r in report.records { XCTAssertEqual(r.direction, expected, path) }
        }
    }

    func testSpecExample17FailsAtBodyOffset132() throws {
        let dir = try capturesDirectory()
        let path = "ms-tds-spec/17-featureextack-sessionrecovery.hex"
        let report = CaptureDecoder.decode(bytes: [UInt8](try Data(contentsOf: dir.appendingPathComponent(path))), fileName: path)
        let first = try XCTUnwrap(report.failures.first)
        XCTAssertEqual(first.message, "TABULAR_RESULT")
        XCTAssertEqual(first.offset, 132)
        XCTAssertTrue(first.description.contains("at byte offset 132"), first.description)
        // The tokens before the stray byte were decoded: the collation ENVCHANGE is last.
        let tokens = try XCTUnwrap(report.records.first?["tokens"]?.arrayValue)
        XCTAssertEqual(tokens.last?["type"]?.stringValue, "SQL Collation")
    }

    func testNDPIJSONHasRPCParametersReturnStatusAndReturnValue() throws {
        let dir = try capturesDirectory()
        let bytes = [UInt8](try Data(contentsOf: dir.appendingPathComponent("ndpi_mssql_tds.pcap")))
        let report = CaptureDecoder.decode(bytes: bytes, fileName: "ndpi_mssql_tds.pcap")
        XCTAssertEqual(report.failures.map(\.description), [])
        XCTAssertEqual(report.sessions.count, 12)
        let lines = report.records.map { $0.json.serialized() }
        // Each line is valid JSON with the required keys.
        for line in lines {
            let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], line)
            XCTAssertNotNil(object["direction"] as? String)
            XCTAssertNotNil(object["type"] as? String)
        }
        let prepexec = try XCTUnwrap(report.records.first { $0["procedure"]?.stringValue == "sp_prepexec" })
        let parameters = try XCTUnwrap(prepexec["parameters"]?.arrayValue)
        XCTAssertEqual(parameters.count, 5)
        XCTAssertEqual(parameters[0]["type"]?.stringValue, "int")
        XCTAssertEqual(parameters[0]["output"], .bool(true))
        XCTAssertEqual(parameters[1]["value"]?.stringValue, "@P0 nvarchar(4000),@P1 int")
        XCTAssertEqual(parameters[3]["value"]?.stringValue, "zzz")
        XCTAssertEqual(parameters[4]["value"], .int(2))   // an int is a JSON number (issue 26's one JSON rule)
        let named = try XCTUnwrap(report.records.first { $0["procedure"]?.stringValue == "p_GetBogusData" })
        XCTAssertEqual(named["parameters"]?.arrayValue?.first?["name"]?.stringValue, "@SearchType")
        let serverTokens = report.records.filter { $0.direction == .server }.flatMap { $0["tokens"]?.arrayValue ?? [] }
        let returnStatus = serverTokens.filter { $0["token"]?.stringValue == "RETURNSTATUS" }
        let returnValues = serverTokens.filter { $0["token"]?.stringValue == "RETURNVALUE" }
        XCTAssertGreaterThanOrEqual(returnStatus.count, 3)
        XCTAssertEqual(returnStatus.first?["value"], .int(0))
        XCTAssertGreaterThanOrEqual(returnValues.count, 3)
        XCTAssertEqual(returnValues.first?["type"]?.stringValue, "int")
        XCTAssertEqual(returnValues.first?["value"], .int(1))
        // The 2222 conversation: 4-byte DONE row counts.
        let s2222 = try XCTUnwrap(report.sessions.first { $0.name.contains(":2222 ") })
        XCTAssertEqual(s2222.version.version.generation, 0x71)
        let done = try XCTUnwrap(report.records.first { $0.conversation?.contains(":2222 ") == true && $0.direction == .server })
        XCTAssertEqual(done["tokens"]?.arrayValue?.first?["token"]?.stringValue, "DONE")
        XCTAssertEqual(done["tokens"]?.arrayValue?.first?["rowCount"], .uint(0))
    }

    func testSybaseIsRefusedWithAClearMessage() throws {
        let dir = try capturesDirectory()
        let bytes = [UInt8](try Data(contentsOf: dir.appendingPathComponent("arkime_tds5_sybase.pcap")))
        let report = CaptureDecoder.decode(bytes: bytes, fileName: "arkime_tds5_sybase.pcap")
        XCTAssertEqual(report.failures.count, 1)
        let failure = try XCTUnwrap(report.failures.first)
        XCTAssertEqual(failure.code, "unsupportedProtocol")
        XCTAssertTrue(failure.description.contains("Sybase TDS 5.0"), failure.description)
        XCTAssertTrue(failure.description.contains("10.0.0.2:3106"), failure.description)
        XCTAssertTrue(report.records.isEmpty)
    }

    func testPacketbeatLoginNeverShowsTheLoginAndReportsTLS() throws {
        let dir = try capturesDirectory()
        for name in ["packetbeat_mssql_login.pcap", "packetbeat_mssql_login_and_insert.pcap", "packetbeat_mssql_login_and_select.pcap"] {
            let bytes = [UInt8](try Data(contentsOf: dir.appendingPathComponent(name)))
            let report = CaptureDecoder.decode(bytes: bytes, fileName: name)
            XCTAssertEqual(report.failures.map(\.description), [], name)
            XCTAssertTrue(report.records.contains { $0.type == "TLS" && $0["encrypted"] == .bool(true) }, name)
            XCTAssertFalse(report.records.contains { $0.type == "LOGIN7" }, "the LOGIN7 is inside TLS: \(name)")
            let loginAck = report.records.flatMap { $0["tokens"]?.arrayValue ?? [] }.first { $0["token"]?.stringValue == "LOGINACK" }
            XCTAssertEqual(loginAck?["tdsVersion"]?.stringValue, "7.4", name)
        }
    }

    func testLogin7NeverShowsThePassword() throws {
        let dir = try capturesDirectory()
        for path in ["ms-tds-spec/02-login-request.hex", "pysqlbridge/client_login7.hex",
                     "r2dbc-mssql/client-requests/Login7UnitTests_shouldRenderSimpleLoginPacket.hex"] {
            let bytes = [UInt8](try Data(contentsOf: dir.appendingPathComponent(path)))
            let report = CaptureDecoder.decode(bytes: bytes, fileName: path)
            let record = try XCTUnwrap(report.records.first { $0.type == "LOGIN7" }, path)
            let line = record.json.serialized().lowercased()
            XCTAssertFalse(line.contains("password"), line)
            XCTAssertNotNil(record["userName"], path)
        }
    }
}
